import { readFileSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import type { Database as SqlJsDatabase, SqlJsStatic } from 'sql.js';
import { Database } from '../../src/storage/database.js';
import { scanJournal } from '../../src/storage/journal.js';
import { tempDir } from './daemon.js';

/**
 * The files of the database at `path` (the snapshot and its journal) copied as they are now, as a crash would leave
 * them; returns the copy's path (removed when `t` ends).
 */
export async function crashCopy(path: string, t: ExecutionContext): Promise<string> {
  const copy = join(await tempDir('tunnelward-db-', t), 'tunnelward.db');
  await copyFile(path, copy);
  await copyFile(`${path}.journal`, `${copy}.journal`).catch(() => {});
  return copy;
}

/** What the next start would find in the database at `path`: a copy of its files, opened (closed when `t` ends). */
export async function openAsLeft(path: string, t: ExecutionContext): Promise<Database> {
  const db = await Database.open(await crashCopy(path, t));
  t.teardown(() => db.close());
  return db;
}

/**
 * The database at `path` as a kill -9 would leave it at this very moment, read synchronously into a plain sql.js
 * database (close it): the snapshot, then the journal's records past the number it holds.
 */
export function readAsLeftSync(SQL: SqlJsStatic, path: string): SqlJsDatabase {
  const db = new SQL.Database(readFileSync(path));
  const held = Number(db.exec("SELECT value FROM meta WHERE key = 'journal_record'")[0]?.values[0]?.[0] ?? 0);
  let journal: Buffer;
  try {
    journal = readFileSync(`${path}.journal`);
  } catch {
    return db;
  }
  scanJournal(journal, (record) => {
    if (record.number > held) for (const [sql, params] of record.statements) db.run(sql, params);
    return true;
  });
  return db;
}
