import { spawn } from 'node:child_process';
import { closeSync, constants, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { join } from 'node:path';

/** The lock file in the data dir; it holds the pid of the daemon that has the lock. */
export const LOCK_FILE = 'tunnelward.lock';
/** What flock(1) exits with when the lock is held by someone else. */
const HELD = 75;

/**
 * Exclusive use of a data dir by one daemon: an flock(2) on `tunnelward.lock` in it (mode 0600, so no other user
 * can take it first), taken by flock(1) on the daemon's own descriptor of the file. The lock belongs to that open
 * file, which only the daemon holds (Node opens every file close-on-exec: neither the spawner that outlives the
 * daemon nor the tunnels get it), so the kernel frees it the moment the daemon dies, however it dies. Unlike a
 * name in the abstract socket namespace it is shared by every network namespace that sees the files (two
 * containers on one volume). A second daemon learns the holder's pid from the file.
 */
export class DataDirLock {
  private constructor(private fd: number | undefined) {}

  static async acquire(dataDir: string): Promise<DataDirLock> {
    const real = await realpath(dataDir);
    const path = join(real, LOCK_FILE);
    const fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
    try {
      const code = await flock(fd);
      if (code === HELD) {
        const holder = readFileSync(fd, 'utf8').trim();
        throw new Error(
          `data dir ${real} is in use by another tunnelward${/^\d+$/.test(holder) ? ` (pid ${holder})` : ''}; ` +
            'stop it first or choose another --data-dir',
        );
      }
      ftruncateSync(fd, 0);
      writeSync(fd, `${process.pid}\n`, 0);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    return new DataDirLock(fd);
  }

  /** Frees the data dir. The file stays: removing it would let a daemon that opened it lock a file nobody sees. */
  release(): void {
    if (this.fd === undefined) return;
    ftruncateSync(this.fd, 0);
    closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Takes an exclusive flock on the open file `fd` without waiting; resolves with flock(1)'s exit code. */
function flock(fd: number): Promise<0 | typeof HELD> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    const child = spawn('flock', ['--exclusive', '--nonblock', '--conflict-exit-code', String(HELD), '3'], {
      stdio: ['ignore', 'ignore', 'pipe', fd],
    });
    child.stderr?.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === 'ENOENT'
            ? 'cannot lock the data dir: flock (util-linux) is not installed'
            : `cannot lock the data dir: ${err.message}`,
          { cause: err },
        ),
      ),
    );
    child.once('close', (code, signal) => {
      if (code === 0 || code === HELD) resolve(code);
      else reject(new Error(`cannot lock the data dir: flock ended with ${code ?? signal}: ${stderr.trim()}`));
    });
  });
}
