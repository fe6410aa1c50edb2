/**
 * Fixed-window request counter per key: at most `limit()` hits per window; past that the key is refused until
 * its window ends. Memory is bounded by the keys seen in one window (idle windows are swept).
 */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; hits: number }>();

  constructor(
    private readonly limit: () => number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts a hit; returns 0 when allowed, else the milliseconds until the key may try again. */
  hit(key: string, limit = this.limit()): number {
    const now = this.now();
    let w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs) {
      w = { start: now, hits: 0 };
      this.windows.set(key, w);
    }
    w.hits++;
    return w.hits <= limit ? 0 : w.start + this.windowMs - now;
  }

  /** Drops windows that have ended. */
  sweep(): void {
    const now = this.now();
    for (const [key, w] of this.windows) if (now - w.start >= this.windowMs) this.windows.delete(key);
  }

  get size(): number {
    return this.windows.size;
  }
}
