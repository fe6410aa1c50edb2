import test from 'ava';
import { Batcher } from '../../../src/util/batcher.js';

test('requests while a batch runs are served together by the next one, each with its own result', async (t) => {
  const batches: number[][] = [];
  const release: Array<() => void> = [];
  const batcher = new Batcher<number, string>(async (keys) => {
    batches.push(keys);
    await new Promise<void>((r) => release.push(r));
    return new Map(keys.filter((k) => k !== 13).map((k) => [k, `unit ${k}`]));
  });
  const first = batcher.request(1);
  const later = [batcher.request(2), batcher.request(3), batcher.request(2), batcher.request(13)];
  t.deepEqual(batches, [[1]], 'the first request does not wait for company');
  release[0]!();
  t.is(await first, 'unit 1');
  await new Promise((r) => setImmediate(r));
  t.deepEqual(batches, [[1], [2, 3, 13]], 'the rest in one batch, each key once');
  release[1]!();
  const [two, three, twoAgain, missing] = await Promise.allSettled(later);
  t.deepEqual(
    [two, three, twoAgain].map((r) => (r as PromiseFulfilledResult<string>).value),
    ['unit 2', 'unit 3', 'unit 2'],
  );
  t.is(missing!.status, 'rejected', 'a key the batch gave no result for fails');
});

test('a failed batch fails its requests; the next batch runs all the same', async (t) => {
  let calls = 0;
  const batcher = new Batcher<number, number>(async (keys) => {
    calls++;
    if (calls === 1) throw new Error('systemctl failed');
    return new Map(keys.map((k) => [k, k * 2]));
  });
  await t.throwsAsync(batcher.request(1), { message: 'systemctl failed' });
  t.is(await batcher.request(4), 8);
});
