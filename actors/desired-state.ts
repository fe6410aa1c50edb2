import type { User } from '../src/accounts/account-service.js';
import {
  attributeChanges,
  desiredAttributes,
  frpcText,
  referencesForMasked,
  type Attributes,
  type DesiredInstance,
  DEFAULT_RUN_USER,
} from '../src/config/desired-state.js';
import { defaultClientID } from '../src/config/tunnel-config.js';
import { maskSecrets } from '../src/config/secret-mask.js';
import { badRequest } from '../src/errors.js';
import type { InstanceRecord } from '../src/instances/instance-store.js';
import type { Author } from '../src/instances/revision-store.js';
import type { Logger } from '../src/log/logger.js';
import { unifiedDiff } from '../src/util/unified-diff.js';
import { WorkLimiter } from '../src/util/work-limiter.js';
import type { ChangeAnswer, ChangeOptions, Plan } from './change-pipeline.js';
import type { InstanceSupervisor } from './instance-supervisor.js';

export type Outcome = 'created' | 'changed' | 'unchanged' | 'deleted' | 'failed';

/** How one instance went. */
export interface InstanceOutcome {
  name: string;
  instanceID: number | null;
  outcome: Outcome;
  message: string;
  /** What changed of tunnelward's own attributes, one line each (names and figures, never an environment value). */
  changes: string[];
  /** The unified diff of its frpc file, secrets masked; '' when the file is as it was. */
  diff: string;
  /** How the file's change reached the tunnel (the change pipeline's plan); null when the file did not change. */
  plan: Plan | null;
  revision: number | null;
  notes: string[];
}

export interface ApplyRequest {
  instances: DesiredInstance[];
  /** Values of the environment variables the instances name (write-only; never answered or logged). */
  environment: Readonly<Record<string, string>>;
  prune: boolean;
  dryRun: boolean;
  as: User;
  by: Author;
}

export interface ApplyAnswer {
  dryRun: boolean;
  counts: Record<Outcome, number>;
  instances: InstanceOutcome[];
}

/** What the convergence asks of the instances: the supervisor's facade. */
export type ApplyDeps = Pick<
  InstanceSupervisor,
  | 'importConfig'
  | 'checkImport'
  | 'checkRunUser'
  | 'remove'
  | 'modifySystem'
  | 'modifyEnvironment'
  | 'modifyLabels'
  | 'command'
  | 'readConfig'
  | 'converge'
  | 'environmentValues'
  | 'allRecords'
  | 'record'
>;

/** How many instances converge at once: each may run `frpc verify`, and the host has other work. */
const CONCURRENCY = 4;

/**
 * Converges the host's instances to a desired state: each named instance is created when missing, changed where it
 * differs (its file through the change pipeline, its record through the catalogue), left alone when it is as asked;
 * with `prune`, the others are deleted. Each instance is all-or-nothing and answered on its own: one refused leaves
 * that instance as it was and the others still converge.
 */
export class DesiredStateApplier {
  private readonly log: Logger;

  constructor(
    private readonly deps: ApplyDeps,
    private readonly host: string,
    log: Logger,
  ) {
    this.log = log.child({ component: 'apply' });
  }

  async apply(request: ApplyRequest): Promise<ApplyAnswer> {
    const byName = new Map(this.deps.allRecords().map((r) => [r.name, r]));
    const limiter = new WorkLimiter(CONCURRENCY, Number.MAX_SAFE_INTEGER);
    const wanted = new Set(request.instances.map((i) => i.name));
    const jobs = request.instances.map((instance) =>
      limiter.run(() => {
        const record = byName.get(instance.name);
        return this.settle(instance.name, record?.id ?? null, () =>
          record ? this.change(record, instance, request) : this.create(instance, request),
        );
      }),
    );
    if (request.prune) {
      for (const record of byName.values()) {
        if (wanted.has(record.name)) continue;
        jobs.push(limiter.run(() => this.settle(record.name, record.id, () => this.prune(record, request))));
      }
    }
    const instances = await Promise.all(jobs);
    const counts: Record<Outcome, number> = { created: 0, changed: 0, unchanged: 0, deleted: 0, failed: 0 };
    for (const done of instances) counts[done.outcome]++;
    this.log.info({ dryRun: request.dryRun, ...counts }, 'desired state applied');
    return { dryRun: request.dryRun, counts, instances };
  }

  /** One instance's convergence, its failure answered as its own. */
  private async settle(
    name: string,
    instanceID: number | null,
    job: () => Promise<InstanceOutcome>,
  ): Promise<InstanceOutcome> {
    try {
      return await job();
    } catch (err) {
      const message = (err as Error).message;
      return { ...blank(name, instanceID), outcome: 'failed', message };
    }
  }

  private async create(instance: DesiredInstance, request: ApplyRequest): Promise<InstanceOutcome> {
    const attributes = desiredAttributes(instance);
    const values = valuesFor(instance.name, attributes.env, [], request.environment);
    const input = {
      name: instance.name,
      content: frpcText(instance.frpc),
      format: 'toml',
      bootAtStart: attributes.bootAtStart,
      runUser: attributes.runUser,
      labels: attributes.labels,
      ...(attributes.expiresAt !== null ? { expires: instance.expires! } : {}),
    };
    const changes = attributeChanges(NEW_INSTANCE, attributes, []);
    if (instance.state === 'running') changes.push('state: stopped -> running');
    if (request.dryRun) {
      const checked = await this.deps.checkImport(input);
      return {
        ...blank(instance.name, null),
        outcome: 'created',
        message: `would be created: ${checked.proxyCount} proxies, ${checked.visitorCount} visitors`,
        changes,
        notes: checked.notes,
      };
    }
    const done = await this.deps.importConfig(input, request.as, request.by);
    const id = done.record.id;
    const notes = [...done.notes];
    try {
      if (Object.keys(values).length > 0) await this.deps.modifyEnvironment(id, values, request.as, request.by);
      if (attributes.probes || Object.keys(attributes.policy).length > 0)
        await this.deps.modifySystem(
          id,
          { probes: attributes.probes, policy: attributes.policy },
          request.as,
          request.by,
        );
    } catch (err) {
      // All or nothing: an instance half made is taken away again.
      await this.deps.remove(id, request.as, { purgeLog: true }).catch(() => undefined);
      throw err;
    }
    if (done.bootServiceError) notes.push(`its boot service could not be set up: ${done.bootServiceError}`);
    const config = await this.deps.readConfig(id);
    const diff = unifiedDiff('', config.exportText(true), '/dev/null', `${instance.name} (revision 1)`);
    const outcome: InstanceOutcome = {
      ...blank(instance.name, id),
      outcome: 'created',
      message: `created: ${done.proxyCount} proxies, ${done.visitorCount} visitors`,
      changes,
      diff,
      // Its environment and policy are revisions of their own after the import's.
      revision: this.deps.record(id).revision,
      notes,
    };
    if (instance.state === 'running') await this.run(id, 'start', outcome);
    return outcome;
  }

  private async change(
    record: InstanceRecord,
    instance: DesiredInstance,
    request: ApplyRequest,
  ): Promise<InstanceOutcome> {
    const id = record.id;
    const current = this.attributesOf(record);
    const desired = desiredAttributes(instance);
    const known = this.deps.environmentValues(id);
    const changedEnv = desired.env.filter(
      (n) => current.env.includes(n) && request.environment[n] !== undefined && request.environment[n] !== known[n],
    );
    const envChanges: Record<string, string | null> = {
      ...valuesFor(instance.name, desired.env, current.env, request.environment),
      ...Object.fromEntries(changedEnv.map((n) => [n, request.environment[n]!])),
      ...Object.fromEntries(current.env.filter((n) => !desired.env.includes(n)).map((n) => [n, null])),
    };
    const changes = attributeChanges(current, desired, changedEnv);
    // A tunnel the watchdog gave up on is not running, whatever was last asked of it.
    const now = record.failed ? 'failed' : record.desired;
    const state = instance.state !== undefined && instance.state !== now ? instance.state : undefined;
    if (state) changes.push(`state: ${now} -> ${state}`);
    const options: ChangeOptions = { by: request.by, as: request.as, ...(request.dryRun ? { dryRun: true } : {}) };
    const content = frpcText(instance.frpc);
    const client = { host: this.host, instance: instance.name };
    const envChanged = Object.keys(envChanges).length > 0;

    let file: ChangeAnswer<void>;
    if (request.dryRun) {
      if (desired.runUser !== current.runUser) await this.deps.checkRunUser(desired.runUser);
      if (envChanged) await this.deps.modifyEnvironment(id, envChanges, request.as, request.by, true);
      file = await this.deps.converge(id, content, client, options);
    } else {
      // The record first (a run user that does not exist is refused before anything else changes), then the
      // environment (the new file may read a variable it brings: frpc verify and the start checks read it), then the
      // file; a refusal at any step puts back what came before it, so the instance is as it was.
      const undo: Array<() => Promise<unknown>> = [];
      try {
        const system = systemChange(current, desired, instance);
        if (Object.keys(system).length > 0) {
          await this.deps.modifySystem(id, system, request.as, request.by);
          const was = { expires: current.expiresAt === null ? null : new Date(current.expiresAt).toISOString() };
          undo.push(() => this.deps.modifySystem(id, systemChange(desired, current, was), request.as, request.by));
        }
        const labels = labelChanges(current.labels, desired.labels);
        if (Object.keys(labels).length > 0) {
          await this.deps.modifyLabels(id, labels, request.as);
          undo.push(() => this.deps.modifyLabels(id, labelChanges(desired.labels, current.labels), request.as));
        }
        if (envChanged) {
          await this.deps.modifyEnvironment(id, envChanges, request.as, request.by);
          const back = Object.fromEntries(Object.keys(envChanges).map((n) => [n, known[n] ?? null]));
          undo.push(() => this.deps.modifyEnvironment(id, back, request.as, request.by));
        }
        file = await this.deps.converge(id, content, client, options);
      } catch (err) {
        for (const step of undo.reverse())
          await step().catch((failure: Error) =>
            this.log.warn({ instanceID: id, err: failure.message }, 'cannot put back a change of a refused apply'),
          );
        throw err;
      }
    }
    const fileChanged = file.applied !== 'unchanged';
    const outcome: InstanceOutcome = {
      ...blank(instance.name, id),
      outcome: fileChanged || changes.length > 0 ? 'changed' : 'unchanged',
      message: fileChanged
        ? request.dryRun
          ? `would change; plan: ${file.plan.action} (${file.plan.reason})`
          : `changed; ${file.applied === 'on next start' ? 'it applies at the next start' : `applied by a ${file.applied}`}`
        : changes.length > 0
          ? request.dryRun
            ? 'would change (not its file)'
            : 'changed (not its file)'
          : 'unchanged',
      changes,
      diff: file.diff,
      plan: fileChanged ? file.plan : null,
      revision: file.revision,
      notes: [...file.notes, ...(envChanged && !fileChanged ? ['the environment applies at the next start'] : [])],
    };
    if (state && !request.dryRun) await this.run(id, state === 'running' ? 'start' : 'stop', outcome);
    return outcome;
  }

  private async prune(record: InstanceRecord, request: ApplyRequest): Promise<InstanceOutcome> {
    if (!request.dryRun) await this.deps.remove(record.id, request.as);
    return {
      ...blank(record.name, record.id),
      outcome: 'deleted',
      message: request.dryRun ? 'would be deleted (not in the file)' : 'deleted (not in the file); its log is kept',
    };
  }

  /** A start or a stop the desired state asks for; one that does not go as asked fails the instance's outcome. */
  private async run(id: number, command: 'start' | 'stop', outcome: InstanceOutcome): Promise<void> {
    const done = await this.deps.command(id, command);
    if (done.ok || done.unchanged) {
      outcome.message += `; ${command === 'start' ? 'started' : 'stopped'}`;
      return;
    }
    outcome.outcome = 'failed';
    outcome.message += `; it could not ${command}: ${done.message} (the next apply tries again)`;
  }

  attributesOf(record: InstanceRecord): Attributes {
    return {
      bootAtStart: record.bootAtStart,
      runUser: record.runUser,
      labels: { ...record.labels },
      env: Object.keys(this.deps.environmentValues(record.id)).sort(),
      policy: { ...record.policy },
      probes: record.probes,
      expiresAt: record.expiresAt,
    };
  }

  /**
   * The desired state of an instance as it is now: what `export --all` writes. Its clientID is left out where it is
   * the default (another host gives its own); masked, each secret becomes a `{{ .Envs.NAME }}` reference, named in
   * `env` and in `unexported`, so that the mask is never applied as if it were the secret.
   */
  async exportOf(
    record: InstanceRecord,
    masked: boolean,
  ): Promise<{ instance: DesiredInstance & { state: 'running' | 'stopped' }; unexported: string[] }> {
    const attributes = this.attributesOf(record);
    const config = await this.deps.readConfig(record.id);
    const clear = config.exportTree(false);
    if (clear.clientID === defaultClientID(this.host, record.name)) delete clear.clientID;
    const unexported: string[] = [];
    const frpc = masked
      ? (referencesForMasked(maskSecrets(clear), clear, record.name, unexported) as Record<string, unknown>)
      : clear;
    return {
      instance: {
        name: record.name,
        state: record.desired,
        bootAtStart: attributes.bootAtStart,
        runUser: attributes.runUser,
        labels: attributes.labels,
        env: [...new Set([...attributes.env, ...unexported])].sort(),
        policy: attributes.policy,
        probes: attributes.probes,
        expires: attributes.expiresAt === null ? null : new Date(attributes.expiresAt).toISOString(),
        frpc,
      },
      unexported,
    };
  }
}

/** What a new instance has before the desired state is made of it. */
const NEW_INSTANCE: Attributes = {
  bootAtStart: false,
  runUser: DEFAULT_RUN_USER,
  labels: {},
  env: [],
  policy: {},
  probes: false,
  expiresAt: null,
};

const blank = (name: string, instanceID: number | null): InstanceOutcome => ({
  name,
  instanceID,
  outcome: 'unchanged',
  message: '',
  changes: [],
  diff: '',
  plan: null,
  revision: null,
  notes: [],
});

/** The values of the variables an instance gains; one without a value in the request refuses the instance. */
function valuesFor(
  name: string,
  wanted: readonly string[],
  has: readonly string[],
  given: Readonly<Record<string, string>>,
): Record<string, string> {
  const missing = wanted.filter((n) => !has.includes(n) && given[n] === undefined);
  if (missing.length > 0)
    throw badRequest(
      `${name}: environment variable ${missing.join(', ')} is named but no value was given (the CLI takes it from its own environment)`,
    );
  return Object.fromEntries(wanted.filter((n) => !has.includes(n)).map((n) => [n, given[n]!]));
}

/** What of the record the catalogue's systemConfig change sets. */
function systemChange(current: Attributes, desired: Attributes, to: { expires?: string | null }) {
  const change: Parameters<InstanceSupervisor['modifySystem']>[1] = {};
  if (current.bootAtStart !== desired.bootAtStart) change.bootAtStart = desired.bootAtStart;
  if (current.runUser !== desired.runUser) change.runUser = desired.runUser;
  if (current.probes !== desired.probes) change.probes = desired.probes;
  if (current.expiresAt !== desired.expiresAt) change.expires = to.expires ?? null;
  if (JSON.stringify(sorted(current.policy)) !== JSON.stringify(sorted(desired.policy))) {
    const keys = new Set([...Object.keys(current.policy), ...Object.keys(desired.policy)]);
    change.policy = Object.fromEntries(
      [...keys].map((k) => [k, desired.policy[k as keyof typeof desired.policy] ?? null]),
    );
  }
  return change;
}

const sorted = (o: object) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));

/** Label changes in the catalogue's words: a value sets one, null removes it. */
function labelChanges(current: Record<string, string>, desired: Record<string, string>): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(desired)) if (current[k] !== v) out[k] = v;
  for (const k of Object.keys(current)) if (!(k in desired)) out[k] = null;
  return out;
}
