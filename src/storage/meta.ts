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

/** Numbers a counter sets aside at a time: the database is written once per this many, not once per number. */
const COUNTER_BLOCK = 1000;

/**
 * A counter that only goes up, across restarts too: each value is handed out once. What is stored is the end of
 * the block of numbers set aside, so a restart (or a crash) goes on after that block: a gap, never a repeat.
 */
export class PersistentCounter {
  private value: number;
  private reserved: number;

  constructor(
    private readonly db: Database,
    private readonly key: string,
  ) {
    this.value = Number(getMeta(db, key) ?? 0);
    this.reserved = this.value;
  }

  /** The last value handed out. */
  get current(): number {
    return this.value;
  }

  readonly next = (): number => {
    this.value++;
    if (this.value > this.reserved) {
      this.reserved = this.value + COUNTER_BLOCK - 1;
      setMeta(this.db, this.key, String(this.reserved));
      // Group commit carries it with the next write; a crash before that could only repeat numbers never sent.
      void this.db.persist().catch(() => {});
    }
    return this.value;
  };
}
