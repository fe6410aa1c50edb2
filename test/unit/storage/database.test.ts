import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import initSqlJs from 'sql.js';
import { Database } from '../../../src/storage/database.js';
import { MIGRATIONS } from '../../../src/storage/migrations.js';
import { getMeta, PersistentCounter } from '../../../src/storage/meta.js';
import { crashCopy, openAsLeft } from '../../helpers/database.js';
import { tempDir } from '../../helpers/daemon.js';

async function fresh(t: { teardown: (fn: () => Promise<void>) => void }) {
  const dir = await tempDir('tunnelward-db-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'tunnelward.db');
}

const keys = (db: Database) => db.all<{ key: string }>("SELECT key FROM meta WHERE key LIKE 'k%' ORDER BY key");

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

test('group commit: a burst of changes shares a few writes, and every acknowledged change is on disk', async (t) => {
  const path = await fresh(t);
  const db = await Database.open(path);
  const before = db.stats.snapshots + db.stats.records;
  const acknowledged = await Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      db.run('INSERT INTO meta (key, value) VALUES (?, ?)', [`k${i}`, String(i)]);
      await db.persist();
      return i;
    }),
  );
  const used = db.stats.snapshots + db.stats.records - before;
  t.is(acknowledged.length, 200);
  t.true(used <= 3, `${used} writes for 200 changes`);
  // Read the files as a crash would leave them: without closing the database.
  t.is(
    (await openAsLeft(path, t)).get<{ n: number }>('SELECT COUNT(*) AS n FROM meta WHERE key LIKE ?', ['k%'])!.n,
    200,
  );
  await db.close();
});

test('persist after a change made during a write waits for the next write', async (t) => {
  const path = await fresh(t);
  const db = await Database.open(path);
  db.run("INSERT INTO meta (key, value) VALUES ('ka', '1')");
  const first = db.persist();
  db.run("INSERT INTO meta (key, value) VALUES ('kb', '2')");
  const second = db.persist();
  await Promise.all([first, second]);
  t.deepEqual(keys(await openAsLeft(path, t)), [{ key: 'ka' }, { key: 'kb' }]);
  await db.close();
});

test('a failed snapshot rejects its waiters and leaves the old file whole', async (t) => {
  const path = await fresh(t);
  // No journal: every write is a snapshot.
  const db = await Database.open(path, { journalBytes: 0 });
  db.run("INSERT INTO meta (key, value) VALUES ('kept', '1')");
  await db.persist();
  const good = await readFile(path);
  await rm(path);
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
  t.deepEqual(onDisk.exec("SELECT key FROM meta WHERE key != 'journal_record' ORDER BY key")[0]!.values.flat(), [
    'kept',
    'later',
    'lost',
  ]);
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

test('a change is appended to the journal, not written as a whole snapshot, until the journal passes its size', async (t) => {
  const path = await fresh(t);
  const db = await Database.open(path, { journalBytes: 16 * 1024 });
  const snapshot = (await stat(path)).size;
  const snapshots = db.stats.snapshots;
  for (let i = 0; i < 20; i++) {
    db.run('INSERT INTO meta (key, value) VALUES (?, ?)', [`k${i}`, 'x'.repeat(100)]);
    await db.persist();
  }
  t.is(db.stats.snapshots, snapshots, 'no snapshot for small changes');
  t.is(db.stats.records, 20);
  const journal = (await stat(`${path}.journal`)).size;
  t.true(journal > 20 * 100 && journal < 20 * 400, `${journal} bytes of journal for 20 changes of ~150 bytes`);
  t.is((await stat(path)).size, snapshot, 'the snapshot is untouched');
  t.deepEqual(keys(await openAsLeft(path, t)).length, 20);

  for (let i = 20; i < 200; i++) {
    db.run('INSERT INTO meta (key, value) VALUES (?, ?)', [`k${i}`, 'x'.repeat(100)]);
    await db.persist();
  }
  t.true(db.stats.snapshots > snapshots, 'past its size the journal is folded into a snapshot');
  t.true((await stat(`${path}.journal`)).size < 16 * 1024 + 400);
  t.is(keys(await openAsLeft(path, t)).length, 200);
  await db.close();
  t.is((await stat(`${path}.journal`)).size, 0, 'a close leaves everything in the snapshot');
  const SQL = await initSqlJs();
  const plain = new SQL.Database(await readFile(path));
  t.is(plain.exec("SELECT COUNT(*) FROM meta WHERE key LIKE 'k%'")[0]!.values[0]![0], 200, 'sqlite reads it all');
  plain.close();
});

test('applying the journal again gives exactly the same rows: ids, cascades, counters, bytes', async (t) => {
  const path = await fresh(t);
  const db = await Database.open(path);
  const now = 1_700_000_000_000;
  for (let i = 0; i < 5; i++) {
    db.run('INSERT INTO users (username, passwd_hash, type, created_at) VALUES (?, ?, ?, ?)', [
      `u${i}`,
      'hash',
      'admin',
      now + i,
    ]);
    const id = db.lastInsertRowid();
    db.run('INSERT INTO sessions (id, user_id, token_hash, created_at, expire_at) VALUES (?, ?, ?, ?, ?)', [
      `s${i}`,
      id,
      `t${i}`,
      now,
      now + 1,
    ]);
  }
  await db.persist();
  db.transaction(() => {
    db.run('DELETE FROM users WHERE id = ?', [5]); // its session goes by cascade
    db.run("INSERT INTO sqlite_sequence (name, seq) VALUES ('instances', ?)", [40]);
  });
  db.run('INSERT INTO users (username, passwd_hash, type, created_at) VALUES (?, ?, ?, ?)', [
    'u5',
    'h',
    'visitor',
    now,
  ]);
  db.run(
    `INSERT INTO instances (name, boot_at_start, run_user, config_path, created_at, created_by, owner_id)
     VALUES (?, 0, 'root', '', ?, 'admin', 1)`,
    ['i', now],
  );
  db.run('UPDATE instances SET config_path = ? WHERE id = ?', [`/tunnel_${db.lastInsertRowid()}.toml`, 41]);
  db.run('INSERT INTO meta (key, value) VALUES (?, ?)', ['kbytes', new Uint8Array([0, 1, 254, 255])]);
  db.run('INSERT INTO audit (at, username, ip, action, status, outcome, message) VALUES (?, ?, ?, ?, ?, ?, ?)', [
    now,
    'a\n"\u0000ü',
    '::1',
    'x',
    200,
    'ok',
    '',
  ]);
  db.run('DELETE FROM audit WHERE id <= (SELECT id FROM audit ORDER BY id DESC LIMIT 1 OFFSET ?)', [0]);
  await db.persist();
  const dump = (d: Database) =>
    d
      .all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .map(({ name }) => [name, d.all(`SELECT * FROM "${name}" ORDER BY rowid`)]);
  const again = await openAsLeft(path, t);
  t.true(again.recovered.records >= 2);
  t.deepEqual(dump(again), dump(db));
  t.deepEqual(again.get('SELECT id, config_path FROM instances'), { id: 41, config_path: '/tunnel_41.toml' });
  await db.close();
});

test('a rolled-back transaction leaves nothing in the journal', async (t) => {
  const path = await fresh(t);
  const db = await Database.open(path);
  db.run("INSERT INTO meta (key, value) VALUES ('ka', '1')");
  t.throws(() =>
    db.transaction(() => {
      db.run("INSERT INTO meta (key, value) VALUES ('kb', '1')");
      throw new Error('rolled back');
    }),
  );
  db.transaction(() => db.run("INSERT INTO meta (key, value) VALUES ('kc', '1')"));
  await db.persist();
  t.deepEqual(keys(await openAsLeft(path, t)), [{ key: 'ka' }, { key: 'kc' }]);
  await db.close();
});

for (const [damage, spoil] of [
  ['cut off in its last record (a crash mid-append)', (record: Buffer) => record.subarray(0, record.length - 5)],
  [
    'whose last record is damaged',
    (record: Buffer) => Buffer.concat([record.subarray(0, 12), Buffer.from('X'), record.subarray(13)]),
  ],
  ['with a few bytes of a header at its end', (record: Buffer) => record.subarray(0, 6)],
] as const) {
  test(`a journal ${damage} is applied up to it, and what is written after it is kept`, async (t) => {
    const live = await fresh(t);
    const db = await Database.open(live);
    db.run("INSERT INTO meta (key, value) VALUES ('ka', '1')");
    await db.persist();
    const before = await readFile(`${live}.journal`);
    db.run("INSERT INTO meta (key, value) VALUES ('kb', '1')");
    await db.persist();
    const last = (await readFile(`${live}.journal`)).subarray(before.length);
    const path = await crashCopy(live, t);
    await db.close();
    // The journal as the crash left it: the first record whole, the second not.
    await writeFile(`${path}.journal`, Buffer.concat([before, spoil(last)]));
    const reopened = await Database.open(path);
    t.deepEqual(keys(reopened), [{ key: 'ka' }]);
    t.deepEqual(reopened.recovered, { records: 1, ignoredBytes: spoil(last).length });
    t.is((await stat(`${path}.journal`)).size, before.length, 'the damaged tail is cut off');
    reopened.run("INSERT INTO meta (key, value) VALUES ('kc', '1')");
    await reopened.persist();
    t.deepEqual(keys(await openAsLeft(path, t)), [{ key: 'ka' }, { key: 'kc' }]);
    await reopened.close();
  });
}

test('records the snapshot already holds are not applied again (a crash between the snapshot and emptying the journal)', async (t) => {
  const path = await fresh(t);
  const db = await Database.open(path);
  for (const key of ['ka', 'kb']) {
    db.run('INSERT INTO meta (key, value) VALUES (?, ?)', [key, '1']);
    await db.persist();
  }
  const journal = await readFile(`${path}.journal`);
  await db.close(); // a snapshot, then an empty journal
  await writeFile(`${path}.journal`, journal);
  // An INSERT applied twice would fail on the key.
  const reopened = await Database.open(path);
  t.deepEqual(keys(reopened), [{ key: 'ka' }, { key: 'kb' }]);
  t.is(reopened.recovered.records, 0);
  reopened.run("INSERT INTO meta (key, value) VALUES ('kc', '1')");
  await reopened.persist();
  t.deepEqual(keys(await openAsLeft(path, t)), [{ key: 'ka' }, { key: 'kb' }, { key: 'kc' }]);
  await reopened.close();
});

test('a journal without its snapshot is not applied to a new database', async (t) => {
  const path = await fresh(t);
  const db = await Database.open(path);
  db.run("INSERT INTO meta (key, value) VALUES ('ka', '1')");
  await db.persist();
  const journal = await readFile(`${path}.journal`);
  await db.close();
  await rm(path);
  await writeFile(`${path}.journal`, journal);
  const renewed = await Database.open(path);
  t.deepEqual(keys(renewed), []);
  t.is((await stat(`${path}.journal`)).size, 0);
  await renewed.close();
});

test('a journal that cannot be written fails the write, and the next writes are snapshots until it can', async (t) => {
  const path = await fresh(t);
  await (await Database.open(path)).close();
  const db = await Database.open(path);
  await rm(`${path}.journal`);
  await mkdir(`${path}.journal`); // a directory in the way of the journal
  db.run("INSERT INTO meta (key, value) VALUES ('ka', '1')");
  await t.throwsAsync(db.persist(), { message: /not yet saved to disk \(EISDIR\)/ });
  t.is(db.failing?.reason, 'EISDIR');
  const snapshots = db.stats.snapshots;
  db.run("INSERT INTO meta (key, value) VALUES ('kb', '1')");
  await db.persist();
  t.is(db.failing, undefined);
  t.is(db.stats.snapshots, snapshots + 1, 'a snapshot holds both changes');
  await rm(`${path}.journal`, { recursive: true });
  db.run("INSERT INTO meta (key, value) VALUES ('kc', '1')");
  await db.persist(); // a snapshot again, which makes the journal anew
  const records = db.stats.records;
  db.run("INSERT INTO meta (key, value) VALUES ('kd', '1')");
  await db.persist();
  t.is(db.stats.records, records + 1, 'back to the journal');
  t.deepEqual(
    keys(await openAsLeft(path, t)),
    ['ka', 'kb', 'kc', 'kd'].map((key) => ({ key })),
  );
  await db.close();
});

test('what waits for the journal is bounded: a transaction larger than the journal goes into a snapshot', async (t) => {
  const path = await fresh(t);
  const db = await Database.open(path, { journalBytes: 4096 });
  const snapshots = db.stats.snapshots;
  db.transaction(() => {
    for (let i = 0; i < 100; i++) db.run('INSERT INTO meta (key, value) VALUES (?, ?)', [`k${i}`, 'x'.repeat(100)]);
  });
  await db.persist();
  t.is(db.stats.snapshots, snapshots + 1);
  t.is((await stat(`${path}.journal`)).size, 0);
  t.is(keys(await openAsLeft(path, t)).length, 100);
  await db.close();
});
