import { Subject } from '../src/util/rx.js';
import { createActor, fromCallback, type Actor, type EventObject } from 'xstate';
import {
  backoffDelay,
  describeExit,
  instanceMachine,
  type Command,
  type CommandDone,
  type InstanceContext,
  type InstanceEvent,
  type InstanceMachine,
  type InstanceState,
  type Timing,
  topState,
} from '../machines/instance.machine.js';
import { loginFailedAtStart } from '../src/config/proxy-status.js';
import { readTunnelConfigText, type TunnelConfig } from '../src/config/tunnel-config.js';
import { notFound } from '../src/errors.js';
import type { InstanceEnvStore } from '../src/instances/instance-env.js';
import type { InstanceRecord, InstanceStore } from '../src/instances/instance-store.js';
import type { Logger } from '../src/log/logger.js';
import type { Settings } from '../src/settings/table.js';
import type { SettingsStore } from '../src/settings/settings-store.js';
import type { Database } from '../src/storage/database.js';
import { HEAP_GROWTH, lowMemoryCollection, MemoryReclaimer } from '../src/system/memory-reclaim.js';
import { trustedProgram } from '../src/system/trusted-program.js';
import { crashPoint } from '../src/util/crash-points.js';
import { WorkLimiter } from '../src/util/work-limiter.js';
import type { InstanceLogs } from './instance-logs.js';
import { InstanceQueue, type Slot } from './instance-queue.js';
import type { InstanceRegistry } from './instance-registry.js';
import { StartChecks, type VerdictCache } from './start-checks.js';
import { InstanceRestore } from './instance-restore.js';
import type { InitSystemEvent, SpawnRequest, TunnelRunner } from './process-runner.js';
import type { InstanceStateChange } from '../src/events/vocabulary.js';

import { withMemoryLimit } from '../src/instances/memory-cap.js';
import { effectivePolicy } from '../src/instances/health-policy.js';
export type { InstanceState } from '../machines/instance.machine.js';

export type { InstanceStateChange } from '../src/events/vocabulary.js';

type InstanceActor = Actor<InstanceMachine>;

export type { LastExit } from '../src/instances/instance-store.js';

/**
 * What an operator reads of an instance's runs beside its state and its record (whose `lastExit` says how the last
 * run ended): kept in memory, from the runs of this tunnelward.
 */
export interface RunInfo {
  /** Automatic restarts since the last operator start. */
  restarts: number;
  /** Why the last run or start ended (the exit and its last lines, or a spawn refused), until the next start. */
  lastError: string | null;
  /** In backoff, when the watchdog starts it again (null where the init system restarts it). */
  nextStartAt: number | null;
  /** When the instance entered its state, as this tunnelward saw it (null: before it, as restored at start-up). */
  stateSince: number | null;
}

/**
 * What the lifecycle holds of one instance while tunnelward runs: its machine actor (whose snapshot is the state),
 * what an operator reads of its runs, and the start it checked in its slot for the spawn that follows. The persisted
 * facts (desired state, process, last exit, failed, revision) are the store's record.
 */
interface Live extends VerdictCache {
  /** Made at the instance's first command or process (an instance never started has none). */
  actor?: InstanceActor;
  run: RunInfo;
  /** Checked in the slot of the command that starts it: the spawn that follows reads nothing again. */
  prepared?: Prepared;
  /**
   * When its latest spawn left the queue of SPAWNS_AT_ONCE (null while it waits there): a command's time limit counts
   * from then, as waiting for its turn among thousands started together is part of no stuck course.
   */
  spawnBegan?: number | null;
}

/** A start checked in its slot: the file as read, for the spawn. */
interface Prepared {
  text: string;
}

/** Commands (in a row, or in flight together) that make a burst worth a collection at its end. */
const BURST_COMMANDS = 100;

const mib = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;

const NO_RUNS: RunInfo = Object.freeze({ restarts: 0, lastError: null, nextStartAt: null, stateSince: null });

/**
 * Starts prepared and handed to the runner at once: a thousand started together hold a bounded number of file
 * reads and spawn messages at a time, and the first reach the spawner while the rest are prepared. (On two cores
 * the whole start of a thousand is bound by CPU, the tunnels' own start among it, not by this order.)
 */
const SPAWNS_AT_ONCE = 64;

/** A command's outcome is awaited for its longest legitimate course (stop, kill, start) plus this. */
const OUTCOME_MARGIN_MS = 30_000;

function timingFrom(s: Readonly<Settings>): Partial<Timing> {
  return {
    startMs: s['Instance.StartSecs'] * 1000,
    stopTimeoutMs: s['Instance.StopTimeoutSecs'] * 1000,
    backoffBaseMs: s['Watchdog.BackoffSecs'] * 1000,
    backoffCapMs: s['Watchdog.BackoffMaxSecs'] * 1000,
    stableMs: s['Watchdog.StableSecs'] * 1000,
    startLimit: s['Watchdog.StartLimit'],
    noRetryExitCodes: s['Watchdog.NoRetryExitCodes'],
  };
}

/**
 * The running side of the instances: one machine actor per instance (made on first use), the commands sent to them
 * one at a time per instance (each request awaits the outcome of its own), the processes they spawn, watch and
 * signal, and the restore at start-up. What the machines do to the world comes through their named actions.
 */
export class InstanceLifecycle {
  readonly changes$ = new Subject<InstanceStateChange>();
  private readonly live = new Map<number, Live>();
  private readonly queue: InstanceQueue;
  private readonly checks: StartChecks;
  private readonly restoration: InstanceRestore;
  private readonly spawns = new WorkLimiter(SPAWNS_AT_ONCE, Infinity);
  /** Gives back what a burst of commands (a thousand starts), or any other growth of the heap, left it holding. */
  private readonly reclaimer = new MemoryReclaimer(
    ({ reason, commands, heapBefore, heapAfter, ms, error }) => {
      const what = reason === 'burst' ? 'a burst of commands is over' : 'the heap grew';
      if (error === undefined) {
        this.log.info(
          { reason, commands, heapBeforeMiB: mib(heapBefore), heapAfterMiB: mib(heapAfter), ms: Math.round(ms) },
          `${what}: its memory is given back`,
        );
      } else this.log.warn({ reason, commands, error }, `${what}, but its memory could not be given back`);
    },
    BURST_COMMANDS,
    lowMemoryCollection,
    HEAP_GROWTH,
  );
  /** The last command reference handed out. */
  private refs = 0;
  private version = 0;
  private readonly log: Logger;
  private settingsSub: { unsubscribe(): void } | undefined;
  private initSub: { unsubscribe(): void } | undefined;
  private orphanSub: { unsubscribe(): void } | undefined;

  constructor(
    private readonly db: Database,
    private readonly store: InstanceStore,
    private readonly settings: SettingsStore,
    private readonly runner: TunnelRunner,
    private readonly logs: InstanceLogs,
    private readonly env: InstanceEnvStore,
    registry: InstanceRegistry,
    log: Logger,
  ) {
    this.log = log.child({ component: 'lifecycle' });
    this.queue = new InstanceQueue((id) => this.store.get(id));
    this.checks = new StartChecks({ settings, env, registry, stateOf: (id) => this.stateOf(id), log });
    this.restoration = new InstanceRestore({
      db,
      store,
      runner,
      logs,
      log: this.log,
      host: {
        adopt: (record, pid) => this.createActor(record).send({ type: 'ADOPT', pid }),
        resume: (record, state, exit) =>
          this.createActor(record).send({
            type: 'RESUME',
            state,
            // Failed before we restarted: nothing is announced again (it is no new failure).
            ...(exit === undefined ? {} : { quiet: true, ...(exit ? { exit } : {}) }),
          }),
        knowSecrets: (record, text) => void this.checks.knowSecrets(record, text),
        requestFor: (record) => this.requestFor(record),
        outputProblem: (id, pid, problem) => this.outputProblem(id, pid, problem),
      },
    });
  }

  get initSystem(): string {
    return this.runner.initSystem;
  }

  /** Changes whenever an instance changes state. */
  get stateVersion(): number {
    return this.version;
  }

  /**
   * Takes over the processes that still run and brings the rest to their desired state (see InstanceRestore), then
   * follows what the init system and the runner tell of the tunnels from now on.
   */
  async restore(bootId: string): Promise<void> {
    const found = await this.restoration.restore(bootId);
    this.initSub = this.runner.initEvents$?.subscribe((event) => this.onInitSystem(event));
    // A tunnel whose parent went away: the end of its output pipe tells its end, as for one adopted at start-up.
    this.orphanSub = this.runner.orphaned$?.subscribe((pid) => {
      const record = this.store.all().find((r) => r.pid === pid);
      if (!record) return;
      const problem = this.logs.channel(record.id).readAsAdopted(pid, () => this.runner.checkNow(pid));
      if (problem) this.outputProblem(record.id, pid, problem);
    });
    this.settingsSub = this.settings.changes$.subscribe(({ changed, settings }) => {
      if (changed.some((k) => k.startsWith('Watchdog.') || k.startsWith('Instance.'))) {
        const event = {
          type: 'CONFIGURE',
          watchdog: settings['Watchdog.Enabled'],
          timing: timingFrom(settings),
        } as const;
        for (const { actor } of this.live.values()) actor?.send(event);
      }
    });
    this.log.info(
      {
        initSystem: this.initSystem,
        instances: this.store.all().length,
        adopted: found.adopted,
        failed: found.failed,
        starting: found.toStart.length,
        stopping: found.toStop.length,
        sameBoot: found.sameBoot,
      },
      'instances loaded',
    );
    const restore = (id: number, command: Command) =>
      this.command(id, command).then(
        (done) =>
          done.ok || this.log.warn({ instanceID: id, command, reason: done.message }, 'could not restore an instance'),
        (err) => this.log.error({ instanceID: id, command, err }, 'could not restore an instance'),
      );
    for (const id of found.toStart) void restore(id, 'start');
    for (const id of found.toStop) void restore(id, 'stop');
  }

  /** Ends every process found running the config files of these instances (being undone or removed). */
  stopStrays(records: readonly InstanceRecord[]): Promise<void> {
    return this.restoration.stopStrays(records);
  }

  private outputProblem(instanceID: number, pid: number, problem: string): void {
    this.log.error({ instanceID, pid }, `a tunnel taken over: ${problem}`);
    this.logs.faults$.next({
      instanceID,
      fault: { since: Date.now(), reason: problem, lostBytes: 0 },
      recovered: false,
      message: problem,
    });
  }

  /**
   * News that the init system started a unit again on its own or gave it up: an instance waiting for that restart
   * looks where it stands. Any other start of the unit was ours.
   */
  private onInitSystem({ instanceId }: InitSystemEvent): void {
    const actor = this.live.get(instanceId)?.actor;
    if (actor?.getSnapshot().context.awaitingRespawn) this.takeRespawn(instanceId, actor);
  }

  /**
   * Asks the init system where its restart of the tunnel stands, and tells the machine: the new process (recorded
   * and followed), or the give-up. Asked when the instance begins to wait (the news may have come first) and at
   * every news after that, so no order of events leaves it waiting.
   */
  private takeRespawn(instanceId: number, actor: InstanceActor): void {
    void (async () => {
      const outcome = await this.runner.afterRestart?.(instanceId);
      if (!outcome || !actor.getSnapshot().context.awaitingRespawn || this.live.get(instanceId)?.actor !== actor)
        return;
      if (outcome === 'failed') {
        actor.send({ type: 'GAVE_UP' });
        return;
      }
      this.store.setProcess(instanceId, outcome.pid, outcome.startTicks);
      await this.db.persist();
      this.logs.channel(instanceId).startReading();
      actor.send({ type: 'RESPAWNED', pid: outcome.pid });
    })().catch((err) => this.log.error({ instanceID: instanceId, err }, 'cannot take over a restarted tunnel'));
  }

  /**
   * The machine with its implementations, built once for every instance (a machine is a large object; each
   * implementation finds its instance through its input or params).
   */
  private readonly machine = instanceMachine.provide({
    actions: {
      // The outcome goes back to the actor that asked, while it is active (a retired one has let the spawn go).
      spawn: ({ self }, { instanceId }) => {
        const tell = (event: InstanceEvent) => {
          if (self.getSnapshot().status === 'active') self.send(event);
        };
        this.spawn(instanceId).then(
          ({ pid }) => tell({ type: 'SPAWNED', pid }),
          (err: Error) => tell({ type: 'SPAWN_FAILED', error: err.message }),
        );
      },
      watch: (_, { instanceId, pid }) => this.watch(instanceId, pid),
      terminate: (_, { instanceId, pid }) => {
        if (pid !== null) this.withRequest(instanceId, (r) => this.runner.terminate(r, pid));
        crashPoint('stop:signalled', { id: instanceId });
      },
      kill: (_, { instanceId, pid }) => {
        if (pid !== null) this.withRequest(instanceId, (r) => this.runner.kill(r, pid));
      },
      cancelRestart: (_, { instanceId, pending }) => {
        if (pending) this.withRequest(instanceId, (r) => this.runner.cancelRestart?.(r));
      },
      processEnded: (_, { instanceId, pid }) => this.processEnded(instanceId, pid),
      // Entry actions run before the actor's snapshot moves: it still shows the state being left.
      stateEntered: ({ self }, { state, context, quiet }) =>
        this.stateEntered(topState(self.getSnapshot().value), state, context, quiet ?? false),
    },
  });

  /**
   * Follows the instance's process until it exits and tells its actor, with the last lines of the run. The actor is
   * looked up then, not held: the exit may be far off, and a deleted instance's actor must not be kept until it.
   */
  private watch(id: number, pid: number): void {
    void this.runner.exitOf(pid).then(async (exit) => {
      // A late exit of a deleted instance (its unit's stop landed after the delete) tells no one: its log channel,
      // with its file, is gone and must not come back.
      if (!this.live.get(id)?.actor) return;
      // The last lines only explain the exit: a failure to get them must not hide the exit itself.
      const tail = await this.logs
        .channel(id)
        .exitTail()
        .catch((err: Error) => [`(the last log lines could not be read: ${err.message})`]);
      const transient = loginFailedAtStart(tail);
      this.live
        .get(id)
        ?.actor?.send({ type: 'EXITED', pid, exit: { ...exit, tail, ...(transient ? { transient } : {}) } });
    });
  }

  /**
   * The parent of every instance's actor: they share its actor system (clock, scheduler, registry) instead of
   * having one each. It hears what a child reports: an error inside a machine is left uncaught, as it would be in
   * an actor of its own, and stops tunnelward (the next one takes the tunnels over).
   */
  private readonly root = createActor(
    fromCallback<EventObject>(({ receive }) =>
      receive((event) => {
        if (!event.type.startsWith('xstate.error.actor')) return;
        const { error } = event as EventObject & { error?: unknown };
        setTimeout(() => {
          throw error;
        });
      }),
    ),
  ).start();

  /** What the lifecycle holds of the instance, made empty on first use. */
  private liveOf(id: number): Live {
    let live = this.live.get(id);
    if (!live)
      this.live.set(id, (live = { run: { restarts: 0, lastError: null, nextStartAt: null, stateSince: null } }));
    return live;
  }

  private createActor(record: InstanceRecord): InstanceActor {
    const settings = this.settings.get();
    const actor = createActor(this.machine, {
      parent: this.root,
      input: { instanceId: record.id, watchdog: settings['Watchdog.Enabled'], timing: timingFrom(settings) },
    });
    this.liveOf(record.id).actor = actor;
    actor.start();
    return actor;
  }

  private requestFor(record: InstanceRecord): SpawnRequest {
    const { memoryMaxMB } = effectivePolicy(this.settings.get(), record.policy);
    return {
      instanceId: record.id,
      name: record.name,
      tunnelPath: this.settings.value('TunnelPath'),
      configPath: record.configPath,
      runUser: record.runUser,
      env: withMemoryLimit(this.env.of(record.id), memoryMaxMB),
      memoryMaxMB,
    };
  }

  /** Why the tunnel cannot start with this file and these variables, if it cannot (see StartChecks). */
  startProblem(
    record: InstanceRecord,
    config: TunnelConfig,
    env: Readonly<Record<string, string>>,
  ): string | undefined {
    return this.checks.startProblem(record, config, env);
  }

  private withRequest(id: number, act: (request: SpawnRequest) => void): void {
    const record = this.store.get(id);
    if (record) act(this.requestFor(record));
  }

  /** The machine's spawn: the process is recorded before the machine learns of it, so a crash of ours loses nothing. */
  private async spawn(id: number): Promise<{ pid: number }> {
    this.liveOf(id).spawnBegan = null;
    const { record, proc } = await this.spawns.run(async () => {
      // An operator's start was checked in its slot; the watchdog's restarts are checked here, with one read.
      const live = this.liveOf(id);
      live.spawnBegan = Date.now();
      const record = this.store.get(id);
      if (!record) throw new Error(`instance ${id} no longer exists`);
      const prepared = live.prepared;
      live.prepared = undefined;
      if (!prepared) {
        const unstartable = await this.checks.unstartable(record, await readTunnelConfigText(record.configPath), live);
        if (unstartable) throw new Error(unstartable);
      }
      const channel = this.logs.channel(id);
      channel.newRun();
      let output: string | undefined;
      if (this.runner.capturesOutput) output = await channel.prepareForTunnel();
      else channel.startReading();
      // Checked at each start: a program changed since it was set is not run.
      const tunnelPath = await trustedProgram(this.settings.value('TunnelPath'));
      return { record, proc: await this.runner.spawn({ ...this.requestFor(record), tunnelPath, output }) };
    });
    crashPoint('spawn:spawned', record);
    this.store.setProcess(id, proc.pid, proc.startTicks);
    this.version++;
    await this.db.persist();
    crashPoint('spawn:recorded', record);
    return { pid: proc.pid };
  }

  private processEnded(id: number, pid: number): void {
    if (pid < 0) return;
    this.runner.forget(pid);
    if (this.store.get(id)?.pid === pid) {
      this.store.setProcess(id, null, null);
      this.db.persist().catch((err) => this.log.error({ err }, 'cannot persist a process exit'));
    }
  }

  private stateEntered(from: InstanceState, to: InstanceState, ctx: InstanceContext, quiet: boolean): void {
    const id = ctx.instanceId;
    if (from === to) return;
    this.version++;
    if (quiet) return;
    const record = this.store.get(id);
    const exit = ctx.lastExit;
    // An exit that ended a run or a start (a stop by command ends in stopping -> stopped, and says nothing of codes).
    const crashed =
      to === 'backoff' || to === 'failed' || ((from === 'running' || from === 'starting') && to === 'stopped');
    const change: InstanceStateChange = {
      instanceID: id,
      name: record?.name ?? '',
      from,
      to,
      exitCode: crashed ? (exit?.code ?? null) : null,
      signal: crashed ? (exit?.signal ?? null) : null,
      attempt: ctx.attempt,
      delayMs: to === 'backoff' ? backoffDelay(ctx.timing, ctx.attempt) : null,
      at: Date.now(),
    };
    // Why a run or a start ended, in words: the spawn's refusal (there was no process), else the exit with the
    // tunnel's last lines.
    const spawnRefused = from === 'starting' && ctx.lastError !== null;
    const reason = crashed ? (spawnRefused ? ctx.lastError : exit ? describeExit(exit) : null) : null;
    if (reason !== null) change.reason = reason;
    this.recordRun(id, to, ctx, change);
    // Kept on record: a failed instance, and how a run ended, are shown again after a restart of tunnelward. A spawn
    // refused leaves no exit: an earlier one (an operator's SIGKILL) is not its cause.
    const lastExit = spawnRefused
      ? null
      : ctx.lastExit && (from === 'running' || from === 'starting' || from === 'stopping')
        ? { code: ctx.lastExit.code, signal: ctx.lastExit.signal, at: change.at }
        : (record?.lastExit ?? null);
    const outcomeChanged = this.store.setOutcome(id, to === 'failed', lastExit);
    const fields = {
      instanceID: id,
      from,
      to,
      exitCode: change.exitCode,
      signal: change.signal,
      ...(reason !== null ? { reason } : {}),
    };
    if (to === 'backoff')
      this.log.warn(
        { ...fields, attempt: ctx.attempt, delayMs: change.delayMs },
        'instance crashed, restarting after a delay',
      );
    else if (to === 'failed') this.log.error(fields, 'instance failed: the watchdog gives up');
    else if (crashed) this.log.warn(fields, 'instance exited');
    else this.log.info(fields, `instance ${to}`);
    if (to === 'backoff' && ctx.awaitingRespawn) {
      const actor = this.live.get(id)?.actor;
      if (actor) this.takeRespawn(id, actor);
    }
    if (to === 'stopped' || to === 'failed') {
      const idle = () => this.stateOf(id) === 'stopped' || this.stateOf(id) === 'failed';
      void this.logs.channel(id).stopReading(idle);
    }
    if ((to === 'failed' || (crashed && to === 'stopped' && ctx.command === null)) && record) {
      // The watchdog gave up, or the tunnel ended by itself and nothing restarts it: it stays stopped until an
      // operator starts it, also across our own restarts.
      this.store.setDesired(id, 'stopped');
      this.db.persist().catch((err) => this.log.error({ err }, 'cannot persist a failed instance'));
    } else if (outcomeChanged) {
      this.db.persist().catch((err) => this.log.error({ err }, 'cannot persist how a run ended'));
    }
    this.changes$.next(change);
  }

  /** Keeps what an operator reads of the runs: restarts since the operator's start, and the next start. */
  private recordRun(id: number, to: InstanceState, ctx: InstanceContext, change: InstanceStateChange): void {
    const run = this.liveOf(id).run;
    // Why the last run or start ended, while it rests after it (a new start clears it).
    if (change.reason !== undefined) run.lastError = change.reason;
    else if (to === 'starting' || to === 'running') run.lastError = null;
    // A start by command begins a new count; any other start is the watchdog's or the init system's restart.
    if (to === 'starting') run.restarts = ctx.command === 'start' || ctx.command === 'restart' ? 0 : run.restarts + 1;
    run.nextStartAt = to === 'backoff' && !ctx.awaitingRespawn ? change.at + (change.delayMs ?? 0) : null;
    run.stateSince = change.at;
  }

  /** The instance's runs as an operator reads them. */
  runOf(id: number): Readonly<RunInfo> {
    return this.live.get(id)?.run ?? NO_RUNS;
  }

  /**
   * Sends a command event to an actor and resolves with the outcome it emits for it. Every state answers every
   * command, so the time limit is only a last safety net: past it the request fails and says so, never hangs. It
   * counts from the later of the send and the spawn's turn (see Live.spawnBegan).
   */
  private outcome(actor: InstanceActor, type: 'START' | 'STOP' | 'RESTART'): Promise<CommandDone> {
    const ref = ++this.refs;
    const { timing } = actor.getSnapshot().context;
    const limitMs = timing.stopTimeoutMs + timing.killTimeoutMs + timing.startMs + OUTCOME_MARGIN_MS;
    const command = type.toLowerCase() as Command;
    return new Promise((resolve) => {
      const done = (event: CommandDone) => {
        clearTimeout(timer);
        sub.unsubscribe();
        resolve(event);
      };
      const sub = actor.on('commandDone', (event) => event.ref === ref && done(event));
      const expire = () => {
        const { instanceId } = actor.getSnapshot().context;
        const began = this.live.get(instanceId)?.spawnBegan;
        const left = began === null ? limitMs : began === undefined ? 0 : began + limitMs - Date.now();
        if (left > 0) {
          timer = setTimeout(expire, left);
          return;
        }
        this.log.error({ instanceID: instanceId, command, limitMs }, 'a command got no outcome in time');
        done({
          type: 'commandDone',
          command,
          ref,
          ok: false,
          conflict: false,
          unchanged: false,
          message: `had no outcome within ${limitMs} ms`,
        });
      };
      let timer = setTimeout(expire, limitMs);
      actor.send({ type, ref });
    });
  }

  /** Sends a command to the instance's actor, after every command queued before it, and resolves with its outcome. */
  command(id: number, command: Command): Promise<CommandDone> {
    return this.inSlot(id, (slot) => this.commandIn(slot, command));
  }

  /**
   * A command in the instance's slot: the checks of a start first (a 400 or 409 before anything is done), then the
   * intent on disk, then the machine's outcome.
   */
  async commandIn(slot: Slot, command: Command): Promise<CommandDone> {
    slot.check();
    const id = slot.id;
    const record = this.recordOf(id);
    if (command !== 'stop') {
      const checked = await this.checks.check(slot, record, command, this.liveOf(id));
      if ('problem' in checked) throw checked.problem;
      this.liveOf(id).prepared = { text: checked.text };
    }
    const actor = this.live.get(id)?.actor ?? this.createActor(record);
    // The intent is on disk before anything is done: a crash halfway is finished the way it was meant.
    this.store.setDesired(id, command === 'stop' ? 'stopped' : 'running');
    await this.db.persist();
    crashPoint(`${command}:intent`, { id });
    const type = command === 'start' ? 'START' : command === 'stop' ? 'STOP' : 'RESTART';
    const result = await this.outcome(actor, type);
    this.liveOf(id).prepared = undefined;
    if (!result.ok) {
      // What is meant after a failure is what is: a failed start leaves nothing running to restore; a start the
      // watchdog retries is still meant.
      const state = this.stateOf(id);
      this.store.setDesired(id, state === 'stopped' || state === 'failed' ? 'stopped' : 'running');
    }
    await this.db.persist();
    return result;
  }

  /**
   * Applies a new config file by a restart in the slot of the change, only if the tunnel runs at this moment (as
   * systemd's try-restart): a stop queued behind the change runs after it and is never undone. Undefined when it did
   * not run.
   */
  async restartIfRunning(slot: Slot): Promise<CommandDone | undefined> {
    const state = this.stateOf(slot.id);
    if (state !== 'running' && state !== 'starting') return undefined;
    return this.commandIn(slot, 'restart');
  }

  /** A restart in the slot of a change, whatever the state (putting back a tunnel that a restart left down). */
  restartIn(slot: Slot): Promise<CommandDone> {
    return this.commandIn(slot, 'restart');
  }

  /**
   * Runs `job` in the instance's slot, after every command and change queued before it; the only way to one (see
   * Slot).
   */
  inSlot<T>(id: number, job: (slot: Slot, record: InstanceRecord) => Promise<T>): Promise<T> {
    return this.counted(() => this.queue.run(id, job));
  }

  /** Commands and changes of the instance queued or running. */
  queuedOf(id: number): number {
    return this.queue.depth(id);
  }

  /** Runs `job` as one command of a burst, whose end gives its memory back (commands, edits, creates, deletes). */
  counted<T>(job: () => Promise<T>): Promise<T> {
    return this.reclaimer.track(job);
  }

  /**
   * For a delete, in its slot: stops the tunnel if it runs (its desired state first, as for a stop) and drops the
   * actor. Resolves with the failure's message when the tunnel could not be stopped.
   */
  async retire(slot: Slot): Promise<string | undefined> {
    slot.check();
    const id = slot.id;
    this.store.setDesired(id, 'stopped');
    await this.db.persist();
    const actor = this.live.get(id)?.actor;
    const state = this.stateOf(id);
    if (actor && state !== 'stopped' && state !== 'failed') {
      const result = await this.outcome(actor, 'STOP');
      if (!result.ok) return result.message;
    }
    actor?.send({ type: 'RETIRE' });
    this.live.delete(id);
    this.runner.removed?.(id);
    this.version++;
    return undefined;
  }

  private recordOf(id: number): InstanceRecord {
    const record = this.store.get(id);
    if (!record || record.pending === 'create') throw notFound(`instance ${id} not found`);
    return record;
  }

  /** The instance's state: its machine's; stopped for an instance that never had one. */
  stateOf(id: number): InstanceState {
    const actor = this.live.get(id)?.actor;
    return actor ? topState(actor.getSnapshot().value) : 'stopped';
  }

  /** Stops the actors, not the tunnels: they keep running and the next tunnelward takes them over. */
  close(): void {
    this.reclaimer.close();
    this.settingsSub?.unsubscribe();
    this.initSub?.unsubscribe();
    this.orphanSub?.unsubscribe();
    for (const { actor } of this.live.values()) actor?.send({ type: 'RETIRE' });
    this.live.clear();
    this.root.stop();
    this.runner.close();
    this.changes$.complete();
  }
}
