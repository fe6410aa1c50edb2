import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import initSqlJs from 'sql.js';
import { Database } from '../../src/storage/database.js';
import { MIGRATIONS } from '../../src/storage/migrations.js';
import { getMeta, PersistentCounter } from '../../src/storage/meta.js';
import { tempDir } from '../helpers/daemon.js';

async function fresh(t: { teardown: (fn: () => Promise<void>) => void }) {
  const dir = await tempDir('tunnelward-db-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'tunnelward.db');
}

test('a new database is a genuine SQLite file at the latest schema version', async (t) => {
  const path = await fresh(t);
  const db = await Database.open(path);
  await db.close();
  const bytes = await readFile(path);
  t.is(bytes.subarray(0, 16).toString('latin1'), 'SQLite format 3\0');
  const SQL = await initSqlJs();
  const other = new SQL.Database(bytes);
  t.is(other.exec('PRAGMA user_version')[0]!.values[0]![0], MIGRATIONS.length);
  const tables = other.exec("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")[0]!.values.flat();
  t.true(tables.includes('users') && tables.includes('sessions'));
  other.close();
});

test('group commit: a burst of changes shares a few snapshots, and every acknowledged change is on disk', async (t) => {
  const path = await fresh(t);
  const db = await Database.open(path);
  const before = db.stats.snapshots;
  const acknowledged = await Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      db.run('INSERT INTO meta (key, value) VALUES (?, ?)', [`k${i}`, String(i)]);
      await db.persist();
      return i;
    }),
  );
  const used = db.stats.snapshots - before;
  t.is(acknowledged.length, 200);
  t.true(used <= 3, `${used} snapshots for 200 changes`);
  // Read the file as a crash would leave it: without closing the database.
  const SQL = await initSqlJs();
  const onDisk = new SQL.Database(await readFile(path));
  t.is(onDisk.exec('SELECT COUNT(*) FROM meta')[0]!.values[0]![0], 200);
  onDisk.close();
  await db.close();
});

test('persist after a change made during a snapshot waits for the next snapshot', async (t) => {
  const path = await fresh(t);
  const db = await Database.open(path);
  db.run("INSERT INTO meta (key, value) VALUES ('a', '1')");
  const first = db.persist();
  db.run("INSERT INTO meta (key, value) VALUES ('b', '2')");
  const second = db.persist();
  await Promise.all([first, second]);
  const SQL = await initSqlJs();
  const onDisk = new SQL.Database(await readFile(path));
  t.deepEqual(onDisk.exec('SELECT key FROM meta ORDER BY key')[0]!.values.flat(), ['a', 'b']);
  onDisk.close();
  await db.close();
});

test('a failed snapshot rejects its waiters and leaves the old file whole', async (t) => {
  const path = await fresh(t);
  const db = await Database.open(path);
  db.run("INSERT INTO meta (key, value) VALUES ('kept', '1')");
  await db.persist();
  const good = await readFile(path);
  await rm(path);
  const { mkdir } = await import('node:fs/promises');
  await mkdir(path); // a directory in the way makes the rename fail
  db.run("INSERT INTO meta (key, value) VALUES ('lost', '1')");
  await t.throwsAsync(db.persist());
  await rm(path, { recursive: true });
  await writeFile(path, good);
  await db.persist().catch(() => {});
  db.run("INSERT INTO meta (key, value) VALUES ('later', '1')");
  await db.persist();
  const SQL = await initSqlJs();
  const onDisk = new SQL.Database(await readFile(path));
  t.deepEqual(onDisk.exec('SELECT key FROM meta ORDER BY key')[0]!.values.flat(), ['kept', 'later', 'lost']);
  onDisk.close();
  await db.close();
});

test('a file that is not SQLite stops the open with a clear message', async (t) => {
  const path = await fresh(t);
  await writeFile(path, 'this is not a database, just text that is long enough to have a header......');
  const err = await t.throwsAsync(Database.open(path));
  t.regex(err!.message, /is not a readable SQLite database/);
});

test('a database from a newer tunnelward is refused', async (t) => {
  const path = await fresh(t);
  const SQL = await initSqlJs();
  const db = new SQL.Database();
  db.exec(`PRAGMA user_version = ${MIGRATIONS.length + 5}`);
  await writeFile(path, db.export());
  db.close();
  const err = await t.throwsAsync(Database.open(path));
  t.regex(err!.message, /newer than this tunnelward knows/);
});

test('a persistent counter never repeats a number across reopenings, and writes once per block of numbers', async (t) => {
  const path = await fresh(t);
  let db = await Database.open(path);
  let counter = new PersistentCounter(db, 'test_seq');
  await counter.saved(1);
  t.is(Number(getMeta(db, 'test_seq')), 1000, 'a block is set aside before any number is handed out');
  const first = Array.from({ length: 1500 }, () => counter.next());
  t.deepEqual(first.slice(0, 3), [1, 2, 3]);
  t.is(counter.current, 1500);
  const saving = counter.saved(1500);
  t.truthy(saving, 'not yet on disk');
  await saving;
  t.is(counter.saved(1500), undefined, 'on disk');
  t.is(Number(getMeta(db, 'test_seq')), 2002, 'the next block is set aside while half of one is left');
  await db.close();
  db = await Database.open(path);
  counter = new PersistentCounter(db, 'test_seq');
  t.is(counter.current, 2002, 'after a reopening it stands past every number that may have been handed out');
  t.is(counter.next(), 2003);
  await db.close();
});

test('a counter bumped inside a transaction that is rolled back still has its block on disk', async (t) => {
  const path = await fresh(t);
  const db = await Database.open(path);
  const counter = new PersistentCounter(db, 'test_seq');
  await counter.saved(1);
  let n = 0;
  t.throws(() =>
    db.transaction(() => {
      for (let i = 0; i < 1200; i++) n = counter.next();
      throw new Error('rolled back');
    }),
  );
  await counter.saved(n);
  await db.close();
  const again = await Database.open(path);
  t.true(Number(getMeta(again, 'test_seq')) >= n, 'a restart starts above every number handed out');
  await again.close();
});
