import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Subject } from 'rxjs';
import { createActor, fromCallback, fromPromise, type Actor, type EventObject } from 'xstate';
import {
  backoffDelay,
  instanceMachine,
  type Command,
  type CommandDone,
  type InstanceContext,
  type InstanceMachine,
  type Timing,
} from '../machines/instance.machine.js';
import type { User } from '../src/accounts/account-service.js';
import { readTunnelConfig, TunnelConfig, writeTunnelConfig, type ProxyInput, type ProxyView } from '../src/config/tunnel-config.js';
import { AppError, badRequest, conflict, notFound } from '../src/errors.js';
import { InstanceStore, type InstanceRecord } from '../src/instances/instance-store.js';
import type { Logger } from '../src/log/logger.js';
import type { Settings } from '../src/settings/defaults.js';
import type { SettingsStore } from '../src/settings/settings-store.js';
import type { Database } from '../src/storage/database.js';
import { lookupOsUser } from '../src/system/os-users.js';
import { getMeta, setMeta } from '../src/storage/meta.js';
import { crashPoint } from '../src/util/crash-points.js';
import { KeyedQueue } from '../src/util/keyed-queue.js';
import { removeStaleTempFiles } from '../src/fs/atomic.js';
import type { LiveProcess } from '../src/system/proc.js';
import { serviceNameOf, type BootService, type BootTarget } from './boot-services.js';
import type { InstanceLogs } from './instance-logs.js';
import type { SpawnRequest, TunnelRunner } from './process-runner.js';

export type InstanceState = 'stopped' | 'starting' | 'running' | 'stopping' | 'backoff' | 'failed';

/** A change of an instance's state, for the notifier and the logs. */
export interface InstanceStateChange {
  instanceID: number;
  name: string;
  from: InstanceState;
  to: InstanceState;
  exitCode: number | null;
  signal: string | null;
  /** Crashes in a row, and the delay before the next start, while in backoff. */
  attempt: number;
  delayMs: number | null;
  at: number;
}

export interface CreateInstance {
  name: string;
  serverAddr: string;
  serverPort: string;
  authMethod: string;
  bootAtStart: boolean;
  runUser: string;
  additional: Record<string, unknown>;
}

export interface SystemConfigChange {
  name?: string;
  bootAtStart?: boolean;
  runUser?: string;
}

export interface InstanceView {
  record: InstanceRecord;
  state: InstanceState;
}

const INSTANCE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

const targetOf = (r: InstanceRecord): BootTarget => ({ id: r.id, name: r.name, runUser: r.runUser, configPath: r.configPath });


type InstanceActor = Actor<InstanceMachine>;

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
 * Owns one instance actor per tunnel-client instance and serialises every command on an instance (start, stop,
 * restart, modify, delete, proxy edits): each request awaits the outcome of its own command, while commands on
 * different instances run in parallel.
 */
export class InstanceSupervisor {
  readonly changes$ = new Subject<InstanceStateChange>();
  /** Ids of deleted instances, so streams following them can close. */
  readonly deleted$ = new Subject<number>();
  /** Boot-service operations that failed. */
  readonly bootErrors$ = new Subject<{ instanceID: number; name: string; message: string }>();
  private readonly actors = new Map<number, InstanceActor>();
  private readonly states = new Map<number, InstanceState>();
  private version = 0;
  private readonly queue = new KeyedQueue<number>();
  /** The last command reference handed out. */
  private refs = 0;
  private readonly store: InstanceStore;
  private readonly log: Logger;
  private settingsSub: { unsubscribe(): void } | undefined;

  constructor(
    private readonly db: Database,
    private readonly settings: SettingsStore,
    private readonly runner: TunnelRunner,
    private readonly boot: BootService,
    readonly logs: InstanceLogs,
    log: Logger,
    /** Where config files that no instance owns are moved at start-up. */
    private readonly orphanDir: string,
  ) {
    this.store = new InstanceStore(db);
    this.log = log.child({ component: 'supervisor' });
  }

  get initSystem(): string {
    return this.runner.initSystem;
  }

  /**
   * Creates an actor per recorded instance, takes over the processes that still run, and brings the rest to
   * their desired state: after a restart of tunnelward alone, what should run is started again; after a new
   * boot of the host, the `bootAtStart` instances are started.
   */
  async start(bootId: string): Promise<void> {
    await this.settlePending();
    await this.sweepInstanceDir();
    const sameBoot = getMeta(this.db, 'boot_id') === bootId;
    const toStart: number[] = [];
    const toStop: number[] = [];
    let adopted = 0;
    // Tunnels are found by what they run, not only by the pids on record: a crash can come between a spawn and
    // the saving of its pid, and a tunnel found so is taken over instead of being started a second time.
    const running = this.runner.findRunning(new Set(this.store.all().map((r) => r.configPath)));
    this.db.transaction(() => {
      for (const record of this.store.all()) {
        const pid = this.adoptOne(record, running.get(record.configPath) ?? []);
        if (pid !== null) {
          adopted++;
          // A stop that was cut off: it was meant, so it is finished.
          if (record.desired === 'stopped') toStop.push(record.id);
          continue;
        }
        if (record.pid !== null) this.store.setProcess(record.id, null, null);
        const shouldRun = sameBoot ? record.desired === 'running' : record.bootAtStart;
        if (!sameBoot) this.store.setDesired(record.id, record.bootAtStart ? 'running' : 'stopped');
        if (shouldRun) toStart.push(record.id);
      }
      setMeta(this.db, 'boot_id', bootId);
    });
    await this.db.persist();
    this.settingsSub = this.settings.changes$.subscribe(({ changed, settings }) => {
      if (changed.some((k) => k.startsWith('Watchdog.') || k.startsWith('Instance.'))) {
        const event = { type: 'CONFIGURE', watchdog: settings['Watchdog.Enabled'], timing: timingFrom(settings) } as const;
        for (const actor of this.actors.values()) actor.send(event);
      }
    });
    const instances = this.store.all().length;
    this.log.info(
      { initSystem: this.initSystem, instances, adopted, starting: toStart.length, stopping: toStop.length, sameBoot },
      'instances loaded',
    );
    const restore = (id: number, command: Command) =>
      this.command(id, command).then(
        (done) => done.ok || this.log.warn({ instanceID: id, command, reason: done.message }, 'could not restore an instance'),
        (err) => this.log.error({ instanceID: id, command, err }, 'could not restore an instance'),
      );
    for (const id of toStart) void restore(id, 'start');
    for (const id of toStop) void restore(id, 'stop');
  }

  /**
   * Takes over the instance's live process: the recorded one if it still runs, else the newest found running its
   * config file. Any other process for the same file is a second copy (a restart cut off by a crash) and is ended.
   * Returns the pid taken over, or null.
   */
  private adoptOne(record: InstanceRecord, found: LiveProcess[]): number | null {
    const recorded = record.pid !== null && this.runner.adopt(record.pid, record.startTicks, record.configPath) ? record.pid : null;
    const candidates = found.filter((p) => p.pid !== recorded).sort((a, b) => b.startTicks - a.startTicks);
    let pid = recorded;
    if (pid === null) {
      const newest = candidates.shift();
      if (newest && this.runner.adopt(newest.pid, newest.startTicks, record.configPath)) {
        pid = newest.pid;
        this.store.setProcess(record.id, newest.pid, newest.startTicks);
        this.log.warn({ instanceID: record.id, pid }, 'found a tunnel running whose pid was not recorded; taken over');
      }
    }
    for (const stray of candidates) {
      this.log.warn({ instanceID: record.id, pid: stray.pid }, 'found a second tunnel for the same config file; stopping it');
      this.runner.stopStray(stray.pid);
    }
    if (pid === null) return null;
    // Drain what it wrote while we were away, then follow it.
    const adoptedPid = pid;
    this.logs.channel(record.id).startReading(() => this.runner.checkNow(adoptedPid));
    this.createActor(record).send({ type: 'ADOPT', pid });
    return pid;
  }

  /**
   * Ends what a crash cut off: a create that had not finished is undone (it was never acknowledged), a delete that
   * had begun is finished (it was asked for, and half of it may be done).
   */
  private async settlePending(): Promise<void> {
    const pending = this.store.all().filter((r) => r.pending !== null);
    if (pending.length === 0) return;
    const running = this.runner.findRunning(new Set(pending.map((r) => r.configPath)));
    for (const record of pending) {
      for (const p of running.get(record.configPath) ?? []) this.runner.stopStray(p.pid);
      await this.dismantle(record);
      this.log.warn({ instanceID: record.id, name: record.name, pending: record.pending }, `an interrupted ${record.pending} of an instance was ${record.pending === 'create' ? 'undone' : 'finished'}`);
    }
  }

  /**
   * Start-up housekeeping of the instance dir: temp files of writes a crash cut off are removed, and config files
   * that no instance owns are moved aside (never deleted: they are data) with their ids kept from reuse.
   */
  private async sweepInstanceDir(): Promise<void> {
    const dir = this.settings.value('InstancePath');
    for (const name of await removeStaleTempFiles(dir)) this.log.info({ file: join(dir, name) }, 'removed the temp file of an interrupted write');
    const owned = new Set(this.store.all().map((r) => r.configPath));
    const names = await readdir(dir).catch(() => [] as string[]);
    let highest = 0;
    for (const name of names) {
      const m = /^tunnel_(\d+)\.toml$/.exec(name);
      if (!m || owned.has(join(dir, name))) continue;
      highest = Math.max(highest, Number(m[1]));
      const aside = join(this.orphanDir, `${name}.${Date.now()}`);
      await mkdir(this.orphanDir, { recursive: true, mode: 0o700 });
      await rename(join(dir, name), aside);
      this.log.warn({ file: join(dir, name), movedTo: aside }, 'a config file that no instance owns was moved aside');
    }
    if (highest > 0) {
      this.store.reserveIdsUpTo(highest);
      await this.db.persist();
    }
  }

  /**
   * The machine with its implementations, built once for every instance (a machine is a large object; each
   * implementation finds its instance through its input or params).
   */
  private readonly machine = instanceMachine.provide({
    actors: {
      spawnTunnel: fromPromise(async ({ input }) => this.spawn(input.instanceId)),
      watchTunnel: fromCallback<EventObject, { instanceId: number; pid: number }>(({ sendBack, input }) => {
        let live = true;
        void this.runner.exitOf(input.pid).then(async (exit) => {
          // The last lines only explain the exit: a failure to read them must not hide the exit itself.
          const tail = await this.logs
            .channel(input.instanceId)
            .exitTail()
            .catch((err: Error) => [`(the last log lines could not be read: ${err.message})`]);
          if (live) sendBack({ type: 'EXITED', exit: { ...exit, tail } });
        });
        return () => {
          live = false;
        };
      }),
    },
    actions: {
      terminate: (_, { instanceId, pid }) => {
        if (pid !== null) this.withRequest(instanceId, (r) => this.runner.terminate(r, pid));
        crashPoint('stop:signalled', { id: instanceId });
      },
      kill: (_, { instanceId, pid }) => pid !== null && this.withRequest(instanceId, (r) => this.runner.kill(r, pid)),
    },
  });

  private createActor(record: InstanceRecord): InstanceActor {
    const id = record.id;
    const settings = this.settings.get();
    const actor = createActor(this.machine, {
      input: { instanceId: id, watchdog: settings['Watchdog.Enabled'], timing: timingFrom(settings) },
    });
    this.states.set(id, 'stopped');
    let pid: number | null = null;
    actor.subscribe((snapshot) => {
      const to = (typeof snapshot.value === 'string' ? snapshot.value : Object.keys(snapshot.value)[0]) as InstanceState;
      const ctx = snapshot.context;
      if (pid !== null && ctx.pid === null) this.onExit(id, pid);
      pid = ctx.pid;
      const from = this.states.get(id)!;
      if (from === to) return;
      this.states.set(id, to);
      this.version++;
      this.onStateChange(id, from, to, ctx);
    });
    actor.start();
    this.actors.set(id, actor);
    return actor;
  }

  private requestFor(record: InstanceRecord): SpawnRequest {
    return {
      instanceId: record.id,
      name: record.name,
      tunnelPath: this.settings.value('TunnelPath'),
      configPath: record.configPath,
      runUser: record.runUser,
    };
  }

  private withRequest(id: number, act: (request: SpawnRequest) => void): void {
    const record = this.store.get(id);
    if (record) act(this.requestFor(record));
  }

  /** The machine's spawn: the process is recorded before the machine learns of it, so a crash of ours loses nothing. */
  private async spawn(id: number): Promise<{ pid: number }> {
    const record = this.store.get(id);
    if (!record) throw new Error(`instance ${id} no longer exists`);
    const channel = this.logs.channel(id);
    channel.newRun();
    let output: number | undefined;
    if (this.runner.capturesOutput) output = await channel.openForTunnel();
    else channel.startReading();
    const proc = await this.runner.spawn({ ...this.requestFor(record), output });
    crashPoint('spawn:spawned', record);
    this.store.setProcess(id, proc.pid, proc.startTicks);
    await this.db.persist();
    crashPoint('spawn:recorded', record);
    return { pid: proc.pid };
  }

  private onExit(id: number, pid: number): void {
    this.runner.forget(pid);
    if (this.store.get(id)?.pid === pid) {
      this.store.setProcess(id, null, null);
      this.db.persist().catch((err) => this.log.error({ err }, 'cannot persist a process exit'));
    }
  }

  private onStateChange(id: number, from: InstanceState, to: InstanceState, ctx: InstanceContext): void {
    const record = this.store.get(id);
    const exit = ctx.lastExit;
    // An exit that ended a run or a start (a stop by command ends in stopping -> stopped, and says nothing of codes).
    const crashed = to === 'backoff' || to === 'failed' || ((from === 'running' || from === 'starting') && to === 'stopped');
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
    const fields = { instanceID: id, from, to, exitCode: change.exitCode, signal: change.signal };
    if (to === 'backoff') this.log.warn({ ...fields, attempt: ctx.attempt, delayMs: change.delayMs }, 'instance crashed, restarting after a delay');
    else if (to === 'failed') this.log.error(fields, 'instance crashed too often in a row, giving up');
    else if (crashed) this.log.warn(fields, 'instance exited');
    else this.log.info(fields, `instance ${to}`);
    if (to === 'stopped' || to === 'failed') {
      const idle = () => this.states.get(id) === 'stopped' || this.states.get(id) === 'failed';
      void this.logs.channel(id).stopReading(idle);
    }
    if (to === 'failed' && record) {
      // The watchdog gave up: it stays stopped until an operator starts it, also across our own restarts.
      this.store.setDesired(id, 'stopped');
      this.db.persist().catch((err) => this.log.error({ err }, 'cannot persist a failed instance'));
    }
    this.changes$.next(change);
  }

  /** The instance's actor, made on first use: an instance that was never started costs no actor. */
  private actorOf(id: number): InstanceActor {
    return this.actors.get(id) ?? this.createActor(this.recordOf(id));
  }

  private recordOf(id: number): InstanceRecord {
    const record = this.store.get(id);
    if (!record || record.pending === 'create') throw notFound(`instance ${id} not found`);
    return record;
  }

  /**
   * Sends a command event to an actor and resolves with the outcome it emits for it. Every state answers every
   * command, so the time limit is only a last safety net: past it the request fails and says so, never hangs.
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
      const timer = setTimeout(() => {
        const { instanceId } = actor.getSnapshot().context;
        this.log.error({ instanceID: instanceId, command, limitMs }, 'a command got no outcome in time');
        done({ type: 'commandDone', command, ref, ok: false, conflict: false, message: `had no outcome within ${limitMs} ms` });
      }, limitMs);
      actor.send({ type, ref });
    });
  }

  /** Sends a command to the instance's actor and resolves with its outcome. */
  command(id: number, command: Command): Promise<CommandDone> {
    return this.queue.run(id, async () => {
      const actor = this.actorOf(id);
      // The intent is on disk before anything is done: a crash halfway is finished the way it was meant.
      this.store.setDesired(id, command === 'stop' ? 'stopped' : 'running');
      await this.db.persist();
      crashPoint(`${command}:intent`, { id });
      const type = command === 'start' ? 'START' : command === 'stop' ? 'STOP' : 'RESTART';
      const result = await this.outcome(actor, type);
      if (!result.ok) {
        // What is meant after a failure is what is: a failed start leaves nothing running to restore.
        const state = this.states.get(id) ?? 'stopped';
        this.store.setDesired(id, state === 'stopped' || state === 'failed' ? 'stopped' : 'running');
      }
      await this.db.persist();
      return result;
    });
  }

  /** Runs `job` in the instance's queue, after every command queued before it. */
  private exclusive<T>(id: number, job: (record: InstanceRecord) => Promise<T>): Promise<T> {
    return this.queue.run(id, async () => job(this.recordOf(id)));
  }

  /** The instance's name, or '' once it is gone. */
  nameOf(id: number): string {
    return this.store.get(id)?.name ?? '';
  }

  state(id: number): InstanceState {
    this.recordOf(id);
    return this.states.get(id) ?? 'stopped';
  }

  /** Changes whenever something a list shows changes: a list built at one version can be served again. */
  get listVersion(): number {
    return this.version;
  }

  list(): InstanceView[] {
    return this.store
      .all()
      .filter((record) => record.pending !== 'create')
      .map((record) => ({ record, state: this.states.get(record.id) ?? 'stopped' }));
  }

  get(id: number): InstanceView {
    const record = this.recordOf(id);
    return { record, state: this.states.get(id) ?? 'stopped' };
  }

  async create(input: CreateInstance, owner: User): Promise<{ record: InstanceRecord; bootServiceError?: string }> {
    checkInstanceName(input.name);
    checkRunUser(input.runUser);
    if (this.store.nameTaken(input.name)) throw conflict(`an instance named ${input.name} already exists`);
    const config = TunnelConfig.create(
      { serverAddr: input.serverAddr, serverPort: input.serverPort, authMethod: input.authMethod },
      input.additional,
    );
    const instancePath = this.settings.value('InstancePath');
    const record = this.store.insert({
      name: input.name,
      bootAtStart: input.bootAtStart,
      runUser: input.runUser,
      createdBy: owner.username,
      ownerId: owner.id,
      now: Date.now(),
      configPathOf: (id) => join(instancePath, `${serviceNameOf(id)}.toml`),
    });
    // The record, marked as a create in progress, is on disk before the file: its id is never handed out twice,
    // and a crash before the end is undone at the next start.
    await this.db.persist();
    crashPoint('create:recorded', record);
    try {
      await mkdir(instancePath, { recursive: true, mode: 0o711 });
      await writeTunnelConfig(record.configPath, config);
      await this.logs.channel(record.id).ensurePipe();
    } catch (err) {
      await this.dismantle(record);
      throw err instanceof AppError ? err : new AppError(500, `cannot write ${record.configPath}: ${(err as Error).message}`);
    }
    crashPoint('create:written', record);
    let created = record;
    let bootServiceError: string | undefined;
    try {
      if (record.bootAtStart) await this.boot.enable(targetOf(record));
      else if (this.runsThroughInit()) await this.boot.prepare(targetOf(record));
    } catch (err) {
      bootServiceError = (err as Error).message;
      if (record.bootAtStart) created = this.store.update(record.id, { bootAtStart: false }) ?? record;
    }
    this.store.setPending(record.id, null);
    created = this.store.get(record.id) ?? created;
    await this.db.persist();
    this.version++;
    this.log.info({ instanceID: created.id, name: created.name }, 'instance created');
    if (bootServiceError) this.reportBootError(created, bootServiceError);
    return bootServiceError ? { record: created, bootServiceError } : { record: created };
  }

  /**
   * Stops the tunnel if it runs, then removes its boot service, config file, logs and record. Once the tunnel is
   * stopped the delete is marked as begun on disk, so a crash in the middle is finished at the next start.
   */
  remove(id: number): Promise<InstanceRecord> {
    return this.exclusive(id, async (record) => {
      this.store.setDesired(id, 'stopped');
      await this.db.persist();
      const actor = this.actors.get(id);
      if (actor && this.states.get(id) !== 'stopped' && this.states.get(id) !== 'failed') {
        const result = await this.outcome(actor, 'STOP');
        if (!result.ok) throw new AppError(500, `cannot stop instance ${id}: ${result.message}`);
      }
      crashPoint('delete:stopped', record);
      this.store.setPending(id, 'delete');
      await this.db.persist();
      crashPoint('delete:marked', record);
      actor?.stop();
      this.actors.delete(id);
      this.states.delete(id);
      this.version++;
      await this.dismantle(record);
      this.log.info({ instanceID: id, name: record.name }, 'instance deleted');
      this.deleted$.next(id);
      return record;
    });
  }

  /** Removes everything of an instance (its process is already gone): boot service, config file, logs, record. */
  private async dismantle(record: InstanceRecord): Promise<void> {
    if (record.bootAtStart || this.runsThroughInit()) {
      await this.boot.remove(targetOf(record)).catch((err) => this.reportBootError(record, (err as Error).message));
    }
    crashPoint('delete:unbooted', record);
    await rm(record.configPath, { force: true });
    await this.logs.remove(record.id);
    crashPoint('delete:files', record);
    this.store.delete(record.id);
    await this.db.persist();
  }

  /** Changes top-level settings of the config file; proxies stay as they are. */
  modifyConfig(id: number, patch: Record<string, unknown>): Promise<InstanceRecord> {
    return this.exclusive(id, async (record) => {
      const config = await readTunnelConfig(record.configPath);
      config.setCommon(patch);
      await writeTunnelConfig(record.configPath, config);
      return record;
    });
  }

  /**
   * Renames, changes the run user, switches start at boot. The boot service follows: enabling creates it,
   * disabling removes it, and a new name or run user while it is on removes the old one and creates the new one.
   * A failure there does not fail the request: it comes back as `bootServiceError`, and the record keeps saying
   * what is really in place.
   */
  modifySystem(id: number, change: SystemConfigChange): Promise<{ record: InstanceRecord; bootServiceError?: string }> {
    return this.exclusive(id, async (record) => {
      if (change.name !== undefined) {
        checkInstanceName(change.name);
        if (this.store.nameTaken(change.name, id)) throw conflict(`an instance named ${change.name} already exists`);
      }
      if (change.runUser !== undefined) checkRunUser(change.runUser);
      const wantBoot = change.bootAtStart ?? record.bootAtStart;
      const identityChanged =
        (change.name !== undefined && change.name !== record.name) ||
        (change.runUser !== undefined && change.runUser !== record.runUser);
      let bootAtStart = record.bootAtStart;
      let bootServiceError: string | undefined;
      const attempt = async (what: () => Promise<void>) => {
        try {
          await what();
          return true;
        } catch (err) {
          bootServiceError = (err as Error).message;
          return false;
        }
      };
      if (record.bootAtStart && (!wantBoot || identityChanged)) {
        if (await attempt(() => this.boot.disable(targetOf(record)))) bootAtStart = false;
      }
      let updated = this.store.update(id, { name: change.name, runUser: change.runUser }) ?? record;
      if (!bootServiceError && wantBoot && !bootAtStart) {
        if (await attempt(() => this.boot.enable(targetOf(updated)))) bootAtStart = true;
      } else if (!bootServiceError && identityChanged && this.runsThroughInit()) {
        await attempt(() => this.boot.prepare(targetOf(updated)));
      }
      updated = this.store.update(id, { bootAtStart }) ?? updated;
      await this.db.persist();
      this.version++;
      if (bootServiceError) this.reportBootError(updated, bootServiceError);
      return bootServiceError ? { record: updated, bootServiceError } : { record: updated };
    });
  }

  /** systemd and init.d need a unit or script to run an instance at all, boot or not. */
  private runsThroughInit(): boolean {
    return this.boot.initSystem === 'systemd' || this.boot.initSystem === 'init.d';
  }

  private reportBootError(record: InstanceRecord, message: string): void {
    this.log.warn({ instanceID: record.id, reason: message }, 'boot service operation failed');
    this.bootErrors$.next({ instanceID: record.id, name: record.name, message });
  }


  readConfig(id: number): Promise<TunnelConfig> {
    return readTunnelConfig(this.recordOf(id).configPath);
  }

  /** Edits the instance's config file in its queue: read, change, write atomically. */
  editProxies<T>(id: number, edit: (config: TunnelConfig) => T): Promise<{ record: InstanceRecord; result: T }> {
    return this.exclusive(id, async (record) => {
      const config = await readTunnelConfig(record.configPath);
      const result = edit(config);
      await writeTunnelConfig(record.configPath, config);
      return { record, result };
    });
  }

  /** Stops the actors, not the tunnels: they keep running and the next tunnelward takes them over. */
  async close(): Promise<void> {
    this.settingsSub?.unsubscribe();
    for (const actor of this.actors.values()) actor.stop();
    this.actors.clear();
    this.runner.close();
    this.logs.close();
    this.changes$.complete();
    this.deleted$.complete();
    this.bootErrors$.complete();
  }
}

function checkInstanceName(name: string): void {
  if (!INSTANCE_NAME.test(name)) {
    throw badRequest('name must be 1-64 characters, each a letter, a digit, "_", "." or "-"');
  }
}

function checkRunUser(runUser: string): void {
  if (!lookupOsUser(runUser)) throw badRequest(`runUser ${JSON.stringify(runUser)} is not a user on this system`);
}

export type { ProxyInput, ProxyView };
