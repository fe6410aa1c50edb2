import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MALLOC_ENVIRONMENT, NODE_FLAGS } from '../../src/system/node-flags.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { enteredChild } from '../../test/helpers/systemd-host.js';

export const ADMIN = { username: 'admin', passwd: 'Bench123!x' };

/**
 * The Node flags the daemon runs with: tunnelward's own, or for comparing flags, the space-separated list in
 * TUNNELWARD_BENCH_NODE_FLAGS (empty for none).
 */
function benchNodeFlags(): string[] {
  const given = process.env.TUNNELWARD_BENCH_NODE_FLAGS;
  return given === undefined ? NODE_FLAGS : given.split(/\s+/).filter(Boolean);
}

/** A real daemon started as a user would, measured from outside. */
export class BenchDaemon {
  url = '';
  token = '';
  /** Lines of standard output, kept for the last few thousand. */
  readonly lines: string[] = [];
  /** The daemon's own pid: the spawned process, or what a wrapper in front of it (nsenter) started. */
  pid = 0;
  private constructor(
    readonly proc: ChildProcess,
    readonly dataDir: string,
  ) {}

  static async start(
    options: {
      dataDir?: string;
      settingsToml?: string;
      env?: Record<string, string>;
      nodeFlags?: string[];
      /** A command prefix the daemon runs under (nsenter into a throwaway systemd's namespaces). */
      wrap?: string[];
    } = {},
  ) {
    const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'tunnelward-bench-')));
    if (options.settingsToml !== undefined) await writeFile(join(dataDir, 'settings.toml'), options.settingsToml);
    const [command, ...prefix] = [...(options.wrap ?? []), process.execPath];
    const proc = spawn(
      command!,
      [
        ...prefix,
        ...benchNodeFlags(),
        ...(options.nodeFlags ?? []),
        join(PACKAGE_ROOT, 'dist/src/cli.js'),
        'serve',
        '--data-dir',
        dataDir,
        '--port',
        '0',
      ],
      {
        // As `npm start` and tunnelward's own unit run it.
        env: {
          ...process.env,
          ...MALLOC_ENVIRONMENT,
          TUNNELWARD_ADMIN_USER: ADMIN.username,
          TUNNELWARD_ADMIN_PASSWORD: ADMIN.passwd,
          ...options.env,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
        // A session of its own, as a service manager starts it (src/system/priority.ts gives such a session its weight).
        detached: true,
      },
    );
    const daemon = new BenchDaemon(proc, dataDir);
    daemon.url = await new Promise<string>((resolve, reject) => {
      let buffer = '';
      proc.stdout!.setEncoding('utf8');
      proc.stdout!.on('data', (chunk: string) => {
        buffer += chunk;
        const parts = buffer.split('\n');
        buffer = parts.pop()!;
        for (const line of parts) {
          daemon.lines.push(line);
          const m = line.match(/tunnelward listening on (http:\/\/\S+)/);
          if (m) resolve(m[1]!);
        }
        if (daemon.lines.length > 20_000) daemon.lines.splice(0, 10_000);
      });
      proc.once('exit', (code) => reject(new Error(`daemon exited with ${code} before listening`)));
    });
    proc.stdout!.resume();
    daemon.pid = options.wrap ? await enteredChild(proc.pid!) : proc.pid!;
    return daemon;
  }

  /** Waits for a line of output that matches, among those not seen by an earlier wait. */
  async waitForLine(pattern: RegExp, timeoutMs: number): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.lines.find((l) => pattern.test(l));
      if (line) {
        this.lines.splice(0, this.lines.indexOf(line) + 1);
        return line;
      }
      if (Date.now() > deadline) throw new Error(`no daemon output matched ${pattern}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  headers(): Record<string, string> {
    return { 'X-Token': this.token, 'X-Timestamp': String(Date.now()) };
  }

  async call(method: string, path: string, body?: unknown): Promise<any> {
    const res = await fetch(this.url + path, {
      method,
      headers: { ...this.headers(), ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return res.json();
  }

  async login(): Promise<string> {
    const res = await this.call('POST', '/login', ADMIN);
    if (!res.success) throw new Error(`login failed: ${res.message}`);
    this.token = res.data.token;
    return this.token;
  }

  /**
   * A POST on a connection of its own whose X-Timestamp is taken when the connection is up, as a client sending
   * it then would: a thousand requests at once must not age in the client's own queue.
   */
  post(path: string, body: unknown): Promise<any> {
    const data = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(this.url + path, {
        method: 'POST',
        agent: false,
        headers: {
          'X-Token': this.token,
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(data),
        },
      });
      req.on('socket', (socket) => {
        const send = () => {
          req.setHeader('X-Timestamp', String(Date.now()));
          req.end(data);
        };
        if (socket.connecting) socket.once('connect', send);
        else send();
      });
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve(JSON.parse(text)));
      });
      req.on('error', reject);
    });
  }

  /** Resident memory of the daemon process, in MiB. */
  async rssMiB(): Promise<number> {
    const status = await readFile(`/proc/${this.pid}/status`, 'utf8');
    return Number(status.match(/^VmRSS:\s+(\d+)/m)![1]) / 1024;
  }

  async openFds(): Promise<number> {
    return (await readdir(`/proc/${this.pid}/fd`)).length;
  }

  /** CPU seconds (user + system) the daemon has used so far. */
  async cpuSeconds(): Promise<number> {
    const stat = await readFile(`/proc/${this.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (this.proc.exitCode !== null) return;
    const exited = new Promise((r) => this.proc.once('exit', r));
    // Signalled itself: a wrapper in front of it would not pass the signal on.
    process.kill(this.pid, signal);
    await exited;
  }

  async remove(): Promise<void> {
    await rm(this.dataDir, { recursive: true, force: true });
  }
}
