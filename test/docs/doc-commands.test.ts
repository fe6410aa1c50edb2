// Every command README.md and docs/*.md show is run here, as a reader would type it, against a real daemon with a
// data dir of its own (the blocks and their marks: test/docs/doc-blocks.ts). A file that lands in docs/ is picked up.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test, { type ExecutionContext } from 'ava';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { liveProcesses } from '../../src/system/proc.js';
import { CLI, dispose, programDir, startDaemon, type Daemon } from '../helpers/daemon.js';
import { freePort, REAL_FRPC } from '../helpers/frp.js';
import { until } from '../helpers/until.js';
import { missingLine, shellBlocks, type Block, type Command } from './doc-blocks.js';

const run = promisify(execFile);

const DOCS = [
  'README.md',
  ...readdirSync(join(PACKAGE_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];

/** The ports the docs name: the daemon's default, and those of the walk's server, tunnel and service. */
const DOC_PORTS = [7600, 7000, 6000, 8000];
const COMMAND_TIMEOUT_MS = 180_000;
const RETRY_MS = 30_000;

interface Output {
  code: number | null;
  output: string;
}

/** Go's caches as the test setup filled them, kept when HOME changes (frp install builds from them). */
async function goEnv(): Promise<Record<string, string>> {
  try {
    const { stdout } = await run('go', ['env', 'GOCACHE', 'GOMODCACHE', 'GOPATH']);
    const [GOCACHE, GOMODCACHE, GOPATH] = stdout.trim().split('\n');
    return { GOCACHE: GOCACHE!, GOMODCACHE: GOMODCACHE!, GOPATH: GOPATH! };
  } catch {
    return {};
  }
}

/** A reader's machine for one file: a home (a root-owned dir, so frp may be installed there), a daemon, the ports. */
class Reader {
  private readonly jobs: ChildProcess[] = [];
  /** The variables bash has by itself, which a command's state leaves out. */
  private baseline = '';

  private constructor(
    readonly home: string,
    readonly daemon: Daemon,
    readonly ports: Map<number, number>,
    readonly env: Record<string, string>,
  ) {}

  static async start(): Promise<Reader> {
    const home = await programDir('doc-');
    await mkdir(join(home, 'bin'));
    await writeFile(join(home, 'bin', 'tunnelward'), `#!/bin/sh\nexec '${process.execPath}' '${CLI}' "$@"\n`);
    await chmod(join(home, 'bin', 'tunnelward'), 0o755);
    const dataDir = join(home, 'data');
    await mkdir(dataDir, { mode: 0o711 });
    let daemon: Daemon | undefined;
    try {
      // No admin password given: the first start makes one and keeps it in data/initial-admin-password.
      daemon = await startDaemon({
        dataDir,
        settingsToml: `TunnelPath = ${JSON.stringify(REAL_FRPC)}\n`,
        env: { TUNNELWARD_ADMIN_PASSWORD: undefined },
      });
      const ports = new Map([[7600, Number(new URL(daemon.url).port)]]);
      for (const port of DOC_PORTS.slice(1)) ports.set(port, await freePort());
      const base = Object.fromEntries(
        Object.entries(process.env).filter(([key, value]) => !key.startsWith('TUNNELWARD_') && value !== undefined),
      ) as Record<string, string>;
      const env = {
        ...base,
        ...(await goEnv()),
        PATH: `${join(home, 'bin')}:${process.env.PATH}`,
        HOME: home,
        XDG_CONFIG_HOME: join(home, '.config'),
        TUNNELWARD_URL: daemon.url,
        NO_COLOR: '1',
      };
      const reader = new Reader(home, daemon, ports, env);
      reader.baseline = (await run('bash', ['-c', 'compgen -v'], { env })).stdout.split('\n').join(' ');
      // As a reader who took the README's first steps: logged in as the first superuser.
      const login = await reader.exec('tunnelward login --user admin < data/initial-admin-password');
      if (login.code !== 0) throw new Error(`login failed: ${login.output}`);
      return reader;
    } catch (err) {
      if (daemon) await dispose(daemon);
      await rm(home, { recursive: true, force: true });
      throw err;
    }
  }

  /** The docs' ports replaced by this reader's. */
  localize(text: string): string {
    let out = text;
    for (const [from, to] of this.ports) out = out.replace(new RegExp(`(?<![\\d.])${from}(?![\\d])`, 'g'), String(to));
    return out;
  }

  /**
   * One command in bash, as in one shell session: the variables and functions earlier commands made are there, and
   * those it makes are kept for the next (a reader's `TOKEN=$(...)`).
   */
  exec(command: string): Promise<Output> {
    const state = join(this.home, '.doc-shell-state');
    const script = [
      `[ -f ${state} ] && . ${state}`,
      command,
      '__doc_rc=$?',
      `{ for __doc_v in $(compgen -v); do case " ${this.baseline} " in *" $__doc_v "*) ;; __doc_*) ;; *) declare -p "$__doc_v" ;; esac; done; declare -f; } > ${state} 2>/dev/null`,
      'exit $__doc_rc',
    ].join('\n');
    return new Promise((resolve) => {
      const proc = spawn('bash', ['-o', 'pipefail', '-c', script], {
        cwd: this.home,
        env: this.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const chunks: Buffer[] = [];
      proc.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
      proc.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
      const timer = setTimeout(() => proc.kill('SIGKILL'), COMMAND_TIMEOUT_MS);
      proc.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, output: Buffer.concat(chunks).toString() });
      });
    });
  }

  background(command: string): void {
    const state = join(this.home, '.doc-shell-state');
    const proc = spawn('bash', ['-c', `[ -f ${state} ] && . ${state}\nexec ${command.replace(/&\s*$/, '')}`], {
      cwd: this.home,
      env: this.env,
      stdio: 'ignore',
      detached: true,
    });
    this.jobs.push(proc);
  }

  /** Every job, the daemon, and the tunnels it left (frpc outlives a killed daemon: it runs from data/). */
  async close(): Promise<void> {
    for (const job of this.jobs) {
      try {
        process.kill(-job.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await dispose(this.daemon);
    const left = liveProcesses((args) => (args.some((arg) => arg.includes(this.home)) ? 'left' : undefined));
    for (const { pid } of left.get('left') ?? []) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
    }
    await rm(this.home, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  }
}

async function runCommand(t: ExecutionContext, reader: Reader, where: string, block: Block, command: Command) {
  const text = reader.localize(command.text);
  if (command.background) {
    reader.background(text);
    t.log(`${where}: $ ${command.text} (in the background)`);
    return;
  }
  const expected = command.expected.map((line) => reader.localize(line));
  const attempt = async () => {
    const result = await reader.exec(text);
    return { ...result, missing: missingLine(expected, result.output) };
  };
  const passes = (r: Output & { missing?: string }) => r.code === block.exit && r.missing === undefined;
  const result = block.retry
    ? await until(attempt, passes, { timeoutMs: RETRY_MS, everyMs: 250, what: `${where}: ${command.text}` }).catch(() =>
        attempt(),
      )
    : await attempt();
  const said = `${where}: $ ${command.text}\n${result.output}`;
  // What each command printed, to write its expected lines from: TUNNELWARD_DOCTEST_SHOW=1.
  if (process.env.TUNNELWARD_DOCTEST_SHOW) t.log(said);
  t.is(result.code, block.exit, said);
  t.is(result.missing, undefined, `${said}\nexpected this line, in order: ${result.missing}`);
}

for (const file of DOCS) {
  test.serial(`${file}: every command it shows runs as shown`, async (t) => {
    t.timeout(600_000);
    const blocks = shellBlocks(await readFile(join(PACKAGE_ROOT, file), 'utf8'));
    const unmarked = blocks
      .filter((block) => block.lang !== 'console' && block.skip === undefined)
      .map((block) => `${file}:${block.line}: a ${block.lang} block`);
    t.deepEqual(
      unmarked,
      [],
      'show its commands as a console block ($ lines), or mark it <!-- doctest: skip REASON -->',
    );
    const runnable = blocks.filter((block) => !block.skip && block.commands.some((c) => !c.notRun));
    for (const block of blocks.filter((b) => b.skip)) t.log(`${file}:${block.line}: not run: ${block.skip}`);
    if (runnable.length === 0) return;
    const reader = await Reader.start();
    t.teardown(() => reader.close());
    for (const block of runnable) {
      for (const command of block.commands) {
        const where = `${file}:${command.line}`;
        if (command.notRun) t.log(`${where}: not run: ${command.notRun}`);
        else await runCommand(t, reader, where, block, command);
      }
    }
  });
}
