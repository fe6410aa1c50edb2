import test from 'ava';
import { EventHub } from '../../actors/event-hub.js';

const draft = (name: string) =>
  ({ event: 'instance.created', instanceID: 1, name, from: null, to: null, exitCode: null, signal: null }) as const;

test('events are numbered once, kept up to the capacity, and given again after a seq while all are kept', (t) => {
  let seq = 40;
  const hub = new EventHub(() => ++seq, 40, 3);
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
  let seq = 0;
  const hub = new EventHub(() => ++seq, 0, 5);
  for (let i = 0; i < 23; i++) hub.publish(draft(`e${i}`));
  const all = hub.since(18);
  t.deepEqual('events' in all ? all.events.map((e) => e.seq) : all, [19, 20, 21, 22, 23]);
  const some = hub.since(21);
  t.deepEqual('events' in some ? some.events.map((e) => e.name) : some, ['e21', 'e22']);
  t.deepEqual(hub.since(17), { lost: true, oldest: 19 });
});
