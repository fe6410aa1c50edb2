/**
 * The one way tests wait: for a condition, never for a fixed time. Probes every `everyMs` until `check` holds for
 * what `probe` gives, and returns that; past `timeoutMs` it fails, saying what it waited for and what it saw last.
 */
export async function until<T>(
  probe: () => T | Promise<T>,
  check: (value: T) => boolean,
  options: { timeoutMs?: number; everyMs?: number; what?: string } = {},
): Promise<T> {
  const { timeoutMs = 10_000, everyMs = 50, what = 'a condition' } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (check(value)) return value;
    if (Date.now() > deadline) {
      let seen: string;
      try {
        seen = JSON.stringify(value)?.slice(0, 500) ?? String(value);
      } catch {
        seen = String(value);
      }
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last value ${seen}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * That nothing happens for `ms`: the one fixed wait tests have, for a check that something did not happen (a retry
 * that must not come, a line that must not be sent). Say what must not happen.
 */
export const quietFor = (ms: number, _mustNotHappen: string): Promise<void> => new Promise((r) => setTimeout(r, ms));
