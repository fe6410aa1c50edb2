import type { InstancePolicy } from '../src/instances/health-policy.js';
import { mkdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Subject } from '../src/util/rx.js';
import type { User } from '../src/accounts/account-service.js';
import { allow, type Accessor } from '../src/accounts/access.js';
import { readConfigText, type ImportFormat } from '../src/config/import-formats.js';
import { readTunnelConfigText, TunnelConfig, writeTunnelConfig } from '../src/config/tunnel-config.js';
import { AppError, badRequest, notFound } from '../src/errors.js';
import { safeLabel } from '../src/config/value-check.js';
import type { Table } from '../src/config/toml-tree.js';
import type { Verdict } from '../src/frpc/verify.js';
import type { InstanceEnvStore } from '../src/instances/instance-env.js';
import { nameInUse, type InstanceRecord, type InstanceStore } from '../src/instances/instance-store.js';
import { changedLabels, type Labels } from '../src/instances/labels.js';
import { expiryAt } from '../src/instances/expiry.js';
import type { Author, RevisionStore } from '../src/instances/revision-store.js';
import type { Logger } from '../src/log/logger.js';
import type { SettingsStore } from '../src/settings/settings-store.js';
import type { Database } from '../src/storage/database.js';
import { lookupOsUser } from '../src/system/os-users.js';
import { configFileAccess } from '../src/system/run-user-access.js';
import { crashPoint } from '../src/util/crash-points.js';
import { serviceNameOf } from './boot-services.js';
import type { BootSync } from './boot-sync.js';
import type { InstanceLifecycle } from './instance-lifecycle.js';
import type { InstanceLogs } from './instance-logs.js';
import type { InstanceRegistry } from './instance-registry.js';
import type { Slot } from './instance-queue.js';

export interface CreateInstance {
  name: string;
  serverAddr: string;
  serverPort: string;
  authMethod: string;
  bootAtStart: boolean;
  runUser: string;
  additional: Record<string, unknown>;
  labels?: Labels;
  /** When it is stopped by itself (see src/instances/expiry.ts). */
  expires?: string;
}

export interface ImportInstance {
  name: string;
  /** The text of an frpc client config file. */
  content: string;
  /** toml, ini, yaml or json; guessed from the content when left out. */
  format?: string;
  /** The files the content's `includes` name, as the client read them. */
  includedFiles?: Array<{ path: string; content: string }>;
  bootAtStart: boolean;
  runUser: string;
  labels?: Labels;
  expires?: string;
}

export interface SystemConfigChange {
  name?: string;
  bootAtStart?: boolean;
  runUser?: string;
  /** A new expiry (see src/instances/expiry.ts); null or `never` clears it. */
  expires?: string | null;
  /** End-to-end probes of its proxies on or off (see actors/probes.ts). */
  probes?: boolean;
  /** Its own supervision figures: a number sets one, null goes back to the setting (see src/instances/health-policy.ts). */
  policy?: { [K in keyof InstancePolicy]?: number | null };
}

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

export interface CatalogueDeps {
  db: Database;
  store: InstanceStore;
  settings: SettingsStore;
  boot: BootSync;
  logs: InstanceLogs;
  lifecycle: InstanceLifecycle;
  registry: InstanceRegistry;
  revisions: RevisionStore;
  env: InstanceEnvStore;
  verify: (config: TunnelConfig, env: Readonly<Record<string, string>>) => Promise<Verdict>;
  /** Records a change of the record (not of the file) as a revision, in the instance's slot. */
  recordChange: (slot: Slot, record: InstanceRecord, change: RecordedChange) => Promise<void>;
  log: Logger;
}

/** A change of an instance's record as its revision says it: never a value that may be a secret. */
export interface RecordedChange {
  kind: string;
  request: Record<string, unknown>;
  by: Author;
  reason: string;
}

/**
 * What instances there are: their records, made (with their config file, first revision and boot service) and
 * removed; and the changes of a record that are not changes of its file (name, run user, start at boot, environment,
 * labels). Every one runs in the instance's queue slot; changes of the file go through the change pipeline.
 */
export class InstanceCatalogue {
  /** Ids of deleted instances, so streams following them can close. */
  readonly deleted$ = new Subject<number>();
  /** Instances created, modified (what: `config file`, `proxies`, `system config`, `environment`) and deleted. */
  readonly changes$ = new Subject<CatalogueChange>();
  private version = 0;
  private readonly log: Logger;

  constructor(private readonly deps: CatalogueDeps) {
    this.log = deps.log.child({ component: 'catalogue' });
  }

  /** Changes whenever an instance is created, renamed, reconfigured or deleted. */
  get catalogueVersion(): number {
    return this.version;
  }

  /** Something the list shows of an instance's record changed. */
  touched(): void {
    this.version++;
  }

  private recordOf(id: number): InstanceRecord {
    const record = this.deps.store.get(id);
    if (!record || record.pending === 'create') throw notFound(`instance ${id} not found`);
    return record;
  }

  /** Every instance there is (a create still in progress is not one yet). */
  records(): InstanceRecord[] {
    return this.deps.store.all().filter((record) => record.pending !== 'create');
  }

  record(id: number): InstanceRecord {
    return this.recordOf(id);
  }

  exists(id: number): boolean {
    const record = this.deps.store.get(id);
    return record !== undefined && record.pending !== 'create';
  }

  /** The instance's name, or '' once it is gone. */
  nameOf(id: number): string {
    return this.deps.store.get(id)?.name ?? '';
  }

  async create(
    input: CreateInstance,
    owner: User,
    by: Author,
  ): Promise<{ record: InstanceRecord; bootServiceError?: string; notes: string[] }> {
    await this.checkNewInstance(input);
    const config = TunnelConfig.create(
      { serverAddr: input.serverAddr, serverPort: input.serverPort, authMethod: input.authMethod },
      input.additional,
    );
    config.nameClient(hostname(), input.name);
    const request = {
      name: input.name,
      serverAddr: input.serverAddr,
      serverPort: input.serverPort,
      auth_method: input.authMethod,
      // The keys it set beside those, never their values; none: left out.
      ...(Object.keys(input.additional).length > 0 ? { additionalProperties: Object.keys(input.additional) } : {}),
    };
    return this.deps.lifecycle.counted(() => this.register(input, owner, config, { by, kind: 'create', request }));
  }

  /**
   * A new instance whose config file holds an existing frpc config file (TOML, INI, YAML or JSON), rewritten in
   * frpc's current TOML format, every key checked as the API checks it. Refused whole, with nothing created, when
   * any part of the file cannot be represented. Its own webServer gives way to tunnelward's admin endpoint.
   */
  async importConfig(
    input: ImportInstance,
    owner: User,
    by: Author,
  ): Promise<{
    record: InstanceRecord;
    format: ImportFormat;
    proxyCount: number;
    visitorCount: number;
    notes: string[];
    bootServiceError?: string;
  }> {
    await this.checkNewInstance(input);
    const { format, tree, notes, text } = await readConfigText(input.content, input.format);
    const included = await readIncludedFiles(input.includedFiles);
    const { config, ...imported } = TunnelConfig.imported(tree, { format, text, notes, included });
    config.nameClient(hostname(), input.name, imported.notes);
    const request = { name: input.name, format, proxies: imported.proxyCount, visitors: imported.visitorCount };
    const own = config.adminEndpoint()?.port;
    const done = await this.deps.lifecycle.counted(() =>
      this.register(input, owner, config, { by, kind: 'import', request }),
    );
    if (own !== undefined) imported.notes.push(ownAdminEndpointNote(own, config.adminEndpoint()?.port));
    this.log.info(
      { instanceID: done.record.id, format, proxies: imported.proxyCount, visitors: imported.visitorCount },
      'instance imported from a config file',
    );
    return { ...done, ...imported, format, notes: [...imported.notes, ...done.notes] };
  }

  /**
   * What an import would do, without doing it (a dry run): the file read and checked as the import reads it, what its
   * proxies take on their server free, and frpc's verdict. Nothing is created, recorded or written.
   */
  async checkImport(input: ImportInstance): Promise<{
    format: ImportFormat;
    proxyCount: number;
    visitorCount: number;
    notes: string[];
    verify: Verdict;
  }> {
    await this.checkNewInstance(input);
    if (input.expires !== undefined) expiryAt(input.expires, Date.now());
    const { format, tree, notes, text } = await readConfigText(input.content, input.format);
    const included = await readIncludedFiles(input.includedFiles);
    const { config, ...imported } = TunnelConfig.imported(tree, { format, text, notes, included });
    config.nameClient(hostname(), input.name, imported.notes);
    const own = config.adminEndpoint()?.port;
    if (own !== undefined) imported.notes.push(ownAdminEndpointNote(own, own));
    const reservation = await this.deps.registry.reserve(config);
    try {
      const verify = await this.deps.verify(config, {});
      if ('refused' in verify) throw badRequest(`frpc verify refuses the new file: ${verify.refused}`);
      return { ...imported, format, verify };
    } finally {
      this.deps.registry.release(reservation);
    }
  }

  /** What a new instance's name and run user must be; a name in use is a 409. */
  private async checkNewInstance(input: { name: string; runUser: string }): Promise<void> {
    checkInstanceName(input.name);
    await checkRunUser(input.runUser);
    if (this.deps.store.nameTaken(input.name)) throw nameInUse(input.name);
  }

  /**
   * Makes an instance of a checked config: what its proxies hold on their server must be free on that server, and
   * frpc itself must accept the file; then its admin endpoint, its record (marked as a create in progress), its file,
   * its first revision, its boot service.
   */
  private async register(
    input: { name: string; bootAtStart: boolean; runUser: string; labels?: Labels; expires?: string },
    owner: User,
    config: TunnelConfig,
    revision: { by: Author; kind: string; request: Record<string, unknown> },
  ): Promise<{ record: InstanceRecord; bootServiceError?: string; notes: string[] }> {
    const { store, db, registry, revisions, boot } = this.deps;
    const notes: string[] = [];
    const expiresAt = input.expires === undefined ? null : expiryAt(input.expires, Date.now());
    const reservation = await registry.reserve(config, { newPort: true });
    try {
      const verify = await this.deps.verify(config, {});
      if ('refused' in verify) throw badRequest(`frpc verify refuses the new file: ${verify.refused}`);
      if ('skipped' in verify) notes.push(`not verified by frpc: ${verify.skipped}`);
      const instancePath = this.deps.settings.value('InstancePath');
      // Checked again with no wait before the insert: another create may have taken the name meanwhile.
      if (store.nameTaken(input.name)) throw nameInUse(input.name);
      const record = store.insert({
        name: input.name,
        bootAtStart: input.bootAtStart,
        runUser: input.runUser,
        createdBy: owner.username,
        ownerId: owner.id,
        now: Date.now(),
        configPathOf: (id) => join(instancePath, `${serviceNameOf(id)}.toml`),
        labels: changedLabels({}, input.labels ?? {}),
        expiresAt,
      });
      // The record, marked as a create in progress, is on disk before the file: its id is never handed out twice,
      // and a crash before the end is undone at the next start.
      await db.persist();
      crashPoint('create:recorded', record);
      const version = config.version();
      try {
        await mkdir(instancePath, { recursive: true, mode: 0o711 });
        await writeTunnelConfig(record.configPath, config, record.runUser);
        await revisions.storeText(record.id, version, config.toString());
      } catch (err) {
        await this.dismantle(record, true);
        throw err instanceof AppError
          ? err
          : new AppError(500, `cannot write ${record.configPath}: ${(err as Error).message}`);
      }
      crashPoint('create:written', record);
      const bootServiceError = await boot.created(record);
      if (bootServiceError && record.bootAtStart) store.update(record.id, { bootAtStart: false });
      revisions.record({
        instanceID: record.id,
        number: 1,
        at: record.createdAt,
        by: revision.by,
        kind: revision.kind,
        request: revision.request,
        plan: 'file only',
        reason: 'a new instance: its tunnel reads the file at its first start',
        outcome: 'applies at the next start',
        version,
      });
      store.setRevision(record.id, 1);
      store.setPending(record.id, null);
      registry.commit(reservation, record.id, config.adminEndpoint());
      const created = store.get(record.id)!;
      await db.persist();
      this.version++;
      this.log.info({ instanceID: created.id, name: created.name }, 'instance created');
      this.changes$.next({ event: 'instance.created', instanceID: created.id, name: created.name });
      if (bootServiceError) boot.report(created, bootServiceError);
      return bootServiceError ? { record: created, bootServiceError, notes } : { record: created, notes };
    } finally {
      registry.release(reservation);
    }
  }

  /**
   * Stops the tunnel if it runs, then removes its boot service, config file, revisions, logs and record. Once the
   * tunnel is stopped the delete is marked as begun on disk, so a crash in the middle is finished at the next start.
   */
  remove(id: number, as: Accessor, options: { purgeLog?: boolean } = {}): Promise<InstanceRecord> {
    return this.deps.lifecycle.inSlot(id, async (slot, record) => {
      allow(as, 'delete', record);
      const failure = await this.deps.lifecycle.retire(slot);
      if (failure) throw new AppError(500, `cannot stop instance ${id}: ${failure}`);
      crashPoint('delete:stopped', record);
      this.deps.store.setPending(id, 'delete');
      await this.deps.db.persist();
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
   * Removes everything of an instance (its process is already gone): boot service, config file, revisions, record,
   * and its log with `purgeLog` (else the log stays where it was, for whoever wants to know what the tunnel did).
   */
  async dismantle(record: InstanceRecord, purgeLog: boolean): Promise<void> {
    const { boot, store, env, registry, revisions, logs, db } = this.deps;
    await boot.removed(record);
    crashPoint('delete:unbooted', record);
    await rm(record.configPath, { force: true });
    await logs.remove(record.id, { keepLog: !purgeLog });
    await revisions.forget(record.id);
    crashPoint('delete:files', record);
    store.delete(record.id);
    // Again once the record is gone: a list built while the files were being removed still showed it.
    this.version++;
    env.forget(record.id);
    registry.forget(record.id);
    await db.persist();
  }

  /** An edit of an instance's record in its queue, by one who may change it, announced once it is done. */
  private async modify<T>(
    id: number,
    as: Accessor,
    what: string,
    job: (record: InstanceRecord) => Promise<T>,
    revision?: RecordedChange,
    /** A dry run changes nothing and announces nothing. */
    dryRun = false,
  ): Promise<T> {
    const result = await this.deps.lifecycle.inSlot(id, async (slot, record) => {
      allow(as, 'change', record);
      const done = await job(record);
      // A change of the record is a revision too (its file as it stands), so the history says who changed what.
      if (revision && !dryRun) await this.deps.recordChange(slot, this.deps.store.get(id) ?? record, revision);
      return done;
    });
    if (!dryRun) this.changes$.next({ event: 'instance.modified', instanceID: id, name: this.nameOf(id), what });
    return result;
  }

  /**
   * Announces a change of the instance's config file that the change pipeline committed, in the event's words:
   * `proxies` for a change of proxies, `config file` for any other (its kind is in the revision).
   */
  fileChanged(record: InstanceRecord, kind: string): void {
    this.version++;
    const what = kind.startsWith('proxy.') ? 'proxies' : 'config file';
    this.changes$.next({ event: 'instance.modified', instanceID: record.id, name: record.name, what });
  }

  /**
   * Renames, changes the run user, switches start at boot. The boot service follows (see BootSync.changed): a failure
   * there does not fail the request, it comes back as `bootServiceError`.
   */
  modifySystem(
    id: number,
    change: SystemConfigChange,
    as: Accessor,
    by: Author,
  ): Promise<{ record: InstanceRecord; bootServiceError?: string }> {
    const revision: RecordedChange = {
      kind: 'system',
      request: { ...change },
      by,
      reason: 'the record and the boot service changed; the tunnel takes a new run user at its next start',
    };
    const { store, db, boot } = this.deps;
    return this.modify(
      id,
      as,
      'system config',
      async (record) => {
        // Read at the request: a duration counts from now, and a time past is refused before anything changes.
        const expiresAt = typeof change.expires === 'string' ? expiryAt(change.expires, Date.now()) : null;
        // Before the name's check: nothing may wait between that check and the update below.
        if (change.runUser !== undefined) await checkRunUser(change.runUser);
        // An older instance may keep a name that is no longer allowed for a new one (only digits), as long as it keeps it.
        if (change.name !== undefined && change.name !== record.name) {
          checkInstanceName(change.name);
          if (store.nameTaken(change.name, id)) throw nameInUse(change.name);
        }
        // Taken in the same turn as the check above: a create or rename that comes while the boot service is
        // being changed finds the name in use, not this change (which would fail half done).
        const renamed = store.update(id, { name: change.name, runUser: change.runUser }) ?? record;
        // The config file follows a new run user: a failure there changes nothing.
        if (change.runUser !== undefined && change.runUser !== record.runUser) {
          try {
            await writeTunnelConfig(record.configPath, await readTunnelConfigText(record.configPath), change.runUser);
          } catch (err) {
            store.update(id, { name: record.name, runUser: record.runUser });
            throw err;
          }
        }
        const { bootAtStart, bootServiceError } = await boot.changed(
          record,
          renamed,
          change.bootAtStart ?? record.bootAtStart,
        );
        store.update(id, {
          bootAtStart,
          probes: change.probes,
          ...(change.policy ? { policy: withOverrides(record.policy, change.policy) } : {}),
        });
        const updated = (change.expires !== undefined ? store.setExpiry(id, expiresAt) : store.get(id)) ?? renamed;
        await db.persist();
        this.version++;
        return bootServiceError ? { record: updated, bootServiceError } : { record: updated };
      },
      revision,
    );
  }

  /**
   * Sets or removes (null) environment variables of the instance's tunnel; they apply at its next start. Where an
   * init system runs the tunnel, its environment file follows at once (a value it cannot hold is refused first).
   */
  modifyEnvironment(
    id: number,
    changes: Record<string, unknown>,
    as: Accessor,
    by: Author,
    dryRun = false,
  ): Promise<InstanceRecord> {
    // Names only: the values are secrets.
    const request = Object.fromEntries(
      Object.entries(changes).map(([name, v]) => [name, v === null ? 'unset' : 'set']),
    );
    const revision: RecordedChange = {
      kind: 'environment',
      request,
      by,
      reason: 'the environment applies at the next start',
    };
    const { env, db, boot } = this.deps;
    return this.modify(
      id,
      as,
      'environment',
      async (record) => {
        const next = { ...env.of(id) };
        for (const [name, value] of Object.entries(changes)) {
          if (typeof value === 'string') next[name] = value;
          else delete next[name];
        }
        boot.checkEnvironment(next);
        env.check(changes);
        if (dryRun) return record;
        env.change(id, changes);
        await db.persist();
        await boot.environmentChanged(record);
        // Names only: the values are secrets.
        this.log.info({ instanceID: id, names: Object.keys(changes) }, 'environment variables changed');
        return record;
      },
      revision,
      dryRun,
    );
  }

  /**
   * Sets (or, with null or `never`, clears) when one of the instance's proxies is disabled. The proxy must be in its
   * file; the expiry is kept on the record (see InstanceRecord.proxyExpiries), and follows a rename or a delete.
   */
  setProxyExpiry(id: number, proxy: string, expires: string | null, as: Accessor, by: Author): Promise<InstanceRecord> {
    const revision: RecordedChange = {
      kind: 'proxy.expiry',
      request: { proxy, expires },
      by,
      reason: 'the expiry is kept on the record: the file is as it was',
    };
    return this.modify(
      id,
      as,
      'expiry',
      async (record) => {
        const expiresAt = expires === null ? null : expiryAt(expires, Date.now());
        const config = TunnelConfig.parse(await readTunnelConfigText(record.configPath), record.configPath);
        if (!config.proxies().some((p) => p.name === proxy))
          throw notFound(`instance ${record.name} has no proxy named ${proxy}`);
        const updated = this.deps.store.setProxyExpiry(id, proxy, expiresAt) ?? record;
        await this.deps.db.persist();
        this.version++;
        return updated;
      },
      revision,
    );
  }

  /** Sets (a string) or removes (null) labels of the instance; checked by the caller (`checkLabels`). */
  modifyLabels(id: number, changes: Readonly<Record<string, string | null>>, as: Accessor): Promise<InstanceRecord> {
    return this.modify(id, as, 'labels', async (record) => {
      const updated = this.deps.store.setLabels(id, changedLabels(record.labels, changes)) ?? record;
      await this.deps.db.persist();
      this.version++;
      return updated;
    });
  }

  /** The names of the instance's environment variables, each value masked. */
  environment(id: number): Record<string, string> {
    return this.deps.env.masked(this.recordOf(id).id);
  }

  /** The values of the instance's environment (write-only to the API: only the convergence compares them). */
  environmentValues(id: number): Record<string, string> {
    return this.deps.env.of(this.recordOf(id).id);
  }

  readConfig(id: number): Promise<TunnelConfig> {
    const record = this.recordOf(id);
    return readTunnelConfigText(record.configPath).then((text) => TunnelConfig.parse(text, record.configPath));
  }

  close(): void {
    this.deleted$.complete();
    this.changes$.complete();
  }
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

/** A run user must exist, and its config file must be one it can read and no other user can. */
export async function checkRunUser(runUser: string): Promise<void> {
  if (!lookupOsUser(runUser)) throw badRequest(`runUser ${JSON.stringify(runUser)} is not a user on this system`);
  const access = await configFileAccess(runUser);
  if (access.form === 'own' && access.refused) throw badRequest(access.refused);
}

/** What became of an imported file's own admin endpoint (webServer), one safe to keep: kept, or moved off a held port. */
function ownAdminEndpointNote(own: number, now: number | undefined): string {
  return now === own
    ? "its webServer (on loopback, with a password) was kept: tunnelward reaches the tunnel's admin API there"
    : `its webServer's port ${own} is held by another instance or program: it was replaced by tunnelward's own admin endpoint`;
}

/** The included files' trees, each read in the formats frpc reads an included file in (not INI). */
async function readIncludedFiles(
  files: ImportInstance['includedFiles'],
): Promise<Array<{ path: string; tree: Table }> | undefined> {
  if (files === undefined) return undefined;
  const read: Array<{ path: string; tree: Table }> = [];
  for (const file of files) {
    const label = `includes: ${safeLabel(file.path)}`;
    const { format, tree } = await readConfigText(file.content).catch((err: unknown) => {
      throw badRequest(`${label}: ${(err as Error).message}`);
    });
    if (format === 'ini') throw badRequest(`${label} is INI: frpc reads included files in TOML, YAML or JSON only`);
    read.push({ path: file.path, tree });
  }
  return read;
}

/** An instance's policy with a change's figures: a number sets one, null removes it (back to the setting). */
function withOverrides(
  own: Readonly<InstancePolicy>,
  change: NonNullable<SystemConfigChange['policy']>,
): InstancePolicy {
  const next: InstancePolicy = { ...own };
  for (const [key, value] of Object.entries(change) as Array<[keyof InstancePolicy, number | null | undefined]>) {
    if (value === null) delete next[key];
    else if (value !== undefined) next[key] = value;
  }
  return next;
}
