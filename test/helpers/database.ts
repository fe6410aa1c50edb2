import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { Database } from '../../src/storage/database.js';
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
