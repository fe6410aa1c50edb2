import { assign, emit, enqueueActions, setup, type StateValue } from 'xstate';

/** How a tunnel process ended: exit code or signal, and the last lines of its log. */
export interface ExitInfo {
  code: number | null;
  signal: string | null;
  tail: string[];
  /**
   * Set when an init system restarts tunnels itself (systemd): what it does next. `restart`: it will start the
   * tunnel again on its own (the machine waits for `RESPAWNED`); `give-up`: it will not (start limit, or an exit
   * status that prevents a restart); `stop`: the unit stopped (a clean exit, or restarts are off). Unset when the
   * machine is the restarter.
   */
  next?: 'restart' | 'give-up' | 'stop';
  /**
   * The tunnel said it ended for a reason that can pass (frpc: its first login to the server failed): retried like a
   * crash even when its exit code is a no-retry one.
   */
  transient?: boolean;
}

export type Command = 'start' | 'stop' | 'restart';

/** The states an instance rests in or passes through (the top level of the machine). */
export type InstanceState = 'stopped' | 'starting' | 'running' | 'stopping' | 'backoff' | 'failed';

const HAS_PROCESS = new Set<InstanceState>(['starting', 'running', 'stopping']);

/** The state of the top level from a snapshot's value (a retired actor rests as stopped). */
export function topState(value: StateValue): InstanceState {
  const top = typeof value === 'string' ? value : Object.keys(value)[0];
  return top === 'retired' || top === undefined ? 'stopped' : (top as InstanceState);
}

/** Whether an instance in this state has a tunnel process of its own (started, running or being stopped). */
export const hasProcess = (state: InstanceState): boolean => HAS_PROCESS.has(state);

export interface Timing {
  /** The process must stay up this long before a start counts as a success. */
  startMs: number;
  /** After SIGTERM, wait this long before SIGKILL. */
  stopTimeoutMs: number;
  /** After SIGKILL, wait this long before giving up on the process. */
  killTimeoutMs: number;
  /**
   * Restart delays: the first crash after a stable run restarts at once; from the second crash in a row on the
   * delay is this, doubling with each further crash, up to the cap.
   */
  backoffBaseMs: number;
  backoffCapMs: number;
  /** This much uptime resets the crash count. */
  stableMs: number;
  /** This many crashes in a row send the instance to `failed`. */
  startLimit: number;
  /** Exit codes during a start that say retrying will not help (frpc exits 1 on a config error): `failed` at once. */
  noRetryExitCodes: readonly number[];
}

export const DEFAULT_TIMING: Timing = {
  startMs: 1000,
  stopTimeoutMs: 10_000,
  killTimeoutMs: 5000,
  backoffBaseMs: 1000,
  backoffCapMs: 60_000,
  stableMs: 60_000,
  startLimit: 5,
  noRetryExitCodes: [1],
};

export interface InstanceContext {
  instanceId: number;
  timing: Timing;
  watchdog: boolean;
  pid: number | null;
  /** The operator's command waiting for its outcome; null while the watchdog acts on its own. */
  command: Command | null;
  /** The reference of that command, echoed in its reply so that a reply can never answer another command. */
  ref: number;
  /** Crashes in a row since the last stable run. */
  attempt: number;
  lastExit: ExitInfo | null;
  lastError: string | null;
  /** In backoff: the init system restarts the tunnel, not this machine's timer. */
  awaitingRespawn: boolean;
}

/** An operator's command; `ref` comes back in its `commandDone`. */
export type CommandEvent = { type: 'START' | 'STOP' | 'RESTART'; ref?: number };

export type InstanceEvent =
  | CommandEvent
  /** A process found running at start-up is taken over as it is. */
  | { type: 'ADOPT'; pid: number }
  /** The spawn that `spawn` began gave a process (its pid is recorded), or could not (why). */
  | { type: 'SPAWNED'; pid: number }
  | { type: 'SPAWN_FAILED'; error: string }
  /** The process `pid` ended (sent by the watch that `watch` began on it). */
  | { type: 'EXITED'; pid: number; exit: ExitInfo }
  /** The init system started the tunnel again on its own after a crash. */
  | { type: 'RESPAWNED'; pid: number }
  /** The init system stopped restarting the tunnel (its start limit). */
  | { type: 'GAVE_UP' }
  /**
   * Found at start-up in the middle of the init system's restart, or given up by it while we were away; or failed
   * before tunnelward restarted, with the exit that ended its last run (kept on record), `quiet`: announced then,
   * not again.
   */
  | { type: 'RESUME'; state: 'backoff' | 'failed'; exit?: ExitInfo; quiet?: boolean }
  /** New settings: the watchdog switch and the timings. */
  | { type: 'CONFIGURE'; watchdog: boolean; timing?: Partial<Timing> }
  /**
   * The actor ends, wherever it is (the instance is deleted, or tunnelward is closing): its timers and a spawn
   * under way are called off; a process, if any, is left as it is for the next tunnelward to take over.
   */
  | { type: 'RETIRE' };

/** The reply to an operator's command, emitted once its outcome is known. */
export interface CommandDone {
  type: 'commandDone';
  command: Command;
  ref: number;
  ok: boolean;
  /** A refusal because of the current state (start while running), as opposed to a failure. */
  conflict: boolean;
  /** It was already as the command asks (start while running, stop while stopped): nothing was done. */
  unchanged: boolean;
  message: string;
  /**
   * Set when the tunnel exited before its start was confirmed: where that exit took the instance, as any exit would
   * (backoff: it is retried; failed: the watchdog gave up; stopped: nothing restarts it). Nothing failed in
   * tunnelward itself.
   */
  then?: 'backoff' | 'failed' | 'stopped';
}

export interface InstanceInput {
  instanceId: number;
  timing?: Partial<Timing>;
  watchdog: boolean;
}

/** The delay before restarting after the `attempt`-th crash in a row: 0, base, 2 base, 4 base, ... up to the cap. */
export const backoffDelay = (timing: Timing, attempt: number): number =>
  attempt <= 1 ? 0 : Math.min(timing.backoffCapMs, timing.backoffBaseMs * 2 ** (attempt - 2));

export function describeExit(exit: ExitInfo): string {
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  return exit.tail.length > 0 ? `${how}; last log lines:\n${exit.tail.join('\n')}` : how;
}

const PAST: Record<Command, string> = { start: 'started', stop: 'stopped', restart: 'restarted' };

const commandOf = (event: InstanceEvent): Command =>
  event.type === 'START' ? 'start' : event.type === 'STOP' ? 'stop' : 'restart';

/** An operator's start or restart from a state at rest (stopped, failed, backoff): a fresh count of crashes. */
const startAfresh = {
  START: { target: '#instance.starting', actions: ['acceptCommand', 'resetCrashes'] },
  RESTART: { target: '#instance.starting', actions: ['acceptCommand', 'resetCrashes'] },
} as const;

/** Before the exit is recorded (it clears the pid): the process that ended is announced. */
const endProcess = {
  type: 'processEnded',
  params: ({ context }: { context: InstanceContext }) => ({ instanceId: context.instanceId, pid: context.pid ?? -1 }),
} as const;

/** After the pid is recorded: the process is watched until it exits (one watch per process, whatever its states). */
const watchProcess = {
  type: 'watch',
  params: ({ context }: { context: InstanceContext }) => ({ instanceId: context.instanceId, pid: context.pid ?? -1 }),
} as const;

/**
 * An exit of a process that is no longer the instance's (one given up on after SIGKILL, then started afresh) is
 * taken and ignored: it must not end the new process's run.
 */
const staleExit = { guard: 'staleExit' } as const;

/**
 * Calls off an init system's restart that is pending (the exit says one follows, or backoff waits for one): where
 * the machine is the restarter nothing is pending and nothing is done.
 */
const cancelRestart = {
  type: 'cancelRestart',
  params: ({ context, event }: { context: InstanceContext; event: InstanceEvent }) => ({
    instanceId: context.instanceId,
    pending: event.type === 'EXITED' ? event.exit.next === 'restart' : context.awaitingRespawn,
  }),
} as const;

/** Where an exit during a start took the instance, and why: what the command waiting for the start is told. */
interface ExitAnswer {
  then: 'backoff' | 'failed' | 'stopped';
  why: 'init-restarts' | 'init-gave-up' | 'init-stopped' | 'no-retry' | 'limit' | 'clean' | 'watchdog-off' | 'backoff';
}

/** Answers the command waiting for a start that the tunnel's exit ended, with where the exit took the instance. */
const answerExit = (then: ExitAnswer['then'], why: ExitAnswer['why']) =>
  ({ type: 'answerExit', params: { then, why } }) as const;

/** Exits where the init system is the restarter: it restarts (backoff waits for it), gives up, or lets it stop. */
const initSystemExits = [
  {
    guard: { type: 'next', params: { is: 'restart' } },
    target: '#instance.backoff',
    actions: [endProcess, 'recordExit', 'countCrash', 'awaitRespawn'],
  },
  {
    guard: { type: 'next', params: { is: 'give-up' } },
    target: '#instance.failed',
    actions: [endProcess, 'recordExit', 'countCrash'],
  },
  { guard: { type: 'next', params: { is: 'stop' } }, target: '#instance.stopped', actions: [endProcess, 'recordExit'] },
] as const;

/**
 * The life of one tunnel-client instance. Pure: spawning, watching and signalling the process are named here and
 * provided by a runner (`machine.provide({ actions })`); what they give comes back as events.
 */
export const instanceMachine = setup({
  types: {
    context: {} as InstanceContext,
    events: {} as InstanceEvent,
    input: {} as InstanceInput,
    emitted: {} as CommandDone,
  },
  actions: {
    /**
     * Spawns the process, which comes back as `SPAWNED` with its pid or `SPAWN_FAILED`. An action, not an invoked
     * actor: every instance's actor shares one actor system, whose scheduler looks through all of its timers when
     * an actor stops, so a child actor per spawn made a start of n tunnels cost n times n.
     */
    spawn: (_, _params: { instanceId: number }) => {},
    /** Watches the process until it exits, which comes back as `EXITED` with its pid. */
    watch: (_, _params: { instanceId: number; pid: number }) => {},
    /** SIGTERM to the process group. */
    terminate: (_, _params: { instanceId: number; pid: number | null }) => {},
    /** SIGKILL to the process group. */
    kill: (_, _params: { instanceId: number; pid: number | null }) => {},
    /** The instance entered a state (its context as it is on entry): what the world hears of it. */
    stateEntered: (_, _params: { state: InstanceState; context: InstanceContext; quiet?: boolean }) => {},
    /** The process is no longer the instance's: it exited, or it was given up on. */
    processEnded: (_, _params: { instanceId: number; pid: number }) => {},
    /** The init system's own restart of the tunnel is not wanted (a stop, a failed start): it is called off. */
    cancelRestart: (_, _params: { instanceId: number; pending: boolean }) => {},
    /** The event's command becomes the one waiting for its outcome. */
    acceptCommand: assign(({ event }) => ({ command: commandOf(event), ref: (event as CommandEvent).ref ?? 0 })),
    clearCommand: assign({ command: null }),
    configure: assign(({ context, event }) =>
      event.type === 'CONFIGURE' ? { watchdog: event.watchdog, timing: { ...context.timing, ...event.timing } } : {},
    ),
    resetCrashes: assign({ attempt: 0 }),
    countCrash: assign({ attempt: ({ context }) => context.attempt + 1 }),
    recordExit: assign({
      lastExit: ({ event }) => (event.type === 'EXITED' ? event.exit : null),
      pid: null,
    }),
    awaitRespawn: assign({ awaitingRespawn: true }),
    clearRespawn: assign({ awaitingRespawn: false }),
    recordSpawnError: assign({ lastError: ({ event }) => spawnError(event) }),
    reply: emit(({ context }, params: { ok: boolean; message?: string; conflict?: boolean; unchanged?: boolean }) => ({
      type: 'commandDone' as const,
      command: context.command ?? 'start',
      ref: context.ref,
      ok: params.ok,
      conflict: params.conflict ?? false,
      unchanged: params.unchanged ?? false,
      message: params.message ?? PAST[context.command ?? 'start'],
    })),
    /**
     * The tunnel exited before its start was confirmed: the command waiting for it, if any, is answered with the exit
     * and where it took the instance (`then`), and is done.
     */
    answerExit: enqueueActions(({ context, event, enqueue }, params: ExitAnswer) => {
      if (context.command === null) return;
      const exit = event.type === 'EXITED' ? event.exit : { code: null, signal: null, tail: [] };
      const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
      const tail = exit.tail.length > 0 ? `; last log lines:\n${exit.tail.join('\n')}` : '';
      enqueue.emit({
        type: 'commandDone' as const,
        command: context.command,
        ref: context.ref,
        ok: false,
        conflict: false,
        unchanged: false,
        message: `the tunnel ${how} before it was up for ${context.timing.startMs} ms; ${whatNext(params, exit)}${tail}`,
        then: params.then,
      });
      enqueue.assign({ command: null });
    }),
    replySpawnError: emit(({ context, event }) => ({
      type: 'commandDone' as const,
      command: context.command ?? 'start',
      ref: context.ref,
      ok: false,
      conflict: false,
      unchanged: false,
      message: spawnError(event),
    })),
    /** A command that arrives while another one waits for its outcome is answered at once: it never waits unseen. */
    replyBusy: emit(({ context, event }) => ({
      type: 'commandDone' as const,
      command: commandOf(event),
      ref: (event as CommandEvent).ref ?? 0,
      ok: false,
      conflict: true,
      unchanged: false,
      message: `busy: a ${context.command ?? 'command'} is in progress`,
    })),
  },
  guards: {
    hasCommand: ({ context }) => context.command !== null,
    idle: ({ context }) => context.command === null,
    staleExit: ({ context, event }) => event.type === 'EXITED' && event.pid !== context.pid,
    noRetryExit: ({ context, event }) =>
      event.type === 'EXITED' &&
      !event.exit.transient &&
      event.exit.code !== null &&
      context.timing.noRetryExitCodes.includes(event.exit.code),
    /** The process ended by itself with code 0 (frpc after `/api/stop`): a stop, not a crash, as systemd sees it. */
    cleanExit: ({ event }) => event.type === 'EXITED' && event.exit.code === 0 && event.exit.signal === null,
    commandIs: ({ context }, params: { command: Command }) => context.command === params.command,
    watchdogOff: ({ context }) => !context.watchdog,
    /** A transient exit (a server that may come back) never gives up: it backs off to the cap and tries again. */
    crashLimitReached: ({ context, event }) =>
      !(event.type === 'EXITED' && event.exit.transient) && context.attempt + 1 >= context.timing.startLimit,
    disablesWatchdog: ({ event }) => event.type === 'CONFIGURE' && !event.watchdog,
    /** The init system restarts the tunnel itself, gives up on it, or let it stop (see `ExitInfo.next`). */
    next: ({ event }, params: { is: NonNullable<ExitInfo['next']> }) =>
      event.type === 'EXITED' && event.exit.next === params.is,
    /** An init system's restart is pending: leaving for anywhere but backoff means calling it off. */
    restartPending: ({ event }) => event.type === 'EXITED' && event.exit.next === 'restart',
    awaitingRespawn: ({ context }) => context.awaitingRespawn,
    ownTimer: ({ context }) => !context.awaitingRespawn,
  },
  delays: {
    startSecs: ({ context }) => context.timing.startMs,
    stopTimeout: ({ context }) => context.timing.stopTimeoutMs,
    killTimeout: ({ context }) => context.timing.killTimeoutMs,
    backoff: ({ context }) => backoffDelay(context.timing, context.attempt),
    stableAfter: ({ context }) => context.timing.stableMs,
  },
}).createMachine({
  id: 'instance',
  context: ({ input }) => ({
    instanceId: input.instanceId,
    timing: { ...DEFAULT_TIMING, ...input.timing },
    watchdog: input.watchdog,
    pid: null,
    command: null,
    ref: 0,
    attempt: 0,
    lastExit: null,
    lastError: null,
    awaitingRespawn: false,
  }),
  initial: 'stopped',
  on: {
    RETIRE: '.retired',
    CONFIGURE: { actions: 'configure' },
    // Reached only when the active state does not take the command: another one is waiting for its outcome.
    START: { actions: 'replyBusy' },
    STOP: { actions: 'replyBusy' },
    RESTART: { actions: 'replyBusy' },
  },
  states: {
    stopped: {
      entry: [
        'clearRespawn',
        { type: 'stateEntered', params: ({ context }) => ({ state: 'stopped' as const, context }) },
      ],
      on: {
        ...startAfresh,
        STOP: {
          actions: [
            'acceptCommand',
            { type: 'reply', params: { ok: true, unchanged: true, message: 'already stopped' } },
            'clearCommand',
          ],
        },
        ADOPT: { target: 'running', actions: [assign({ pid: ({ event }) => event.pid }), watchProcess] },
        RESUME: [
          {
            guard: ({ event }) => event.state === 'backoff',
            target: 'backoff',
            actions: ['countCrash', 'awaitRespawn'],
          },
          {
            target: 'failed',
            actions: assign({ lastExit: ({ event }) => (event.type === 'RESUME' ? (event.exit ?? null) : null) }),
          },
        ],
      },
    },

    starting: {
      // A new run: how an earlier one ended no longer describes this one.
      entry: [
        assign({ lastExit: null, awaitingRespawn: false }),
        { type: 'stateEntered', params: ({ context }) => ({ state: 'starting' as const, context }) },
      ],
      initial: 'spawning',
      states: {
        spawning: {
          entry: { type: 'spawn', params: ({ context }) => ({ instanceId: context.instanceId }) },
          on: {
            SPAWNED: [
              {
                guard: { type: 'commandIs', params: { command: 'stop' } },
                target: '#instance.stopping',
                actions: [assign({ pid: ({ event }) => event.pid, lastError: null }), watchProcess],
              },
              {
                target: 'confirming',
                actions: [assign({ pid: ({ event }) => event.pid, lastError: null }), watchProcess],
              },
            ],
            SPAWN_FAILED: [
              {
                guard: { type: 'commandIs', params: { command: 'stop' } },
                target: '#instance.stopped',
                actions: ['recordSpawnError', { type: 'reply', params: { ok: true } }, 'clearCommand'],
              },
              {
                guard: 'hasCommand',
                target: '#instance.stopped',
                actions: ['recordSpawnError', 'replySpawnError', 'clearCommand'],
              },
              { guard: 'crashLimitReached', target: '#instance.failed', actions: ['recordSpawnError', 'countCrash'] },
              { target: '#instance.backoff', actions: ['recordSpawnError', 'countCrash'] },
            ],
            // The watchdog is spawning: a stop is acted on once the process is there; a start or a restart waits
            // for this fresh process, which is what either asks for.
            STOP: { guard: 'idle', actions: 'acceptCommand' },
            START: { guard: 'idle', actions: 'acceptCommand' },
            RESTART: { guard: 'idle', actions: 'acceptCommand' },
          },
        },
        confirming: {
          after: {
            startSecs: [
              {
                guard: 'hasCommand',
                target: '#instance.running',
                actions: [{ type: 'reply', params: { ok: true } }, 'clearCommand'],
              },
              { target: '#instance.running' },
            ],
          },
          on: {
            // An exit before the start is confirmed is supervised as any other exit (a command waiting for the start
            // is answered with it and where it led): a tunnel whose server is down at boot comes back with it.
            EXITED: [
              staleExit,
              {
                ...initSystemExits[0],
                actions: [...initSystemExits[0].actions, answerExit('backoff', 'init-restarts')],
              },
              {
                ...initSystemExits[1],
                actions: [...initSystemExits[1].actions, answerExit('failed', 'init-gave-up')],
              },
              {
                ...initSystemExits[2],
                actions: [...initSystemExits[2].actions, answerExit('stopped', 'init-stopped')],
              },
              {
                guard: 'noRetryExit',
                target: '#instance.failed',
                actions: [endProcess, 'recordExit', 'countCrash', answerExit('failed', 'no-retry')],
              },
              {
                guard: 'cleanExit',
                target: '#instance.stopped',
                actions: [endProcess, 'recordExit', answerExit('stopped', 'clean')],
              },
              {
                guard: 'watchdogOff',
                target: '#instance.stopped',
                actions: [endProcess, 'recordExit', answerExit('stopped', 'watchdog-off')],
              },
              {
                guard: 'crashLimitReached',
                target: '#instance.failed',
                actions: [endProcess, 'recordExit', 'countCrash', answerExit('failed', 'limit')],
              },
              {
                target: '#instance.backoff',
                actions: [endProcess, 'recordExit', 'countCrash', answerExit('backoff', 'backoff')],
              },
            ],
            STOP: { guard: 'idle', target: '#instance.stopping', actions: 'acceptCommand' },
            RESTART: { guard: 'idle', target: '#instance.stopping', actions: 'acceptCommand' },
            // A start while the watchdog is already starting it waits for the same outcome.
            START: { guard: 'idle', actions: 'acceptCommand' },
          },
        },
      },
    },

    running: {
      entry: { type: 'stateEntered', params: ({ context }) => ({ state: 'running' as const, context }) },
      after: {
        stableAfter: { actions: 'resetCrashes' },
      },
      on: {
        EXITED: [
          staleExit,
          ...initSystemExits,
          { guard: 'cleanExit', target: 'stopped', actions: [endProcess, 'recordExit'] },
          { guard: 'watchdogOff', target: 'stopped', actions: [endProcess, 'recordExit'] },
          { guard: 'crashLimitReached', target: 'failed', actions: [endProcess, 'recordExit', 'countCrash'] },
          { target: 'backoff', actions: [endProcess, 'recordExit', 'countCrash'] },
        ],
        STOP: { target: 'stopping', actions: 'acceptCommand' },
        RESTART: { target: 'stopping', actions: 'acceptCommand' },
        START: {
          actions: [
            'acceptCommand',
            { type: 'reply', params: { ok: false, conflict: true, unchanged: true, message: 'already running' } },
            'clearCommand',
          ],
        },
      },
    },

    stopping: {
      entry: { type: 'stateEntered', params: ({ context }) => ({ state: 'stopping' as const, context }) },
      initial: 'terminating',
      states: {
        terminating: {
          entry: { type: 'terminate', params: ({ context }) => ({ instanceId: context.instanceId, pid: context.pid }) },
          after: { stopTimeout: 'killing' },
        },
        killing: {
          entry: { type: 'kill', params: ({ context }) => ({ instanceId: context.instanceId, pid: context.pid }) },
          after: {
            killTimeout: {
              target: '#instance.stopped',
              actions: [
                endProcess,
                assign({ lastError: 'the process did not exit after SIGKILL', pid: null }),
                { type: 'reply', params: { ok: false, message: 'the process did not exit after SIGKILL' } },
                'clearCommand',
              ],
            },
          },
        },
      },
      on: {
        EXITED: [
          staleExit,
          {
            guard: { type: 'commandIs', params: { command: 'restart' } },
            target: 'starting',
            actions: [endProcess, 'recordExit', 'resetCrashes'],
          },
          {
            target: 'stopped',
            actions: [endProcess, 'recordExit', { type: 'reply', params: { ok: true } }, 'clearCommand'],
          },
        ],
      },
    },

    backoff: {
      entry: { type: 'stateEntered', params: ({ context }) => ({ state: 'backoff' as const, context }) },
      // The machine's own timer, unless the init system restarts the tunnel: then its new process is awaited.
      after: { backoff: { guard: 'ownTimer', target: 'starting' } },
      on: {
        RESPAWNED: {
          guard: 'awaitingRespawn',
          target: '#instance.starting.confirming',
          actions: [assign({ pid: ({ event }) => event.pid, lastError: null }), watchProcess],
        },
        GAVE_UP: { guard: 'awaitingRespawn', target: 'failed' },
        // A stop always wins over the pending restart.
        STOP: {
          target: 'stopped',
          actions: [
            cancelRestart,
            'acceptCommand',
            { type: 'reply', params: { ok: true, message: 'stopped (the pending restart is cancelled)' } },
            'clearCommand',
          ],
        },
        ...startAfresh,
        CONFIGURE: [
          { guard: 'disablesWatchdog', target: 'stopped', actions: [cancelRestart, 'configure'] },
          { actions: 'configure' },
        ],
      },
    },

    failed: {
      entry: [
        'clearRespawn',
        {
          type: 'stateEntered',
          params: ({ context, event }) => ({
            state: 'failed' as const,
            context,
            quiet: event.type === 'RESUME' && event.quiet === true,
          }),
        },
      ],
      on: {
        ...startAfresh,
        STOP: {
          actions: [
            'acceptCommand',
            { type: 'reply', params: { ok: true, unchanged: true, message: 'already stopped (it had failed)' } },
            'clearCommand',
          ],
        },
      },
    },

    retired: { type: 'final' },
  },
});

/** What follows an exit during a start, as the operator who asked for the start reads it. */
function whatNext({ why }: ExitAnswer, exit: ExitInfo): string {
  switch (why) {
    case 'init-restarts':
      return 'the init system starts it again';
    case 'init-gave-up':
      return 'the init system gave it up: failed';
    case 'init-stopped':
      return 'the init system let it stop';
    case 'no-retry':
      return `failed: exit code ${exit.code} says retrying will not help (Watchdog.NoRetryExitCodes)`;
    case 'limit':
      return 'failed: it crashed too often in a row (Watchdog.StartLimit)';
    case 'clean':
      return 'it ended by itself with code 0, which is a stop';
    case 'watchdog-off':
      return 'the watchdog is off, so it stays stopped';
    default:
      return exit.transient
        ? "it is tried again at the backoff's pace until its server answers"
        : 'the watchdog starts it again after a backoff';
  }
}

function spawnError(event: InstanceEvent): string {
  return event.type === 'SPAWN_FAILED' ? event.error : 'the spawn failed';
}

export type InstanceMachine = typeof instanceMachine;
