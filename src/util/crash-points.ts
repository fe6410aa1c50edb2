/**
 * Named points where a test can make the daemon die of SIGKILL, to prove that every step of a change is safe to
 * be cut off at. `TUNNELWARD_CRASH_AT=<point>[@<instance id or name>]` (read once) kills the daemon when it passes
 * that point (for that instance only, when one is named); unset, a crash point is one comparison.
 */
const [point, only] = (process.env.TUNNELWARD_CRASH_AT ?? '').split('@');

export function crashPoint(name: string, instance: { id: number; name?: string }): void {
  if (name !== point) return;
  if (only === undefined || only === String(instance.id) || only === instance.name)
    process.kill(process.pid, 'SIGKILL');
}
