/**
 * Named points where a test can make the daemon die of SIGKILL, to prove that every step of a change is safe to
 * be cut off at. `TUNNELWARD_CRASH_AT=<point>[@<id or name>]` (read once) kills the daemon when it passes that
 * point (for that subject only, when one is named: an instance, or an event's seq); unset, a crash point is one
 * comparison. The daemon says on standard error where it dies (a pipe's write is synchronous: it is not lost).
 */
const [point, only] = (process.env.TUNNELWARD_CRASH_AT ?? '').split('@');

export function crashPoint(name: string, subject: { id: number; name?: string }): void {
  if (name !== point) return;
  if (only === undefined || only === String(subject.id) || only === subject.name) {
    process.stderr.write(`tunnelward: crash point ${name} reached (${subject.id})\n`);
    process.kill(process.pid, 'SIGKILL');
  }
}
