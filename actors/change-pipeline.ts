import { readTunnelConfigText, TunnelConfig, writeTunnelConfig } from '../src/config/tunnel-config.js';
import { parseStatus } from '../src/config/proxy-status.js';
import { AppError, badRequest, conflict } from '../src/errors.js';
import { adminGet, reloadTunnel, type ReloadBounds } from '../src/frpc/admin-api.js';
import type { Verdict } from '../src/frpc/verify.js';
import type { InstanceEnvStore } from '../src/instances/instance-env.js';
import type { InstanceRecord, InstanceStore } from '../src/instances/instance-store.js';
import type { FileChange } from '../src/instances/config-changes.js';
import { followProxies } from '../src/instances/expiry.js';
import type { Author, PlanAction, RevisionStore } from '../src/instances/revision-store.js';
import { allow, type Accessor } from '../src/accounts/access.js';
import type { Logger } from '../src/log/logger.js';
import type { Database } from '../src/storage/database.js';
import { crashPoint } from '../src/util/crash-points.js';
import { unifiedDiff } from '../src/util/unified-diff.js';
import type { InstanceLifecycle } from './instance-lifecycle.js';
import type { Slot } from './instance-queue.js';
import type { InstanceRegistry } from './instance-registry.js';
import type { RecordedChange } from './instance-catalogue.js';

export interface ChangeOptions {
  by: Author;
  /** Who asks, as access judges them (see may): the owner of the instance or a superuser may change it. */
  as: Accessor;
  /** Check and plan only: the answer says what would happen; nothing is written or applied. */
  dryRun?: boolean;
  /** The revision the change was made against: an instance that has moved on since is a 409, and nothing changes. */
  baseRevision?: number;
  /** The same by the file's version (what an export gives). */
  baseVersion?: string;
}

export interface Plan {
  action: PlanAction;
  reason: string;
}

/** How a change reached the tunnel: the words the API has always answered with. */
export type Applied = 'unchanged' | 'not applied' | 'on next start' | 'reload' | 'restart';

export interface ChangeAnswer<T> {
  record: InstanceRecord;
  result: T;
  plan: Plan;
  applied: Applied;
  /** The unified diff of the file, secrets masked (the history shows them to a superuser); '' when nothing changed. */
  diff: string;
  /** The file's version as it is now (as it would be, for a dry run). */
  version: string;
  /** The revision the instance stands at now (the new one, when one was made). */
  revision: number;
  /** What the real `frpc verify` said of the new file. */
  verify: Verdict;
  notes: string[];
  /** After a reload: the status frpc reports for each proxy the change added or changed. */
  observed?: Record<string, string>;
}

/** What the pipeline needs of the rest: the lifecycle (state, commands in the slot), checks, and frpc itself. */
export interface PipelineDeps {
  db: Database;
  store: InstanceStore;
  lifecycle: InstanceLifecycle;
  registry: InstanceRegistry;
  revisions: RevisionStore;
  env: InstanceEnvStore;
  /** `frpc verify` of a new file, with the tunnel's environment. */
  verify: (config: TunnelConfig, env: Readonly<Record<string, string>>) => Promise<Verdict>;
  log: Logger;
  /** Announces a committed change. */
  modified: (record: InstanceRecord, what: string) => void;
  reloadBounds?: ReloadBounds;
  /** How long a reload's proxies are watched for their status. */
  observeMs?: number;
}

const APPLIED: Record<PlanAction, Applied> = {
  none: 'unchanged',
  'file only': 'on next start',
  reload: 'reload',
  restart: 'restart',
};

/** What an outcome of each plan says in a revision. */
const OUTCOME: Record<PlanAction, string> = {
  none: 'nothing to apply',
  'file only': 'applies at the next start',
  reload: 'applied by a reload',
  restart: 'applied by a restart',
};

const OBSERVE_MS = 3000;
const OBSERVE_EVERY_MS = 100;
/** Statuses that say a proxy has not settled yet. */
const UNSETTLED = new Set(['new', 'wait start']);

/** A change that could not be applied; the file and the tunnel were put back (`restored` says how). */
class ApplyFailed extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The one owner of "apply a change to a tunnel". Every change of an instance's config file runs here, start to finish,
 * in the instance's queue slot: parse, tunnelward's checks, the real `frpc verify` of the new file, a plan
 * (`none | file only | reload | restart`, with its reason), the intent on record, the write, the apply (a reload; a
 * restart only if the tunnel runs at that moment, in the same slot, so a stop queued behind it is never undone), a
 * look at the proxies it touched, then a commit (a new revision) or the file and the tunnel put back as they were, and
 * one answer that says which. A crash anywhere is undone at the next start (see `settle`).
 */
export class ChangePipeline {
  private readonly log: Logger;

  constructor(private readonly deps: PipelineDeps) {
    this.log = deps.log.child({ component: 'changes' });
  }

  /** Runs the change in the instance's queue, after every command and change queued before it. */
  run<T>(id: number, change: FileChange<T>, options: ChangeOptions): Promise<ChangeAnswer<T>> {
    return this.deps.lifecycle.inSlot(id, (slot, record) => this.runIn(slot, record, change, options));
  }

  /** The pipeline itself, for a caller that already holds the instance's slot. */
  async runIn<T>(
    slot: Slot,
    record: InstanceRecord,
    change: FileChange<T>,
    options: ChangeOptions,
  ): Promise<ChangeAnswer<T>> {
    slot.check();
    allow(options.as, 'change', record);
    const { store, revisions, registry, env, lifecycle } = this.deps;
    const id = record.id;
    const before = await readTunnelConfigText(record.configPath);
    const current = TunnelConfig.parse(before, record.configPath);
    const version = current.version();
    if (!options.dryRun) await this.adoptFile(record, current, options.by);
    const revision = store.get(id)?.revision ?? record.revision;
    if (options.baseRevision !== undefined && options.baseRevision !== revision) {
      throw conflict(
        `instance ${record.name} is at revision ${revision}, not ${options.baseRevision}: it was changed since; read it again and make the change on that`,
      );
    }
    if (options.baseVersion !== undefined && options.baseVersion !== version) {
      throw conflict(
        `the config file of instance ${record.name} was changed since version ${options.baseVersion} was read (it is at version ${version} now): read it again and make the change on that`,
      );
    }
    // The edit works on a copy of its own: `current` stays the file as it is, for the diff and for putting it back.
    const { config, result, notes = [] } = change.edit(TunnelConfig.parse(before, record.configPath));
    const after = config.version();
    const diff = unifiedDiff(
      current.exportText(true),
      config.readBack().exportTextBeside(current),
      `${record.name} (revision ${revision})`,
      `${record.name} (${options.dryRun ? 'dry run' : `revision ${revision + 1}`})`,
    );
    const answer = (plan: Plan, applied: Applied, extra: Partial<ChangeAnswer<T>> = {}): ChangeAnswer<T> => ({
      record: store.get(id) ?? record,
      result,
      plan,
      applied,
      diff,
      version: after,
      revision,
      verify: { verified: false, skipped: 'nothing changed' },
      notes,
      ...extra,
    });
    if (after === version && config.toString() === current.toString())
      return answer({ action: 'none', reason: 'the file is as it was' }, 'unchanged', { diff: '' });

    // tunnelward's checks of a file the tunnel must start with, then frpc's own.
    const plan = this.planFor(id, current, config);
    const instanceEnv = env.of(id);
    const problem = lifecycle.startProblem(record, config, instanceEnv);
    if (problem) {
      if (plan.action === 'reload' || plan.action === 'restart') throw badRequest(problem);
      notes.push(`the tunnel cannot start with this file yet: ${problem}`);
    }
    const verify = await this.deps.verify(config, instanceEnv);
    if ('refused' in verify) throw badRequest(`frpc verify refuses the new file: ${verify.refused}`);
    if ('skipped' in verify) notes.push(`not verified by frpc: ${verify.skipped}`);
    const reservation = await registry.reserve(config, { self: id });
    if (options.dryRun) {
      registry.release(reservation);
      return answer(plan, 'not applied', { verify });
    }

    const number = revisions.nextNumber(id);
    let written = false;
    try {
      await revisions.storeText(id, after, config.toString());
      revisions.begin({
        instanceID: id,
        number,
        at: Date.now(),
        by: options.by,
        kind: change.kind,
        request: change.request,
        plan: plan.action,
        reason: plan.reason,
        version: after,
        previous: revision,
      });
      await this.deps.db.persist();
      crashPoint('change:intent', record);
      await writeTunnelConfig(record.configPath, config, record.runUser);
      written = true;
      registry.commit(reservation, id, config.adminEndpoint());
      // A reload or a restart gives the tunnel the new secrets: they are known before it prints them.
      env.knowConfig(id, config);
      crashPoint('change:written', record);
    } catch (err) {
      registry.release(reservation);
      if (written) await this.putBack(slot, record, before, current, 'file only');
      revisions.drop(id, number);
      await this.deps.db.persist();
      throw err;
    }

    // The plan as the apply goes (a reload frpc cannot be asked becomes a restart): what putting back undoes.
    const progress = { plan };
    let observed: Record<string, string> | undefined;
    try {
      observed = await this.apply(slot, record, number, progress, current, config);
    } catch (err) {
      // Whatever stopped the apply (frpc's refusal, a restart that did not hold, a start check that refused it, a
      // failure of ours), the file and the tunnel are put back: no new file stays behind a failure.
      const failure =
        err instanceof ApplyFailed
          ? err
          : new ApplyFailed(err instanceof AppError ? err.status : 500, (err as Error).message);
      const how = await this.putBack(slot, record, before, current, progress.plan.action, failure);
      revisions.drop(id, number);
      await this.deps.db.persist();
      this.log.warn({ instanceID: id, reason: failure.message }, 'a change could not be applied; it was undone');
      throw new AppError(failure.status, `${failure.message}; ${how}`);
    }
    const applied = progress.plan;
    revisions.commit(id, number, { plan: applied.action, reason: applied.reason, outcome: OUTCOME[applied.action] });
    store.setRevision(id, number);
    // Proxies' expiries are kept by name: in the same persist as the commit, they follow a rename and go with a delete.
    const expiries = store.get(id)?.proxyExpiries ?? {};
    const followed = followProxies(
      expiries,
      config.proxies().map((p) => p.name),
      change.renamed,
    );
    if (JSON.stringify(followed) !== JSON.stringify(expiries)) store.setProxyExpiries(id, followed);
    await this.deps.db.persist();
    crashPoint('change:committed', record);
    await revisions.prune(id).catch((err) => this.log.warn({ instanceID: id, err }, 'cannot drop old revisions'));
    this.log.info(
      { instanceID: id, revision: number, kind: change.kind, plan: applied.action, from: version, to: after },
      'config file changed',
    );
    this.deps.modified(store.get(id) ?? record, change.kind);
    return answer(applied, APPLIED[applied.action], {
      revision: number,
      verify,
      ...(observed ? { observed } : {}),
    });
  }

  /**
   * Records a change of the instance's record (its environment, name, run user, start at boot) as a revision of its
   * file as it stands: the history says who changed what, and the file's text is the one to roll back to.
   */
  async recordChange(slot: Slot, record: InstanceRecord, change: RecordedChange): Promise<void> {
    slot.check();
    const { revisions, store } = this.deps;
    const current = TunnelConfig.parse(await readTunnelConfigText(record.configPath), record.configPath);
    await this.adoptFile(record, current, change.by);
    const number = revisions.nextNumber(record.id);
    revisions.record({
      instanceID: record.id,
      number,
      at: Date.now(),
      by: change.by,
      kind: change.kind,
      request: change.request,
      plan: 'none',
      reason: change.reason,
      outcome: 'recorded',
      version: current.version(),
    });
    store.setRevision(record.id, number);
    await this.deps.db.persist();
    await revisions
      .prune(record.id)
      .catch((err) => this.log.warn({ instanceID: record.id, err }, 'cannot drop old revisions'));
  }

  /**
   * After a crash cut a change off while it was being applied: the tunnel taken over may run the new file, and is
   * given the one put back (by the same way: a reload, or a restart when frpc cannot be asked).
   */
  reapply(id: number, plan: PlanAction): Promise<void> {
    return this.deps.lifecycle.inSlot(id, async (slot) => {
      if (plan === 'reload') {
        const endpoint = await this.deps.registry.adminEndpoint(id);
        const reloaded = endpoint && (await reloadTunnel(endpoint, this.deps.reloadBounds));
        if (reloaded && reloaded.ok) return;
      }
      if (plan === 'reload' || plan === 'restart') await this.deps.lifecycle.restartIfRunning(slot);
      this.log.info({ instanceID: id, plan }, 'a tunnel was given its file back after an interrupted change');
    });
  }

  /**
   * How the change reaches the tunnel, decided in the slot from the state at this moment: not at all while it does
   * not run (the next start reads the file), a restart for top-level settings (frpc reloads only proxies and
   * visitors), a reload otherwise.
   */
  private planFor(id: number, current: TunnelConfig, next: TunnelConfig): Plan {
    const state = this.deps.lifecycle.stateOf(id);
    if (state !== 'running' && state !== 'starting')
      return { action: 'file only', reason: `the tunnel is ${state}: it reads the file at its next start` };
    if (!current.sameSettingsAs(next))
      return {
        action: 'restart',
        reason: `top-level settings changed (${current.changedSettings(next).join(', ')}): frpc reloads only proxies and visitors`,
      };
    if (!next.adminEndpoint())
      return {
        action: 'restart',
        reason: 'the file has no admin endpoint through which frpc could be asked to reload',
      };
    return { action: 'reload', reason: 'only proxies or visitors changed: frpc reloads them, the others run on' };
  }

  /**
   * Gives the running tunnel the new file, and looks at what it did with it; `progress.plan` says how far it went
   * (the plan can change on the way). Returns what a reload's look saw; throws ApplyFailed.
   */
  private async apply(
    slot: Slot,
    record: InstanceRecord,
    number: number,
    progress: { plan: Plan },
    current: TunnelConfig,
    config: TunnelConfig,
  ): Promise<Record<string, string> | undefined> {
    const { plan } = progress;
    if (plan.action !== 'reload' && plan.action !== 'restart') return undefined;
    this.deps.revisions.applying(record.id, number);
    await this.deps.db.persist();
    crashPoint('change:applying', record);
    if (plan.action === 'reload') {
      const endpoint = config.adminEndpoint()!;
      const reloaded = await reloadTunnel(endpoint, this.deps.reloadBounds);
      if (!reloaded.ok && reloaded.refused) throw new ApplyFailed(400, `frpc refused the change: ${reloaded.message}`);
      if (reloaded.ok) {
        const observed = await this.observe(endpoint, changedProxies(current, config));
        const failed = Object.entries(observed).find(([, s]) => s.startsWith('start error'));
        if (failed) throw new ApplyFailed(409, `frpc could not start proxy ${failed[0]}: ${failed[1]}`);
        return observed;
      }
      // frpc did not refuse it, it could not be asked: nothing says the change is wrong, and a restart applies it.
      this.log.warn({ instanceID: record.id, reason: reloaded.message }, 'cannot reload the tunnel; restarting it');
      progress.plan = { action: 'restart', reason: `frpc could not be asked to reload (${reloaded.message})` };
    }
    const done = await this.deps.lifecycle.restartIfRunning(slot);
    if (done && !done.ok) throw new ApplyFailed(502, `the tunnel did not come up with the new file: ${done.message}`);
    if (!done)
      progress.plan = {
        action: 'file only',
        reason: 'the tunnel stopped meanwhile: it reads the file at its next start',
      };
    return undefined;
  }

  /**
   * Watches the proxies a reload added or changed until each has settled (running, start error, check failed),
   * for a bounded time; a tunnel not logged in to its server reports none, and is not waited for.
   */
  private async observe(
    endpoint: NonNullable<ReturnType<TunnelConfig['adminEndpoint']>>,
    names: string[],
  ): Promise<Record<string, string>> {
    const seen: Record<string, string> = {};
    if (names.length === 0) return seen;
    const until = Date.now() + (this.deps.observeMs ?? OBSERVE_MS);
    for (;;) {
      const live = await adminGet(endpoint, '/api/status', OBSERVE_MS)
        .then(({ status, body }) => (status === 200 ? parseStatus(body) : undefined))
        .catch(() => undefined);
      if (!live || live.size === 0) return seen;
      let settled = true;
      for (const name of names) {
        const proxy = live.get(name);
        const status = proxy ? (proxy.err ? `${proxy.status}: ${proxy.err}` : proxy.status) : 'new';
        seen[name] = status;
        if (!proxy || UNSETTLED.has(proxy.status)) settled = false;
      }
      if (settled || Date.now() + OBSERVE_EVERY_MS > until) return seen;
      await new Promise((r) => setTimeout(r, OBSERVE_EVERY_MS));
    }
  }

  /**
   * Puts the file back as `before` and the tunnel with it: a reload again for a reload frpc took, a restart for a
   * restart that did not hold (when the tunnel ran). Says how, for the answer.
   */
  private async putBack(
    slot: Slot,
    record: InstanceRecord,
    before: string,
    current: TunnelConfig,
    action: PlanAction,
    failure?: ApplyFailed,
  ): Promise<string> {
    const revision = this.deps.store.get(record.id)?.revision ?? record.revision;
    await writeTunnelConfig(record.configPath, before, record.runUser);
    this.deps.registry.restored(record.id, current);
    const file = `the file is back at revision ${revision}`;
    if (action === 'reload' && failure?.status !== 400) {
      const endpoint = current.adminEndpoint();
      const again = endpoint ? await reloadTunnel(endpoint, this.deps.reloadBounds) : undefined;
      return again?.ok ? `${file}, and the tunnel reloaded it` : `${file}; the tunnel could not reload it: restart it`;
    }
    if (action === 'restart') {
      const state = this.deps.lifecycle.stateOf(record.id);
      if (state === 'running') return `${file}, and the tunnel runs on it`;
      const done = await this.deps.lifecycle.restartIn(slot);
      return done.ok
        ? `${file}, and the tunnel was restarted on it`
        : `${file}; the tunnel did not come back up: ${done.message}`;
    }
    return action === 'reload' ? `${file} and the tunnel runs on as it was` : file;
  }

  /**
   * A file changed outside tunnelward (by hand) since its last revision, or one from before revisions were kept:
   * recorded as it is found, so that history and rollback tell the truth.
   */
  private async adoptFile(record: InstanceRecord, current: TunnelConfig, by: Author): Promise<void> {
    const { revisions, store } = this.deps;
    const at = store.get(record.id)?.revision ?? record.revision;
    const version = current.version();
    if (at > 0 && revisions.get(record.id, at)?.version === version) return;
    const number = revisions.nextNumber(record.id);
    await revisions.storeText(record.id, version, current.toString());
    revisions.record({
      instanceID: record.id,
      number,
      at: Date.now(),
      by: { username: 'tunnelward' },
      kind: 'found',
      request: { note: at > 0 ? 'the file was changed outside tunnelward' : 'the file as found' },
      plan: 'none',
      reason: at > 0 ? `found on disk before a change by ${by.username}` : 'the first revision kept of this file',
      outcome: 'recorded',
      version,
    });
    store.setRevision(record.id, number);
    await this.deps.db.persist();
  }
}

/** The proxies `next` adds or changes (enabled ones: a disabled proxy has no status to wait for). */
function changedProxies(current: TunnelConfig, next: TunnelConfig): string[] {
  const before = new Map(current.proxies().map((p) => [p.name, JSON.stringify(p)]));
  return next
    .proxies()
    .filter((p) => p.enabled !== false && before.get(p.name) !== JSON.stringify(p))
    .map((p) => p.name);
}
