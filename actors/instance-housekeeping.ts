import { mkdir, readdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { readTunnelConfigText, TunnelConfig, writeTunnelConfig } from '../src/config/tunnel-config.js';
import { removeStaleTempFiles } from '../src/fs/atomic.js';
import type { InstanceRecord, InstanceStore } from '../src/instances/instance-store.js';
import type { PlanAction, RevisionStore } from '../src/instances/revision-store.js';
import type { Logger } from '../src/log/logger.js';
import type { SettingsStore } from '../src/settings/settings-store.js';
import type { Database } from '../src/storage/database.js';
import { checkConfigFileAccess } from '../src/system/run-user-access.js';
import type { InstanceLifecycle } from './instance-lifecycle.js';

/** A change a crash cut off after the tunnel may have been given its file: given the file put back, if it runs. */
export interface Reapply {
  id: number;
  plan: PlanAction;
}

/**
 * Start-up, before any tunnel is taken over: what a crash cut off is settled (a create undone, a delete finished, a
 * change of a config file put back to the revision it was made on), the instance dir swept, and each config file
 * made readable by its run user.
 */
export class InstanceHousekeeping {
  private readonly log: Logger;

  constructor(
    private readonly deps: {
      db: Database;
      store: InstanceStore;
      settings: SettingsStore;
      lifecycle: InstanceLifecycle;
      revisions: RevisionStore;
      /** Removes everything of an instance whose process is gone (see the catalogue). */
      dismantle: (record: InstanceRecord, purgeLog: boolean) => Promise<void>;
      /** Where config files that no instance owns are moved. */
      orphanDir: string;
      log: Logger;
    },
  ) {
    this.log = deps.log.child({ component: 'housekeeping' });
  }

  /** Settles everything; returns the changes whose tunnels must be given their file again once taken over. */
  async settle(): Promise<Reapply[]> {
    await this.settleCreatesAndDeletes();
    const reapply = await this.settleChanges();
    await this.sweepInstanceDir();
    await this.settleFileAccess();
    return reapply;
  }

  /**
   * Ends what a crash cut off: a create that had not finished is undone (it was never acknowledged), a delete that
   * had begun is finished (it was asked for, and half of it may be done).
   */
  private async settleCreatesAndDeletes(): Promise<void> {
    const { store, lifecycle, revisions } = this.deps;
    const pending = store.all().filter((r) => r.pending !== null);
    if (pending.length > 0) await lifecycle.stopStrays(pending);
    for (const record of pending) {
      // A create cut off leaves nothing behind; a delete cut off keeps the log (whether a purge was asked is lost).
      await this.deps.dismantle(record, record.pending === 'create');
      const done = record.pending === 'create' ? 'undone' : 'finished';
      this.log.warn(
        { instanceID: record.id, name: record.name },
        `an interrupted ${record.pending} of an instance was ${done}`,
      );
    }
    await revisions.sweep(new Set(store.all().map((r) => r.id)));
  }

  /**
   * A change of a config file cut off before it committed is undone: it was never answered, so the instance stays at
   * the revision it was made on, the file put back to that revision's (tunnelward's admin endpoint kept as the file
   * has it now). One that had begun to apply is handed back, so that a tunnel found running is given the file again.
   */
  private async settleChanges(): Promise<Reapply[]> {
    const { store, revisions, db } = this.deps;
    const reapply: Reapply[] = [];
    for (const change of revisions.pending()) {
      const record = store.get(change.instanceID);
      if (!record) continue;
      const previous = revisions.get(record.id, change.previous);
      if (previous) {
        const now = TunnelConfig.parse(await readTunnelConfigText(record.configPath), record.configPath);
        const then = TunnelConfig.parse(await revisions.textOf(record.id, previous.version), record.configPath);
        then.keepAdminEndpointOf(now);
        if (then.toString() !== now.toString()) await writeTunnelConfig(record.configPath, then, record.runUser);
      }
      revisions.drop(record.id, change.number);
      await db.persist();
      if (change.status === 'applying') reapply.push({ id: record.id, plan: change.plan });
      this.log.warn(
        { instanceID: record.id, revision: change.number, backTo: change.previous },
        'an interrupted change of a config file was undone',
      );
    }
    return reapply;
  }

  /**
   * The instance dir: temp files of writes a crash cut off are removed, and config files that no instance owns are
   * moved aside (never deleted: they are data) with their ids kept from reuse.
   */
  private async sweepInstanceDir(): Promise<void> {
    const { settings, store, db, orphanDir } = this.deps;
    const dir = settings.value('InstancePath');
    for (const name of await removeStaleTempFiles(dir)) {
      this.log.info({ file: join(dir, name) }, 'removed the temp file of an interrupted write');
    }
    const owned = new Set(store.all().map((r) => r.configPath));
    let highest = 0;
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const m = /^tunnel_(\d+)\.toml$/.exec(name);
      if (!m || owned.has(join(dir, name))) continue;
      highest = Math.max(highest, Number(m[1]));
      const aside = join(orphanDir, `${name}.${Date.now()}`);
      await mkdir(orphanDir, { recursive: true, mode: 0o700 });
      await rename(join(dir, name), aside);
      this.log.warn({ file: join(dir, name), movedTo: aside }, 'a config file that no instance owns was moved aside');
    }
    if (highest > 0) {
      store.reserveIdsUpTo(highest);
      await db.persist();
    }
  }

  /**
   * A config file written with other access than its run user needs (by an earlier tunnelward, or by hand, or before
   * another user came to share the run user's primary group) is written again, unchanged, with that access.
   */
  private async settleFileAccess(): Promise<void> {
    for (const record of this.deps.store.all()) {
      if (record.pending !== null) continue;
      const found = await checkConfigFileAccess(record.configPath, record.runUser).catch(() => undefined);
      if (!found || found.right) continue;
      await writeTunnelConfig(record.configPath, await readTunnelConfigText(record.configPath), record.runUser);
      const { access } = found;
      if (access.form === 'own' && access.refused) {
        this.log.warn(
          { instanceID: record.id, runUser: record.runUser, reason: access.refused },
          "config file made tunnelward's alone: its run user cannot be given access to it alone, so it will not start",
        );
      } else {
        this.log.info(
          { instanceID: record.id, runUser: record.runUser, access: access.form },
          'config file given the access its run user needs',
        );
      }
    }
  }
}
