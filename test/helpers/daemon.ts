import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopKeeper } from '../../src/spawner/output-keeper.js';
import { killOnExit } from './exit-guard.js';
import { until } from './until.js';
import { responseDrift } from './response-schema.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import type { ExecutionContext } from 'ava';

export const CLI = join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
export const ADMIN = { username: 'admin', passwd: 'Admin123!x' };
/** Tests hash passwords with argon2id at its smallest allowed memory cost: the same code, an eighth of the work. */
export const TEST_HASH_MEMORY_KIB = 8192;

export interface StartOptions {
  /** Reuse a data dir (e.g. to restart on the same data); a new temp dir otherwise. */
  dataDir?: string;
  /** Written to `<data dir>/settings.toml` before the start. */
  settingsToml?: string;
  env?: Record<string, string | undefined>;
  /** Extra CLI arguments after `serve`. */
  args?: string[];
  /** Run the daemon as this user (needs root). */
  uid?: number;
  gid?: number;
  /** A command prefix the daemon runs under (e.g. nsenter into a throwaway systemd's namespaces). */
  wrap?: string[];
  /** The tunnelward to run (a copy of this one elsewhere); this checkout's by default. */
  cli?: string;
  /** In a session of its own, as a service manager starts it (the test's otherwise). */
  ownSession?: boolean;
}

export interface Response<T = any> {
  status: number;
  headers: Headers;
  body: { success: boolean; message: string; data?: T };
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** X-Timestamp to send; `null` sends none. Defaults to now. */
  timestamp?: number | string | null;
  /** The address the request leaves from (`rawRequest` only): any 127.x.y.z is this host's loopback. */
  localAddress?: string;
}

/** A real tunnelward process on an ephemeral loopback port with its own data dir. */
export class Daemon {
  readonly output: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  url = '';

  constructor(
    readonly proc: ChildProcess,
    readonly dataDir: string,
  ) {
    this.exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  }

  get pid(): number {
    return this.proc.pid!;
  }

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<Response<T>> {
    // Stamped at each try: a try after a failed connect is as fresh as the first.
    const send = (attempt: number): Promise<globalThis.Response> =>
      fetch(this.url + path, { method, ...requestParts(options) }).catch((err: Error) => {
        const cause = err.cause as (Error & { code?: string; syscall?: string }) | undefined;
        // A connect that failed sent nothing, so it is tried again: on a loaded machine the test's own event loop
        // can stall past the connect timer, and a sandboxed kernel has been seen failing a loopback connect with an
        // error of its own ("Unknown system error -32750") while the daemon was accepting. A refused connect is the
        // answer (nothing listens), as is any failure after the request went out.
        const connectFailed =
          cause?.code === 'UND_ERR_CONNECT_TIMEOUT' || (cause?.syscall === 'connect' && cause.code !== 'ECONNREFUSED');
        if (connectFailed && attempt < 3) {
          // Said, not hidden: a failure like this is worth knowing of even when the next try gets through.
          process.stderr.write(
            `${method} ${path}: connect failed: ${cause!.message} (try ${attempt} of 3); trying again\n`,
          );
          return send(attempt + 1);
        }
        // fetch says only "fetch failed": say why, and whether the daemon is still there.
        const state = this.proc.exitCode ?? this.proc.signalCode ?? 'still running';
        const last = this.output.slice(-3).join(' | ');
        throw new Error(
          `${method} ${path}: ${cause?.message ?? err.message} (daemon ${state}; its last lines: ${last})`,
        );
      });
    const res = await send(1);
    const body = (await res.json()) as Response<T>['body'];
    // Every answer is held to what /openapi.json declares for it: a drift fails the test that saw it.
    const drift = responseDrift(method, path, res.status, body);
    if (drift) throw new Error(drift);
    return { status: res.status, headers: res.headers, body };
  }

  /**
   * Sends the path exactly as given (fetch would resolve `..`, `//` and percent-escapes first). A response
   * without a body (HEAD) has `body` undefined.
   */
  rawRequest<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<Response<T>> {
    const { headers, body } = requestParts(options);
    // Node sends the body of an OPTIONS, DELETE or TRACE request unframed unless its length is given.
    if (body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(body));
    const { hostname, port } = new URL(this.url);
    return new Promise((resolve, reject) => {
      const req = httpRequest({ method, hostname, port, path, headers, localAddress: options.localAddress }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const received = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (value !== undefined) received.set(name, Array.isArray(value) ? value.join(', ') : value);
          }
          const json = /json/.test(String(res.headers['content-type']));
          resolve({
            status: res.statusCode!,
            headers: received,
            body: text && json ? JSON.parse(text) : text || undefined,
          });
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  get<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('GET', path, options);
  }

  post<T = any>(path: string, body: unknown, options: RequestOptions = {}) {
    return this.request<T>('POST', path, { ...options, body });
  }

  /** Logs in and returns the token; fails the test on a refused login. */
  async login(username = ADMIN.username, passwd = ADMIN.passwd): Promise<string> {
    const res = await this.post('/login', { username, passwd });
    if (!res.body.success) throw new Error(`login of ${username} failed: ${res.status} ${res.body.message}`);
    return res.body.data.token;
  }

  /** Creates a user as the given superuser and logs it in. */
  async userWithToken(adminToken: string, username: string, type: string, passwd = 'Passw0rd!x') {
    const res = await this.post('/userMgr/create', { username, passwd, type }, { token: adminToken });
    if (!res.body.success) throw new Error(`creating ${username} failed: ${res.body.message}`);
    return { userID: res.body.data.userID as number, token: await this.login(username, passwd), passwd };
  }

  /** Waits until a line of standard output or error matches. */
  async waitForOutput(pattern: RegExp, timeoutMs = 10_000): Promise<RegExpMatchArray> {
    const found = () => this.output.map((line) => line.match(pattern)).find((m) => m !== null);
    const match = await until(found, (m) => m !== undefined, {
      timeoutMs,
      everyMs: 20,
      what: `output matching ${pattern}`,
    }).catch(() => {
      throw new Error(`no output matched ${pattern}; got:\n${this.output.join('\n')}`);
    });
    return match!;
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM') {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill(signal);
    return this.exited;
  }
}

function requestParts(options: RequestOptions): { headers: Record<string, string>; body: string | Buffer | undefined } {
  const headers: Record<string, string> = { ...options.headers };
  const timestamp = options.timestamp === undefined ? Date.now() : options.timestamp;
  if (timestamp !== null) headers['X-Timestamp'] = String(timestamp);
  if (options.token) headers['X-Token'] = options.token;
  let body: string | Buffer | undefined;
  if (options.body !== undefined) {
    headers['Content-Type'] ??= 'application/json';
    // A string or bytes (a compressed body) as given; anything else as JSON.
    body =
      typeof options.body === 'string' || Buffer.isBuffer(options.body) ? options.body : JSON.stringify(options.body);
  }
  return { headers, body };
}

/** Writes bytes to the daemon's port as they are and returns everything it sends back until it closes. */
export function exchangeRaw(url: string, data: string | Buffer): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.write(data);
  });
}

/** A new temp dir; removed when `t` ends, if given (a file that leaves one behind fails: test/setup/private-tmpdir.ts). */
export async function tempDir(prefix = 'tunnelward-test-', t?: ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t?.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A temp dir for programs the daemon is to run. Not under /tmp, which everyone may write to (the daemon refuses a
 * program there): under the checkout, in directories only their owner may change.
 */
export async function programDir(prefix = 'programs-'): Promise<string> {
  const parent = join(PACKAGE_ROOT, '.test-programs');
  await mkdir(parent, { recursive: true });
  await chmod(parent, 0o755);
  const dir = await mkdtemp(join(parent, prefix));
  await chmod(dir, 0o755);
  return dir;
}

/** Spawns the CLI with arguments, without waiting for anything. */
export function spawnCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  identity: { uid?: number; gid?: number; detached?: boolean } = {},
  wrap: string[] = [],
  cli = CLI,
): ChildProcess {
  const [file, ...rest] = [...wrap, process.execPath, cli, ...args];
  return spawn(file!, rest, {
    env: {
      ...process.env,
      TUNNELWARD_ADMIN_USER: ADMIN.username,
      TUNNELWARD_ADMIN_PASSWORD: ADMIN.passwd,
      TUNNELWARD_ARGON2_MEMORY_KIB: String(TEST_HASH_MEMORY_KIB),
      // At the priority of the tests' own processes, which measure it (the tests of the priority ask for its default
      // with ''; the installed service and the benchmarks run with it).
      TUNNELWARD_DAEMON_NICE: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...identity,
  });
}

export async function startDaemon(options: StartOptions = {}): Promise<Daemon> {
  const dataDir = options.dataDir ?? (await tempDir());
  if (options.settingsToml !== undefined) await writeFile(join(dataDir, 'settings.toml'), options.settingsToml);
  const proc = spawnCli(
    ['serve', '--data-dir', dataDir, '--port', '0', ...(options.args ?? [])],
    options.env,
    { uid: options.uid, gid: options.gid, detached: options.ownSession },
    options.wrap,
    options.cli,
  );
  const daemon = new Daemon(proc, dataDir);
  killOnExit(proc);
  collectLines(proc, daemon.output);
  const started = daemon.waitForOutput(/tunnelward listening on (https?:\/\/\S+)/, 20_000);
  const failed = daemon.exited.then(({ code }) => {
    throw new Error(`daemon exited (${code}) before listening:\n${daemon.output.join('\n')}`);
  });
  const match = await Promise.race([started, failed]).catch(async (err: unknown) => {
    // A daemon that never listened leaves no one to remove the data dir made for it.
    await daemon.stop('SIGKILL');
    if (options.dataDir === undefined) await rm(dataDir, { recursive: true, force: true });
    throw err;
  });
  // A daemon listening on every address is reached through loopback.
  daemon.url = match[1]!.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
  return daemon;
}

export function collectLines(proc: ChildProcess, into: string[]): void {
  for (const stream of [proc.stdout, proc.stderr]) {
    let rest = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop()!;
      into.push(...lines);
    });
  }
}

/**
 * Stops the daemon, and the keeper of its tunnels' output it leaves (which writes there), and removes its data dir.
 * The removal is tried again for a moment: a full CI run saw it meet a file written into logs/ while it emptied the
 * dir (ENOTEMPTY), twice in one run, after the keeper was gone. A writer that goes on for longer still fails here.
 */
export async function dispose(daemon: Daemon): Promise<void> {
  await daemon.stop('SIGKILL');
  await stopKeeper(join(daemon.dataDir, 'logs'));
  await rm(daemon.dataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
}

/** A daemon for a whole test file, with a token of its first superuser. */
export async function startWithRoot(options: StartOptions = {}): Promise<{ daemon: Daemon; root: string }> {
  const daemon = await startDaemon(options);
  return { daemon, root: await daemon.login() };
}

/** Stops every instance the daemon runs (so no tunnel outlives the test), then the daemon, and removes its data. */
export async function disposeWithTunnels(daemon: Daemon | undefined, token: string): Promise<void> {
  if (!daemon) return;
  // One request stops them all.
  await daemon.post('/tunnelAct/instanceMgr/stop', { all: true }, { token }).catch(() => undefined);
  await dispose(daemon);
}
