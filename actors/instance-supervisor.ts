import type { InstanceRecord } from '../src/instances/instance-store.js';
import { InstanceStore } from '../src/instances/instance-store.js';
import { InstanceEnvStore } from '../src/instances/instance-env.js';
import { badRequest } from '../src/errors.js';
import type { Command, CommandDone } from '../machines/instance.machine.js';
import type { Logger } from '../src/log/logger.js';
import type { SettingsStore } from '../src/settings/settings-store.js';
import type { Database } from '../src/storage/database.js';
import { formatIso } from '../src/util/time.js';
import type { BootService } from './boot-services.js';
import { InstanceCatalogue } from './instance-catalogue.js';
import { InstanceLifecycle, type InstanceState } from './instance-lifecycle.js';
import type { InstanceLogs } from './instance-logs.js';
import type { TunnelRunner } from './process-runner.js';

export type { CreateInstance, SystemConfigChange } from './instance-catalogue.js';
export type { InstanceState, InstanceStateChange } from './instance-lifecycle.js';

export interface InstanceView {
  record: InstanceRecord;
  state: InstanceState;
}

/**
 * The instances, in two parts over one store: the lifecycle (machine actors, commands, restore at start-up) and
 * the catalogue (create, delete, config and proxy edits, boot services). Routes call these; a lifecycle command
 * becomes a machine event whose reply is awaited.
 */
export class InstanceSupervisor {
  readonly lifecycle: InstanceLifecycle;
  readonly catalogue: InstanceCatalogue;
  /** The list as the API serves it, built once per change of what it shows. */
  private listed: { version: string; json: string; count: number } | undefined;
  private readonly settingsSub: { unsubscribe(): void };

  constructor(
    db: Database,
    settings: SettingsStore,
    runner: TunnelRunner,
    boot: BootService,
    readonly logs: InstanceLogs,
    log: Logger,
    orphanDir: string,
  ) {
    const store = new InstanceStore(db);
    const env = new InstanceEnvStore(db);
    this.lifecycle = new InstanceLifecycle(db, store, settings, runner, logs, env, log);
    this.catalogue = new InstanceCatalogue(db, store, settings, boot, logs, this.lifecycle, env, log, orphanDir);
    // Units carry the restart policy and the binary: they follow the settings they are made from.
    this.settingsSub = settings.changes$.subscribe(({ changed }) => {
      if (changed.some((k) => k.startsWith('Watchdog.') || k === 'Instance.StopTimeoutSecs' || k === 'TunnelPath'))
        void this.catalogue.refreshBootServices();
    });
  }

  /**
   * An operator's command: a start or restart that cannot succeed as the config file stands (a placeholder
   * with no variable) is refused with a 400 before anything is done.
   */
  async command(id: number, command: Command): Promise<CommandDone> {
    if (command !== 'stop') {
      const why = await this.lifecycle.unstartable(this.catalogue.record(id));
      if (why) throw badRequest(why);
    }
    return this.lifecycle.command(id, command);
  }

  /** Settles what a crash cut off, then takes over what runs and restores the rest. */
  async start(bootId: string): Promise<void> {
    await this.catalogue.settle();
    await this.lifecycle.restore(bootId);
  }

  view(id: number): InstanceView {
    const record = this.catalogue.record(id);
    return { record, state: this.lifecycle.stateOf(id) };
  }

  views(): InstanceView[] {
    return this.catalogue.records().map((record) => ({ record, state: this.lifecycle.stateOf(record.id) }));
  }

  /**
   * The list's entries as JSON, and how many: what UIs poll, so it is built only when an instance changed state
   * or was created, renamed or deleted, and served as it is until then.
   */
  listJson(): { json: string; count: number } {
    const version = `${this.lifecycle.stateVersion}.${this.catalogue.catalogueVersion}`;
    if (this.listed?.version !== version) {
      const list = this.views().map(({ record, state }) => ({
        instanceID: record.id,
        name: record.name,
        createdAt: createdAtOf(record),
        createdBy: record.createdBy,
        isRunning: state === 'running',
        state,
      }));
      this.listed = { version, json: JSON.stringify(list), count: list.length };
    }
    return this.listed;
  }

  async close(): Promise<void> {
    this.settingsSub.unsubscribe();
    this.lifecycle.close();
    this.catalogue.close();
    this.logs.close();
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
