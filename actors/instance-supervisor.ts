import { hostname } from 'node:os';
import { healthView, proxyHealthIn, tunnelHealth, type Health, type HealthView } from '../src/instances/health.js';
import { proxyHealthCounts, type HealthCounts } from '../src/instances/health-counts.js';
import { createHash } from 'node:crypto';
import type { User } from '../src/accounts/account-service.js';
import { TunnelConfig } from '../src/config/tunnel-config.js';
import type { ProxyInput, ProxyView } from '../src/config/tunnel-config.js';
import { notFound } from '../src/errors.js';
import { may, type Accessor, type InstanceAction } from '../src/accounts/access.js';
import { verifyConfig, type Verdict } from '../src/frpc/verify.js';
import * as changes from '../src/instances/config-changes.js';
import { InstanceEnvStore } from '../src/instances/instance-env.js';
import { expiryFields } from '../src/instances/expiry.js';
import { InstanceStore, type InstanceRecord } from '../src/instances/instance-store.js';
import { RevisionStore, type Author, type Revision } from '../src/instances/revision-store.js';
import { hasProcess, type Command, type CommandDone } from '../machines/instance.machine.js';
import type { Logger } from '../src/log/logger.js';
import type { SecretRedactor } from '../src/log/secret-redactor.js';
import type { SettingsStore } from '../src/settings/settings-store.js';
import type { Database } from '../src/storage/database.js';
import { formatIso } from '../src/util/time.js';
import { startedAtMs } from '../src/system/proc.js';
import { ProcessUsage, type Usage } from '../src/system/process-usage.js';
import { trustedProgram } from '../src/system/trusted-program.js';
import { unifiedDiff } from '../src/util/unified-diff.js';

import type { BootService } from './boot-services.js';
import { BootSync } from './boot-sync.js';
import { DesiredStateApplier } from './desired-state.js';
import { ChangePipeline, type ChangeAnswer, type ChangeOptions } from './change-pipeline.js';
import {
  InstanceCatalogue,
  checkRunUser,
  type CreateInstance,
  type ImportInstance,
  type SystemConfigChange,
} from './instance-catalogue.js';
import { InstanceHousekeeping } from './instance-housekeeping.js';
import { EXPIRY_ACCESS, EXPIRY_AUTHOR, InstanceExpiry } from './instance-expiry.js';
import { InstanceLifecycle, type InstanceState, type RunInfo } from './instance-lifecycle.js';
import type { InstanceLogs } from './instance-logs.js';
import { InstanceRegistry } from './instance-registry.js';
import type { TunnelRunner } from './process-runner.js';
import { TunnelStatus } from './tunnel-status.js';
import { HealthPolicy } from './health-policy.js';
import type { ProbeFacts } from './probes.js';

/** frpc verify's verdicts kept: enough for the self-check's verify of every file to ask frpc once per text. */
const VERDICTS_KEPT = 4096;

/** How often the list reads the running tunnels' CPU and memory from /proc. */
const USAGE_EVERY_MS = 5000;

export type { CreateInstance, SystemConfigChange } from './instance-catalogue.js';
export type { InstanceState, InstanceStateChange } from './instance-lifecycle.js';
export type { Applied, ChangeAnswer, ChangeOptions } from './change-pipeline.js';

/** Where the supervisor keeps what is not in the database: config files that no instance owns, revisions' texts. */
export interface SupervisorDirs {
  /** Config files found that no instance owns are moved here at start-up. */
  orphaned: string;
  /** The texts of every revision (see RevisionStore). */
  revisions: string;
  /** Private scratch space: the copies `frpc verify` reads. */
  scratch: string;
}

/** A revision as every view shows it: its record, and its file's text with secrets masked unless asked for. */
export interface RevisionView extends Revision {
  current: boolean;
}

export interface InstanceView {
  record: InstanceRecord;
  state: InstanceState;
  run: Readonly<RunInfo>;
}

/** What every view of an instance shows of its process, beside its state: what `pm2 ls` and supervisorctl show. */
export interface ProcessFields {
  /** null when no process runs. */
  pid: number | null;
  /** While running: since when (ISO 8601) and for how long. */
  startedAt?: string;
  uptimeSecs?: number;
  /** Automatic restarts since the last operator start. */
  restarts: number;
  lastExit: { code: number | null; signal: string | null; at: string } | null;
  /** In backoff, when the watchdog starts it again. */
  nextStartAt?: string;
  /** Resting after a run or a start that ended (backoff, failed, stopped by itself): why it ended. */
  lastError?: string;
}

/** How one instance of a command on many went. */
export interface CommandResult {
  instanceID: number;
  /** null for an id that names no instance. */
  name: string | null;
  ok: boolean;
  /** The state it is in now; null for an id that names no instance. */
  state: InstanceState | null;
  /** It was already as asked (started while running, stopped while stopped): ok, and nothing was done. */
  unchanged: boolean;
  message: string;
}

export function processFields({ record, state, run }: InstanceView, now = Date.now()): ProcessFields {
  const pid = hasProcess(state) ? record.pid : null;
  const started = state === 'running' && record.startTicks !== null ? startedAtMs(record.startTicks) : null;
  return {
    pid,
    ...(started !== null
      ? { startedAt: formatIso(started), uptimeSecs: Math.max(0, Math.floor((now - started) / 1000)) }
      : {}),
    restarts: run.restarts,
    lastExit: record.lastExit && {
      code: record.lastExit.code,
      signal: record.lastExit.signal,
      at: formatIso(record.lastExit.at),
    },
    ...(state === 'backoff' && run.nextStartAt !== null ? { nextStartAt: formatIso(run.nextStartAt) } : {}),
    ...(run.lastError !== null && !hasProcess(state) ? { lastError: run.lastError } : {}),
  };
}

/**
 * The instances: the one facade the routes and streams talk to. Inside, over one store of records: the lifecycle
 * (machine actors, commands, restore at start-up), the change pipeline (every change of a config file), the catalogue
 * (create, delete, changes of a record), the registry (what must be unique across instances), boot-service sync and
 * start-up housekeeping. A command or a change runs in its instance's queue slot (see Slot).
 */
export class InstanceSupervisor {
  private readonly lifecycle: InstanceLifecycle;
  private readonly catalogue: InstanceCatalogue;
  private readonly pipeline: ChangePipeline;
  private readonly housekeeping: InstanceHousekeeping;
  private readonly revisions: RevisionStore;
  readonly boot: BootSync;
  /** The list's entries as JSON without their uptimes, built once per change of what they show. */
  private entries:
    { version: string; parts: Array<{ open: string; started: number | null; pid: number | null }> } | undefined;
  /** CPU and memory of the running tunnels, for the list. */
  private readonly usage = new ProcessUsage();
  private usageCache: { at: number; byPid: Map<number, Usage> } | undefined;
  /** The list as the API serves it, uptimes included: built at most once a second. */
  private listed: { second: number; json: string; count: number } | undefined;
  private readonly settingsSub: { unsubscribe(): void };
  private readonly statusSub: { unsubscribe(): void };
  /** What frpc says of each running tunnel: its connection and its proxies. */
  readonly status: TunnelStatus;
  /** Restarts a tunnel that runs but carries nothing (Health.*). */
  readonly healthPolicy: HealthPolicy;
  private readonly healthSub: { unsubscribe(): void };
  /** Stops instances and disables proxies at their expiry. */
  readonly expiry: InstanceExpiry;
  /** Converges the instances to a desired state (`tunnelward apply`) and writes theirs (`export --all`). */
  readonly desired: DesiredStateApplier;
  /** The end-to-end probes of the tunnels that have them on, once the daemon has started them (actors/probes.ts). */
  probes: ProbeFacts | undefined;
  private readonly registry: InstanceRegistry;
  private readonly log: Logger;
  /** frpc's last verdicts, by program, text and variables (see verify). */
  private readonly verdicts = new Map<string, Verdict>();
  /** Where verify writes the copies frpc reads. */
  private readonly scratch: string;

  constructor(
    db: Database,
    private readonly settings: SettingsStore,
    runner: TunnelRunner,
    boot: BootService,
    readonly logs: InstanceLogs,
    log: Logger,
    dirs: SupervisorDirs,
    /** Learns every instance's secrets (environment values, config-file secrets) to mask them in output. */
    redactor?: SecretRedactor,
  ) {
    this.log = log.child({ component: 'supervisor' });
    this.scratch = dirs.scratch;
    const store = new InstanceStore(db);
    const env = new InstanceEnvStore(db, redactor);
    this.revisions = new RevisionStore(db, dirs.revisions, () => settings.value('Revisions.Keep'));
    this.registry = new InstanceRegistry(
      () => store.all().filter((r) => r.pending !== 'create'),
      (id) => store.get(id)?.name,
    );
    this.boot = new BootSync(boot, store, env, log);
    this.lifecycle = new InstanceLifecycle(db, store, settings, runner, logs, env, this.registry, log);
    const verify = (config: TunnelConfig, instanceEnv: Readonly<Record<string, string>>): Promise<Verdict> =>
      this.verify(config, instanceEnv, dirs.scratch);
    this.catalogue = new InstanceCatalogue({
      db,
      store,
      settings,
      boot: this.boot,
      logs,
      lifecycle: this.lifecycle,
      registry: this.registry,
      revisions: this.revisions,
      env,
      verify,
      recordChange: (slot, record, change) => this.pipeline.recordChange(slot, record, change),
      log,
    });
    this.pipeline = new ChangePipeline({
      db,
      store,
      lifecycle: this.lifecycle,
      registry: this.registry,
      revisions: this.revisions,
      env,
      verify,
      log,
      modified: (record, what) => this.catalogue.fileChanged(record, what),
    });
    this.housekeeping = new InstanceHousekeeping({
      db,
      store,
      settings,
      lifecycle: this.lifecycle,
      revisions: this.revisions,
      dismantle: (record, purgeLog) => this.catalogue.dismantle(record, purgeLog),
      orphanDir: dirs.orphaned,
      log,
    });
    this.expiry = new InstanceExpiry({
      store,
      db,
      log,
      stop: (id) => this.lifecycle.command(id, 'stop'),
      offBoot: async (id) =>
        (await this.catalogue.modifySystem(id, { bootAtStart: false }, EXPIRY_ACCESS, EXPIRY_AUTHOR)).bootServiceError,
      disableProxy: (id, proxy) =>
        this.pipeline.run(id, changes.setProxyEnabled(proxy, false), { by: EXPIRY_AUTHOR, as: EXPIRY_ACCESS }),
      touched: () => this.catalogue.touched(),
      changes$: this.catalogue.changes$,
    });
    this.desired = new DesiredStateApplier(this, hostname(), log);
    this.status = new TunnelStatus(() => settings.get(), log);
    // systemd enforces a memory cap itself (MemoryMax=); elsewhere the policy reads the tunnels' RSS.
    this.healthPolicy = new HealthPolicy(
      () => settings.get(),
      this.status,
      this.lifecycle,
      log,
      (id) => store.get(id)?.policy ?? {},
      async (id) => (await this.registry.adminEndpoint(id))?.port,
      this.lifecycle.initSystem === 'systemd' ? undefined : () => this.runningProcesses(),
    );
    this.healthSub = this.catalogue.deleted$.subscribe((id) => this.healthPolicy.forget(id));
    // A running tunnel's proxies and connection are followed through its admin API; any other state has none.
    this.statusSub = this.lifecycle.changes$.subscribe(({ instanceID, from, to }) => {
      // From starting: just started (its login is news); from stopped: taken over at tunnelward's start.
      if (to === 'running') void this.followStatus(instanceID, from === 'starting');
      else this.status.unfollow(instanceID);
    });
    // Units carry the restart policy and the binary: they follow the settings they are made from.
    this.settingsSub = settings.changes$.subscribe(({ changed }) => {
      if (
        changed.some(
          (k) =>
            k.startsWith('Watchdog.') ||
            k === 'Instance.StopTimeoutSecs' ||
            k === 'Instance.MemoryMaxMB' ||
            k === 'TunnelPath',
        )
      )
        void this.boot.refresh();
      if (changed.some((k) => k.startsWith('Health.'))) this.healthPolicy.reviewAll();
    });
  }

  /** Changes of every instance's state. */
  get stateChanges$() {
    return this.lifecycle.changes$;
  }

  /** Instances created, modified and deleted. */
  get catalogueChanges$() {
    return this.catalogue.changes$;
  }

  /** Ids of deleted instances. */
  get deleted$() {
    return this.catalogue.deleted$;
  }

  get initSystem(): string {
    return this.lifecycle.initSystem;
  }

  /**
   * `frpc verify` of a new file, when TunnelPath is a program tunnelward may run; skipped (and said) otherwise. What
   * is verified is the file without tunnelward's own admin endpoint (its keys are tunnelward's to get right), so a
   * verdict holds for every file of the same text and variables: the last ones are kept (a thousand creates of the
   * same shape run frpc once).
   */
  private async verify(config: TunnelConfig, env: Readonly<Record<string, string>>, scratch: string): Promise<Verdict> {
    const tunnelPath = this.settings.value('TunnelPath');
    const program = await trustedProgram(tunnelPath).catch((err: Error) => err);
    if (program instanceof Error) return { verified: false, skipped: `TunnelPath ${program.message}` };
    // frpc would render a variable it lacks as `<no value>`: no verdict on the file, until the variables are set.
    const unset = config.envPlaceholders().filter((name) => !Object.hasOwn(env, name));
    if (unset.length > 0)
      return { verified: false, skipped: `it reads ${unset.join(', ')} from the environment, not set yet` };
    const text = config.exportText(false);
    const key = createHash('sha256')
      .update(program)
      .update('\0')
      .update(text)
      .update('\0')
      .update(JSON.stringify(env))
      .digest('base64');
    const known = this.verdicts.get(key);
    if (known) return known;
    const verdict = await verifyConfig(program, text, env, scratch);
    // A verdict that frpc could not give is not kept.
    if (!('skipped' in verdict)) {
      this.verdicts.set(key, verdict);
      if (this.verdicts.size > VERDICTS_KEPT) this.verdicts.delete(this.verdicts.keys().next().value!);
    }
    return verdict;
  }

  /**
   * `frpc verify` of the instance's file as it is now (`config`, else read), with its variables and the TunnelPath
   * frpc: what the self-check asks of every file, so that a key the installed frpc does not know is found before a
   * start meets it.
   */
  async verifyFile(id: number, config?: TunnelConfig): Promise<Verdict> {
    const record = this.catalogue.record(id);
    const file = config ?? (await this.catalogue.readConfig(id));
    return this.verify(file, this.boot.targetOf(record).env, this.scratch);
  }

  /** An operator's command, in the instance's queue: see the lifecycle. */
  command(id: number, command: Command): Promise<CommandDone> {
    return this.lifecycle.command(id, command);
  }

  create(input: CreateInstance, owner: User, by: Author) {
    return this.catalogue.create(input, owner, by);
  }

  importConfig(input: ImportInstance, owner: User, by: Author) {
    return this.catalogue.importConfig(input, owner, by);
  }

  /** An import checked, not made (a dry run). */
  checkImport(input: ImportInstance) {
    return this.catalogue.checkImport(input);
  }

  remove(id: number, as: Accessor, options: { purgeLog?: boolean } = {}) {
    return this.catalogue.remove(id, as, options);
  }

  async modifySystem(id: number, change: SystemConfigChange, as: Accessor, by: Author) {
    const done = await this.catalogue.modifySystem(id, change, as, by);
    if (change.policy) this.healthPolicy.policyChanged(id);
    return done;
  }

  /** Refuses (400) a run user that does not exist or could not hold a config file of its own: what a change checks. */
  checkRunUser(runUser: string): Promise<void> {
    return checkRunUser(runUser);
  }

  modifyEnvironment(id: number, changes: Record<string, unknown>, as: Accessor, by: Author, dryRun = false) {
    return this.catalogue.modifyEnvironment(id, changes, as, by, dryRun);
  }

  modifyLabels(id: number, changes: Readonly<Record<string, string | null>>, as: Accessor) {
    return this.catalogue.modifyLabels(id, changes, as);
  }

  setProxyExpiry(id: number, proxy: string, expires: string | null, as: Accessor, by: Author) {
    return this.catalogue.setProxyExpiry(id, proxy, expires, as, by);
  }

  /** The instance's file made as a desired state has it, through the change pipeline (see changes.convergeTo). */
  converge(id: number, content: string, client: { host: string; instance: string }, options: ChangeOptions) {
    return this.pipeline.run(id, changes.convergeTo(content, client), options);
  }

  /** The values of the instance's environment, for the convergence to compare with (never answered). */
  environmentValues(id: number): Record<string, string> {
    return this.catalogue.environmentValues(id);
  }

  /** Every instance's record (a create in progress is not one yet). */
  allRecords(): InstanceRecord[] {
    return this.catalogue.records();
  }

  /** Whether the caller may do this to the instance (see src/accounts/access.ts); a 404 for an unknown one. */
  may(id: number, as: Accessor, action: InstanceAction): boolean {
    return may(as, action, this.catalogue.record(id));
  }

  /** The names of the instance's environment variables, each value masked. */
  environment(id: number): Record<string, string> {
    return this.catalogue.environment(id);
  }

  readConfig(id: number): Promise<TunnelConfig> {
    return this.catalogue.readConfig(id);
  }

  record(id: number): InstanceRecord {
    return this.catalogue.record(id);
  }

  exists(id: number): boolean {
    return this.catalogue.exists(id);
  }

  /** The instance's name, or '' once it is gone. */
  nameOf(id: number): string {
    return this.catalogue.nameOf(id);
  }

  stateOf(id: number): InstanceState {
    return this.lifecycle.stateOf(id);
  }

  /** Commands and changes of the instance queued or running (one at a time, in order). */
  queuedOf(id: number): number {
    return this.lifecycle.queuedOf(id);
  }

  addProxy(id: number, input: ProxyInput & Record<string, unknown>, options: ChangeOptions) {
    return this.pipeline.run(id, changes.addProxy(input), options);
  }

  modifyProxy(
    id: number,
    selector: string,
    input: ProxyInput & Record<string, unknown>,
    newName: string | undefined,
    options: ChangeOptions,
  ) {
    return this.pipeline.run(id, changes.modifyProxy(selector, input, newName), options);
  }

  deleteProxy(id: number, name: string, options: ChangeOptions) {
    return this.pipeline.run(id, changes.deleteProxy(name), options);
  }

  setProxyEnabled(
    id: number,
    name: string,
    enabled: boolean,
    options: ChangeOptions,
  ): Promise<ChangeAnswer<ProxyView>> {
    return this.pipeline.run(id, changes.setProxyEnabled(name, enabled), options);
  }

  /** Top-level keys of the config file (proxies stay as they are). */
  modifyConfig(id: number, patch: Record<string, unknown>, options: ChangeOptions) {
    return this.pipeline.run(id, changes.setSettings(patch), options);
  }

  /** The whole config file, replaced by an operator's text. */
  replaceConfig(id: number, content: string, options: ChangeOptions) {
    return this.pipeline.run(id, changes.replaceFile(content), options);
  }

  /** The config file put back as revision `number` had it: a change like any other, and a new revision. */
  async rollback(id: number, number: number, options: ChangeOptions) {
    const revision = this.revisionOf(id, number);
    const text = await this.revisions.textOf(id, revision.version);
    return this.pipeline.run(id, changes.rollbackTo(number, text), options);
  }

  private revisionOf(id: number, number: number): Revision {
    this.catalogue.record(id);
    const revision = this.revisions.get(id, number);
    if (!revision) throw notFound(`instance ${id} has no revision ${number} (it was never made, or is no longer kept)`);
    return revision;
  }

  /** The instance's revisions, newest first. */
  history(id: number, limit: number, before?: number): { revisions: RevisionView[]; total: number; current: number } {
    const record = this.catalogue.record(id);
    const revisions = this.revisions
      .list(id, limit, before)
      .map((revision) => ({ ...revision, current: revision.number === record.revision }));
    return { revisions, total: this.revisions.count(id), current: record.revision };
  }

  /** One revision with its file's text as the caller may read it. */
  async revision(id: number, number: number, masked: boolean): Promise<RevisionView & { content: string }> {
    const record = this.catalogue.record(id);
    const revision = this.revisionOf(id, number);
    const text = await this.revisions.textOf(id, revision.version);
    return {
      ...revision,
      current: number === record.revision,
      content: TunnelConfig.parse(text).exportText(masked),
    };
  }

  /**
   * The unified diff between two revisions' files, or from one to the file as it is now (`to` left out), as the
   * caller may read them.
   */
  async diff(
    id: number,
    from: number,
    to: number | undefined,
    masked: boolean,
  ): Promise<{ diff: string; from: number; to: number | 'live' }> {
    const record = this.catalogue.record(id);
    const configOf = async (n: number) =>
      TunnelConfig.parse(await this.revisions.textOf(id, this.revisionOf(id, n).version));
    const older = await configOf(from);
    const newer = to === undefined ? await this.catalogue.readConfig(id) : await configOf(to);
    const before = older.exportText(masked);
    // Masked, a secret that changed shows as changed (never its value).
    const after = masked ? newer.exportTextBeside(older) : newer.exportText(false);
    const label = (n: number | undefined) => `${record.name} (${n === undefined ? 'live file' : `revision ${n}`})`;
    return { diff: unifiedDiff(before, after, label(from), label(to)), from, to: to ?? 'live' };
  }

  /**
   * One command for many instances, all under way at once (each in its own instance's queue, as if sent alone);
   * resolves when every one has its outcome. A failure is that instance's, never the request's.
   */
  async commandMany(ids: readonly number[], command: Command): Promise<CommandResult[]> {
    return Promise.all(
      ids.map(async (id): Promise<CommandResult> => {
        try {
          const done = await this.command(id, command);
          const name = this.catalogue.nameOf(id);
          // Of many, one already as asked is done (a start of all never fails on the ones that run).
          const ok = done.ok || done.unchanged;
          const state = this.lifecycle.stateOf(id);
          return { instanceID: id, name, ok, state, unchanged: done.unchanged, message: done.message };
        } catch (err) {
          const known = this.catalogue.exists(id);
          return {
            instanceID: id,
            name: this.catalogue.nameOf(id) || null,
            ok: false,
            state: known ? this.lifecycle.stateOf(id) : null,
            unchanged: false,
            message: (err as Error).message,
          };
        }
      }),
    );
  }

  /**
   * What frpc says of the tunnel, beside its state: `connected` (logged in to its server; null while not running or
   * not yet known) and how many of its proxies are in each status (`{"running": 2, "start error": 1}`).
   */
  statusFields(id: number): {
    connected: boolean | null;
    proxyStatus: Record<string, number>;
    health: HealthView;
    healthRestarts: number;
    proxyHealth: HealthCounts;
  } {
    const live = this.status.of(id);
    const proxyStatus: Record<string, number> = {};
    for (const { status } of live?.proxies.values() ?? []) proxyStatus[status] = (proxyStatus[status] ?? 0) + 1;
    const health = this.healthOf(id);
    // Its enabled proxies by their health: a tunnel down makes each of them down, reported by frpc or not.
    const proxyHealth = proxyHealthCounts(health, this.registry.enabledProxies(id), live?.proxies);
    return {
      connected: live?.connected ?? null,
      proxyStatus,
      health: healthView(health),
      proxyHealth,
      healthRestarts: this.healthPolicy.restartsOf(id),
    };
  }

  /** The tunnel's health: the one answer every view shows (see src/instances/health.ts). */
  healthOf(id: number): Health {
    const { stateSince, lastError } = this.lifecycle.runOf(id);
    const live = this.status.of(id);
    const probes = this.probes?.failuresOf(id);
    const expectedProxies = this.registry.enabledProxies(id)?.size;
    return tunnelHealth({
      state: this.lifecycle.stateOf(id),
      stateSince,
      lastError,
      ...(expectedProxies !== undefined ? { expectedProxies } : {}),
      ...(live ? { live } : {}),
      ...(probes ? { probes } : {}),
    });
  }

  /**
   * Each enabled proxy of the tunnel (as its file names them; what frpc reports while the file is not read yet) with
   * its health, probes included: `tunnel` is the tunnel's own (healthOf).
   */
  proxyHealths(id: number, tunnel: Health = this.healthOf(id)): Array<[string, Health]> {
    const live = this.status.of(id);
    const failing = this.probes?.failuresOf(id);
    const names = this.registry.enabledProxies(id) ?? live?.proxies.keys() ?? [];
    return [...names].map((name) => [name, proxyHealthIn(tunnel, true, live?.proxies.get(name), failing?.get(name))]);
  }

  /** The running tunnels' resident memory in bytes, by instance id: read as the list reads it (see usageOf). */
  memoryOf(): Map<number, number> {
    const running = this.runningProcesses();
    const usage = this.usageOf(
      running.map(({ pid }) => pid),
      Date.now(),
    );
    return new Map(
      running.flatMap(({ id, pid }) => {
        const used = usage.get(pid);
        return used ? [[id, used.rssBytes] as [number, number]] : [];
      }),
    );
  }

  /**
   * Settles what a crash cut off, then takes over what runs and restores the rest; a tunnel found running that a
   * change cut off may have given its new file is given the file as it was put back.
   */
  async start(bootId: string): Promise<void> {
    const reapply = await this.housekeeping.settle();
    // What each file holds, for the proxies' health in every view (read once, then kept by the changes).
    void this.registry.load().catch((err: Error) => this.log.warn({ err }, 'cannot read the config files'));
    await this.lifecycle.restore(bootId);
    this.expiry.start();
    for (const { id, plan } of reapply) {
      if (this.lifecycle.stateOf(id) !== 'running') continue;
      void this.pipeline
        .reapply(id, plan)
        .catch((err: Error) =>
          this.log.error({ instanceID: id, err }, 'cannot give a tunnel its file back after an interrupted change'),
        );
    }
  }

  view(id: number): InstanceView {
    const record = this.catalogue.record(id);
    return { record, state: this.lifecycle.stateOf(id), run: this.lifecycle.runOf(id) };
  }

  views(): InstanceView[] {
    return this.catalogue
      .records()
      .map((record) => ({ record, state: this.lifecycle.stateOf(record.id), run: this.lifecycle.runOf(record.id) }));
  }

  /**
   * The list's entries as JSON, and how many: what UIs poll, so it is built only when an instance changed state
   * or was created, renamed or deleted, and served as it is until then.
   */
  listJson(): { json: string; count: number } {
    // Uptimes change by the second: the entries are built when something they show changes, and only the uptimes
    // are put in again, at most once a second, so a list polled every second makes one string, not a thousand
    // objects and their JSON.
    const now = Date.now();
    const version = `${this.lifecycle.stateVersion}.${this.catalogue.catalogueVersion}.${this.status.version}.${this.probes?.version ?? 0}.${this.registry.version}`;
    if (this.entries?.version !== version) {
      this.entries = {
        version,
        parts: this.views().map((view) => {
          const { uptimeSecs: _, ...fields } = processFields(view, now);
          const entry = JSON.stringify({
            instanceID: view.record.id,
            name: view.record.name,
            createdAt: createdAtOf(view.record),
            createdBy: view.record.createdBy,
            bootAtStart: view.record.bootAtStart,
            labels: view.record.labels,
            ...expiryFields(view.record),
            isRunning: view.state === 'running',
            state: view.state,
            ...fields,
            ...this.statusFields(view.record.id),
          });
          const started = fields.startedAt === undefined ? null : Date.parse(fields.startedAt);
          return { open: entry.slice(0, -1), started, pid: view.state === 'running' ? fields.pid : null };
        }),
      };
      this.listed = undefined;
    }
    const second = Math.floor(now / 1000);
    if (this.listed?.second !== second) {
      const usage = this.usageOf(
        this.entries.parts.flatMap(({ pid }) => (pid === null ? [] : [pid])),
        now,
      );
      const items = this.entries.parts.map(({ open, started, pid }) => {
        const used = pid === null ? undefined : usage.get(pid);
        const uptime = started === null ? '' : `,"uptimeSecs":${Math.max(0, Math.floor((now - started) / 1000))}`;
        return `${open}${uptime}${used ? `,"cpuPercent":${used.cpuPercent},"rssBytes":${used.rssBytes}` : ''}}`;
      });
      this.listed = { second, json: `[${items.join(',')}]`, count: items.length };
    }
    return this.listed;
  }

  /**
   * CPU and memory of the running tunnels: one read of /proc per tunnel, at most every USAGE_EVERY_MS however often
   * the list is asked for (sooner only for a tunnel not yet read), so a list polled every second stays cheap.
   */
  private usageOf(pids: number[], now: number): Map<number, Usage> {
    const cached = this.usageCache;
    if (!cached || now - cached.at >= USAGE_EVERY_MS || pids.some((pid) => !cached.byPid.has(pid)))
      this.usageCache = { at: now, byPid: this.usage.of(pids) };
    return this.usageCache!.byPid;
  }

  /** The running tunnels' processes. */
  private runningProcesses(): Array<{ id: number; pid: number }> {
    return this.views().flatMap(({ record, state }) =>
      state === 'running' && record.pid !== null ? [{ id: record.id, pid: record.pid }] : [],
    );
  }

  /** The server (`host:port`) the instance's file names; undefined when it has no file or is gone. */
  serverOf(id: number): Promise<string | undefined> {
    return this.registry.serverOf(id).catch(() => undefined);
  }

  private async followStatus(id: number, started: boolean): Promise<void> {
    const endpoint = await this.registry.adminEndpoint(id).catch(() => undefined);
    if (endpoint && this.lifecycle.stateOf(id) === 'running')
      this.status.follow(id, endpoint, this.logs.channel(id), started);
  }

  async close(): Promise<void> {
    this.expiry.close();
    this.settingsSub.unsubscribe();
    this.statusSub.unsubscribe();
    this.healthSub.unsubscribe();
    this.healthPolicy.close();
    this.status.close();
    // The pipes are let go before the runner lets the spawner go: from then on it keeps them drained, alone.
    await this.logs.close();
    this.lifecycle.close();
    this.catalogue.close();
    this.boot.close();
  }
}

/** Formatting a date is the dearest part of a list: each record's is made once (records are replaced, not changed). */
const createdAtText = new WeakMap<InstanceRecord, string>();
export function createdAtOf(record: InstanceRecord): string {
  let text = createdAtText.get(record);
  if (text === undefined) {
    text = formatIso(record.createdAt);
    createdAtText.set(record, text);
  }
  return text;
}
