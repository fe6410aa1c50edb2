import type { InstanceRecord } from '../src/instances/instance-store.js';
import { InstanceStore } from '../src/instances/instance-store.js';
import { InstanceEnvStore } from '../src/instances/instance-env.js';
import { AppError, badRequest } from '../src/errors.js';
import { hasProcess, type Command, type CommandDone } from '../machines/instance.machine.js';
import type { Logger } from '../src/log/logger.js';
import type { SecretRedactor } from '../src/log/secret-redactor.js';
import type { SettingsStore } from '../src/settings/settings-store.js';
import type { Database } from '../src/storage/database.js';
import { formatIso } from '../src/util/time.js';
import { startedAtMs } from '../src/system/proc.js';
import { ProcessUsage, type Usage } from '../src/system/process-usage.js';

import type { BootService } from './boot-services.js';
import { InstanceCatalogue, type Applied, type ConfigReplaced } from './instance-catalogue.js';
import type { TunnelConfig } from '../src/config/tunnel-config.js';
import { InstanceLifecycle, type InstanceState, type RunInfo } from './instance-lifecycle.js';
import type { InstanceLogs } from './instance-logs.js';
import type { TunnelRunner } from './process-runner.js';
import { TunnelStatus } from './tunnel-status.js';

/** How often the list reads the running tunnels' CPU and memory from /proc. */
const USAGE_EVERY_MS = 5000;

export type { CreateInstance, SystemConfigChange } from './instance-catalogue.js';
export type { InstanceState, InstanceStateChange } from './instance-lifecycle.js';

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
    lastExit: run.lastExit && { code: run.lastExit.code, signal: run.lastExit.signal, at: formatIso(run.lastExit.at) },
    ...(state === 'backoff' && run.nextStartAt !== null ? { nextStartAt: formatIso(run.nextStartAt) } : {}),
  };
}

/**
 * The instances, in two parts over one store: the lifecycle (machine actors, commands, restore at start-up) and
 * the catalogue (create, delete, config and proxy edits, boot services). Routes call these; a lifecycle command
 * becomes a machine event whose reply is awaited.
 */
export class InstanceSupervisor {
  readonly lifecycle: InstanceLifecycle;
  readonly catalogue: InstanceCatalogue;
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

  constructor(
    db: Database,
    settings: SettingsStore,
    runner: TunnelRunner,
    boot: BootService,
    readonly logs: InstanceLogs,
    log: Logger,
    orphanDir: string,
    /** Learns every instance's secrets (environment values, config-file secrets) to mask them in output. */
    redactor?: SecretRedactor,
  ) {
    const store = new InstanceStore(db);
    const env = new InstanceEnvStore(db, redactor);
    this.lifecycle = new InstanceLifecycle(db, store, settings, runner, logs, env, log);
    this.catalogue = new InstanceCatalogue(db, store, settings, boot, logs, this.lifecycle, env, log, orphanDir);
    this.status = new TunnelStatus(() => settings.get(), log);
    // A running tunnel's proxies and connection are followed through its admin API; any other state has none.
    this.statusSub = this.lifecycle.changes$.subscribe(({ instanceID, to }) => {
      if (to === 'running') void this.followStatus(instanceID);
      else this.status.unfollow(instanceID);
    });
    // Units carry the restart policy and the binary: they follow the settings they are made from.
    this.settingsSub = settings.changes$.subscribe(({ changed }) => {
      if (changed.some((k) => k.startsWith('Watchdog.') || k === 'Instance.StopTimeoutSecs' || k === 'TunnelPath'))
        void this.catalogue.refreshBootServices();
    });
  }

  /**
   * An operator's command: a start that cannot succeed as the config file stands (a placeholder with no variable)
   * is refused with a 400 before anything is done; a restart is checked in the instance's queue, before its stop.
   */
  async command(id: number, command: Command): Promise<CommandDone> {
    if (command === 'start') {
      const why = await this.lifecycle.unstartable(this.catalogue.record(id));
      if (why) throw badRequest(why);
    }
    if (command !== 'stop') await this.catalogue.ensureAdminEndpoint(id);
    return this.lifecycle.command(id, command);
  }

  /**
   * Edits the instance's proxies (see the catalogue's `editProxies`); when the tunnel could not be reloaded, it is
   * restarted here, after the edit, in its own queue.
   */
  async editProxies<T>(
    id: number,
    edit: (config: TunnelConfig) => T,
  ): Promise<{ record: InstanceRecord; result: T; applied: Applied }> {
    const done = await this.catalogue.editProxies(id, edit);
    if (done.applied === 'restart') await this.applyByRestart(id);
    return done;
  }

  /**
   * Replaces the whole config file (see the catalogue's `replaceConfig`); a change that needs a restart, or that
   * frpc could not be asked to reload, is applied by one here, after the write, in the instance's own queue.
   */
  async replaceConfig(
    id: number,
    content: string,
    options: { baseVersion?: string; masked: boolean; dryRun?: boolean },
  ): Promise<ConfigReplaced> {
    const done = await this.catalogue.replaceConfig(id, content, options);
    if (done.applied === 'restart') await this.applyByRestart(id);
    return done;
  }

  private async applyByRestart(id: number): Promise<void> {
    const done = await this.lifecycle.command(id, 'restart');
    if (!done.ok) {
      throw new AppError(500, `the config file was changed, but the restart that applies it failed: ${done.message}`);
    }
  }

  /**
   * Changes the config file's top-level settings. frpc cannot reload those (only proxies and visitors), so a
   * running tunnel is restarted to apply them, and the reply says so.
   */
  async modifyConfig(
    id: number,
    patch: Record<string, unknown>,
  ): Promise<{ record: InstanceRecord; applied: 'restart' | 'on next start' }> {
    const record = await this.catalogue.modifyConfig(id, patch);
    if (this.lifecycle.stateOf(id) !== 'running') return { record, applied: 'on next start' };
    await this.applyByRestart(id);
    return { record, applied: 'restart' };
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
  statusFields(id: number): { connected: boolean | null; proxyStatus: Record<string, number> } {
    const live = this.status.of(id);
    const proxyStatus: Record<string, number> = {};
    for (const { status } of live?.proxies.values() ?? []) proxyStatus[status] = (proxyStatus[status] ?? 0) + 1;
    return { connected: live?.connected ?? null, proxyStatus };
  }

  /** Settles what a crash cut off, then takes over what runs and restores the rest. */
  async start(bootId: string): Promise<void> {
    await this.catalogue.settle();
    await this.lifecycle.restore(bootId);
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
    const version = `${this.lifecycle.stateVersion}.${this.catalogue.catalogueVersion}.${this.status.version}`;
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

  private async followStatus(id: number): Promise<void> {
    const endpoint = await this.catalogue.adminEndpoint(id).catch(() => undefined);
    if (endpoint && this.lifecycle.stateOf(id) === 'running') this.status.follow(id, endpoint, this.logs.channel(id));
  }

  async close(): Promise<void> {
    this.settingsSub.unsubscribe();
    this.statusSub.unsubscribe();
    this.status.close();
    // The pipes are let go before the runner lets the spawner go: from then on it keeps them drained, alone.
    await this.logs.close();
    this.lifecycle.close();
    this.catalogue.close();
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
