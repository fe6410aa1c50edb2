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

/** A counter that only goes up, across restarts too: each value is handed out once. */
export class PersistentCounter {
  private value: number;

  constructor(
    private readonly db: Database,
    private readonly key: string,
  ) {
    this.value = Number(getMeta(db, key) ?? 0);
  }

  /** The last value handed out. */
  get current(): number {
    return this.value;
  }

  readonly next = (): number => {
    this.value++;
    setMeta(this.db, this.key, String(this.value));
    // Group commit carries it with the next write; a crash before that could only repeat numbers never sent.
    void this.db.persist().catch(() => {});
    return this.value;
  };
}
