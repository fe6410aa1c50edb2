import type { InstancePolicy } from './health-policy.js';
import { conflict } from '../errors.js';
import type { Database } from '../storage/database.js';
import type { Labels } from './labels.js';

export type DesiredState = 'running' | 'stopped';

/** A create or a delete that has begun and not ended: a crash between the two is undone (create) or finished (delete). */
export type PendingChange = 'create' | 'delete';

/** How an instance's process last ended, and when. */
export interface LastExit {
  code: number | null;
  signal: string | null;
  at: number;
}

export interface InstanceRecord {
  id: number;
  name: string;
  bootAtStart: boolean;
  runUser: string;
  configPath: string;
  createdAt: number;
  createdBy: string;
  ownerId: number | null;
  desired: DesiredState;
  pid: number | null;
  startTicks: number | null;
  pending: PendingChange | null;
  /** The watchdog (or the init system) gave it up: it stays failed until an operator starts it. */
  failed: boolean;
  lastExit: LastExit | null;
  /** Keys sorted; frozen. */
  labels: Labels;
  /** The committed revision of its config file it stands at (0 before the first: see the change pipeline). */
  revision: number;
  /** When it is stopped by itself (ms since the epoch; null: never). See src/instances/expiry.ts. */
  expiresAt: number | null;
  /** When each of its proxies is disabled, by proxy name (not in the file: frpc refuses a key it does not know); frozen. */
  proxyExpiries: Readonly<Record<string, number>>;
  /** Its proxies are probed end to end while it runs (see actors/probes.ts). */
  probes: boolean;
  /** Its own supervision figures over the settings (see src/instances/health-policy.ts); frozen. */
  policy: Readonly<InstancePolicy>;
}

const NO_POLICY: Readonly<InstancePolicy> = Object.freeze({});
const policyOf = (text: string | null): Readonly<InstancePolicy> =>
  text === null ? NO_POLICY : Object.freeze(JSON.parse(text) as InstancePolicy);

const NO_LABELS: Labels = Object.freeze({});
const NO_EXPIRIES: Readonly<Record<string, number>> = Object.freeze({});

interface Row {
  id: number;
  name: string;
  boot_at_start: number;
  run_user: string;
  config_path: string;
  created_at: number;
  created_by: string;
  owner_id: number | null;
  desired: DesiredState;
  pid: number | null;
  start_ticks: number | null;
  pending: PendingChange | null;
  failed: number;
  last_exit_code: number | null;
  last_exit_signal: string | null;
  last_exit_at: number | null;
  expires_at: number | null;
  probes: number;
  policy: string | null;
}

const toRecord = (
  r: Row,
  labels: Labels,
  revision: number,
  proxyExpiries: Readonly<Record<string, number>>,
): InstanceRecord => ({
  id: r.id,
  name: r.name,
  bootAtStart: r.boot_at_start === 1,
  runUser: r.run_user,
  configPath: r.config_path,
  createdAt: r.created_at,
  createdBy: r.created_by,
  ownerId: r.owner_id,
  desired: r.desired,
  pid: r.pid,
  startTicks: r.start_ticks,
  pending: r.pending,
  failed: r.failed === 1,
  lastExit: r.last_exit_at === null ? null : { code: r.last_exit_code, signal: r.last_exit_signal, at: r.last_exit_at },
  labels,
  revision,
  expiresAt: r.expires_at,
  proxyExpiries,
  probes: r.probes === 1,
  policy: policyOf(r.policy),
});

/** The one answer to a name another instance has: callers check first; the database's own constraint says the same. */
export const nameInUse = (name: string) => conflict(`an instance named ${name} already exists`);

/** Runs a statement that sets an instance's name; the unique constraint's error becomes the 409 it means. */
function naming<T>(name: string, write: () => T): T {
  try {
    return write();
  } catch (err) {
    if (/^UNIQUE constraint failed: instances\.name\b/.test((err as Error).message)) throw nameInUse(name);
    throw err;
  }
}

/**
 * Instance records: kept in memory (reads are hot: every list and status) and written through to the database.
 * Records handed out are frozen snapshots; an update replaces the record. Callers persist the database after a
 * mutation.
 */
export class InstanceStore {
  private readonly records = new Map<number, InstanceRecord>();

  constructor(private readonly db: Database) {
    const labels = new Map<number, Record<string, string>>();
    for (const row of db.all<{ instance_id: number; key: string; value: string }>(
      'SELECT * FROM instance_labels ORDER BY instance_id, key',
    )) {
      let of = labels.get(row.instance_id);
      if (!of) labels.set(row.instance_id, (of = {}));
      of[row.key] = row.value;
    }
    const revisions = new Map(
      db
        .all<{ instance_id: number; n: number }>(
          "SELECT instance_id, MAX(number) AS n FROM revisions WHERE status = 'committed' GROUP BY instance_id",
        )
        .map((r) => [r.instance_id, r.n]),
    );
    const expiries = new Map<number, Record<string, number>>();
    for (const row of db.all<{ instance_id: number; proxy: string; expires_at: number }>(
      'SELECT * FROM proxy_expiries ORDER BY instance_id, proxy',
    )) {
      let of = expiries.get(row.instance_id);
      if (!of) expiries.set(row.instance_id, (of = {}));
      of[row.proxy] = row.expires_at;
    }
    for (const row of db.all<Row>('SELECT * FROM instances ORDER BY id')) {
      const own = labels.get(row.id);
      const proxyExpiries = expiries.get(row.id);
      this.records.set(
        row.id,
        Object.freeze(
          toRecord(
            row,
            own ? Object.freeze(own) : NO_LABELS,
            revisions.get(row.id) ?? 0,
            proxyExpiries ? Object.freeze(proxyExpiries) : NO_EXPIRIES,
          ),
        ),
      );
    }
  }

  all(): InstanceRecord[] {
    return [...this.records.values()];
  }

  get(id: number): InstanceRecord | undefined {
    return this.records.get(id);
  }

  nameTaken(name: string, exceptId = -1): boolean {
    for (const r of this.records.values()) if (r.name === name && r.id !== exceptId) return true;
    return false;
  }

  /** Inserts a record; its config path derives from the id it gets. */
  insert(fields: {
    name: string;
    bootAtStart: boolean;
    runUser: string;
    createdBy: string;
    ownerId: number;
    now: number;
    configPathOf: (id: number) => string;
    labels?: Labels;
    expiresAt?: number | null;
  }): InstanceRecord {
    naming(fields.name, () =>
      this.db.run(
        `INSERT INTO instances (name, boot_at_start, run_user, config_path, created_at, created_by, owner_id, pending)
         VALUES (?, ?, ?, '', ?, ?, ?, 'create')`,
        [fields.name, fields.bootAtStart ? 1 : 0, fields.runUser, fields.now, fields.createdBy, fields.ownerId],
      ),
    );
    const id = this.db.lastInsertRowid();
    const configPath = fields.configPathOf(id);
    this.db.run('UPDATE instances SET config_path = ? WHERE id = ?', [configPath, id]);
    const labels = fields.labels ?? NO_LABELS;
    this.writeLabels(id, labels);
    const expiresAt = fields.expiresAt ?? null;
    if (expiresAt !== null) this.db.run('UPDATE instances SET expires_at = ? WHERE id = ?', [expiresAt, id]);
    const record: InstanceRecord = Object.freeze({
      id,
      name: fields.name,
      bootAtStart: fields.bootAtStart,
      runUser: fields.runUser,
      configPath,
      createdAt: fields.now,
      createdBy: fields.createdBy,
      ownerId: fields.ownerId,
      desired: 'stopped',
      pid: null,
      startTicks: null,
      pending: 'create',
      failed: false,
      lastExit: null,
      labels,
      revision: 0,
      expiresAt,
      proxyExpiries: NO_EXPIRIES,
      probes: false,
      policy: NO_POLICY,
    });
    this.records.set(id, record);
    return record;
  }

  /** Marks a create or a delete as begun (or, with null, the create as done). */
  setPending(id: number, pending: PendingChange | null): void {
    this.db.run('UPDATE instances SET pending = ? WHERE id = ?', [pending, id]);
    this.replace(id, { pending });
  }

  /** Ids up to `id` are never handed out again (one was found in use, e.g. by a file). */
  reserveIdsUpTo(id: number): void {
    const seq = this.db.get<{ seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'instances'")?.seq;
    if (seq === undefined) this.db.run("INSERT INTO sqlite_sequence (name, seq) VALUES ('instances', ?)", [id]);
    else if (seq < id) this.db.run("UPDATE sqlite_sequence SET seq = ? WHERE name = 'instances'", [id]);
  }

  private replace(id: number, changes: Partial<InstanceRecord>): InstanceRecord | undefined {
    const current = this.records.get(id);
    if (!current) return undefined;
    const next = Object.freeze({ ...current, ...changes });
    this.records.set(id, next);
    return next;
  }

  update(
    id: number,
    fields: {
      name?: string;
      bootAtStart?: boolean;
      runUser?: string;
      probes?: boolean;
      policy?: Readonly<InstancePolicy>;
    },
  ): InstanceRecord | undefined {
    const name = fields.name;
    if (name !== undefined) naming(name, () => this.db.run('UPDATE instances SET name = ? WHERE id = ?', [name, id]));
    if (fields.bootAtStart !== undefined) {
      this.db.run('UPDATE instances SET boot_at_start = ? WHERE id = ?', [fields.bootAtStart ? 1 : 0, id]);
    }
    if (fields.runUser !== undefined)
      this.db.run('UPDATE instances SET run_user = ? WHERE id = ?', [fields.runUser, id]);
    if (fields.probes !== undefined)
      this.db.run('UPDATE instances SET probes = ? WHERE id = ?', [fields.probes ? 1 : 0, id]);
    if (fields.policy !== undefined) {
      const empty = Object.keys(fields.policy).length === 0;
      this.db.run('UPDATE instances SET policy = ? WHERE id = ?', [empty ? null : JSON.stringify(fields.policy), id]);
      fields = { ...fields, policy: empty ? NO_POLICY : Object.freeze({ ...fields.policy }) };
    }
    const defined = Object.fromEntries(
      Object.entries(fields).filter(([, v]) => v !== undefined),
    ) as Partial<InstanceRecord>;
    return this.replace(id, defined);
  }

  /** Replaces the instance's labels with `labels` (keys sorted, frozen: see `changedLabels`). */
  setLabels(id: number, labels: Labels): InstanceRecord | undefined {
    this.db.transaction(() => {
      this.db.run('DELETE FROM instance_labels WHERE instance_id = ?', [id]);
      this.writeLabels(id, labels);
    });
    return this.replace(id, { labels });
  }

  private writeLabels(id: number, labels: Labels): void {
    for (const [key, value] of Object.entries(labels))
      this.db.run('INSERT INTO instance_labels (instance_id, key, value) VALUES (?, ?, ?)', [id, key, value]);
  }

  /** Sets (or, with null, clears) when the instance is stopped by itself. */
  setExpiry(id: number, expiresAt: number | null): InstanceRecord | undefined {
    this.db.run('UPDATE instances SET expires_at = ? WHERE id = ?', [expiresAt, id]);
    return this.replace(id, { expiresAt });
  }

  /** Sets (or, with null, clears) when one of the instance's proxies is disabled. */
  setProxyExpiry(id: number, proxy: string, expiresAt: number | null): InstanceRecord | undefined {
    const current = this.records.get(id);
    if (!current) return undefined;
    const { [proxy]: _, ...rest } = current.proxyExpiries;
    return this.setProxyExpiries(id, expiresAt === null ? rest : { ...rest, [proxy]: expiresAt });
  }

  /** Replaces the expiries of the instance's proxies (after a change of its file: see followProxies). */
  setProxyExpiries(id: number, expiries: Readonly<Record<string, number>>): InstanceRecord | undefined {
    this.db.transaction(() => {
      this.db.run('DELETE FROM proxy_expiries WHERE instance_id = ?', [id]);
      for (const [proxy, at] of Object.entries(expiries))
        this.db.run('INSERT INTO proxy_expiries (instance_id, proxy, expires_at) VALUES (?, ?, ?)', [id, proxy, at]);
    });
    const sorted = Object.fromEntries(Object.entries(expiries).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    return this.replace(id, { proxyExpiries: Object.keys(sorted).length > 0 ? Object.freeze(sorted) : NO_EXPIRIES });
  }

  setDesired(id: number, desired: DesiredState): void {
    if (this.records.get(id)?.desired === desired) return;
    this.db.run('UPDATE instances SET desired = ? WHERE id = ?', [desired, id]);
    this.replace(id, { desired });
  }

  /** The revision the instance stands at now (its row in the revisions table is committed in the same persist). */
  setRevision(id: number, revision: number): void {
    this.replace(id, { revision });
  }

  setProcess(id: number, pid: number | null, startTicks: number | null): void {
    this.db.run('UPDATE instances SET pid = ?, start_ticks = ? WHERE id = ?', [pid, startTicks, id]);
    this.replace(id, { pid, startTicks });
  }

  /**
   * Whether the instance rests in failed, and how its last run ended: what a restart of tunnelward shows again.
   * True when that changed.
   */
  setOutcome(id: number, failed: boolean, lastExit: LastExit | null): boolean {
    const current = this.records.get(id);
    if (!current) return false;
    if (current.failed === failed && sameExit(current.lastExit, lastExit)) return false;
    this.db.run(
      'UPDATE instances SET failed = ?, last_exit_code = ?, last_exit_signal = ?, last_exit_at = ? WHERE id = ?',
      [failed ? 1 : 0, lastExit?.code ?? null, lastExit?.signal ?? null, lastExit?.at ?? null, id],
    );
    this.replace(id, { failed, lastExit });
    return true;
  }

  delete(id: number): void {
    this.db.run('DELETE FROM instances WHERE id = ?', [id]);
    this.records.delete(id);
  }
}

const sameExit = (a: LastExit | null, b: LastExit | null) =>
  a === b || (a !== null && b !== null && a.code === b.code && a.signal === b.signal && a.at === b.at);
