import { mkdir, rm } from 'node:fs/promises';
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
import { KeyedQueue } from '../src/util/keyed-queue.js';
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
    const sameBoot = getMeta(this.db, 'boot_id') === bootId;
    const toStart: number[] = [];
    let adopted = 0;
    this.db.transaction(() => {
      for (const record of this.store.all()) {
        const alive = record.pid !== null && this.runner.adopt(record.pid, record.startTicks, record.configPath);
        if (alive) {
          // Drain what it wrote while we were away, then follow it.
          const pid = record.pid!;
          this.logs.channel(record.id).startReading(() => this.runner.checkNow(pid));
          this.createActor(record).send({ type: 'ADOPT', pid });
          adopted++;
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
    this.log.info({ initSystem: this.initSystem, instances, adopted, starting: toStart.length, sameBoot }, 'instances loaded');
    for (const id of toStart) {
      this.command(id, 'start').then(
        (done) => done.ok || this.log.warn({ instanceID: id, reason: done.message }, 'could not restore a running instance'),
        (err) => this.log.error({ instanceID: id, err }, 'could not restore a running instance'),
      );
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
      terminate: (_, { instanceId, pid }) => pid !== null && this.withRequest(instanceId, (r) => this.runner.terminate(r, pid)),
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
    let output: number | undefined;
    if (this.runner.capturesOutput) output = await channel.openForTunnel();
    else channel.startReading();
    const proc = await this.runner.spawn({ ...this.requestFor(record), output });
    this.store.setProcess(id, proc.pid, proc.startTicks);
    await this.db.persist();
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
    const crashed = to === 'backoff' || to === 'failed' || (from === 'running' && to === 'stopped');
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
    if (!record) throw notFound(`instance ${id} not found`);
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
      const type = command === 'start' ? 'START' : command === 'stop' ? 'STOP' : 'RESTART';
      const result = await this.outcome(this.actorOf(id), type);
      if (command === 'stop') this.store.setDesired(id, 'stopped');
      else if (result.ok) this.store.setDesired(id, 'running');
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
    return this.store.all().map((record) => ({ record, state: this.states.get(record.id) ?? 'stopped' }));
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
    try {
      await mkdir(instancePath, { recursive: true, mode: 0o711 });
      await writeTunnelConfig(record.configPath, config);
      await this.logs.channel(record.id).ensurePipe();
    } catch (err) {
      this.store.delete(record.id);
      throw err instanceof AppError ? err : new AppError(500, `cannot write ${record.configPath}: ${(err as Error).message}`);
    }
    let created = record;
    let bootServiceError: string | undefined;
    try {
      if (record.bootAtStart) await this.boot.enable(targetOf(record));
      else if (this.runsThroughInit()) await this.boot.prepare(targetOf(record));
    } catch (err) {
      bootServiceError = (err as Error).message;
      if (record.bootAtStart) created = this.store.update(record.id, { bootAtStart: false }) ?? record;
    }
    await this.db.persist();
    this.version++;
    this.log.info({ instanceID: created.id, name: created.name }, 'instance created');
    if (bootServiceError) this.reportBootError(created, bootServiceError);
    return bootServiceError ? { record: created, bootServiceError } : { record: created };
  }

  /** Stops the tunnel if it runs, then removes its config file, its logs and its record. */
  remove(id: number): Promise<InstanceRecord> {
    return this.exclusive(id, async (record) => {
      const actor = this.actors.get(id);
      if (actor && this.states.get(id) !== 'stopped' && this.states.get(id) !== 'failed') {
        const result = await this.outcome(actor, 'STOP');
        if (!result.ok) throw new AppError(500, `cannot stop instance ${id}: ${result.message}`);
      }
      actor?.stop();
      this.actors.delete(id);
      this.states.delete(id);
      this.version++;
      if (record.bootAtStart || this.runsThroughInit()) {
        await this.boot.remove(targetOf(record)).catch((err) => this.reportBootError(record, (err as Error).message));
      }
      await rm(record.configPath, { force: true });
      await this.logs.remove(id);
      this.store.delete(id);
      await this.db.persist();
      this.log.info({ instanceID: id, name: record.name }, 'instance deleted');
      this.deleted$.next(id);
      return record;
    });
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
