import type { Database } from '../storage/database.js';
import type { ApiKeyScope, UserType } from './rules.js';

/** An API key as it is listed: everything but its secret (and its hash). */
export interface ApiKey {
  /** The public id, also the middle part of the key. */
  id: string;
  userId: number;
  name: string;
  /** The highest role the key acts with; its owner's own role caps it as well. */
  role: UserType;
  /** What it may be used for (see API_KEY_SCOPES). */
  scope: ApiKeyScope;
  /** Requests per minute; null: the per-token limit (RateLimit.PerToken). */
  ratePerMinute: number | null;
  createdAt: number;
  /** Username of whoever created it: its owner, or a superuser. */
  createdBy: string;
  expiresAt: number | null;
  lastUsedAt: number | null;
}

interface ApiKeyRow {
  id: string;
  user_id: number;
  name: string;
  key_hash: string;
  role: UserType;
  scope: ApiKeyScope;
  rate_per_minute: number | null;
  created_at: number;
  created_by: string;
  expires_at: number | null;
  last_used_at: number | null;
}

interface StoredKey extends ApiKey {
  keyHash: string;
  /** `lastUsedAt` as the database holds it: written through at most once a minute. */
  storedLastUsedAt: number | null;
}

const toStored = (r: ApiKeyRow): StoredKey => ({
  id: r.id,
  userId: r.user_id,
  name: r.name,
  role: r.role,
  scope: r.scope,
  ratePerMinute: r.rate_per_minute,
  createdAt: r.created_at,
  createdBy: r.created_by,
  expiresAt: r.expires_at,
  lastUsedAt: r.last_used_at,
  keyHash: r.key_hash,
  storedLastUsedAt: r.last_used_at,
});

const listed = ({ keyHash: _, storedLastUsedAt: __, ...key }: StoredKey): ApiKey => key;

/** Last-used times reach the database at most this often per key: a busy key must not rewrite the file per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * API keys: held in memory (every key-authenticated request resolves here, so it must cost no query) and written
 * through to the database. Callers persist the database after a mutation.
 */
export class ApiKeyStore {
  private readonly keys = new Map<string, StoredKey>();

  constructor(private readonly db: Database) {
    for (const row of db.all<ApiKeyRow>('SELECT * FROM api_keys')) this.keys.set(row.id, toStored(row));
  }

  /** The key with this public id and its hash. */
  byId(id: string): (ApiKey & { keyHash: string }) | undefined {
    const key = this.keys.get(id);
    return key && { ...listed(key), keyHash: key.keyHash };
  }

  ofUser(userId: number): ApiKey[] {
    return [...this.keys.values()]
      .filter((k) => k.userId === userId)
      .sort((a, b) => a.createdAt - b.createdAt || a.name.localeCompare(b.name))
      .map(listed);
  }

  /** The user's key of this name, ignoring case. */
  byName(userId: number, name: string): ApiKey | undefined {
    const lower = name.toLowerCase();
    for (const k of this.keys.values()) if (k.userId === userId && k.name.toLowerCase() === lower) return listed(k);
    return undefined;
  }

  insert(key: ApiKey, keyHash: string): void {
    this.db.run(
      `INSERT INTO api_keys (id, user_id, name, key_hash, role, scope, rate_per_minute, created_at, created_by, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        key.id,
        key.userId,
        key.name,
        keyHash,
        key.role,
        key.scope,
        key.ratePerMinute,
        key.createdAt,
        key.createdBy,
        key.expiresAt,
      ],
    );
    this.keys.set(key.id, { ...key, keyHash, storedLastUsedAt: key.lastUsedAt });
  }

  delete(id: string): void {
    this.keys.delete(id);
    this.db.run('DELETE FROM api_keys WHERE id = ?', [id]);
  }

  /** Removes every key of the user; returns their ids. */
  deleteOfUser(userId: number): string[] {
    const ids = [...this.keys.values()].filter((k) => k.userId === userId).map((k) => k.id);
    for (const id of ids) this.keys.delete(id);
    if (ids.length > 0) this.db.run('DELETE FROM api_keys WHERE user_id = ?', [userId]);
    return ids;
  }

  /** Records a use; returns true when it was written to the database too (and so needs persisting). */
  touch(id: string, now: number): boolean {
    const key = this.keys.get(id);
    if (!key) return false;
    key.lastUsedAt = now;
    if (key.storedLastUsedAt !== null && now - key.storedLastUsedAt < LAST_USED_RESOLUTION_MS) return false;
    key.storedLastUsedAt = now;
    this.db.run('UPDATE api_keys SET last_used_at = ? WHERE id = ?', [now, id]);
    return true;
  }
}
