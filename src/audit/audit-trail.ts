import type { Logger } from 'pino';
import type { Database } from '../storage/database.js';
import { formatIso } from '../util/time.js';

/** What a request changed or tried to change. Nothing here may hold a secret: ids, names and keys only. */
export interface AuditRecord {
  at: number;
  userId: number | null;
  /** The user the session belongs to; for a login or a registration, the name it was made with. */
  username: string;
  ip: string;
  /** `instance.start`, `proxy.modify`, `settings.set`, `login`, ... */
  action: string;
  target?: { type: string; id?: string; name?: string };
  /** Small facts of the request that are safe to keep: the setting keys changed, the kind of modification. */
  detail?: Record<string, unknown>;
  status: number;
  message: string;
}

export interface AuditEntry {
  id: number;
  at: string;
  userID: number | null;
  username: string;
  ip: string;
  action: string;
  targetType: string | null;
  targetID: string | null;
  targetName: string | null;
  detail: Record<string, unknown> | null;
  status: number;
  outcome: 'ok' | 'failed';
  message: string;
}

export interface AuditQuery {
  username?: string;
  /** `instance.start`, or a prefix ending in a dot: `instance.` */
  action?: string;
  targetType?: string;
  targetID?: string;
  outcome?: 'ok' | 'failed';
  ip?: string;
  since?: number;
  until?: number;
  /** Entries older than this id (the `nextBefore` of the previous page). */
  before?: number;
  limit: number;
}

interface Row {
  id: number;
  at: number;
  user_id: number | null;
  username: string;
  ip: string;
  action: string;
  target_type: string | null;
  target_id: string | null;
  target_name: string | null;
  detail: string | null;
  status: number;
  outcome: 'ok' | 'failed';
  message: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The audit trail: each state-changing request appended to a table of the database and written to the system log,
 * read back by a superuser with filters, newest first, and bounded by age and by count.
 */
export class AuditTrail {
  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    private readonly limits: () => { retentionDays: number; maxEntries: number },
    /** Masks known secrets in what is kept (a failure's message may quote a tunnel's log). */
    private readonly redact: <T>(value: T) => T = (value) => value,
  ) {}

  /** Appends the entry; resolves once it is saved with the database. */
  async record(given: AuditRecord): Promise<void> {
    const entry = this.redact(given);
    const outcome = entry.status < 400 ? 'ok' : 'failed';
    this.db.run(
      `INSERT INTO audit (at, user_id, username, ip, action, target_type, target_id, target_name, detail, status,
         outcome, message) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        entry.at,
        entry.userId,
        entry.username,
        entry.ip,
        entry.action,
        entry.target?.type ?? null,
        entry.target?.id ?? null,
        entry.target?.name ?? null,
        entry.detail ? JSON.stringify(entry.detail) : null,
        entry.status,
        outcome,
        entry.message,
      ],
    );
    const target = entry.target ? ` ${entry.target.type}${entry.target.id ? ` ${entry.target.id}` : ''}` : '';
    this.log.info(
      { audit: { action: entry.action, user: entry.username, ip: entry.ip, status: entry.status, ...entry.target } },
      `audit: ${entry.username || '(anonymous)'} ${entry.action}${target}: ${outcome} (${entry.status})`,
    );
    // A snapshot that cannot be written is the database's fault to report (self-check, the failing request);
    // the entry stays in memory and is saved with the next snapshot that succeeds.
    await this.db.persist().catch(() => {});
  }

  query(q: AuditQuery): { entries: AuditEntry[]; nextBefore: number | null } {
    const where: string[] = [];
    const params: Array<string | number> = [];
    const add = (clause: string, value: string | number | undefined) => {
      if (value === undefined) return;
      where.push(clause);
      params.push(value);
    };
    add('username = ? COLLATE NOCASE', q.username);
    if (q.action?.endsWith('.')) {
      where.push('substr(action, 1, ?) = ?');
      params.push(q.action.length, q.action);
    } else add('action = ?', q.action);
    add('target_type = ?', q.targetType);
    add('target_id = ?', q.targetID);
    add('outcome = ?', q.outcome);
    add('ip = ?', q.ip);
    add('at >= ?', q.since);
    add('at <= ?', q.until);
    add('id < ?', q.before);
    const rows = this.db.all<Row>(
      `SELECT * FROM audit ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`,
      [...params, q.limit + 1],
    );
    const more = rows.length > q.limit;
    const page = rows.slice(0, q.limit);
    return { entries: page.map(toEntry), nextBefore: more ? page.at(-1)!.id : null };
  }

  /** Removes what is past the retention age and the oldest past the count limit; returns how many went. */
  async prune(now = Date.now()): Promise<number> {
    const { retentionDays, maxEntries } = this.limits();
    let removed = this.db.run('DELETE FROM audit WHERE at < ?', [now - retentionDays * DAY_MS]);
    removed += this.db.run('DELETE FROM audit WHERE id <= (SELECT id FROM audit ORDER BY id DESC LIMIT 1 OFFSET ?)', [
      maxEntries,
    ]);
    if (removed > 0) await this.db.persist();
    return removed;
  }
}

function toEntry(r: Row): AuditEntry {
  return {
    id: r.id,
    at: formatIso(r.at),
    userID: r.user_id,
    username: r.username,
    ip: r.ip,
    action: r.action,
    targetType: r.target_type,
    targetID: r.target_id,
    targetName: r.target_name,
    detail: r.detail === null ? null : (JSON.parse(r.detail) as Record<string, unknown>),
    status: r.status,
    outcome: r.outcome,
    message: r.message,
  };
}
