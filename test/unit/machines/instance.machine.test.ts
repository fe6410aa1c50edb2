import test from 'ava';
import { backoffDelay, DEFAULT_TIMING } from '../../../machines/instance.machine.js';
import { harness } from '../../helpers/machine-harness.js';

const { startMs, stopTimeoutMs, killTimeoutMs, stableMs, startLimit } = DEFAULT_TIMING;

test('start: spawn, confirm for startSecs, then running and a reply', async (t) => {
  const h = harness();
  t.is(h.state(), 'stopped');
  await h.send({ type: 'START' });
  t.deepEqual(h.state(), { starting: 'confirming' });
  t.deepEqual(h.replies, [], 'no reply before the outcome is known');
  await h.advance(startMs - 1);
  t.deepEqual(h.state(), { starting: 'confirming' });
  await h.advance(1);
  t.is(h.state(), 'running');
  t.like(h.replies, [{ command: 'start', ok: true, message: 'started' }]);
  t.is(h.actor.getSnapshot().context.pid, 100);
});

test('an exit during an operator start is supervised as any exit: the start is answered with it, and the watchdog retries', async (t) => {
  const h = harness();
  await h.send({ type: 'START', ref: 4 });
  await h.crash(100, { code: 3, tail: ['[E] cannot load config'] });
  t.is(h.state(), 'backoff');
  t.is(h.replies.length, 1);
  t.like(h.replies[0], { ref: 4, ok: false, conflict: false, then: 'backoff' });
  t.regex(
    h.replies[0]!.message,
    /exited with code 3 before it was up.*starts it again after a backoff.*\n\[E\] cannot load config/s,
  );
  // The first exit in a row restarts at once, the next ones after the backoff, and the start limit ends it.
  await h.advance(0);
  t.deepEqual(h.spawned, [100, 101], 'retried at once');
  await h.crash(101, { code: 3 });
  for (let pid = 102; h.state() === 'backoff'; pid++) {
    await h.advance(DEFAULT_TIMING.backoffCapMs);
    await h.crash(pid, { code: 3 });
  }
  t.is(h.state(), 'failed');
  t.is(h.spawned.length, startLimit, "the start limit counts the operator start's exit too");
  t.is(h.replies.length, 1, 'one answer, to the one command');
});

test('an exit during an operator start with the watchdog off leaves it stopped, and says why', async (t) => {
  const h = harness({ watchdog: false });
  await h.send({ type: 'START', ref: 1 });
  await h.crash(100, { code: 3 });
  t.is(h.state(), 'stopped');
  t.like(h.replies, [{ ref: 1, ok: false, then: 'stopped' }]);
  t.regex(h.replies[0]!.message, /watchdog is off/);
  await h.advance(DEFAULT_TIMING.backoffCapMs);
  t.deepEqual(h.spawned, [100]);
});

test('a restart whose new process exits during its start is supervised the same way', async (t) => {
  const h = harness();
  await h.send({ type: 'START', ref: 1 });
  await h.advance(startMs);
  await h.send({ type: 'RESTART', ref: 2 });
  await h.crash(101, { code: 1, tail: ['login to the server failed: dial tcp: refused'], transient: true });
  t.is(h.state(), 'backoff');
  t.like(h.replies.at(-1), { ref: 2, command: 'restart', ok: false, then: 'backoff' });
  t.regex(h.replies.at(-1)!.message, /until its server answers/);
});

test('crash while running: restart at once the first time, then after a backoff that doubles', async (t) => {
  const h = harness();
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.crash(100, { code: 2 });
  t.like(h.actor.getSnapshot().context.lastExit, { code: 2 });
  t.is(h.actor.getSnapshot().context.attempt, 1);
  await h.advance(0);
  t.deepEqual(h.state(), { starting: 'confirming' }, 'no delay after a first crash');
  await h.crash(101, { code: 2 });
  t.is(h.state(), 'backoff');
  await h.advance(backoffDelay(DEFAULT_TIMING, 2) - 1);
  t.is(h.state(), 'backoff');
  await h.advance(1);
  t.deepEqual(h.state(), { starting: 'confirming' });
  await h.advance(startMs);
  t.is(h.state(), 'running');
  t.deepEqual(h.spawned, [100, 101, 102]);
  t.is(h.replies.length, 1, 'the watchdog restart sends no command reply');
});

test('repeated crashes: at once, 1 s, 2 s, 4 s, then failed, which only a manual start leaves', async (t) => {
  const h = harness();
  await h.send({ type: 'START' });
  await h.advance(startMs);
  const delays: number[] = [];
  for (let i = 1; i < startLimit; i++) {
    await h.crash(h.spawned.at(-1)!);
    const delay = backoffDelay(DEFAULT_TIMING, h.actor.getSnapshot().context.attempt);
    delays.push(delay);
    await h.advance(delay);
    await h.advance(startMs);
    t.is(h.state(), 'running');
  }
  t.deepEqual(delays, [0, 1000, 2000, 4000]);
  await h.crash(h.spawned.at(-1)!);
  t.is(h.state(), 'failed');
  const spawnedBefore = h.spawned.length;
  await h.advance(DEFAULT_TIMING.backoffCapMs * 2);
  t.is(h.spawned.length, spawnedBefore, 'failed does not restart by itself');
  await h.send({ type: 'STOP' });
  t.like(h.replies.at(-1), { command: 'stop', ok: true, message: 'already stopped (it had failed)' });
  await h.send({ type: 'START' });
  await h.advance(startMs);
  t.is(h.state(), 'running');
  t.is(h.actor.getSnapshot().context.attempt, 0, 'a manual start resets the count');
});

test('the backoff is capped', (t) => {
  t.is(backoffDelay(DEFAULT_TIMING, 20), DEFAULT_TIMING.backoffCapMs);
});

test('a stable run resets the crash count', async (t) => {
  const h = harness();
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.crash(100);
  await h.advance(0);
  await h.advance(startMs);
  t.is(h.actor.getSnapshot().context.attempt, 1);
  await h.advance(stableMs);
  t.is(h.actor.getSnapshot().context.attempt, 0);
  await h.crash(101);
  t.is(h.actor.getSnapshot().context.attempt, 1);
});

test('crashes of watchdog restarts during their start count too', async (t) => {
  const h = harness();
  await h.send({ type: 'START' });
  await h.advance(startMs);
  for (let i = 1; i < startLimit; i++) {
    await h.crash(h.spawned.at(-1)!);
    await h.advance(backoffDelay(DEFAULT_TIMING, i));
    t.deepEqual(h.state(), { starting: 'confirming' });
  }
  await h.crash(h.spawned.at(-1)!);
  t.is(h.state(), 'failed');
});

test('stop during backoff wins over the pending restart', async (t) => {
  const h = harness();
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.crash(100);
  await h.advance(0);
  await h.crash(101);
  t.is(h.state(), 'backoff');
  await h.send({ type: 'STOP' });
  t.is(h.state(), 'stopped');
  t.like(h.replies.at(-1), { command: 'stop', ok: true });
  await h.advance(DEFAULT_TIMING.backoffCapMs);
  t.deepEqual(h.spawned, [100, 101], 'no restart after the stop');
});

test('stop: SIGTERM to the group, stopped once it exits', async (t) => {
  const h = harness();
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.send({ type: 'STOP' });
  t.is(h.state(), 'stopped');
  t.deepEqual(h.signals, [['SIGTERM', 100]]);
  t.like(h.replies.at(-1), { command: 'stop', ok: true, message: 'stopped' });
  t.like(h.actor.getSnapshot().context, { pid: null, lastExit: { signal: 'SIGTERM' } });
});

test('stop: a process that ignores SIGTERM gets SIGKILL after the stop timeout', async (t) => {
  const h = harness({ onTerm: 'ignore' });
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.send({ type: 'STOP' });
  t.deepEqual(h.state(), { stopping: 'terminating' });
  await h.advance(stopTimeoutMs - 1);
  t.deepEqual(h.signals, [['SIGTERM', 100]]);
  await h.advance(1);
  t.deepEqual(h.signals, [
    ['SIGTERM', 100],
    ['SIGKILL', 100],
  ]);
  t.is(h.state(), 'stopped');
  t.like(h.replies.at(-1), { command: 'stop', ok: true });
});

test('stop: a process that survives SIGKILL is given up after the kill timeout', async (t) => {
  const h = harness({ onTerm: 'ignore', onKill: 'ignore' });
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.send({ type: 'STOP' });
  await h.advance(stopTimeoutMs);
  t.deepEqual(h.state(), { stopping: 'killing' });
  await h.advance(killTimeoutMs);
  t.is(h.state(), 'stopped');
  t.deepEqual(
    h.signals.map((s) => s[0]),
    ['SIGTERM', 'SIGKILL'],
  );
  t.like(h.replies.at(-1), { command: 'stop', ok: false, message: 'the process did not exit after SIGKILL' });
});

test('one watch per process: begun when its pid is taken, whatever states it then passes through', async (t) => {
  const h = harness({ onTerm: 'ignore' });
  await h.send({ type: 'START' });
  t.deepEqual(h.watched, [100], 'watched from the spawn on');
  await h.advance(startMs);
  await h.send({ type: 'STOP' });
  t.deepEqual(h.state(), { stopping: 'terminating' });
  t.deepEqual(h.watched, [100], 'confirming, running and stopping share the one watch');
  await h.crash(100, { signal: 'SIGTERM' });
  t.is(h.state(), 'stopped');
  await h.send({ type: 'ADOPT', pid: 555 });
  t.deepEqual(h.watched, [100, 555], 'an adopted process is watched too');
});

test('the late exit of a process given up after SIGKILL does not end the next run', async (t) => {
  const h = harness({ onTerm: 'ignore', onKill: 'ignore' });
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.send({ type: 'STOP' });
  await h.advance(stopTimeoutMs);
  await h.advance(killTimeoutMs);
  t.is(h.state(), 'stopped');
  await h.send({ type: 'START' });
  t.deepEqual(h.state(), { starting: 'confirming' });
  await h.crash(100, { signal: 'SIGKILL' });
  t.deepEqual(h.state(), { starting: 'confirming' }, 'the old process ended: not this start');
  await h.advance(startMs);
  t.is(h.state(), 'running');
  await h.crash(100, { code: 0 });
  t.is(h.state(), 'running');
  await h.crash(101, { code: 2 });
  t.is(h.state(), 'backoff', 'its own process still ends the run');
  t.like(h.actor.getSnapshot().context, { attempt: 1, lastExit: { code: 2 } });
});

test('retire ends the actor wherever it is: its timers are called off and the process is left alone', async (t) => {
  const h = harness({ onTerm: 'ignore' });
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.send({ type: 'STOP' });
  t.deepEqual(h.state(), { stopping: 'terminating' });
  await h.send({ type: 'RETIRE' });
  t.is(h.actor.getSnapshot().status, 'done');
  await h.advance(stopTimeoutMs + killTimeoutMs + stableMs);
  t.deepEqual(
    h.signals.map((s) => s[0]),
    ['SIGTERM'],
    'no SIGKILL after it is retired',
  );
  await h.crash(100, { signal: 'SIGTERM' });
  t.is(h.state(), 'retired');
});

test('retire while a spawn is under way: its outcome, when it comes, is let go (no transition, no warning)', async (t) => {
  const h = harness({ holdSpawns: true });
  await h.send({ type: 'START' });
  t.deepEqual(h.state(), { starting: 'spawning' });
  await h.send({ type: 'RETIRE' });
  t.is(h.actor.getSnapshot().status, 'done');
  const warned: unknown[] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => warned.push(args);
  try {
    await h.releaseSpawns();
  } finally {
    console.warn = warn;
  }
  t.deepEqual(h.spawned, [100], 'the process was spawned all the same (the next daemon takes it over)');
  t.is(h.state(), 'retired');
  t.deepEqual(h.watched, [], 'and not watched by a retired actor');
  t.deepEqual(warned, []);
});

test('restart: stop then start, one reply', async (t) => {
  const h = harness();
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.send({ type: 'RESTART' });
  t.deepEqual(h.state(), { starting: 'confirming' });
  await h.advance(startMs);
  t.is(h.state(), 'running');
  t.deepEqual(h.spawned, [100, 101]);
  t.deepEqual(
    h.replies.map((r) => [r.command, r.ok, r.message]),
    [
      ['start', true, 'started'],
      ['restart', true, 'restarted'],
    ],
  );
});

test('restart of a stopped instance starts it', async (t) => {
  const h = harness();
  await h.send({ type: 'RESTART' });
  await h.advance(startMs);
  t.is(h.state(), 'running');
  t.like(h.replies, [{ command: 'restart', ok: true }]);
});

test('start while running is a conflict; stop while stopped succeeds and says so', async (t) => {
  const h = harness();
  await h.send({ type: 'STOP' });
  t.like(h.replies, [{ command: 'stop', ok: true, message: 'already stopped' }]);
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.send({ type: 'START' });
  t.like(h.replies.at(-1), { command: 'start', ok: false, conflict: true, message: 'already running' });
  t.is(h.state(), 'running');
  t.deepEqual(h.spawned, [100]);
});

test('a spawn error fails the start with its message', async (t) => {
  const h = harness({ spawnError: '/nope/frpc is missing or not an executable file' });
  await h.send({ type: 'START' });
  t.is(h.state(), 'stopped');
  t.like(h.replies, [{ ok: false, message: '/nope/frpc is missing or not an executable file' }]);
  t.is(h.actor.getSnapshot().context.lastError, '/nope/frpc is missing or not an executable file');
});

test('a spawn error during a watchdog restart counts as a crash', async (t) => {
  const h = harness();
  await h.send({ type: 'START' });
  await h.advance(startMs);
  h.setSpawnError('binary vanished');
  await h.crash(100);
  await h.advance(0);
  t.is(h.state(), 'backoff');
  t.is(h.actor.getSnapshot().context.attempt, 2);
});

test('with the watchdog off a crash leaves the instance stopped', async (t) => {
  const h = harness({ watchdog: false });
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.crash(100, { signal: 'SIGSEGV' });
  t.is(h.state(), 'stopped');
  t.like(h.actor.getSnapshot().context.lastExit, { signal: 'SIGSEGV' });
});

test('turning the watchdog off during a backoff cancels the restart', async (t) => {
  const h = harness();
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.crash(100);
  await h.advance(0);
  await h.crash(101);
  await h.send({ type: 'CONFIGURE', watchdog: false });
  t.is(h.state(), 'stopped');
  await h.advance(DEFAULT_TIMING.backoffCapMs);
  t.deepEqual(h.spawned, [100, 101]);
});

test('new timings apply to the next delay', async (t) => {
  const h = harness();
  await h.send({ type: 'CONFIGURE', watchdog: true, timing: { backoffBaseMs: 50, startMs: 10 } });
  await h.send({ type: 'START' });
  await h.advance(10);
  t.is(h.state(), 'running');
  await h.crash(100);
  await h.advance(0);
  await h.crash(101);
  await h.advance(49);
  t.is(h.state(), 'backoff');
  await h.advance(1);
  t.deepEqual(h.state(), { starting: 'confirming' });
});

test('an adopted process is running and its crash is handled', async (t) => {
  const h = harness();
  await h.send({ type: 'ADOPT', pid: 4242 });
  t.is(h.state(), 'running');
  await h.crash(4242, { code: null, signal: null });
  t.is(h.actor.getSnapshot().context.attempt, 1);
  await h.advance(0);
  await h.advance(startMs);
  t.is(h.state(), 'running');
});

test('stop while the watchdog is spawning a restart stops the new process once it is there', async (t) => {
  const h = harness();
  await h.send({ type: 'START', ref: 1 });
  await h.advance(startMs);
  h.holdSpawns();
  await h.crash(100);
  await h.advance(0);
  t.deepEqual(h.state(), { starting: 'spawning' });
  await h.send({ type: 'STOP', ref: 2 });
  await h.releaseSpawns();
  t.is(h.state(), 'stopped');
  t.deepEqual(h.signals, [['SIGTERM', 101]]);
  t.like(h.replies, [
    { ref: 1, command: 'start', ok: true },
    { ref: 2, command: 'stop', ok: true },
  ]);
});

test('an exit code that says retrying will not help sends a start straight to failed', async (t) => {
  // An operator's start: the reply carries the reason; nothing is retried.
  const manual = harness();
  await manual.send({ type: 'START', ref: 1 });
  await manual.crash(100, { code: 1, tail: ['unknown field "serverAdr"'] });
  t.is(manual.state(), 'failed');
  t.like(manual.replies, [{ ref: 1, ok: false, then: 'failed' }]);
  t.regex(manual.replies[0]!.message, /NoRetryExitCodes/);
  t.regex(manual.replies[0]!.message, /exited with code 1.*serverAdr/s);
  await manual.advance(DEFAULT_TIMING.backoffCapMs);
  t.deepEqual(manual.spawned, [100]);

  // A watchdog restart that exits so during its start: failed at once, no backoff, no reply to nobody.
  const watchdog = harness();
  await watchdog.send({ type: 'START', ref: 1 });
  await watchdog.advance(startMs);
  await watchdog.crash(100, { code: 1 });
  await watchdog.advance(0);
  t.deepEqual(
    watchdog.state(),
    { starting: 'confirming' },
    'a crash of a running tunnel is retried, whatever its code',
  );
  await watchdog.crash(101, { code: 1 });
  t.is(watchdog.state(), 'failed');
  t.is(watchdog.replies.length, 1);

  // The codes are a setting: with none, the same exit is retried.
  const retried = harness();
  await retried.send({ type: 'CONFIGURE', watchdog: true, timing: { noRetryExitCodes: [] } });
  await retried.send({ type: 'START', ref: 1 });
  await retried.advance(startMs);
  await retried.crash(100, { code: 1 });
  await retried.advance(0);
  await retried.crash(101, { code: 1 });
  t.is(retried.state(), 'backoff');
});

test('an exit the tunnel says can pass (a failed first login) is retried, whatever its code', async (t) => {
  const h = harness();
  await h.send({ type: 'START', ref: 1 });
  await h.advance(startMs);
  await h.crash(100, { code: 1 });
  await h.advance(0);
  await h.crash(101, { code: 1, tail: ['login to the server failed: dial tcp: refused'], transient: true });
  t.is(h.state(), 'backoff', 'code 1 of a failed login is not a config error');
  // An operator's start that meets a server down at once is retried the same way (loginFailExit = true).
  const manual = harness();
  await manual.send({ type: 'START', ref: 9 });
  await manual.crash(100, { code: 1, tail: ['login to the server failed'], transient: true });
  t.is(manual.state(), 'backoff');
  t.like(manual.replies, [{ ref: 9, ok: false, then: 'backoff' }]);
  for (let pid = 101; pid < 101 + DEFAULT_TIMING.startLimit * 2; pid++) {
    await manual.advance(DEFAULT_TIMING.backoffCapMs);
    await manual.crash(pid, { code: 1, tail: ['login to the server failed'], transient: true });
    t.is(manual.state(), 'backoff');
  }
  // Past the start limit too: the server may come back at any time, so it is tried at the capped delay.
  for (let pid = 102; pid < 102 + DEFAULT_TIMING.startLimit * 2; pid++) {
    await h.advance(DEFAULT_TIMING.backoffCapMs);
    await h.crash(pid, { code: 1, tail: ['login to the server failed: dial tcp: refused'], transient: true });
    t.is(h.state(), 'backoff');
  }
  t.is(h.spawned.length, 2 + DEFAULT_TIMING.startLimit * 2);
});

test('an exit with code 0 of its own (frpc after /api/stop) is a stop: not restarted, not a crash', async (t) => {
  const h = harness();
  await h.send({ type: 'START', ref: 1 });
  await h.advance(startMs);
  await h.crash(100, { code: 0 });
  t.is(h.state(), 'stopped');
  t.like(h.actor.getSnapshot().context, { attempt: 0, pid: null, lastExit: { code: 0, signal: null } });
  await h.advance(DEFAULT_TIMING.backoffCapMs);
  t.deepEqual(h.spawned, [100], 'nothing restarts it');

  // During a watchdog's restart the same: the tunnel ended on purpose.
  const w = harness();
  await w.send({ type: 'START', ref: 1 });
  await w.advance(startMs);
  await w.crash(100, { signal: 'SIGKILL' });
  await w.advance(0);
  await w.crash(101, { code: 0 });
  t.is(w.state(), 'stopped');
  // An operator's start that ends so is answered as the failure it is.
  const m = harness();
  await m.send({ type: 'START', ref: 7 });
  await m.crash(100, { code: 0 });
  t.is(m.state(), 'stopped');
  t.like(m.replies, [{ ref: 7, ok: false, then: 'stopped' }]);
});

test('when the init system restarts: backoff waits for its new process, the machine spawns nothing', async (t) => {
  const h = harness();
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.crash(100, { signal: 'SIGKILL', next: 'restart' });
  t.is(h.state(), 'backoff');
  t.like(h.actor.getSnapshot().context, { awaitingRespawn: true, attempt: 1, pid: null });
  await h.advance(DEFAULT_TIMING.backoffCapMs * 2);
  t.is(h.state(), 'backoff', 'no timer of its own');
  t.deepEqual(h.spawned, [100], 'nothing spawned by the machine');
  await h.send({ type: 'RESPAWNED', pid: 500 });
  t.deepEqual(h.state(), { starting: 'confirming' });
  t.like(h.actor.getSnapshot().context, { pid: 500, awaitingRespawn: false });
  await h.advance(startMs);
  t.is(h.state(), 'running');
  // The new process is watched like any other: its crash is seen.
  await h.crash(500, { code: 2, next: 'give-up' });
  t.is(h.state(), 'failed');
  t.deepEqual(h.cancels, [], 'nothing to call off');
});

test('when the init system restarts: its give-up, a clean stop, and a stray respawn elsewhere', async (t) => {
  const h = harness();
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.crash(100, { code: 2, next: 'restart' });
  await h.send({ type: 'GAVE_UP' });
  t.is(h.state(), 'failed');
  await h.send({ type: 'RESPAWNED', pid: 501 });
  t.is(h.state(), 'failed', 'a respawn is taken only while one is awaited');

  const clean = harness();
  await clean.send({ type: 'START' });
  await clean.advance(startMs);
  await clean.crash(100, { code: 0, next: 'stop' });
  t.is(clean.state(), 'stopped');
});

test('when the init system restarts: a stop in backoff calls its restart off; a failed start is left to it', async (t) => {
  const h = harness();
  await h.send({ type: 'START' });
  await h.advance(startMs);
  await h.crash(100, { code: 2, next: 'restart' });
  await h.send({ type: 'STOP', ref: 5 });
  t.is(h.state(), 'stopped');
  t.deepEqual(h.cancels, [true]);
  t.like(h.replies.at(-1), { ref: 5, ok: true });

  // An operator's start that does not hold is left to the init system's restart, as any exit, and answered so.
  const start = harness();
  await start.send({ type: 'START', ref: 1 });
  await start.crash(100, { code: 2, next: 'restart' });
  t.is(start.state(), 'backoff');
  t.deepEqual(start.cancels, [], 'its restart is not called off');
  t.like(start.replies, [{ ref: 1, ok: false, then: 'backoff' }]);
  t.regex(start.replies[0]!.message, /init system starts it again/);
  await start.send({ type: 'RESPAWNED', pid: 300 });
  await start.advance(startMs);
  t.is(start.state(), 'running');
  t.is(start.replies.length, 1);
});

test('resumed at start-up in the init system restart, or given up while away', async (t) => {
  const h = harness();
  await h.send({ type: 'RESUME', state: 'backoff' });
  t.is(h.state(), 'backoff');
  await h.send({ type: 'RESPAWNED', pid: 600 });
  await h.advance(startMs);
  t.is(h.state(), 'running');
  t.is(h.actor.getSnapshot().context.pid, 600);

  const gone = harness();
  await gone.send({ type: 'RESUME', state: 'failed' });
  t.is(gone.state(), 'failed');
  await gone.send({ type: 'START', ref: 2 });
  await gone.advance(startMs);
  t.is(gone.state(), 'running', 'an operator start leaves it');
});

test('restored into failed with the exit on record: it stays there, answers each command once, and a start leaves it', async (t) => {
  const h = harness();
  const exit = { code: 1, signal: null, tail: [] };
  await h.send({ type: 'RESUME', state: 'failed', exit });
  t.is(h.state(), 'failed');
  t.deepEqual(h.actor.getSnapshot().context.lastExit, exit);
  await h.advance(DEFAULT_TIMING.backoffCapMs + stableMs);
  t.is(h.state(), 'failed', 'nothing restarts it on its own');
  t.deepEqual(h.spawned, []);
  await h.send({ type: 'STOP', ref: 1 });
  t.deepEqual(
    h.replies.map((r) => [r.ref, r.ok, r.message]),
    [[1, true, 'already stopped (it had failed)']],
  );
  t.is(h.state(), 'failed');
  await h.send({ type: 'START', ref: 2 });
  t.is(h.actor.getSnapshot().context.lastExit, null, 'a new run: the old exit no longer describes it');
  await h.advance(startMs);
  t.is(h.state(), 'running');
  t.deepEqual(
    h.replies.map((r) => [r.ref, r.ok]),
    [
      [1, true],
      [2, true],
    ],
  );
  t.deepEqual(h.spawned, [100]);
});
