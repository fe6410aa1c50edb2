import { spawn } from 'node:child_process';
import { CLI } from './daemon.js';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The real binary, with its own config dir and nothing of the test runner's TUNNELWARD_* variables. */
export function cli(args: string[], env: Record<string, string> = {}, input?: string): Promise<Run> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TUNNELWARD_')));
  const proc = spawn(process.execPath, [CLI, ...args], {
    env: { ...base, NO_COLOR: '1', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  proc.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  proc.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  proc.stdin.end(input);
  return new Promise((resolve) =>
    proc.on('close', (code) =>
      resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }),
    ),
  );
}
