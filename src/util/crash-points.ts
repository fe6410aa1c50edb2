/**
 * Named points where a test can make the daemon die of SIGKILL, to prove that every step of a change is safe to
 * be cut off at. `TUNNELWARD_CRASH_AT=<point>[#<n>]` (read once) kills the daemon the n-th time (default the first)
 * it passes that point; unset, a crash point is one comparison.
 */
const [point, nth] = (process.env.TUNNELWARD_CRASH_AT ?? '').split('#');
let remaining = Number(nth ?? 1);

export function crashPoint(name: string): void {
  if (name !== point) return;
  if (--remaining === 0) process.kill(process.pid, 'SIGKILL');
}
