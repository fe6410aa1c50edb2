import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';

/** Rate limits out of the way: the benchmarks measure the daemon, not its limits. */
export const LIFTED = '[RateLimit]\nLogin = 1000000\nPerToken = 1000000\n';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The scale stand-in: the C one when a compiler is at hand (one small process per tunnel), else the shell one
 * (a shell and a sleep per tunnel).
 */
export async function standIn(): Promise<string> {
  const { execFileSync } = await import('node:child_process');
  const { mkdirSync } = await import('node:fs');
  // Under the checkout (.cache, not in git), not /tmp: the daemon runs only programs that only root can change.
  const dir = join(PACKAGE_ROOT, '.cache', 'bench');
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const out = join(dir, 'sleep-and-log');
  try {
    execFileSync('cc', ['-O2', '-o', out, join(PACKAGE_ROOT, 'bench', 'stand-ins', 'sleep-and-log.c')], {
      stdio: 'ignore',
    });
    return out;
  } catch {
    return join(PACKAGE_ROOT, 'bench', 'stand-ins', 'sleep-and-log.sh');
  }
}
export const STAND_IN_MARKER = 'sleep-and-log';
/** Clients starting tunnels at once: each request is sent with a fresh X-Timestamp, as a client pool would. */
export const START_CLIENTS = 500;

/** Runs `jobs` with at most `width` in flight. */
export async function inParallel<T>(count: number, width: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, count) }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await job(i);
      }
    }),
  );
  return results;
}
