/**
 * Wraps a job so that calls share runs: a call while no run is under way starts one; calls while one runs share
 * the single next run, which starts after it. Every caller's call is followed by a whole run that began after it
 * (what a `systemctl daemon-reload` after a unit write needs), however many callers there are.
 */
export function coalesce(job: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const start = (): Promise<void> => {
    const run = job().finally(() => {
      if (running === run) running = undefined;
    });
    running = run;
    return run;
  };
  return () => {
    if (next) return next;
    if (!running) return start();
    const after = running
      .catch(() => {})
      .then(() => {
        next = undefined;
        return start();
      });
    next = after;
    return after;
  };
}
