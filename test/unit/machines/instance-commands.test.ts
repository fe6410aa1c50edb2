import test from 'ava';
import { DEFAULT_TIMING, type Command } from '../../../machines/instance.machine.js';
import { harness } from '../../helpers/machine-harness.js';

type Harness = ReturnType<typeof harness>;
const { startMs } = DEFAULT_TIMING;
/** A crash that the watchdog retries (exit code 1 would mean "do not retry"). */
const CRASH = { code: 2 };

/** Every state the machine can rest in or pass through, reached the way it is reached in life. */
const STATES: Record<string, { value: unknown; reach: (h: Harness) => Promise<void>; onTerm?: 'ignore' }> = {
  stopped: { value: 'stopped', reach: async () => {} },
  'spawning (watchdog restart)': {
    value: { starting: 'spawning' },
    reach: async (h) => {
      await h.send({ type: 'START', ref: 1 });
      await h.advance(startMs);
      h.holdSpawns();
      await h.crash(100, CRASH);
      await h.advance(0);
    },
  },
  'confirming (watchdog restart)': {
    value: { starting: 'confirming' },
    reach: async (h) => {
      await h.send({ type: 'START', ref: 1 });
      await h.advance(startMs);
      await h.crash(100, CRASH);
      await h.advance(0);
    },
  },
  running: {
    value: 'running',
    reach: async (h) => {
      await h.send({ type: 'START', ref: 1 });
      await h.advance(startMs);
    },
  },
  backoff: {
    value: 'backoff',
    reach: async (h) => {
      await h.send({ type: 'START', ref: 1 });
      await h.advance(startMs);
      await h.crash(100, CRASH);
      await h.advance(0);
      await h.crash(101, CRASH);
    },
  },
  'backoff (the init system restarts it)': {
    value: 'backoff',
    reach: async (h) => {
      await h.send({ type: 'START', ref: 1 });
      await h.advance(startMs);
      await h.crash(100, { ...CRASH, next: 'restart' });
    },
  },
  failed: {
    value: 'failed',
    reach: async (h) => {
      await h.send({ type: 'START', ref: 1 });
      await h.advance(startMs);
      await h.crash(100, CRASH);
      await h.advance(0);
      await h.crash(101, { code: 1 });
    },
  },
  'stopping (a stop waits for its outcome)': {
    value: { stopping: 'terminating' },
    onTerm: 'ignore',
    reach: async (h) => {
      await h.send({ type: 'START', ref: 1 });
      await h.advance(startMs);
      h.actor.send({ type: 'STOP', ref: 2 });
      await h.settle();
    },
  },
  'confirming (a start waits for its outcome)': {
    value: { starting: 'confirming' },
    reach: async (h) => {
      await h.send({ type: 'START', ref: 1 });
    },
  },
};

const COMMANDS = { start: 'START', stop: 'STOP', restart: 'RESTART' } as const;

/** What each command gets in each state: ok, or refused as a conflict (already running, busy). */
const EXPECTED: Record<string, Record<Command, 'ok' | 'conflict'>> = {
  stopped: { start: 'ok', stop: 'ok', restart: 'ok' },
  'spawning (watchdog restart)': { start: 'ok', stop: 'ok', restart: 'ok' },
  'confirming (watchdog restart)': { start: 'ok', stop: 'ok', restart: 'ok' },
  running: { start: 'conflict', stop: 'ok', restart: 'ok' },
  backoff: { start: 'ok', stop: 'ok', restart: 'ok' },
  'backoff (the init system restarts it)': { start: 'ok', stop: 'ok', restart: 'ok' },
  failed: { start: 'ok', stop: 'ok', restart: 'ok' },
  'stopping (a stop waits for its outcome)': { start: 'conflict', stop: 'conflict', restart: 'conflict' },
  'confirming (a start waits for its outcome)': { start: 'conflict', stop: 'conflict', restart: 'conflict' },
};

for (const [name, state] of Object.entries(STATES)) {
  for (const [command, type] of Object.entries(COMMANDS) as Array<[Command, 'START' | 'STOP' | 'RESTART']>) {
    test(`${name}: ${command} gets exactly one outcome (${EXPECTED[name]![command]})`, async (t) => {
      const h = harness({ onTerm: state.onTerm });
      await state.reach(h);
      t.deepEqual(h.state(), state.value, 'reached the state');
      await h.send({ type, ref: 99 });
      // Let everything run its course: spawns go on, processes confirm or are killed, timers fire.
      await h.releaseSpawns();
      for (let i = 0; i < 6; i++)
        await h.advance(DEFAULT_TIMING.stopTimeoutMs + DEFAULT_TIMING.killTimeoutMs + startMs);
      const mine = h.replies.filter((r) => r.ref === 99);
      t.is(mine.length, 1, 'one reply for the command');
      t.is(mine[0]!.command, command);
      const expected = EXPECTED[name]![command];
      t.is(mine[0]!.ok, expected === 'ok', mine[0]!.message);
      t.is(mine[0]!.conflict, expected === 'conflict', mine[0]!.message);
      // Every command sent on the way there got exactly one reply too: none is lost, none answered twice.
      for (const ref of new Set(h.replies.map((r) => r.ref)))
        t.is(h.replies.filter((r) => r.ref === ref).length, 1, `ref ${ref}`);
      if (name !== 'stopped')
        t.true(
          h.replies.some((r) => r.ref === 1),
          'the first start was answered',
        );
    });
  }
}
