// The real frp: frpc and frps built by test/setup/build-frp.sh, a real frps on loopback, and the local services
// and clients a tunnel is tested with (an echo server, an HTTP server, a connection that carries bytes).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, request as httpRequest, type Server as HttpServer } from 'node:http';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { freeLoopbackPort } from '../../src/system/loopback-ports.js';
import { killOnExit } from './exit-guard.js';

const run = promisify(execFile);

const BIN = join(PACKAGE_ROOT, '.cache', 'frp', 'current');
export const REAL_FRPC = join(BIN, 'frpc');
export const REAL_FRPS = join(BIN, 'frps');

/** frpc's version as it prints it (`frpc -v`), e.g. `0.71.0`. */
export async function frpVersion(): Promise<string> {
  if (!existsSync(REAL_FRPC))
    throw new Error(`${REAL_FRPC} is missing: run sh test/setup/build-frp.sh (npm test does)`);
  return (await run(REAL_FRPC, ['-v'])).stdout.trim();
}

/**
 * A port free on loopback now, below the kernel's ephemeral range, as the daemon chooses its tunnels' admin ports: a
 * port the kernel hands out for listening is soon handed out again as the source port of some connection, and a
 * later bind then finds it busy.
 */
export const freePort = (): Promise<number> => freeLoopbackPort(() => false);

export interface FrpsOptions {
  /** `auth.token`; none when empty. */
  token?: string;
  /** More lines of frps's TOML. */
  extra?: string;
  /** The frps to run; the one the test setup built by default. */
  program?: string;
}

/** A real frps on loopback: its control port, its HTTP vhost port, and every port it opens for proxies. */
export class Frps {
  readonly output: string[] = [];
  private proc: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  private constructor(
    readonly dir: string,
    readonly bindPort: number,
    readonly vhostHTTPPort: number,
    readonly token: string,
    private readonly extra: string,
    private readonly program: string,
  ) {}

  static async start(options: FrpsOptions = {}): Promise<Frps> {
    const dir = await mkdtemp(join(tmpdir(), 'tunnelward-frps-'));
    // The ports are free when picked; another process may take one before frps listens, so a refusal picks again.
    for (let attempt = 1; ; attempt++) {
      const frps = new Frps(
        dir,
        await freePort(),
        await freePort(),
        options.token ?? '',
        options.extra ?? '',
        options.program ?? REAL_FRPS,
      );
      try {
        await frps.up();
        return frps;
      } catch (err) {
        if (attempt >= 3 || !/address already in use/.test((err as Error).message)) {
          await rm(dir, { recursive: true, force: true });
          throw err;
        }
      }
    }
  }

  get configPath(): string {
    return join(this.dir, 'frps.toml');
  }

  /** Starts frps (again, on the same ports) and resolves once it listens. */
  async up(): Promise<void> {
    if (this.running) return;
    const lines = [
      'bindAddr = "127.0.0.1"',
      `bindPort = ${this.bindPort}`,
      'proxyBindAddr = "127.0.0.1"',
      `vhostHTTPPort = ${this.vhostHTTPPort}`,
      'log.disablePrintColor = true',
      ...(this.token ? [`auth.token = ${JSON.stringify(this.token)}`] : []),
      this.extra,
    ];
    await writeFile(this.configPath, lines.join('\n') + '\n');
    const proc = spawn(this.program, ['-c', this.configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
    killOnExit(proc);
    this.proc = proc;
    this.exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    let rest = '';
    const ready = new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        const parts = (rest + chunk.toString('utf8')).split('\n');
        rest = parts.pop()!;
        this.output.push(...parts);
        if (parts.some((l) => l.includes('frps started successfully'))) resolve();
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', onData);
      void this.exited.then(() =>
        reject(new Error(`frps exited before it listened: ${this.output.slice(-5).join(' | ')}`)),
      );
    });
    await ready;
  }

  get running(): boolean {
    return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  /** Stops frps (SIGTERM; SIGKILL after 5 s): its clients lose their server. */
  async down(): Promise<void> {
    if (!this.running) return;
    const proc = this.proc!;
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(timer);
  }

  /** The frpc settings (serverAddr, serverPort, auth) a client of this server needs, as the API's create takes them. */
  get client(): { serverAddr: string; serverPort: string } {
    return { serverAddr: '127.0.0.1', serverPort: String(this.bindPort) };
  }

  async stop(): Promise<void> {
    await this.down();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** A TCP server on loopback that sends back every byte it receives. */
export async function echoServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.pipe(socket);
  });
  const port = await listen(server);
  return {
    port,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** An HTTP server on loopback that answers every request with `<name> <Host header> <path>`. */
export async function httpServer(name: string): Promise<{ port: number; close(): Promise<void> }> {
  const server: HttpServer = createHttpServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end(`${name} ${req.headers.host ?? ''} ${req.url ?? ''}`);
  });
  const port = await listen(server);
  return {
    port,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function listen(server: Server | HttpServer): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

/** An HTTP GET to 127.0.0.1:`port` with a Host header (frps's vhost routing), its status and body. */
export function httpGet(port: number, host: string, path = '/'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { Host: host }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer from 127.0.0.1:${port} within 10 s`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * A TCP connection through a tunnel to an echo server: `exchange` sends bytes and resolves when the same bytes
 * have come back, so each call proves the path carries data now.
 */
export class EchoConnection {
  private received = Buffer.alloc(0);
  private waiter: (() => void) | undefined;
  private closedWith: Error | undefined;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      this.waiter?.();
    });
    const closed = (err?: Error) => {
      this.closedWith ??= err ?? new Error('the connection was closed');
      this.waiter?.();
    };
    socket.on('error', closed);
    socket.on('close', () => closed());
  }

  static open(port: number): Promise<EchoConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new EchoConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  /** Sends `data` and waits (at most `timeoutMs`) until it has all come back. */
  async exchange(data: Buffer | string, timeoutMs = 5000): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    if (this.closedWith) throw this.closedWith;
    this.received = Buffer.alloc(0);
    this.socket.write(bytes);
    let timedOut = false;
    const deadline = setTimeout(() => {
      timedOut = true;
      this.waiter?.();
    }, timeoutMs);
    try {
      while (this.received.length < bytes.length) {
        if (this.closedWith) throw this.closedWith;
        if (timedOut)
          throw new Error(`${this.received.length} of ${bytes.length} bytes came back within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => (this.waiter = resolve));
        this.waiter = undefined;
      }
    } finally {
      clearTimeout(deadline);
    }
    if (!this.received.equals(bytes)) throw new Error('the bytes that came back differ from those sent');
  }

  close(): void {
    this.socket.destroy();
  }
}

/** One round trip of `data` over a new connection to 127.0.0.1:`port`; the connection is closed after it. */
export async function roundTrip(port: number, data: string, timeoutMs = 5000): Promise<void> {
  const conn = await EchoConnection.open(port);
  try {
    await conn.exchange(data, timeoutMs);
  } finally {
    conn.close();
  }
}
