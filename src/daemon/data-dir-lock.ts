import { createHash } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';

/**
 * Exclusive use of a data dir by one daemon. On Linux the lock is a listening socket in the abstract namespace,
 * named after the data dir's real path: the kernel frees it when the holder dies, however it dies, so a stale
 * lock cannot exist and two daemons cannot both take it. A second daemon learns the holder's pid from it.
 */
export class DataDirLock {
  private constructor(private readonly server: Server) {}

  static async acquire(dataDir: string): Promise<DataDirLock> {
    const real = await realpath(dataDir);
    const name = `\0tunnelward-${createHash('sha256').update(real).digest('hex').slice(0, 40)}`;
    const server = createServer((socket) => socket.end(`${process.pid}\n`));
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(name, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      const holder = await askHolder(name);
      throw new Error(
        `data dir ${real} is in use by another tunnelward${holder ? ` (pid ${holder})` : ''}; ` +
          'stop it first or choose another --data-dir',
        { cause: err },
      );
    }
    server.unref();
    return new DataDirLock(server);
  }

  release(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function askHolder(name: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const socket = connect(name);
    socket.setTimeout(1000, () => socket.destroy());
    socket.on('data', (chunk) => (text += chunk));
    socket.on('close', () => resolve(/^\d+$/.test(text.trim()) ? text.trim() : undefined));
    socket.on('error', () => resolve(undefined));
  });
}
