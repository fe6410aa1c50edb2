import test from 'ava';
import { coalesce } from '../../../src/util/coalesce.js';

test('calls while a run is under way share one next run; every call is followed by a run that began after it', async (t) => {
  const runs: Array<() => void> = [];
  let started = 0;
  const reload = coalesce(
    () =>
      new Promise<void>((resolve) => {
        started++;
        runs.push(resolve);
      }),
  );
  const first = reload();
  t.is(started, 1);
  const waiting = [reload(), reload(), reload()];
  t.is(started, 1, 'nothing more starts while the first runs');
  let secondDone = false;
  void Promise.all(waiting).then(() => (secondDone = true));
  runs[0]!();
  await first;
  await new Promise((r) => setImmediate(r));
  t.is(started, 2, 'the waiting calls share one run');
  t.false(secondDone, 'they resolve only when that run is done');
  runs[1]!();
  await Promise.all(waiting);
  t.true(secondDone);
  const later = reload();
  t.is(started, 3, 'a call after everything is done starts its own run');
  runs[2]!();
  await later;
});

test('a failed run fails its callers, and the next call runs again', async (t) => {
  let calls = 0;
  const job = coalesce(async () => {
    calls++;
    if (calls === 1) throw new Error('reload failed');
  });
  await t.throwsAsync(job(), { message: 'reload failed' });
  await job();
  t.is(calls, 2);
});
