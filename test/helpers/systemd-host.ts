import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';

const HOST_SCRIPT = join(PACKAGE_ROOT, 'test', 'systemd', 'host.sh');

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * A throwaway real systemd (test/systemd/host.sh) in namespaces of its own: commands run inside it through
 * nsenter, and it is powered off when `shutdown` closes the script's standard input (or when this process ends).
 */
export class SystemdHost {
  private constructor(
    private readonly proc: ChildProcess,
    /** The host's pid of that systemd (PID 1 inside). */
    readonly pid: number,
    private readonly exited: Promise<void>,
  ) {}

  /** `logTarget`: where PID 1 logs (host.sh's default: the journal). */
  static async boot(options: { logTarget?: 'console' } = {}): Promise<SystemdHost> {
    const env = options.logTarget ? { ...process.env, TUNNELWARD_SYSTEMD_LOG_TARGET: options.logTarget } : undefined;
    const proc = spawn(HOST_SCRIPT, [], { stdio: ['pipe', 'pipe', 'pipe'], env });
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    let out = '';
    let err = '';
    proc.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const pid = await new Promise<number>((resolve, reject) => {
      proc.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const m = /^ready (\d+)$/m.exec(out);
        if (m) resolve(Number(m[1]));
      });
      void exited.then(() => reject(new Error(`no systemd could be booted (${proc.exitCode}): ${err.trim()}`)));
    });
    return new SystemdHost(proc, pid, exited);
  }

  /** The command prefix that runs a program inside (its pid, mount, cgroup, uts and ipc namespaces). */
  get enter(): string[] {
    return ['nsenter', '-t', String(this.pid), '-a', `--wd=${process.cwd()}`];
  }

  run(...args: string[]): Promise<Run> {
    const [file, ...rest] = [...this.enter, ...args];
    return new Promise((resolve, reject) => {
      execFile(file!, rest, { timeout: 30_000 }, (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') return reject(err);
        resolve({ code: err ? (err.code as number) : 0, stdout, stderr });
      });
    });
  }

  systemctl(...args: string[]): Promise<Run> {
    return this.run('systemctl', ...args);
  }

  /** A unit's properties as systemd has them (`systemctl show -p`). */
  async show(unit: string, ...properties: string[]): Promise<Record<string, string>> {
    const { stdout } = await this.systemctl('show', `--property=${properties.join(',')}`, unit);
    return Object.fromEntries(
      stdout
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
  }

  /** A file as processes inside see it (their mount namespace: /etc/systemd/system is theirs alone). */
  readFile(path: string): Promise<string> {
    return readFile(`/proc/${this.pid}/root${path}`, 'utf8');
  }

  async shutdown(): Promise<void> {
    this.proc.stdin!.end();
    await this.exited;
  }
}

/** The process that a program started through `enter` became (nsenter forks it into the pid namespace). */
export async function enteredChild(nsenterPid: number): Promise<number> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const children = await readFile(`/proc/${nsenterPid}/task/${nsenterPid}/children`, 'utf8').catch(() => '');
    const first = Number(children.trim().split(' ')[0]);
    if (first > 0) return first;
    if (Date.now() > deadline) throw new Error(`nsenter ${nsenterPid} has no child`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
