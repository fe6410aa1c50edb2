import test from 'ava';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import initSqlJs from 'sql.js';
import { EventHub, type EventNumbers } from '../../../actors/event-hub.js';
import { Database } from '../../../src/storage/database.js';
import { PersistentCounter } from '../../../src/storage/meta.js';
import { readAsLeftSync } from '../../helpers/database.js';
import { tempDir } from '../../helpers/daemon.js';
import { until } from '../../helpers/until.js';

/** Numbers that are always safe to show, from `after` + 1 on. */
const numbersAfter = (after: number): EventNumbers => {
  let seq = after;
  return { current: after, next: () => ++seq, saved: () => undefined };
};

const draft = (name: string) =>
  ({ event: 'instance.created', instanceID: 1, name, from: null, to: null, exitCode: null, signal: null }) as const;

test('events are numbered once, kept up to the capacity, and given again after a seq while all are kept', (t) => {
  const hub = new EventHub(numbersAfter(40), 3);
  const seen: number[] = [];
  hub.events$.subscribe((e) => seen.push(e.seq));
  t.deepEqual(hub.since(40), { events: [] }, 'nothing missed yet');
  for (const name of ['a', 'b', 'c', 'd']) hub.publish(draft(name));
  t.deepEqual(seen, [41, 42, 43, 44]);
  t.is(hub.lastSeq, 44);
  const after = hub.since(42);
  t.deepEqual('events' in after ? after.events.map((e) => e.name) : after, ['c', 'd']);
  const fromOldest = hub.since(41);
  t.deepEqual('events' in fromOldest ? fromOldest.events.map((e) => e.seq) : fromOldest, [42, 43, 44]);
  t.deepEqual(hub.since(40), { lost: true, oldest: 42 }, '41 is no longer kept');
  t.deepEqual(hub.since(45), { lost: true, oldest: 42 }, 'a number never handed out');
  t.deepEqual(hub.since(44), { events: [] });
});

test('the history stays in order after it has wrapped round many times', (t) => {
  const hub = new EventHub(numbersAfter(0), 5);
  for (let i = 0; i < 23; i++) hub.publish(draft(`e${i}`));
  const all = hub.since(18);
  t.deepEqual('events' in all ? all.events.map((e) => e.seq) : all, [19, 20, 21, 22, 23]);
  const some = hub.since(21);
  t.deepEqual('events' in some ? some.events.map((e) => e.name) : some, ['e21', 'e22']);
  t.deepEqual(hub.since(17), { lost: true, oldest: 19 });
});

test('with the persistent counter, no event leaves the hub before its seq is on disk: a kill at any point never repeats one', async (t) => {
  const dir = await tempDir('tunnelward-seq-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'tunnelward.db');
  const SQL = await initSqlJs();
  // What a kill -9 would leave at this very moment (read synchronously: nothing moves meanwhile), and so where the
  // next daemon's numbers would start.
  const restartFrom = () => {
    const file = readAsLeftSync(SQL, path);
    const stored = file.exec("SELECT value FROM meta WHERE key = 'event_seq'")[0]?.values[0]?.[0];
    file.close();
    return Number(stored ?? 0);
  };
  let db = await Database.open(path);
  let issued = 0;
  let checks = 0;
  for (let run = 0; run < 2; run++) {
    const hub = new EventHub(new PersistentCounter(db, 'event_seq'), 10);
    hub.events$.subscribe((e) => {
      t.true(e.seq > issued, `seq ${e.seq} after ${issued}: in order, never twice`);
      issued = e.seq;
      t.true(issued <= restartFrom(), `seq ${issued} was shown while a restart would start at ${restartFrom() + 1}`);
      checks++;
    });
    // Bursts of events with the event loop turning in between, across several blocks of numbers.
    for (let i = 0; i < 1100; i++) {
      hub.publish(draft(`e${i}`));
      if (i % 97 === 0) await new Promise((r) => setImmediate(r));
    }
    await until(
      () => checks,
      (n) => n >= (run + 1) * 1100,
      { everyMs: 5, what: 'every event checked' },
    );
    // The next daemon starts from the disk, as after a kill -9.
    await db.close();
    db = await Database.open(path);
  }
  t.is(checks, 2200);
  await db.close();
});

test('a seq from before the start (an earlier run of the daemon): the events of this run, said restarted', (t) => {
  const hub = new EventHub(numbersAfter(1000), 3);
  t.deepEqual(hub.since(990), { events: [], restarted: true }, 'nothing yet in this run');
  hub.publish(draft('a'));
  hub.publish(draft('b'));
  const after = hub.since(990);
  t.deepEqual('events' in after ? [after.events.map((e) => e.seq), after.restarted] : after, [[1001, 1002], true]);
  const inRun = hub.since(1001);
  t.deepEqual('events' in inRun ? [inRun.events.map((e) => e.seq), inRun.restarted] : inRun, [[1002], undefined]);
  for (const name of ['c', 'd']) hub.publish(draft(name));
  t.deepEqual(hub.since(990), { lost: true, oldest: 1002 }, "this run's first is no longer kept");
});
