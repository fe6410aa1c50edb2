// The command-line client as a user runs it: the real binary, against a test daemon, with a config dir of its own.
import { spawn } from 'node:child_process';
import type { ExecutionContext } from 'ava';
import { ADMIN, CLI, tempDir, type Daemon } from './daemon.js';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The real binary, with nothing of the test runner's TUNNELWARD_* variables (and no colour unless `env` asks). With
 * `terminal`, it runs on a pseudo-terminal of its own (util-linux's `script`), as someone at a terminal runs it: its
 * standard output and error are then one stream, given as both (line ends as written).
 */
export function cli(
  args: string[],
  env: Record<string, string> = {},
  input?: string,
  options: { terminal?: boolean } = {},
): Promise<Run> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TUNNELWARD_')));
  const command = [process.execPath, CLI, ...args].map((arg) => `'${arg.replaceAll("'", "'\\''")}'`).join(' ');
  const proc = options.terminal
    ? spawn('script', ['-qefc', command, '/dev/null'], {
        env: { ...base, NO_COLOR: '1', ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
      })
    : spawn(process.execPath, [CLI, ...args], {
        env: { ...base, NO_COLOR: '1', ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  proc.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  proc.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  proc.stdin.end(input);
  return new Promise((resolve) =>
    proc.on('close', (code) => {
      const stdout = Buffer.concat(out).toString();
      if (!options.terminal) return resolve({ code, stdout, stderr: Buffer.concat(err).toString() });
      const merged = stdout.replaceAll('\r\n', '\n');
      resolve({ code, stdout: merged, stderr: merged });
    }),
  );
}

/** A user of the CLI: a config dir of their own (removed when `t` ends), logged in to `daemon`. */
export async function loggedIn(
  daemon: Daemon,
  t: ExecutionContext,
  username = ADMIN.username,
  passwd = ADMIN.passwd,
): Promise<Record<string, string>> {
  const env = { XDG_CONFIG_HOME: await tempDir('tunnelward-cli-', t), TUNNELWARD_URL: daemon.url };
  const run = await cli(['login', '--user', username], { ...env, TUNNELWARD_PASSWORD: passwd });
  if (run.code !== 0) throw new Error(`login failed: ${run.stderr}`);
  return env;
}
