import type { ChildProcess } from 'node:child_process';

/**
 * Processes a test starts (daemons, frps) that are still running when the test file's process exits: killed then,
 * whatever the test did (a hook that failed before its teardown was registered would otherwise leave them for good).
 */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const proc of running) {
    try {
      process.kill(proc.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
  }
});

/** `proc` is killed when this process exits, unless it ended before. */
export function killOnExit(proc: ChildProcess): void {
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
}
