import { readFile } from 'node:fs/promises';
import initSqlJs, { type BindParams, type Database as SqlJsDatabase, type Statement } from 'sql.js';
import { internal } from '../errors.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { MIGRATIONS } from './migrations.js';

type Row = Record<string, number | string | Uint8Array | null>;

interface Waiter {
  generation: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * Frees a snapshot's memory soon instead of at the next full collection. A snapshot (the whole file, ~0.5 MiB with
 * 1000 instances) outlives the young generation while it is written, and during a burst one follows another:
 * hundreds of them waited, dead, for a full collection, tens of MiB at a time. Its memory moves to a new buffer
 * that nothing holds, which the next young collection frees (sql.js makes a new buffer for each export; the
 * database tests take several snapshots in a row, so a version that reused one would fail them).
 */
function release(bytes: Uint8Array): void {
  structuredClone(bytes.buffer, { transfer: [bytes.buffer as ArrayBuffer] });
}

/**
 * The sql.js database, held in memory and persisted to a real SQLite file.
 *
 * Every mutation is followed by `persist()`, which resolves once a snapshot that includes it is on disk
 * (written to a temp file, fsynced, renamed). Group commit: mutations made while a snapshot is being written
 * share the next one, so a burst of changes costs a couple of writes, not one each.
 */
export class Database {
  private readonly statements = new Map<string, Statement>();
  /** Column names of each prepared statement, read once. */
  private readonly columns = new WeakMap<Statement, string[]>();
  /** Bumped by every mutation; a snapshot taken at generation N holds every mutation up to N. */
  private generation = 0;
  private durableGeneration = 0;
  private writing: Promise<void> | null = null;
  private waiters: Waiter[] = [];
  private closed = false;
  /** Snapshots written so far, and the size and duration of the last one. */
  readonly stats = { snapshots: 0, lastBytes: 0, lastMs: 0 };
  /** Why the last snapshot failed, while no later one has succeeded: changes are in memory, not yet on disk. */
  failing: { since: number; reason: string } | undefined;

  private constructor(
    private readonly db: SqlJsDatabase,
    readonly path: string,
  ) {}

  static async open(path: string): Promise<Database> {
    const SQL = await initSqlJs();
    let bytes: Uint8Array | null = null;
    try {
      bytes = await readFile(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    let db: SqlJsDatabase;
    try {
      db = new SQL.Database(bytes);
      db.exec('PRAGMA foreign_keys = ON');
      // The file lives in sql.js's memory and reaches disk only through our atomic snapshots: no other process
      // shares it, so hold the lock for good (SQLite then skips its hot-journal check on every read) and keep the
      // rollback journal in memory.
      db.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF');
      db.exec('PRAGMA user_version');
    } catch (err) {
      throw new Error(`${path} is not a readable SQLite database: ${(err as Error).message}`, { cause: err });
    }
    const database = new Database(db, path);
    const applied = database.migrate();
    if (applied > 0 || bytes === null) await database.persist();
    return database;
  }

  /** Applies the migrations this file has not seen; returns how many ran. */
  private migrate(): number {
    const version = Number(this.db.exec('PRAGMA user_version')[0]?.values[0]?.[0] ?? 0);
    if (version > MIGRATIONS.length) {
      throw new Error(
        `${this.path} has schema version ${version}, newer than this tunnelward knows (${MIGRATIONS.length})`,
      );
    }
    for (let v = version; v < MIGRATIONS.length; v++) {
      this.transaction(() => {
        this.db.exec(MIGRATIONS[v]!);
        this.db.exec(`PRAGMA user_version = ${v + 1}`);
      });
    }
    return MIGRATIONS.length - version;
  }

  private statement(sql: string): Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  get<T = Row>(sql: string, params: BindParams = []): T | undefined {
    const stmt = this.statement(sql);
    try {
      stmt.bind(params);
      return stmt.step() ? (this.row(stmt) as T) : undefined;
    } finally {
      stmt.reset();
    }
  }

  all<T = Row>(sql: string, params: BindParams = []): T[] {
    const stmt = this.statement(sql);
    const rows: T[] = [];
    try {
      stmt.bind(params);
      while (stmt.step()) rows.push(this.row(stmt) as T);
    } finally {
      stmt.reset();
    }
    return rows;
  }

  /** The current row as an object; several times faster than sql.js's getAsObject (which matters at start-up). */
  private row(stmt: Statement): Row {
    const values = stmt.get();
    let names = this.columns.get(stmt);
    if (!names) {
      names = stmt.getColumnNames();
      this.columns.set(stmt, names);
    }
    const row: Row = {};
    for (let i = 0; i < names.length; i++) row[names[i]!] = values[i]!;
    return row;
  }

  /** Runs a mutation; returns the number of rows it changed. Call `persist()` before acknowledging it. */
  run(sql: string, params: BindParams = []): number {
    const stmt = this.statement(sql);
    try {
      stmt.run(params);
    } finally {
      stmt.reset();
    }
    this.generation++;
    return this.db.getRowsModified();
  }

  lastInsertRowid(): number {
    return Number(this.db.exec('SELECT last_insert_rowid()')[0]!.values[0]![0]);
  }

  /** Runs `fn` inside a transaction: all of it or none of it. */
  transaction<T>(fn: () => T): T {
    this.db.exec('BEGIN');
    try {
      const result = fn();
      this.db.exec('COMMIT');
      this.generation++;
      return result;
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Resolves when every mutation made so far is durable on disk. */
  persist(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('database is closed'));
    const generation = this.generation;
    if (generation <= this.durableGeneration) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiters.push({ generation, resolve, reject });
      if (!this.writing) this.writing = this.writeLoop();
    });
  }

  private async writeLoop(): Promise<void> {
    // A persist asked for inside a transaction (a counter bumped by an event it raises) starts after it: a
    // snapshot is never taken halfway through one.
    await Promise.resolve();
    try {
      while (this.waiters.length > 0) {
        const generation = this.generation;
        const started = performance.now();
        const snapshot = this.db.export();
        const bytes = snapshot.length;
        try {
          await writeFileAtomic(this.path, snapshot, { mode: 0o600 }).finally(() => release(snapshot));
          this.durableGeneration = generation;
          this.failing = undefined;
          this.stats.snapshots++;
          this.stats.lastBytes = bytes;
          this.stats.lastMs = performance.now() - started;
          this.settle(
            (w) => w.generation <= generation,
            (w) => w.resolve(),
          );
        } catch (err) {
          // Everyone waiting on this snapshot learns it failed; later changes get a fresh attempt, which also
          // carries these ones (they stay in memory), so nothing is lost unless the daemon dies first.
          const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
          this.failing ??= { since: Date.now(), reason };
          const failure = internal(
            `the change is made but not yet saved to disk (${reason}); it is saved with the next write that succeeds`,
          );
          this.settle(
            (w) => w.generation <= generation,
            (w) => w.reject(failure),
          );
        }
      }
    } finally {
      this.writing = null;
    }
  }

  private settle(match: (w: Waiter) => boolean, fn: (w: Waiter) => void): void {
    const done = this.waiters.filter(match);
    this.waiters = this.waiters.filter((w) => !match(w));
    for (const w of done) fn(w);
  }

  /** Writes what is pending and closes the database. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.persist();
    if (this.writing) await this.writing;
    this.closed = true;
    for (const stmt of this.statements.values()) stmt.free();
    this.statements.clear();
    this.db.close();
  }
}
