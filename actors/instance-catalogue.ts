import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Subject } from '../src/util/rx.js';
import type { User } from '../src/accounts/account-service.js';
import { readConfigText, type ImportFormat } from '../src/config/import-formats.js';
import {
  readTunnelConfig,
  readTunnelConfigText,
  TunnelConfig,
  writeTunnelConfig,
  type AdminEndpoint,
} from '../src/config/tunnel-config.js';
import { AppError, badRequest, conflict, notFound } from '../src/errors.js';
import { removeStaleTempFiles } from '../src/fs/atomic.js';
import type { InstanceEnvStore } from '../src/instances/instance-env.js';
import { nameInUse, type InstanceRecord, type InstanceStore } from '../src/instances/instance-store.js';
import { changedLabels, type Labels } from '../src/instances/labels.js';
import type { Logger } from '../src/log/logger.js';
import type { SettingsStore } from '../src/settings/settings-store.js';
import type { Database } from '../src/storage/database.js';
import { freeLoopbackPort, loopbackPortState } from '../src/system/loopback-ports.js';
import { lookupOsUser } from '../src/system/os-users.js';
import { hasConfigFileAccess } from '../src/system/run-user-access.js';
import { crashPoint } from '../src/util/crash-points.js';
import { environmentFile } from '../src/boot/environment-file.js';
import { serviceNameOf, type BootService, type BootTarget } from './boot-services.js';
import { hasProcess } from '../machines/instance.machine.js';
import type { InstanceLifecycle } from './instance-lifecycle.js';
import type { InstanceLogs } from './instance-logs.js';
import { reloadTunnel } from './frpc-admin.js';
import { unifiedDiff } from '../src/util/unified-diff.js';

export interface CreateInstance {
  name: string;
  serverAddr: string;
  serverPort: string;
  authMethod: string;
  bootAtStart: boolean;
  runUser: string;
  additional: Record<string, unknown>;
  labels?: Labels;
}

export interface ImportInstance {
  name: string;
  /** The text of an frpc client config file. */
  content: string;
  /** toml, ini, yaml or json; guessed from the content when left out. */
  format?: string;
  bootAtStart: boolean;
  runUser: string;
  labels?: Labels;
}

export interface SystemConfigChange {
  name?: string;
  bootAtStart?: boolean;
  runUser?: string;
}

/**
 * How a proxy edit reaches the tunnel: by frpc's reload, by a restart (frpc's admin API could not be reached), or
 * not yet (it is not running).
 */
export type Applied = 'reload' | 'restart' | 'on next start';

/** What a replacement of the whole config file did; `unchanged` and `not applied` (a dry run) wrote nothing. */
export interface ConfigReplaced {
  record: InstanceRecord;
  applied: Applied | 'unchanged' | 'not applied';
  /** The unified diff of the file, '' when nothing changed. */
  diff: string;
  /** The version of the file as it is now (as it would be, for a dry run). */
  version: string;
  notes: string[];
}

/** The Basic user tunnelward uses on each tunnel's admin API. */
const ADMIN_USER = 'tunnelward';
const adminPassword = () => randomBytes(24).toString('base64url');

export interface CatalogueChange {
  event: 'instance.created' | 'instance.modified' | 'instance.deleted';
  instanceID: number;
  name: string;
  /** For a modification: what was changed. */
  what?: string;
}

/** An instance's name: what a config file, a unit and a selection can all carry. */
export const INSTANCE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
/** A name that is only digits would read as an instance id. */
export const ONLY_DIGITS = /^\d+$/;

/**
 * What instances there are: records, config files, proxies inside them, boot services. Every edit of an instance
 * runs in that instance's queue (the lifecycle's), so it never overlaps a start, a stop or another edit of it.
 */
export class InstanceCatalogue {
  /** Ids of deleted instances, so streams following them can close. */
  readonly deleted$ = new Subject<number>();
  /** Boot-service operations that failed. */
  readonly bootErrors$ = new Subject<{ instanceID: number; name: string; message: string }>();
  /** Instances created, modified (what: `config file`, `proxies`, `system config`, `environment`) and deleted. */
  readonly changes$ = new Subject<CatalogueChange>();
  private version = 0;
  private readonly log: Logger;
  /** What each instance's proxies hold on their server, read from its file once and kept as its file is written. */
  private claims: Map<number, ServerClaims> | undefined;
  private claimsLoad: Promise<Map<number, ServerClaims>> | undefined;
  /** The admin endpoint of each instance's tunnel (see `allAdminEndpoints`). */
  private adminEndpoints: Map<number, AdminEndpoint> | undefined;
  private adminEndpointsLoad: Promise<Map<number, AdminEndpoint>> | undefined;
  /**
   * Claims and admin ports handed out to a create or an edit still under way: checked like those on record, so that
   * two requests at once cannot both take the same one.
   */
  private readonly pendingClaims = new Set<ServerClaims>();
  private readonly pendingPorts = new Set<number>();

  constructor(
    private readonly db: Database,
    private readonly store: InstanceStore,
    private readonly settings: SettingsStore,
    private readonly boot: BootService,
    private readonly logs: InstanceLogs,
    private readonly lifecycle: InstanceLifecycle,
    private readonly env: InstanceEnvStore,
    log: Logger,
    /** Where config files that no instance owns are moved at start-up. */
    private readonly orphanDir: string,
  ) {
    this.log = log.child({ component: 'catalogue' });
  }

  /** Changes whenever an instance is created, renamed, reconfigured or deleted. */
  get catalogueVersion(): number {
    return this.version;
  }

  /**
   * Start-up: what a crash cut off is settled, the instance dir swept and each config file made readable by its run
   * user, before any tunnel is taken over.
   */
  async settle(): Promise<void> {
    await this.settlePending();
    await this.sweepInstanceDir();
    await this.settleFileAccess();
  }

  /**
   * A config file written with other access than its run user needs (by an earlier tunnelward, or by hand) is
   * written again, unchanged, by the one path that writes config files, which gives it that access.
   */
  private async settleFileAccess(): Promise<void> {
    for (const record of this.records()) {
      const right = await hasConfigFileAccess(record.configPath, record.runUser).catch(() => true);
      if (right) continue;
      await this.rewriteFor(record.configPath, record.runUser);
      this.log.info(
        { instanceID: record.id, runUser: record.runUser },
        'config file given the access its run user needs',
      );
    }
  }

  /** Writes a config file again, unchanged, with the access `runUser` needs. */
  private async rewriteFor(path: string, runUser: string): Promise<void> {
    await writeTunnelConfig(path, await readTunnelConfigText(path), runUser);
  }

  /**
   * Ends what a crash cut off: a create that had not finished is undone (it was never acknowledged), a delete that
   * had begun is finished (it was asked for, and half of it may be done).
   */
  private async settlePending(): Promise<void> {
    const pending = this.store.all().filter((r) => r.pending !== null);
    if (pending.length === 0) return;
    await this.lifecycle.stopStrays(pending);
    for (const record of pending) {
      // A create cut off leaves nothing behind; a delete cut off keeps the log (whether a purge was asked is lost).
      await this.dismantle(record, record.pending === 'create');
      const done = record.pending === 'create' ? 'undone' : 'finished';
      this.log.warn(
        { instanceID: record.id, name: record.name },
        `an interrupted ${record.pending} of an instance was ${done}`,
      );
    }
  }

  /**
   * Start-up housekeeping of the instance dir: temp files of writes a crash cut off are removed, and config files
   * that no instance owns are moved aside (never deleted: they are data) with their ids kept from reuse.
   */
  private async sweepInstanceDir(): Promise<void> {
    const dir = this.settings.value('InstancePath');
    for (const name of await removeStaleTempFiles(dir)) {
      this.log.info({ file: join(dir, name) }, 'removed the temp file of an interrupted write');
    }
    const owned = new Set(this.store.all().map((r) => r.configPath));
    let highest = 0;
    for (const name of await readdir(dir).catch(() => [] as string[])) {
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

  private recordOf(id: number): InstanceRecord {
    const record = this.store.get(id);
    if (!record || record.pending === 'create') throw notFound(`instance ${id} not found`);
    return record;
  }

  /** Every instance there is (a create still in progress is not one yet). */
  records(): InstanceRecord[] {
    return this.store.all().filter((record) => record.pending !== 'create');
  }

  record(id: number): InstanceRecord {
    return this.recordOf(id);
  }

  exists(id: number): boolean {
    const record = this.store.get(id);
    return record !== undefined && record.pending !== 'create';
  }

  /** The instance's name, or '' once it is gone. */
  nameOf(id: number): string {
    return this.store.get(id)?.name ?? '';
  }

  async create(input: CreateInstance, owner: User): Promise<{ record: InstanceRecord; bootServiceError?: string }> {
    this.checkNewInstance(input);
    const config = TunnelConfig.create(
      { serverAddr: input.serverAddr, serverPort: input.serverPort, authMethod: input.authMethod },
      input.additional,
    );
    return this.lifecycle.counted(() => this.register(input, owner, config));
  }

  /**
   * A new instance whose config file holds an existing frpc config file (TOML, INI, YAML or JSON), rewritten in
   * frpc's current TOML format, every key checked as the API checks it. Refused whole, with nothing created, when
   * any part of the file cannot be represented. Its own webServer gives way to tunnelward's admin endpoint.
   */
  async importConfig(
    input: ImportInstance,
    owner: User,
  ): Promise<{
    record: InstanceRecord;
    format: ImportFormat;
    proxyCount: number;
    visitorCount: number;
    notes: string[];
    bootServiceError?: string;
  }> {
    this.checkNewInstance(input);
    const { format, tree, notes, text } = await readConfigText(input.content, input.format);
    const { config, ...imported } = TunnelConfig.imported(tree, { format, text, notes });
    const done = await this.lifecycle.counted(() => this.register(input, owner, config));
    this.log.info(
      { instanceID: done.record.id, format, proxies: imported.proxyCount, visitors: imported.visitorCount },
      'instance imported from a config file',
    );
    return { ...done, format, ...imported };
  }

  /** What a new instance's name and run user must be; a name in use is a 409. */
  private checkNewInstance(input: { name: string; runUser: string }): void {
    checkInstanceName(input.name);
    checkRunUser(input.runUser);
    if (this.store.nameTaken(input.name)) throw nameInUse(input.name);
  }

  /**
   * Makes an instance of a checked config: its admin endpoint, its record (marked as a create in progress), its
   * file, its boot service. What its proxies hold on their server must be free on that server first.
   */
  private async register(
    input: { name: string; bootAtStart: boolean; runUser: string; labels?: Labels },
    owner: User,
    config: TunnelConfig,
  ): Promise<{ record: InstanceRecord; bootServiceError?: string }> {
    const claims = await this.holdClaims(config);
    let port: number | undefined;
    try {
      port = await this.freeAdminPort();
      return await this.registerHeld(input, owner, config, claims, port);
    } finally {
      this.pendingClaims.delete(claims);
      if (port !== undefined) this.pendingPorts.delete(port);
    }
  }

  private async registerHeld(
    input: { name: string; bootAtStart: boolean; runUser: string; labels?: Labels },
    owner: User,
    config: TunnelConfig,
    claims: ServerClaims,
    port: number,
  ): Promise<{ record: InstanceRecord; bootServiceError?: string }> {
    config.setAdminEndpoint(port, ADMIN_USER, adminPassword());
    const endpoint = config.adminEndpoint()!;
    const instancePath = this.settings.value('InstancePath');
    // Checked again with no wait before the insert: another create may have taken the name meanwhile.
    if (this.store.nameTaken(input.name)) throw nameInUse(input.name);
    const record = this.store.insert({
      name: input.name,
      bootAtStart: input.bootAtStart,
      runUser: input.runUser,
      createdBy: owner.username,
      ownerId: owner.id,
      now: Date.now(),
      configPathOf: (id) => join(instancePath, `${serviceNameOf(id)}.toml`),
      labels: changedLabels({}, input.labels ?? {}),
    });
    // The record, marked as a create in progress, is on disk before the file: its id is never handed out twice,
    // and a crash before the end is undone at the next start.
    await this.db.persist();
    crashPoint('create:recorded', record);
    try {
      await mkdir(instancePath, { recursive: true, mode: 0o711 });
      await writeTunnelConfig(record.configPath, config, record.runUser);
    } catch (err) {
      await this.dismantle(record, true);
      throw err instanceof AppError
        ? err
        : new AppError(500, `cannot write ${record.configPath}: ${(err as Error).message}`);
    }
    crashPoint('create:written', record);
    let bootServiceError: string | undefined;
    try {
      if (record.bootAtStart) await this.boot.enable(this.targetOf(record));
      else if (this.runsThroughInit()) await this.boot.prepare(this.targetOf(record));
    } catch (err) {
      bootServiceError = (err as Error).message;
      if (record.bootAtStart) this.store.update(record.id, { bootAtStart: false });
    }
    this.store.setPending(record.id, null);
    this.adminEndpoints?.set(record.id, endpoint);
    this.claims?.set(record.id, claims);
    const created = this.store.get(record.id)!;
    await this.db.persist();
    this.version++;
    this.log.info({ instanceID: created.id, name: created.name }, 'instance created');
    this.changes$.next({ event: 'instance.created', instanceID: created.id, name: created.name });
    if (bootServiceError) this.reportBootError(created, bootServiceError);
    return bootServiceError ? { record: created, bootServiceError } : { record: created };
  }

  /**
   * Stops the tunnel if it runs, then removes its boot service, config file, logs and record. Once the tunnel is
   * stopped the delete is marked as begun on disk, so a crash in the middle is finished at the next start.
   */
  remove(id: number, options: { purgeLog?: boolean } = {}): Promise<InstanceRecord> {
    return this.lifecycle.exclusive(id, async (record) => {
      const failure = await this.lifecycle.retire(id);
      if (failure) throw new AppError(500, `cannot stop instance ${id}: ${failure}`);
      crashPoint('delete:stopped', record);
      this.store.setPending(id, 'delete');
      await this.db.persist();
      crashPoint('delete:marked', record);
      this.version++;
      await this.dismantle(record, options.purgeLog ?? false);
      this.log.info({ instanceID: id, name: record.name }, 'instance deleted');
      this.deleted$.next(id);
      this.changes$.next({ event: 'instance.deleted', instanceID: id, name: record.name });
      return record;
    });
  }

  /**
   * Removes everything of an instance (its process is already gone): boot service, config file, record, and its log
   * with `purgeLog` (else the log stays where it was, for whoever wants to know what the tunnel did).
   */
  private async dismantle(record: InstanceRecord, purgeLog: boolean): Promise<void> {
    if (record.bootAtStart || this.runsThroughInit()) {
      await this.boot
        .remove(this.targetOf(record))
        .catch((err) => this.reportBootError(record, (err as Error).message));
    }
    crashPoint('delete:unbooted', record);
    await rm(record.configPath, { force: true });
    await this.logs.remove(record.id, { keepLog: !purgeLog });
    crashPoint('delete:files', record);
    this.store.delete(record.id);
    // Again once the record is gone: a list built while the files were being removed still showed it.
    this.version++;
    this.env.forget(record.id);
    this.claims?.delete(record.id);
    this.adminEndpoints?.delete(record.id);
    await this.db.persist();
  }

  /** An edit of an instance in its queue, announced once it is done. */
  private async modify<T>(id: number, what: string, job: (record: InstanceRecord) => Promise<T>): Promise<T> {
    const result = await this.lifecycle.exclusive(id, job);
    this.changes$.next({ event: 'instance.modified', instanceID: id, name: this.nameOf(id), what });
    return result;
  }

  /** What the boot service of an instance is made from: the instance as it is now, its environment included. */
  private targetOf(r: InstanceRecord): BootTarget {
    return { id: r.id, name: r.name, runUser: r.runUser, configPath: r.configPath, env: this.env.of(r.id) };
  }

  /**
   * Sets or removes (null) environment variables of the instance's tunnel; they apply at its next start. Where an
   * init system runs the tunnel, its environment file follows at once (a value it cannot hold is refused first).
   */
  modifyEnvironment(id: number, changes: Record<string, unknown>): Promise<InstanceRecord> {
    return this.modify(id, 'environment', async (record) => {
      if (this.runsThroughInit()) {
        const next = { ...this.env.of(id) };
        for (const [name, value] of Object.entries(changes)) {
          if (typeof value === 'string') next[name] = value;
          else delete next[name];
        }
        environmentFile(next);
      }
      this.env.change(id, changes);
      await this.db.persist();
      if (this.runsThroughInit()) await this.boot.prepare(this.targetOf(record));
      // Names only: the values are secrets.
      this.log.info({ instanceID: id, names: Object.keys(changes) }, 'environment variables changed');
      return record;
    });
  }

  /** Sets (a string) or removes (null) labels of the instance; checked by the caller (`checkLabels`). */
  modifyLabels(id: number, changes: Readonly<Record<string, string | null>>): Promise<InstanceRecord> {
    return this.modify(id, 'labels', async (record) => {
      const updated = this.store.setLabels(id, changedLabels(record.labels, changes)) ?? record;
      await this.db.persist();
      this.version++;
      return updated;
    });
  }

  /** The names of the instance's environment variables, each value masked. */
  environment(id: number): Record<string, string> {
    return this.env.masked(this.recordOf(id).id);
  }

  /** Changes top-level settings of the config file; proxies stay as they are. */
  modifyConfig(id: number, patch: Record<string, unknown>): Promise<InstanceRecord> {
    return this.modify(id, 'config file', async (record) => {
      const config = await readTunnelConfig(record.configPath);
      config.setCommon(patch);
      await this.write(record, config);
      return record;
    });
  }

  /**
   * Writes an instance's config file once nothing its proxies hold on their server is held by another instance on
   * the same server (frps would refuse one of the two at run time): a conflict is a 409 naming the other instance.
   */
  private async write(record: InstanceRecord, config: TunnelConfig): Promise<void> {
    const mine = await this.holdClaims(config, record.id);
    try {
      await writeTunnelConfig(record.configPath, config, record.runUser);
      // A reload gives a running tunnel the new secrets without a start.
      this.env.knowConfig(record.id, config);
      this.claims?.set(record.id, mine);
    } finally {
      this.pendingClaims.delete(mine);
    }
  }

  /**
   * What the config's proxies hold on their server, once no other instance on that server holds any of it, nor a
   * create or edit under way: held from now on (the caller lets go of `pendingClaims` once it has recorded them).
   */
  private async holdClaims(config: TunnelConfig, self?: number): Promise<ServerClaims> {
    const mine = config.serverClaims();
    if (mine.claims.size === 0) return mine; // a new instance without proxies need not read every other file
    const recorded = await this.allClaims();
    // From here to the hold, nothing waits: no other request can come in between.
    const others: Array<{ id: number | undefined; claims: ServerClaims }> = [...recorded]
      .filter(([id]) => id !== self)
      .map(([id, claims]) => ({ id, claims }));
    for (const pending of this.pendingClaims) others.push({ id: undefined, claims: pending });
    for (const { id: otherId, claims: other } of others) {
      if (other.server !== mine.server) continue;
      for (const [claim, proxy] of mine.claims) {
        const holder = other.claims.get(claim);
        if (holder === undefined) continue;
        if (otherId === undefined)
          throw conflict(
            `proxy ${proxy}: ${describeClaim(claim)} is being taken by proxy ${holder} of another request on the same server ${mine.server}`,
          );
        const otherName = this.store.get(otherId)?.name ?? String(otherId);
        throw conflict(
          `proxy ${proxy}: ${describeClaim(claim)} is already used by proxy ${holder} of instance ${otherName} (${otherId}) on the same server ${mine.server}`,
        );
      }
    }
    this.pendingClaims.add(mine);
    return mine;
  }

  private async allClaims(): Promise<Map<number, ServerClaims>> {
    if (this.claims) return this.claims;
    this.claimsLoad ??= this.readEveryFile((config) => config.serverClaims()).then((claims) => (this.claims = claims));
    return this.claimsLoad;
  }

  /**
   * One fact of every instance's config file, each file read once however many ask at the same time (a thousand
   * starts at once must not read a thousand files each). A file that cannot be read holds nothing we can know of;
   * its own edits will say why.
   */
  private async readEveryFile<T>(fact: (config: TunnelConfig) => T | undefined): Promise<Map<number, T>> {
    const facts = new Map<number, T>();
    for (const record of this.records()) {
      const config = await readTunnelConfig(record.configPath).catch(() => undefined);
      const value = config && fact(config);
      if (value !== undefined) facts.set(record.id, value);
    }
    return facts;
  }

  /**
   * Renames, changes the run user, switches start at boot. The boot service follows: enabling creates it,
   * disabling removes it, and a new name or run user while it is on removes the old one and creates the new one.
   * A failure there does not fail the request: it comes back as `bootServiceError`, and the record keeps saying
   * what is really in place.
   */
  modifySystem(id: number, change: SystemConfigChange): Promise<{ record: InstanceRecord; bootServiceError?: string }> {
    return this.modify(id, 'system config', async (record) => {
      // An older instance may keep a name that is no longer allowed for a new one (only digits), as long as it keeps it.
      if (change.name !== undefined && change.name !== record.name) {
        checkInstanceName(change.name);
        if (this.store.nameTaken(change.name, id)) throw nameInUse(change.name);
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
      // Taken in the same turn as the check above: a create or rename that comes while the boot service is
      // being changed finds the name in use, not this change (which would fail half done).
      let updated = this.store.update(id, { name: change.name, runUser: change.runUser }) ?? record;
      // The config file follows a new run user: a failure there changes nothing.
      if (change.runUser !== undefined && change.runUser !== record.runUser) {
        try {
          await this.rewriteFor(record.configPath, change.runUser);
        } catch (err) {
          this.store.update(id, { name: record.name, runUser: record.runUser });
          throw err;
        }
      }
      if (record.bootAtStart && (!wantBoot || identityChanged)) {
        if (await attempt(() => this.boot.disable(this.targetOf(record)))) bootAtStart = false;
      }
      if (!bootServiceError && wantBoot && !bootAtStart) {
        if (await attempt(() => this.boot.enable(this.targetOf(updated)))) bootAtStart = true;
      } else if (!bootServiceError && identityChanged && this.runsThroughInit()) {
        await attempt(() => this.boot.prepare(this.targetOf(updated)));
      }
      updated = this.store.update(id, { bootAtStart }) ?? updated;
      await this.db.persist();
      this.version++;
      if (bootServiceError) this.reportBootError(updated, bootServiceError);
      return bootServiceError ? { record: updated, bootServiceError } : { record: updated };
    });
  }

  /** Rewrites the boot services whose text depends on the settings; a failure is logged, never thrown. */
  async refreshBootServices(): Promise<void> {
    const targets = this.store
      .all()
      .filter((r) => r.pending === null)
      .map((r) => this.targetOf(r));
    await this.boot
      .refresh?.(targets)
      .then(() => this.log.info({ instances: targets.length }, 'boot services follow the new settings'))
      .catch((err) => this.log.error({ err }, 'cannot bring the boot services up to date with the settings'));
  }

  /** systemd and init.d need a unit or script to run an instance at all, boot or not. */
  private runsThroughInit(): boolean {
    return this.boot.initSystem === 'systemd' || this.boot.initSystem === 'init.d';
  }

  private reportBootError(record: InstanceRecord, message: string): void {
    this.log.warn({ instanceID: record.id, reason: message }, 'boot service operation failed');
    this.bootErrors$.next({ instanceID: record.id, name: record.name, message });
  }

  /** Where tunnelward reaches the tunnel's admin API, as its file says. */
  async adminEndpoint(id: number): Promise<AdminEndpoint | undefined> {
    this.recordOf(id);
    return (await this.allAdminEndpoints()).get(id);
  }

  readConfig(id: number): Promise<TunnelConfig> {
    return readTunnelConfig(this.recordOf(id).configPath);
  }

  /**
   * Edits the instance's config file in its queue: read, change, write atomically. A running tunnel applies the
   * change at once through frpc's reload (its other proxies keep running undisturbed); one that frpc refuses is
   * rolled back, file and all, and answered with frpc's message, the tunnel left as it was.
   */
  editProxies<T>(
    id: number,
    edit: (config: TunnelConfig) => T,
  ): Promise<{ record: InstanceRecord; result: T; applied: Applied }> {
    return this.modify(id, 'proxies', async (record) => {
      const before = await readTunnelConfigText(record.configPath);
      const config = TunnelConfig.parse(before, record.configPath);
      const result = edit(config);
      await this.write(record, config);
      return { record, result, applied: await this.applyByReload(record, config, before) };
    });
  }

  /**
   * Replaces the whole config file with an operator's text, checked as every edit is (see `TunnelConfig.replacedBy`),
   * claims across instances included; the admin endpoint stays tunnelward's. With `baseVersion`, a file changed since
   * that version is a 409. A running tunnel applies a change of proxies and visitors alone by frpc's reload; a change
   * of its settings needs a restart (done by the supervisor). `diff` is the unified diff of the file as the caller may
   * read it (`masked`).
   */
  replaceConfig(
    id: number,
    content: string,
    options: { baseVersion?: string; masked: boolean; dryRun?: boolean },
  ): Promise<ConfigReplaced> {
    return this.modify(id, 'config file', async (record): Promise<ConfigReplaced> => {
      const before = await readTunnelConfigText(record.configPath);
      const current = TunnelConfig.parse(before, record.configPath);
      const version = current.version();
      if (options.baseVersion !== undefined && options.baseVersion !== version) {
        throw conflict(
          `the config file of instance ${record.name} was changed since version ${options.baseVersion} was read (it is at version ${version} now): read it again and make the change on that`,
        );
      }
      const { config, notes } = current.replacedBy(content);
      const after = config.version();
      const diff = unifiedDiff(
        current.exportText(options.masked),
        config.exportText(options.masked),
        `${record.name} (version ${version})`,
        `${record.name} (version ${after})`,
      );
      const outcome = { record, notes, diff, version: after };
      if (after === version) return { ...outcome, applied: 'unchanged' };
      if (options.dryRun) return { ...outcome, applied: 'not applied' };
      await this.write(record, config);
      this.log.info({ instanceID: id, from: version, to: after }, 'config file replaced');
      if (!current.sameSettingsAs(config)) {
        return { ...outcome, applied: this.lifecycle.stateOf(id) === 'running' ? 'restart' : 'on next start' };
      }
      return { ...outcome, applied: await this.applyByReload(record, config, before) };
    });
  }

  /**
   * How a file just written reaches the tunnel: not yet when it is not running, by frpc's reload, or by a restart
   * when frpc cannot be asked. A change frpc refuses is rolled back (the file as `before`) and answered with a 400.
   */
  private async applyByReload(record: InstanceRecord, config: TunnelConfig, before: string): Promise<Applied> {
    const endpoint = config.adminEndpoint();
    if (this.lifecycle.stateOf(record.id) !== 'running' || !endpoint) return 'on next start';
    const reloaded = await reloadTunnel(endpoint);
    if (reloaded.ok) return 'reload';
    if (reloaded.refused) {
      await writeTunnelConfig(record.configPath, before, record.runUser);
      this.claims = undefined;
      this.claimsLoad = undefined;
      throw badRequest(`frpc refused the change: ${reloaded.message}; the file is as it was and the tunnel runs on`);
    }
    // frpc did not refuse it, it could not be asked: the change stands and a restart applies it.
    this.log.warn(
      { instanceID: record.id, reason: reloaded.message },
      'cannot reload the tunnel; restarting it instead',
    );
    return 'restart';
  }

  /**
   * Before a start: gives the instance an admin endpoint if its file has none (instances made before tunnelward
   * managed one), and a new port when another program holds its own while the tunnel has no process (frpc would
   * fail to start on it). Cheap when nothing is to be done: one bind of the port, outside the instance's queue.
   */
  async ensureAdminEndpoint(id: number): Promise<void> {
    // Only a port found held is replaced: a bind that failed for another reason (no descriptor left in a start of
    // thousands) says nothing of it.
    const usable = async (endpoint: AdminEndpoint | undefined) =>
      endpoint !== undefined &&
      (hasProcess(this.lifecycle.stateOf(id)) ||
        (await loopbackPortState(endpoint.port)) !== 'held' ||
        // A process started meanwhile may be the one holding it.
        hasProcess(this.lifecycle.stateOf(id)));
    if (await usable((await this.allAdminEndpoints()).get(id))) return;
    await this.lifecycle.exclusive(id, async (record) => {
      const config = await readTunnelConfig(record.configPath);
      const known = config.adminEndpoint();
      if (await usable(known)) {
        this.adminEndpoints?.set(id, known!);
        return;
      }
      const port = await this.freeAdminPort();
      try {
        config.setAdminEndpoint(port, ADMIN_USER, adminPassword());
        await writeTunnelConfig(record.configPath, config, record.runUser);
        this.adminEndpoints?.set(id, config.adminEndpoint()!);
      } finally {
        this.pendingPorts.delete(port);
      }
      if (known) {
        this.log.warn(
          { instanceID: id, port: known.port, newPort: port },
          "another program holds the tunnel's admin port: the tunnel gets a new one",
        );
      } else this.log.info({ instanceID: id, port }, 'gave the tunnel an admin endpoint on loopback');
    });
  }

  /** Where each instance's tunnel serves its admin API, read from the files once and kept as they are written. */
  private async allAdminEndpoints(): Promise<Map<number, AdminEndpoint>> {
    if (this.adminEndpoints) return this.adminEndpoints;
    this.adminEndpointsLoad ??= this.readEveryFile((config) => config.adminEndpoint()).then(
      (endpoints) => (this.adminEndpoints = endpoints),
    );
    return this.adminEndpointsLoad;
  }

  /**
   * A loopback port for a tunnel's admin API: one free now that no other instance's file names, from below the
   * kernel's ephemeral range (see loopback-ports). Held in `pendingPorts` until its file is written.
   */
  private async freeAdminPort(): Promise<number> {
    const recorded = await this.allAdminEndpoints();
    const taken = (port: number) => this.pendingPorts.has(port) || [...recorded.values()].some((e) => e.port === port);
    for (;;) {
      const port = await freeLoopbackPort(taken);
      // Checked again with no wait before it is held: two creates at once get two ports.
      if (!taken(port)) {
        this.pendingPorts.add(port);
        return port;
      }
    }
  }

  close(): void {
    this.deleted$.complete();
    this.bootErrors$.complete();
    this.changes$.complete();
  }
}

type ServerClaims = ReturnType<TunnelConfig['serverClaims']>;

/** A claim as an operator reads it: `tcp port 6022` -> `remotePort 6022 (tcp)`. */
function describeClaim(claim: string): string {
  const [kind, what, ...rest] = claim.split(' ');
  if (kind === 'name') return `the name ${[what, ...rest].join(' ')}`;
  if (what === 'port') return `remotePort ${rest.join(' ')} (${kind})`;
  return `${what === 'domain' ? 'custom domain' : 'subdomain'} ${rest.join(' ')} (${kind})`;
}

function checkInstanceName(name: string): void {
  if (!INSTANCE_NAME.test(name)) {
    throw badRequest('name must be 1-64 characters, each a letter, a digit, "_", "." or "-"');
  }
  if (ONLY_DIGITS.test(name)) {
    throw badRequest(
      `name ${name} is only digits: it would read as an instance id; add a letter (e.g. tunnel-${name})`,
    );
  }
}

function checkRunUser(runUser: string): void {
  if (!lookupOsUser(runUser)) throw badRequest(`runUser ${JSON.stringify(runUser)} is not a user on this system`);
}
