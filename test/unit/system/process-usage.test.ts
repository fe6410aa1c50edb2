import test from 'ava';
import { ProcessUsage, readProcSample, type ProcSample } from '../../../src/system/process-usage.js';

/** A /proc that says what the test sets, and a clock the test moves. */
function harness() {
  const procs = new Map<number, ProcSample>();
  let now = 1_000_000;
  const usage = new ProcessUsage(
    (pid) => procs.get(pid),
    () => now,
    (startTicks) => startTicks * 10, // started at tick*10 ms on this clock
    () => 4096,
  );
  return { procs, usage, advance: (ms: number) => (now += ms), at: () => now };
}

test('CPU is the share of a core since the last look (a look sooner repeats the figure), at first since the start', (t) => {
  const h = harness();
  // Started 10 s before now (99 000 ticks * 10 ms = 990 000 ms), 2 s of CPU since: 20%.
  h.procs.set(7, { startTicks: 99_000, cpuTicks: 200, rssPages: 256 });
  t.deepEqual(h.usage.of([7]).get(7), { cpuPercent: 20, rssBytes: 256 * 4096 });
  h.advance(500);
  h.procs.set(7, { startTicks: 99_000, cpuTicks: 250, rssPages: 256 });
  t.is(h.usage.of([7]).get(7)!.cpuPercent, 20, 'half a second later: the last figure');
  h.advance(1500);
  // 2 s after the first look, 1.5 s of CPU more: 75%.
  h.procs.set(7, { startTicks: 99_000, cpuTicks: 350, rssPages: 512 });
  t.deepEqual(h.usage.of([7]).get(7), { cpuPercent: 75, rssBytes: 512 * 4096 });
  // The pid reused by another process: read since its own start, not as a delta of the old one.
  h.advance(2000);
  const startTicks = h.at() / 10 - 100; // started 1 s ago
  h.procs.set(7, { startTicks, cpuTicks: 10, rssPages: 1 });
  t.is(h.usage.of([7]).get(7)!.cpuPercent, 10);
  // Gone: no figures.
  h.procs.delete(7);
  t.false(h.usage.of([7]).has(7));
});

test('a real process: our own, read from /proc', (t) => {
  const own = readProcSample(process.pid);
  t.truthy(own);
  t.true(own!.rssPages > 0 && own!.cpuTicks >= 0);
  const usage = new ProcessUsage().of([process.pid]).get(process.pid)!;
  t.true(usage.rssBytes > 1024 * 1024 && usage.cpuPercent >= 0);
});
