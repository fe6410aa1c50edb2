import test from 'ava';
import { KeyedQueue } from '../../../src/util/keyed-queue.js';
import { WorkLimiter, WorkQueueFullError } from '../../../src/util/work-limiter.js';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('KeyedQueue runs one job at a time per key, in order, and keys in parallel', async (t) => {
  const queue = new KeyedQueue<number>();
  const log: string[] = [];
  const job = (key: number, name: string, ms: number) =>
    queue.run(key, async () => {
      log.push(`start ${name}`);
      await tick(ms);
      log.push(`end ${name}`);
      return name;
    });
  const all = Promise.all([job(1, 'a', 30), job(1, 'b', 1), job(2, 'c', 5)]);
  t.is(queue.depth(1), 2, 'a running, b waiting');
  t.is(queue.depth(2), 1);
  const results = await all;
  t.is(queue.depth(1), 0);
  t.deepEqual(results, ['a', 'b', 'c']);
  t.true(log.indexOf('end a') < log.indexOf('start b'), 'b waits for a');
  t.true(log.indexOf('start c') < log.indexOf('end a'), 'c does not wait for a');
  await tick(1);
  t.is(queue.size, 0, 'empty queues are forgotten');
});

test('KeyedQueue goes on after a failed job', async (t) => {
  const queue = new KeyedQueue<string>();
  const failed = queue.run('k', async () => {
    throw new Error('boom');
  });
  const next = queue.run('k', async () => 'next');
  await t.throwsAsync(failed, { message: 'boom' });
  t.is(await next, 'next');
});

test('WorkLimiter bounds running and queued jobs and refuses the rest at once', async (t) => {
  const limiter = new WorkLimiter(2, 3);
  let running = 0;
  let peak = 0;
  const job = () =>
    limiter.run(async () => {
      running++;
      peak = Math.max(peak, running);
      await tick(10);
      running--;
    });
  const results = await Promise.allSettled(Array.from({ length: 8 }, job));
  t.is(peak, 2);
  t.is(results.filter((r) => r.status === 'fulfilled').length, 5);
  const refused = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
  t.is(refused.length, 3);
  t.true(refused.every((r) => r.reason instanceof WorkQueueFullError));
  t.is(limiter.pending, 0);
});
