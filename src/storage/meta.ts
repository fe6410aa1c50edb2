import type { Database } from './database.js';

/** Small named values kept in the `meta` table (the boot id, counters). Callers persist after setting. */
export function getMeta(db: Database, key: string): string | undefined {
  return db.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', [key])?.value;
}

export function setMeta(db: Database, key: string, value: string): void {
  db.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value', [
    key,
    value,
  ]);
}

/** Counts the daemon's starts under `key`: returns this start's number, once it is on disk. */
export async function countStart(db: Database, key: string): Promise<number> {
  const n = Number(getMeta(db, key) ?? 0) + 1;
  setMeta(db, key, String(n));
  await db.persist();
  return n;
}

/** Numbers a counter sets aside at a time: the database is written once per this many, not once per number. */
const COUNTER_BLOCK = 1000;
/** When fewer than this many are left of what is set aside, the next block is set aside (and saved) ahead of use. */
const COUNTER_LOW_WATER = COUNTER_BLOCK / 2;
/** How soon a reservation whose save failed is tried again. */
const COUNTER_RETRY_MS = 1000;

/**
 * A counter that only goes up, across restarts too: each value is handed out once. What is stored is the end of
 * the numbers set aside; a number may leave the process (be shown to anyone) only once `saved(n)` says its block is
 * on disk, so a restart, or a kill -9 at any point, goes on above every number shown: a gap, never a repeat. The
 * next block is set aside while half of the current one is left, so in steady use nobody waits.
 */
export class PersistentCounter {
  private value: number;
  /** The end of the numbers set aside (in the database, maybe not yet on disk). */
  private reserved: number;
  /** The end of the numbers set aside that are on disk. */
  private durable: number;
  private saving = false;
  private retry: NodeJS.Timeout | undefined;
  private waiters: Array<{ n: number; resolve: () => void }> = [];

  constructor(
    private readonly db: Database,
    private readonly key: string,
  ) {
    this.value = Number(getMeta(db, key) ?? 0);
    this.reserved = this.value;
    this.durable = this.value;
    this.reserve();
  }

  /** The last value handed out. */
  get current(): number {
    return this.value;
  }

  readonly next = (): number => {
    this.value++;
    if (this.reserved - this.value < COUNTER_LOW_WATER) this.reserve();
    return this.value;
  };

  /** Nothing when `n` may be shown now; otherwise a promise of when it may (its block is on its way to disk). */
  saved(n: number): Promise<void> | undefined {
    if (n <= this.durable) return undefined;
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  private reserve(): void {
    this.reserved = this.value + COUNTER_BLOCK;
    // Written after whatever transaction is under way (they are synchronous), so that its rollback cannot undo it.
    queueMicrotask(() => this.save());
  }

  private save(): void {
    if (this.saving || this.db.isClosed) return;
    this.saving = true;
    clearTimeout(this.retry);
    const upTo = this.reserved;
    setMeta(this.db, this.key, String(upTo));
    this.db.persist().then(
      () => {
        this.saving = false;
        this.durable = Math.max(this.durable, upTo);
        const ready = this.waiters.filter((w) => w.n <= this.durable);
        this.waiters = this.waiters.filter((w) => w.n > this.durable);
        for (const w of ready) w.resolve();
        // Set aside further while this save was on its way.
        if (this.reserved > this.durable) this.save();
      },
      () => {
        // The database reports the fault; numbers wait for the next write that succeeds.
        this.saving = false;
        if (this.db.isClosed) return;
        this.retry = setTimeout(() => this.save(), COUNTER_RETRY_MS);
        this.retry.unref();
      },
    );
  }
}
