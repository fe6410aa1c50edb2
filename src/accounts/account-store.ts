import type { Database } from '../storage/database.js';
import type { UserType } from './rules.js';

export interface User {
  id: number;
  username: string;
  type: UserType;
  createdAt: number;
}

export interface Session {
  id: string;
  userId: number;
  username: string;
  createdAt: number;
  expireAt: number;
}

interface UserRow {
  id: number;
  username: string;
  type: UserType;
  created_at: number;
  passwd_hash: string;
}

interface SessionRow {
  id: string;
  user_id: number;
  username: string;
  created_at: number;
  expire_at: number;
}

const toUser = (r: UserRow): User => ({ id: r.id, username: r.username, type: r.type, createdAt: r.created_at });
const toSession = (r: SessionRow): Session => ({
  id: r.id,
  userId: r.user_id,
  username: r.username,
  createdAt: r.created_at,
  expireAt: r.expire_at,
});

interface StoredSession extends Session {
  tokenHash: string;
}

/**
 * Users and sessions: held in memory (every authenticated request resolves its token here, so it must cost no
 * query) and written through to the database. Callers persist the database after a mutation.
 */
export class AccountStore {
  private readonly users = new Map<number, User>();
  private readonly sessions = new Map<string, StoredSession>();
  private readonly byTokenHash = new Map<string, StoredSession>();

  constructor(private readonly db: Database) {
    for (const row of db.all<UserRow>('SELECT id, username, type, created_at FROM users'))
      this.users.set(row.id, toUser(row));
    for (const row of db.all<SessionRow & { token_hash: string }>('SELECT * FROM sessions')) {
      const user = this.users.get(row.user_id);
      if (user) this.cacheSession({ ...toSession({ ...row, username: user.username }), tokenHash: row.token_hash });
    }
  }

  private cacheSession(session: StoredSession): void {
    this.sessions.set(session.id, session);
    this.byTokenHash.set(session.tokenHash, session);
  }

  private uncacheSession(id: string): void {
    const session = this.sessions.get(id);
    if (!session) return;
    this.sessions.delete(id);
    this.byTokenHash.delete(session.tokenHash);
  }

  countUsers(): number {
    return this.users.size;
  }

  countByType(type: UserType): number {
    let n = 0;
    for (const u of this.users.values()) if (u.type === type) n++;
    return n;
  }

  userById(id: number): User | undefined {
    return this.users.get(id);
  }

  /** The user and its password hash; the name matches ignoring case. */
  credentialsByName(username: string): { user: User; passwdHash: string } | undefined {
    const row = this.db.get<UserRow>('SELECT * FROM users WHERE username = ?', [username]);
    return row && { user: toUser(row), passwdHash: row.passwd_hash };
  }

  usernameTaken(username: string, exceptId = -1): boolean {
    const lower = username.toLowerCase();
    for (const u of this.users.values()) if (u.id !== exceptId && u.username.toLowerCase() === lower) return true;
    return false;
  }

  insertUser(username: string, passwdHash: string, type: UserType, now: number): User {
    this.db.run('INSERT INTO users (username, passwd_hash, type, created_at) VALUES (?, ?, ?, ?)', [
      username,
      passwdHash,
      type,
      now,
    ]);
    const user: User = { id: this.db.lastInsertRowid(), username, type, createdAt: now };
    this.users.set(user.id, user);
    return user;
  }

  listUsers(): User[] {
    return [...this.users.values()].sort((a, b) => a.id - b.id);
  }

  updateUsername(id: number, username: string): void {
    this.db.run('UPDATE users SET username = ? WHERE id = ?', [username, id]);
    const user = this.users.get(id);
    if (user) this.users.set(id, { ...user, username });
    for (const s of this.sessions.values()) if (s.userId === id) this.cacheSession({ ...s, username });
  }

  updatePasswdHash(id: number, passwdHash: string): void {
    this.db.run('UPDATE users SET passwd_hash = ? WHERE id = ?', [passwdHash, id]);
  }

  updateType(id: number, type: UserType): void {
    this.db.run('UPDATE users SET type = ? WHERE id = ?', [type, id]);
    const user = this.users.get(id);
    if (user) this.users.set(id, { ...user, type });
  }

  deleteUser(id: number): void {
    this.db.run('DELETE FROM users WHERE id = ?', [id]);
    this.users.delete(id);
  }

  insertSession(id: string, userId: number, tokenHash: string, now: number, expireAt: number): void {
    this.db.run('INSERT INTO sessions (id, user_id, token_hash, created_at, expire_at) VALUES (?, ?, ?, ?, ?)', [
      id,
      userId,
      tokenHash,
      now,
      expireAt,
    ]);
    const username = this.users.get(userId)?.username ?? '';
    this.cacheSession({ id, userId, username, createdAt: now, expireAt, tokenHash });
  }

  sessionByTokenHash(tokenHash: string): Session | undefined {
    return this.byTokenHash.get(tokenHash);
  }

  sessionById(id: string): Session | undefined {
    return this.sessions.get(id);
  }

  activeSessions(now: number): Session[] {
    return [...this.sessions.values()]
      .filter((s) => s.expireAt > now)
      .sort((a, b) => a.createdAt - b.createdAt)
      .map(({ tokenHash: _, ...session }) => session);
  }

  sessionIdsOfUser(userId: number, exceptId = ''): string[] {
    return [...this.sessions.values()].filter((s) => s.userId === userId && s.id !== exceptId).map((s) => s.id);
  }

  deleteSession(id: string): boolean {
    this.uncacheSession(id);
    return this.db.run('DELETE FROM sessions WHERE id = ?', [id]) > 0;
  }

  deleteSessionsOfUser(userId: number, exceptId = ''): void {
    for (const id of this.sessionIdsOfUser(userId, exceptId)) this.uncacheSession(id);
    this.db.run('DELETE FROM sessions WHERE user_id = ? AND id != ?', [userId, exceptId]);
  }

  expiredSessionIds(now: number): string[] {
    return [...this.sessions.values()].filter((s) => s.expireAt <= now).map((s) => s.id);
  }

  deleteExpiredSessions(now: number): number {
    for (const id of this.expiredSessionIds(now)) this.uncacheSession(id);
    return this.db.run('DELETE FROM sessions WHERE expire_at <= ?', [now]);
  }
}
