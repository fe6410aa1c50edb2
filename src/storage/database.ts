import { readFile } from 'node:fs/promises';
import initSqlJs, { type BindParams, type Database as SqlJsDatabase, type Statement } from 'sql.js';
import { internal } from '../errors.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { DEFAULTS } from '../settings/defaults.js';
import { crashPoint } from '../util/crash-points.js';
import { encodeRecord, encodeStatement, JournalFile, scanJournal, type JournalRecord } from './journal.js';
import { getMeta } from './meta.js';
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

/** The meta row that says which journal records a snapshot holds (all up to this number). */
const SNAPSHOT_RECORD_KEY = 'journal_record';

export interface DatabaseOptions {
  /** The journal is folded into a new snapshot once it holds this many bytes. */
  journalBytes?: number;
}

/**
 * The sql.js database, held in memory and persisted to a real SQLite file (the snapshot) and a journal beside it
 * (`<file>.journal`, see journal.ts).
 *
 * Every mutation is followed by `persist()`, which resolves once it is on disk: appended to the journal as part of
 * one record and fsynced. Group commit: mutations made while a record is being written share the next one, so a
 * burst of changes costs a couple of writes, not one each. Each write costs what changed, whatever the size of the
 * database; once the journal passes `journalBytes` the whole database is written instead (temp file, fsync, rename)
 * with the number of the last record it holds, and the journal is emptied. Opening loads the snapshot and applies
 * the journal's records after that number. The statements the stores run bind every value computed in JS (times
 * included) and depend on nothing but the rows, so applying them again gives the same rows, ids included.
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
  /** Statements committed since the last record was cut (JSON text each), and their size. */
  private pending: string[] = [];
  private pendingBytes = 0;
  /** Statements of the transaction under way: they join `pending` at its commit, and are dropped at a rollback. */
  private inTransaction: string[] | null = null;
  /** The next write is a snapshot: the journal may hold a damaged record, or what is pending was not kept. */
  private snapshotDue = false;
  /** Number of the last journal record written (or attempted): the next one is numbered above it. */
  private lastRecord = 0;
  /** Records appended and snapshots written by this process: the subjects of the crash points. */
  private appended = 0;
  private snapshotted = 0;
  /** Writes so far, the size and duration of the last one, and the journal's size. */
  readonly stats = { snapshots: 0, records: 0, lastBytes: 0, lastMs: 0, journalBytes: 0 };
  /** What opening found in the journal: records applied, and bytes past the last whole record (cut off). */
  readonly recovered = { records: 0, ignoredBytes: 0 };
  /** Why the last write failed, while no later one has succeeded: changes are in memory, not yet on disk. */
  failing: { since: number; reason: string } | undefined;

  private constructor(
    private readonly db: SqlJsDatabase,
    readonly path: string,
    private readonly journal: JournalFile,
    private readonly journalBytes: number,
  ) {}

  static async open(path: string, options: DatabaseOptions = {}): Promise<Database> {
    const SQL = await initSqlJs();
    let bytes: Uint8Array | null = null;
    try {
      bytes = await readFile(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const journal = new JournalFile(`${path}.journal`);
    // Without its snapshot a journal belongs to no database: the first snapshot of the new one empties it.
    const found = bytes === null ? Buffer.alloc(0) : await journal.read();
    let db: SqlJsDatabase;
    try {
      db = new SQL.Database(bytes);
      db.exec('PRAGMA foreign_keys = ON');
      // The file lives in sql.js's memory and reaches disk only through our snapshots and journal: no other process
      // shares it, so hold the lock for good (SQLite then skips its hot-journal check on every read) and keep the
      // rollback journal in memory.
      db.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF');
      db.exec('PRAGMA user_version');
    } catch (err) {
      throw new Error(`${path} is not a readable SQLite database: ${(err as Error).message}`, { cause: err });
    }
    const database = new Database(db, path, journal, options.journalBytes ?? DEFAULTS.databaseJournalBytes);
    database.refuseNewer();
    // Records first: they were written by statements of the schema the snapshot has.
    database.replay(found);
    const applied = database.migrate();
    if (applied > 0 || bytes === null) await database.checkpoint();
    else if (database.recovered.ignoredBytes > 0) await journal.truncate(journal.size);
    return database;
  }

  /** Applies the journal's records that the snapshot does not hold, each whole or not at all. */
  private replay(found: Buffer): void {
    // A file not yet migrated (new, or from a newer tunnelward) has no meta table, and no journal to go with it.
    const hasMeta = this.get("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'") !== undefined;
    const held = hasMeta ? Number(getMeta(this, SNAPSHOT_RECORD_KEY) ?? 0) : 0;
    // Records go on numbering above what the snapshot holds, even with an empty journal.
    this.lastRecord = held;
    const valid = scanJournal(found, (record) => {
      if (record.number <= held) return true;
      // A gap: what follows was written after records that are lost, and cannot apply.
      if (record.number !== this.lastRecord + 1) return false;
      this.apply(record);
      this.lastRecord = record.number;
      this.recovered.records++;
      return true;
    });
    this.journal.size = valid;
    this.stats.journalBytes = valid;
    this.recovered.ignoredBytes = found.length - valid;
  }

  private apply(record: JournalRecord): void {
    this.db.exec('BEGIN');
    try {
      for (const [sql, params] of record.statements) {
        const stmt = this.statement(sql);
        try {
          stmt.run(params);
        } finally {
          stmt.reset();
        }
      }
      this.db.exec('COMMIT');
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw new Error(`${this.journal.path}: record ${record.number} does not apply: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  private get version(): number {
    return Number(this.db.exec('PRAGMA user_version')[0]?.values[0]?.[0] ?? 0);
  }

  private refuseNewer(): void {
    if (this.version > MIGRATIONS.length) {
      throw new Error(
        `${this.path} has schema version ${this.version}, newer than this tunnelward knows (${MIGRATIONS.length})`,
      );
    }
  }

  /** Applies the migrations this file has not seen; returns how many ran. */
  private migrate(): number {
    const version = this.version;
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
    this.keep(encodeStatement(sql, params));
    return this.db.getRowsModified();
  }

  /** Keeps a statement that ran for the next journal record; past the journal's size, a snapshot holds it instead. */
  private keep(statement: string): void {
    if (this.snapshotDue) return;
    if (this.pendingBytes + statement.length > this.journalBytes) {
      this.snapshotDue = true;
      this.pending = [];
      this.pendingBytes = 0;
      if (this.inTransaction) this.inTransaction = [];
      return;
    }
    (this.inTransaction ?? this.pending).push(statement);
    this.pendingBytes += statement.length;
  }

  lastInsertRowid(): number {
    return Number(this.db.exec('SELECT last_insert_rowid()')[0]!.values[0]![0]);
  }

  /** Runs `fn` inside a transaction: all of it or none of it. */
  transaction<T>(fn: () => T): T {
    this.db.exec('BEGIN');
    const pendingBytes = this.pendingBytes;
    this.inTransaction = [];
    try {
      const result = fn();
      this.db.exec('COMMIT');
      this.generation++;
      if (!this.snapshotDue) for (const statement of this.inTransaction) this.pending.push(statement);
      return result;
    } catch (err) {
      this.db.exec('ROLLBACK');
      if (!this.snapshotDue) this.pendingBytes = pendingBytes;
      throw err;
    } finally {
      this.inTransaction = null;
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

  /** Resolves when everything so far is in a new snapshot and the journal is empty. */
  private checkpoint(): Promise<void> {
    this.snapshotDue = true;
    this.generation++;
    return this.persist();
  }

  private async writeLoop(): Promise<void> {
    // A persist asked for inside a transaction (a counter bumped by an event it raises) starts after it: a
    // record is never cut halfway through one.
    await Promise.resolve();
    try {
      while (this.waiters.length > 0) {
        const generation = this.generation;
        const started = performance.now();
        try {
          const bytes =
            this.snapshotDue || this.journal.size >= this.journalBytes
              ? await this.writeSnapshot()
              : await this.appendRecord();
          this.durableGeneration = generation;
          this.failing = undefined;
          this.stats.lastBytes = bytes;
          this.stats.lastMs = performance.now() - started;
          this.stats.journalBytes = this.journal.size;
          this.settle(
            (w) => w.generation <= generation,
            (w) => w.resolve(),
          );
        } catch (err) {
          // Everyone waiting on this write learns it failed; the next write is a snapshot, which also carries these
          // changes (they stay in memory), so nothing is lost unless the daemon dies first.
          this.snapshotDue = true;
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

  /** Appends what is pending as one record and makes it durable; returns its size. */
  private async appendRecord(): Promise<number> {
    const statements = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    // An empty transaction changed nothing.
    if (statements.length === 0) return 0;
    const record = encodeRecord(++this.lastRecord, statements);
    const subject = { id: ++this.appended };
    crashPoint('journal:append', subject);
    await this.journal.write(record);
    crashPoint('journal:written', subject);
    await this.journal.sync();
    crashPoint('journal:synced', subject);
    this.stats.records++;
    return record.length;
  }

  /**
   * Writes the whole database, saying which records it holds, then empties the journal; returns its size. Changes
   * made while it is written go to the journal after it. Should the journal not be emptied, the snapshot still
   * holds everything up to it, and the next write is a snapshot again.
   */
  private async writeSnapshot(): Promise<number> {
    this.pending = [];
    this.pendingBytes = 0;
    this.snapshotDue = false;
    this.db.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value', [
      SNAPSHOT_RECORD_KEY,
      String(this.lastRecord),
    ]);
    const snapshot = this.db.export();
    const bytes = snapshot.length;
    const subject = { id: ++this.snapshotted };
    await writeFileAtomic(this.path, snapshot, { mode: 0o600 }).finally(() => release(snapshot));
    this.stats.snapshots++;
    crashPoint('snapshot:written', subject);
    try {
      await this.journal.truncate();
      crashPoint('journal:truncated', subject);
    } catch {
      this.snapshotDue = true;
    }
    return bytes;
  }

  private settle(match: (w: Waiter) => boolean, fn: (w: Waiter) => void): void {
    const done = this.waiters.filter(match);
    this.waiters = this.waiters.filter((w) => !match(w));
    for (const w of done) fn(w);
  }

  /** Writes what is pending and closes the database; a journal left is folded into the snapshot first. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.journal.size > 0 || this.pending.length > 0 || this.snapshotDue) await this.checkpoint();
    else await this.persist();
    if (this.writing) await this.writing;
    this.closed = true;
    await this.journal.close();
    for (const stmt of this.statements.values()) stmt.free();
    this.statements.clear();
    this.db.close();
  }
}
