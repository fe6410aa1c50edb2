import { Subject } from '../src/util/rx.js';
import { environmentFile } from '../src/boot/environment-file.js';
import type { InstanceEnvStore } from '../src/instances/instance-env.js';
import type { InstanceRecord, InstanceStore } from '../src/instances/instance-store.js';
import type { Logger } from '../src/log/logger.js';
import type { BootService, BootTarget } from './boot-services.js';

/**
 * Keeps each instance's boot service (a systemd unit, an init.d script, a scheduled task) in step with its record:
 * made at a create, removed at a delete, moved with a new name or run user, rewritten when the settings it is made
 * from change. A failure here never fails the change that caused it: it is said (`errors$`, `bootServiceError`), and
 * the record keeps saying what is really in place.
 */
export class BootSync {
  /** Boot-service operations that failed. */
  readonly errors$ = new Subject<{ instanceID: number; name: string; message: string }>();
  private readonly log: Logger;

  constructor(
    private readonly boot: BootService,
    private readonly store: InstanceStore,
    private readonly env: InstanceEnvStore,
    log: Logger,
  ) {
    this.log = log.child({ component: 'boot-sync' });
  }

  /** systemd and init.d need a unit or script to run an instance at all, boot or not. */
  get throughInit(): boolean {
    return this.boot.initSystem === 'systemd' || this.boot.initSystem === 'init.d';
  }

  /** What the boot service of an instance is made from: the instance as it is now, its environment included. */
  targetOf(r: InstanceRecord): BootTarget {
    return {
      id: r.id,
      name: r.name,
      runUser: r.runUser,
      configPath: r.configPath,
      env: this.env.of(r.id),
      ...(r.policy.memoryMaxMB !== undefined ? { memoryMaxMB: r.policy.memoryMaxMB } : {}),
    };
  }

  /** A new instance's boot service (or the unit an init system runs it by); the failure's message, if any. */
  async created(record: InstanceRecord): Promise<string | undefined> {
    try {
      if (record.bootAtStart) await this.boot.enable(this.targetOf(record));
      else if (this.throughInit) await this.boot.prepare(this.targetOf(record));
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  }

  /** Removes the instance's boot service; a failure is reported, never thrown. */
  async removed(record: InstanceRecord): Promise<void> {
    if (!record.bootAtStart && !this.throughInit) return;
    await this.boot.remove(this.targetOf(record)).catch((err) => this.report(record, (err as Error).message));
  }

  /**
   * Brings the boot service to a changed record (`before` -> `after`, start at boot wanted or not): enabling creates
   * it, disabling removes it, and a new name or run user while it is on removes the old one and creates the new one.
   * Returns whether it is on now, and the failure, if any.
   */
  async changed(
    before: InstanceRecord,
    after: InstanceRecord,
    wantBoot: boolean,
  ): Promise<{ bootAtStart: boolean; bootServiceError?: string }> {
    const identityChanged = before.name !== after.name || before.runUser !== after.runUser;
    let bootAtStart = before.bootAtStart;
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
    if (before.bootAtStart && (!wantBoot || identityChanged)) {
      if (await attempt(() => this.boot.disable(this.targetOf(before)))) bootAtStart = false;
    }
    if (!bootServiceError && wantBoot && !bootAtStart) {
      if (await attempt(() => this.boot.enable(this.targetOf(after)))) bootAtStart = true;
    } else if (!bootServiceError && identityChanged && this.throughInit) {
      await attempt(() => this.boot.prepare(this.targetOf(after)));
    }
    if (bootServiceError) this.report(after, bootServiceError);
    return bootServiceError ? { bootAtStart, bootServiceError } : { bootAtStart };
  }

  /** Refuses, before anything changes, variables an init system's environment file cannot hold. */
  checkEnvironment(next: Readonly<Record<string, string>>): void {
    if (this.throughInit) environmentFile(next);
  }

  /** The environment file follows the instance's variables at once where an init system runs the tunnel. */
  async environmentChanged(record: InstanceRecord): Promise<void> {
    if (this.throughInit) await this.boot.prepare(this.targetOf(record));
  }

  /** Rewrites the boot services whose text depends on the settings; a failure is logged, never thrown. */
  async refresh(): Promise<void> {
    const targets = this.store
      .all()
      .filter((r) => r.pending === null)
      .map((r) => this.targetOf(r));
    await this.boot
      .refresh?.(targets)
      .then(() => this.log.info({ instances: targets.length }, 'boot services follow the new settings'))
      .catch((err) => this.log.error({ err }, 'cannot bring the boot services up to date with the settings'));
  }

  report(record: InstanceRecord, message: string): void {
    this.log.warn({ instanceID: record.id, reason: message }, 'boot service operation failed');
    this.errors$.next({ instanceID: record.id, name: record.name, message });
  }

  close(): void {
    this.errors$.complete();
  }
}
