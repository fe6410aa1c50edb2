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

const SESSION_COLUMNS = 's.id, s.user_id, u.username, s.created_at, s.expire_at';

/** The SQL of users and sessions. Callers persist the database after a mutation. */
export class AccountStore {
  constructor(private readonly db: Database) {}

  countUsers(): number {
    return Number(this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM users')!.n);
  }

  countByType(type: UserType): number {
    return Number(this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM users WHERE type = ?', [type])!.n);
  }

  userById(id: number): User | undefined {
    const row = this.db.get<UserRow>('SELECT * FROM users WHERE id = ?', [id]);
    return row && toUser(row);
  }

  /** The user and its password hash; the name matches ignoring case. */
  credentialsByName(username: string): { user: User; passwdHash: string } | undefined {
    const row = this.db.get<UserRow>('SELECT * FROM users WHERE username = ?', [username]);
    return row && { user: toUser(row), passwdHash: row.passwd_hash };
  }

  usernameTaken(username: string, exceptId = -1): boolean {
    return this.db.get('SELECT 1 FROM users WHERE username = ? AND id != ?', [username, exceptId]) !== undefined;
  }

  insertUser(username: string, passwdHash: string, type: UserType, now: number): User {
    this.db.run('INSERT INTO users (username, passwd_hash, type, created_at) VALUES (?, ?, ?, ?)', [
      username,
      passwdHash,
      type,
      now,
    ]);
    return { id: this.db.lastInsertRowid(), username, type, createdAt: now };
  }

  listUsers(): User[] {
    return this.db.all<UserRow>('SELECT * FROM users ORDER BY id').map(toUser);
  }

  updateUsername(id: number, username: string): void {
    this.db.run('UPDATE users SET username = ? WHERE id = ?', [username, id]);
  }

  updatePasswdHash(id: number, passwdHash: string): void {
    this.db.run('UPDATE users SET passwd_hash = ? WHERE id = ?', [passwdHash, id]);
  }

  updateType(id: number, type: UserType): void {
    this.db.run('UPDATE users SET type = ? WHERE id = ?', [type, id]);
  }

  deleteUser(id: number): void {
    this.db.run('DELETE FROM users WHERE id = ?', [id]);
  }

  insertSession(id: string, userId: number, tokenHash: string, now: number, expireAt: number): void {
    this.db.run('INSERT INTO sessions (id, user_id, token_hash, created_at, expire_at) VALUES (?, ?, ?, ?, ?)', [
      id,
      userId,
      tokenHash,
      now,
      expireAt,
    ]);
  }

  sessionByTokenHash(tokenHash: string): Session | undefined {
    const row = this.db.get<SessionRow>(
      `SELECT ${SESSION_COLUMNS} FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?`,
      [tokenHash],
    );
    return row && toSession(row);
  }

  sessionById(id: string): Session | undefined {
    const row = this.db.get<SessionRow>(
      `SELECT ${SESSION_COLUMNS} FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ?`,
      [id],
    );
    return row && toSession(row);
  }

  activeSessions(now: number): Session[] {
    return this.db
      .all<SessionRow>(
        `SELECT ${SESSION_COLUMNS} FROM sessions s JOIN users u ON u.id = s.user_id
         WHERE s.expire_at > ? ORDER BY s.created_at`,
        [now],
      )
      .map(toSession);
  }

  sessionIdsOfUser(userId: number, exceptId = ''): string[] {
    return this.db
      .all<{ id: string }>('SELECT id FROM sessions WHERE user_id = ? AND id != ?', [userId, exceptId])
      .map((r) => r.id);
  }

  deleteSession(id: string): boolean {
    return this.db.run('DELETE FROM sessions WHERE id = ?', [id]) > 0;
  }

  deleteSessionsOfUser(userId: number, exceptId = ''): void {
    this.db.run('DELETE FROM sessions WHERE user_id = ? AND id != ?', [userId, exceptId]);
  }

  expiredSessionIds(now: number): string[] {
    return this.db.all<{ id: string }>('SELECT id FROM sessions WHERE expire_at <= ?', [now]).map((r) => r.id);
  }

  deleteExpiredSessions(now: number): number {
    return this.db.run('DELETE FROM sessions WHERE expire_at <= ?', [now]);
  }
}
