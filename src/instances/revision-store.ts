import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../fs/atomic.js';
import { notFound } from '../errors.js';
import type { Database } from '../storage/database.js';

/** How a change reaches the tunnel: not at all (nothing changed), in the file only, by frpc's reload, by a restart. */
export type PlanAction = 'none' | 'file only' | 'reload' | 'restart';

/** Who made a change: a user, through a login or one of their API keys; or tunnelward itself. */
export interface Author {
  username: string;
  /** The API key's name when the change came through one. */
  apiKey?: string;
}

/** A committed change of an instance's config file (see the change pipeline). */
export interface Revision {
  instanceID: number;
  number: number;
  at: number;
  by: Author;
  /** What kind of change made it (`proxy.create`, `config.replace`, `rollback`, ...). */
  kind: string;
  /** What was asked, as the request named it: names and keys, never a secret's value. */
  request: Record<string, unknown>;
  plan: PlanAction;
  /** Why that plan, in words. */
  reason: string;
  /** How it went (`applied by a reload`, `applies at the next start`, ...). */
  outcome: string;
  /** The file's version: the hash of its text as an operator reads it, which also names its stored text. */
  version: string;
}

/** A change whose intent is on record and which has not committed: what a crash cut off. */
export interface PendingChange {
  instanceID: number;
  number: number;
  /** The revision it was made on, whose file is put back. */
  previous: number;
  plan: PlanAction;
  /** `applying`: the tunnel may have been given the new file (a reload or restart began). */
  status: 'pending' | 'applying';
}

interface Row {
  instance_id: number;
  number: number;
  at: number;
  by_user: string;
  by_key: string | null;
  kind: string;
  request: string;
  plan: PlanAction;
  reason: string;
  outcome: string;
  version: string;
  status: 'pending' | 'applying' | 'committed';
  previous: number | null;
}

const toRevision = (row: Row): Revision => ({
  instanceID: row.instance_id,
  number: row.number,
  at: row.at,
  by: { username: row.by_user, ...(row.by_key === null ? {} : { apiKey: row.by_key }) },
  kind: row.kind,
  request: JSON.parse(row.request) as Record<string, unknown>,
  plan: row.plan,
  reason: row.reason,
  outcome: row.outcome,
  version: row.version,
});

const VERSION = /^[0-9a-f]{16}$/;

/**
 * The revisions of every instance: a row each in the database (who, when, what was asked, the plan and how it went)
 * and the file's text in `dir/tunnel_<id>/<version>.toml` (mode 0600: it holds the secrets), shared by revisions of
 * the same text. A change costs its row and, for a text not stored yet, one small file, whatever the history holds;
 * past `keep` revisions per instance the oldest go, with the texts nothing else names.
 */
export class RevisionStore {
  constructor(
    private readonly db: Database,
    private readonly dir: string,
    private readonly keep: () => number,
  ) {}

  private dirOf(id: number): string {
    return join(this.dir, `tunnel_${id}`);
  }

  private pathOf(id: number, version: string): string {
    if (!VERSION.test(version)) throw new Error(`not a file version: ${version}`);
    return join(this.dirOf(id), `${version}.toml`);
  }

  /** The committed revision the instance stands at (0 for none). */
  current(id: number): number {
    return (
      this.db.get<{ n: number | null }>(
        "SELECT MAX(number) AS n FROM revisions WHERE instance_id = ? AND status = 'committed'",
        [id],
      )?.n ?? 0
    );
  }

  /** The committed revisions of every instance, by id: what the records show at start-up. */
  currentAll(): Map<number, number> {
    const rows = this.db.all<{ instance_id: number; n: number }>(
      "SELECT instance_id, MAX(number) AS n FROM revisions WHERE status = 'committed' GROUP BY instance_id",
    );
    return new Map(rows.map((r) => [r.instance_id, r.n]));
  }

  /** Stores a text under its version (once: a text already stored is left as it is). */
  async storeText(id: number, version: string, text: string): Promise<void> {
    const path = this.pathOf(id, version);
    await mkdir(this.dirOf(id), { recursive: true, mode: 0o700 });
    const there = await readFile(path, 'utf8').then(
      (found) => found === text,
      () => false,
    );
    if (!there) await writeFileAtomic(path, text, { mode: 0o600 });
  }

  /** The text of a revision's file as it was written (secrets in clear: for rollback and masked views only). */
  async textOf(id: number, version: string): Promise<string> {
    try {
      return await readFile(this.pathOf(id, version), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        throw notFound(`the text of version ${version} of instance ${id} is no longer kept`);
      throw err;
    }
  }

  /** Records a change's intent, before its file is written: a crash from here on is undone at the next start. */
  begin(revision: Omit<Revision, 'outcome' | 'instanceID'> & { instanceID: number; previous: number }): void {
    this.db.run(
      `INSERT INTO revisions (instance_id, number, at, by_user, by_key, kind, request, plan, reason, outcome, version, status, previous)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?, 'pending', ?)`,
      [
        revision.instanceID,
        revision.number,
        revision.at,
        revision.by.username,
        revision.by.apiKey ?? null,
        revision.kind,
        JSON.stringify(revision.request),
        revision.plan,
        revision.reason,
        revision.version,
        revision.previous,
      ],
    );
  }

  /** The tunnel is about to be given the new file (a reload or a restart begins). */
  applying(id: number, number: number): void {
    this.db.run("UPDATE revisions SET status = 'applying' WHERE instance_id = ? AND number = ?", [id, number]);
  }

  /** The change is done: its revision counts, with how it went (and its plan, which the apply may have changed). */
  commit(id: number, number: number, outcome: { plan: PlanAction; reason: string; outcome: string }): void {
    this.db.run(
      "UPDATE revisions SET status = 'committed', plan = ?, reason = ?, outcome = ? WHERE instance_id = ? AND number = ?",
      [outcome.plan, outcome.reason, outcome.outcome, id, number],
    );
  }

  /** A change that did not commit leaves no revision. */
  drop(id: number, number: number): void {
    this.db.run("DELETE FROM revisions WHERE instance_id = ? AND number = ? AND status != 'committed'", [id, number]);
  }

  /** Records a revision that is committed as it is made (a create, an import, a file found changed on disk). */
  record(revision: Revision): void {
    this.begin({ ...revision, previous: 0 });
    this.commit(revision.instanceID, revision.number, revision);
  }

  /** Changes a crash cut off, oldest first. */
  pending(): PendingChange[] {
    return this.db
      .all<Row>("SELECT * FROM revisions WHERE status != 'committed' ORDER BY instance_id, number")
      .map((row) => ({
        instanceID: row.instance_id,
        number: row.number,
        previous: row.previous ?? 0,
        plan: row.plan,
        status: row.status === 'applying' ? 'applying' : 'pending',
      }));
  }

  /** The instance's revisions, newest first, `limit` at most, older than `before` when given. */
  list(id: number, limit: number, before?: number): Revision[] {
    return this.db
      .all<Row>(
        `SELECT * FROM revisions WHERE instance_id = ? AND status = 'committed' AND number < ?
         ORDER BY number DESC LIMIT ?`,
        [id, before ?? Number.MAX_SAFE_INTEGER, limit],
      )
      .map(toRevision);
  }

  /** How many committed revisions the instance has. */
  count(id: number): number {
    return (
      this.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM revisions WHERE instance_id = ? AND status = 'committed'", [
        id,
      ])?.n ?? 0
    );
  }

  get(id: number, number: number): Revision | undefined {
    const row = this.db.get<Row>(
      "SELECT * FROM revisions WHERE instance_id = ? AND number = ? AND status = 'committed'",
      [id, number],
    );
    return row && toRevision(row);
  }

  /** The next revision's number (numbers are never reused, not even those of changes that did not commit). */
  nextNumber(id: number): number {
    return (
      (this.db.get<{ n: number | null }>('SELECT MAX(number) AS n FROM revisions WHERE instance_id = ?', [id])?.n ??
        0) + 1
    );
  }

  /**
   * Drops the oldest committed revisions past the kept count (the current one always stays), and the texts no
   * revision names any more. Returns how many went.
   */
  async prune(id: number): Promise<number> {
    const keep = Math.max(1, this.keep());
    const cut = this.db.get<{ number: number }>(
      "SELECT number FROM revisions WHERE instance_id = ? AND status = 'committed' ORDER BY number DESC LIMIT 1 OFFSET ?",
      [id, keep],
    );
    if (!cut) return 0;
    const gone = this.db.all<{ version: string }>(
      "SELECT DISTINCT version FROM revisions WHERE instance_id = ? AND status = 'committed' AND number <= ?",
      [id, cut.number],
    );
    const count = this.db.get<{ n: number }>(
      "SELECT COUNT(*) AS n FROM revisions WHERE instance_id = ? AND status = 'committed' AND number <= ?",
      [id, cut.number],
    )!.n;
    this.db.run("DELETE FROM revisions WHERE instance_id = ? AND status = 'committed' AND number <= ?", [
      id,
      cut.number,
    ]);
    for (const { version } of gone) {
      const used = this.db.get('SELECT 1 AS used FROM revisions WHERE instance_id = ? AND version = ? LIMIT 1', [
        id,
        version,
      ]);
      if (!used) await rm(this.pathOf(id, version), { force: true });
    }
    return count;
  }

  /** Everything of a deleted instance. */
  async forget(id: number): Promise<void> {
    this.db.run('DELETE FROM revisions WHERE instance_id = ?', [id]);
    await rm(this.dirOf(id), { recursive: true, force: true });
  }

  /** Texts of instances that no longer exist (a delete cut off after its record went). */
  async sweep(known: ReadonlySet<number>): Promise<void> {
    for (const name of await readdir(this.dir).catch(() => [] as string[])) {
      const m = /^tunnel_(\d+)$/.exec(name);
      if (m && !known.has(Number(m[1]))) await rm(join(this.dir, name), { recursive: true, force: true });
    }
  }
}
