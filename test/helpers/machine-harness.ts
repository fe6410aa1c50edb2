import { createActor, SimulatedClock } from 'xstate';
import {
  instanceMachine,
  type CommandDone,
  type ExitInfo,
  type InstanceEvent,
} from '../../machines/instance.machine.js';

export interface Options {
  watchdog?: boolean;
  /** What the fake process does on SIGTERM. */
  onTerm?: 'exit' | 'ignore';
  /** What the fake process does on SIGKILL: a process stuck in the kernel can outlive it. */
  onKill?: 'exit' | 'ignore';
  spawnError?: string;
  /** Spawns wait until `releaseSpawns()`: the machine can be caught while the process is being spawned. */
  holdSpawns?: boolean;
}

/** The machine with fake actors: processes are numbers, exits are driven by the test, time by a simulated clock. */
export function harness(options: Options = {}) {
  const clock = new SimulatedClock();
  const spawned: number[] = [];
  const signals: Array<[string, number | null]> = [];
  /** Each call off of an init system's restart: whether one was pending. */
  const cancels: boolean[] = [];
  const watchers = new Map<number, (exit: ExitInfo) => void>();
  /** Each pid a watch was begun on, in order. */
  const watched: number[] = [];
  let nextPid = 100;
  let spawnError = options.spawnError;
  let holding = options.holdSpawns ?? false;
  const held: Array<() => void> = [];

  const exit = (pid: number, exit: Partial<ExitInfo> = {}) =>
    watchers.get(pid)?.({ code: null, signal: null, tail: [], ...exit });

  const machine = instanceMachine.provide({
    actions: {
      // As the lifecycle does: the outcome comes back later, as an event, to the actor while it is active.
      spawn: ({ self }) => {
        void (async () => {
          if (holding) await new Promise<void>((resolve) => held.push(resolve));
          const event: InstanceEvent = spawnError
            ? { type: 'SPAWN_FAILED', error: spawnError }
            : { type: 'SPAWNED', pid: nextPid++ };
          if (event.type === 'SPAWNED') spawned.push(event.pid);
          if (self.getSnapshot().status === 'active') self.send(event);
        })();
      },
      // One watch per process, as the lifecycle keeps: an exit is reported once, to whatever state the actor is in.
      watch: (_, { pid }) => {
        watched.push(pid);
        watchers.set(pid, (info) => {
          watchers.delete(pid);
          actor.send({ type: 'EXITED', pid, exit: info });
        });
      },
      terminate: (_, params) => {
        signals.push(['SIGTERM', params.pid]);
        if (options.onTerm !== 'ignore' && params.pid !== null) {
          const pid = params.pid;
          queueMicrotask(() => exit(pid, { signal: 'SIGTERM' }));
        }
      },
      cancelRestart: (_, params) => {
        cancels.push(params.pending);
      },
      kill: (_, params) => {
        signals.push(['SIGKILL', params.pid]);
        const pid = params.pid!;
        if (options.onKill !== 'ignore') queueMicrotask(() => exit(pid, { signal: 'SIGKILL' }));
      },
    },
  });
  const actor = createActor(machine, { input: { instanceId: 7, watchdog: options.watchdog ?? true }, clock });
  const replies: CommandDone[] = [];
  actor.on('commandDone', (e) => replies.push(e));
  actor.start();

  const settle = () => new Promise((r) => setImmediate(r));
  return {
    actor,
    clock,
    spawned,
    signals,
    cancels,
    watched,
    replies,
    exit,
    settle,
    state: () => actor.getSnapshot().value,
    setSpawnError: (msg: string | undefined) => (spawnError = msg),
    /** Spawns from now on wait until `releaseSpawns()`. */
    holdSpawns() {
      holding = true;
    },
    /** Lets every held spawn go on, and the ones after it. */
    async releaseSpawns() {
      holding = false;
      for (const release of held.splice(0)) release();
      await settle();
    },
    async send(event: InstanceEvent) {
      actor.send(event);
      await settle();
    },
    async advance(ms: number) {
      clock.increment(ms);
      await settle();
    },
    async crash(pid: number, info: Partial<ExitInfo> = { code: 2 }) {
      exit(pid, info);
      await settle();
    },
  };
}
