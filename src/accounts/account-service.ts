import { Subject } from '../util/rx.js';
import { badRequest, conflict, forbidden, notFound, unauthorized } from '../errors.js';
import type { Database } from '../storage/database.js';
import { AccountStore, type Session, type User } from './account-store.js';
import type { PasswordHasher } from './password-hasher.js';
import { checkPassword, checkUsername, hasRole, PASSWORD_MAX_LENGTH, type UserType } from './rules.js';
import { hashToken, newInitialPassword, newSessionId, newToken } from './tokens.js';

export type { Session, User } from './account-store.js';

/** Sessions that ended before their time (or at it), so live streams holding them can close. */
export interface SessionsEnded {
  sessionIds: string[];
  reason: 'logged out' | 'session removed' | 'user removed' | 'password changed' | 'token expired';
}

/** A user's role changed: what they hold open may no longer be theirs to hold. */
export interface RoleChanged {
  userId: number;
  type: UserType;
}

/** A password no longer opens this account: it was changed, or the user is gone. */
export interface PasswordRetired {
  userId: number;
  reason: 'password changed' | 'user removed';
}

export interface Authenticated {
  user: User;
  session: Session;
}

const LOGIN_FAILED = 'invalid username or password';
/** A password changed this many times during one login's checks fails it: the caller tries again. */
const MAX_VERIFICATIONS = 3;

/** Users, passwords and login sessions. */
export class AccountService {
  readonly sessionsEnded$ = new Subject<SessionsEnded>();
  readonly roleChanged$ = new Subject<RoleChanged>();
  /**
   * A password about to stop applying (changed, or its user removed), told before the change is saved: what hangs on
   * it in the database (API keys) is dropped in the same snapshot. Listeners must only change the database.
   */
  readonly passwordRetiring$ = new Subject<PasswordRetired>();
  /** A password that no longer applies, told once that is saved. */
  readonly passwordRetired$ = new Subject<PasswordRetired>();
  private readonly store: AccountStore;

  constructor(
    private readonly db: Database,
    private readonly hasher: PasswordHasher,
    private readonly tokenTtlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.store = new AccountStore(db);
  }

  /** Self-registration always creates a visitor; `downgraded` says a privileged type was asked for. */
  async register(username: string, passwd: string, requestedType: UserType | undefined) {
    const user = await this.addUser(username, passwd, 'visitor');
    return { user, downgraded: requestedType !== undefined && requestedType !== 'visitor' };
  }

  createUser(username: string, passwd: string, type: UserType): Promise<User> {
    return this.addUser(username, passwd, type);
  }

  private async addUser(username: string, passwd: string, type: UserType): Promise<User> {
    const problem = checkUsername(username) ?? checkPassword(passwd);
    if (problem) throw badRequest(problem);
    this.assertNameFree(username);
    const hash = await this.hasher.hash(passwd);
    this.assertNameFree(username); // another request may have taken it while we hashed
    const user = this.store.insertUser(username, hash, type, this.now());
    await this.db.persist();
    return user;
  }

  private assertNameFree(username: string, exceptId?: number): void {
    if (this.store.usernameTaken(username, exceptId)) throw conflict(`username ${username} is already taken`);
  }

  /** Same time and same message whether the user does not exist or the password is wrong. */
  async login(username: string, passwd: string): Promise<{ token: string; user: User; session: Session }> {
    if (passwd.length > PASSWORD_MAX_LENGTH) throw unauthorized(LOGIN_FAILED);
    const user = await this.verifiedUser(() => this.store.credentialsByName(username), passwd);
    if (!user) throw unauthorized(LOGIN_FAILED);
    // From the check of the current hash to the session's insert nothing waits: a password change comes wholly
    // before (and ends this session with the others) or wholly after (and the old password fails here).
    const token = newToken();
    const now = this.now();
    const session: Session = {
      id: newSessionId(),
      userId: user.id,
      username: user.username,
      createdAt: now,
      expireAt: now + this.tokenTtlMs,
    };
    this.store.insertSession(session.id, user.id, hashToken(token), now, session.expireAt);
    await this.db.persist();
    return { token, user, session };
  }

  /** Resolves a token to its live session; the error message starts with `Invalid token:` and says why. */
  authenticate(token: string): Authenticated {
    const session = this.store.sessionByTokenHash(hashToken(token));
    if (!session) throw unauthorized('Invalid token: unknown, revoked or logged out');
    if (session.expireAt <= this.now()) throw unauthorized('Invalid token: expired, log in again');
    const user = this.store.userById(session.userId);
    if (!user) throw unauthorized('User not found');
    return { user, session };
  }

  async logout(session: Session): Promise<void> {
    await this.endSessions([session.id], 'logged out');
  }

  async removeSession(sessionId: string): Promise<void> {
    if (!this.store.sessionById(sessionId)) throw notFound(`session ${sessionId} not found`);
    await this.endSessions([sessionId], 'session removed');
  }

  private async endSessions(ids: string[], reason: SessionsEnded['reason']): Promise<void> {
    if (ids.length === 0) return;
    this.db.transaction(() => ids.forEach((id) => this.store.deleteSession(id)));
    await this.db.persist();
    this.sessionsEnded$.next({ sessionIds: ids, reason });
  }

  async removeUser(targetId: number): Promise<User> {
    const target = this.store.userById(targetId);
    if (!target) throw notFound(`user ${targetId} not found`);
    this.assertNotLastSuperuser(target);
    const sessionIds = this.store.sessionIdsOfUser(targetId);
    this.db.transaction(() => {
      this.store.deleteSessionsOfUser(targetId);
      this.store.deleteUser(targetId);
    });
    this.passwordRetiring$.next({ userId: targetId, reason: 'user removed' });
    await this.db.persist();
    if (sessionIds.length > 0) this.sessionsEnded$.next({ sessionIds, reason: 'user removed' });
    this.passwordRetired$.next({ userId: targetId, reason: 'user removed' });
    return target;
  }

  /** A user changes their own name or password; a superuser anyone's. A new password ends the other sessions. */
  async modifyUser(
    actor: Authenticated,
    targetId: number,
    changes: { username?: string; passwd?: string },
  ): Promise<User> {
    if (actor.user.id !== targetId && !hasRole(actor.user.type, 'superuser')) {
      throw forbidden('you may modify only your own account');
    }
    const target = this.store.userById(targetId);
    if (!target) throw notFound(`user ${targetId} not found`);
    if (changes.username === undefined && changes.passwd === undefined) {
      throw badRequest('nothing to modify: give username, passwd or both');
    }
    const problem =
      (changes.username !== undefined ? checkUsername(changes.username) : undefined) ??
      (changes.passwd !== undefined ? checkPassword(changes.passwd) : undefined);
    if (problem) throw badRequest(problem);
    if (changes.username !== undefined) this.assertNameFree(changes.username, targetId);
    const hash = changes.passwd !== undefined ? await this.hasher.hash(changes.passwd) : undefined;
    if (!this.store.userById(targetId)) throw notFound(`user ${targetId} not found`);
    if (changes.username !== undefined) this.assertNameFree(changes.username, targetId);
    const keep = actor.user.id === targetId ? actor.session.id : '';
    const ended = hash ? this.store.sessionIdsOfUser(targetId, keep) : [];
    this.db.transaction(() => {
      if (changes.username !== undefined) this.store.updateUsername(targetId, changes.username);
      if (hash) {
        this.store.updatePasswdHash(targetId, hash);
        this.store.deleteSessionsOfUser(targetId, keep);
      }
    });
    if (hash) this.passwordRetiring$.next({ userId: targetId, reason: 'password changed' });
    await this.db.persist();
    if (ended.length > 0) this.sessionsEnded$.next({ sessionIds: ended, reason: 'password changed' });
    if (hash) this.passwordRetired$.next({ userId: targetId, reason: 'password changed' });
    return this.store.userById(targetId)!;
  }

  async modifyType(targetId: number, newType: UserType): Promise<User> {
    const target = this.store.userById(targetId);
    if (!target) throw notFound(`user ${targetId} not found`);
    if (newType !== 'superuser') this.assertNotLastSuperuser(target);
    if (target.type !== newType) {
      this.store.updateType(targetId, newType);
      await this.db.persist();
      this.roleChanged$.next({ userId: targetId, type: newType });
    }
    return { ...target, type: newType };
  }

  private assertNotLastSuperuser(user: User): void {
    if (user.type === 'superuser' && this.store.countByType('superuser') <= 1) {
      throw conflict('cannot remove or demote the last superuser');
    }
  }

  /** Whether `passwd` is still the password of user `userId` (false when there is no such user). */
  async passwordMatches(userId: number, passwd: string): Promise<boolean> {
    const credentials = () => {
      const user = this.store.userById(userId);
      return user && this.store.credentialsByName(user.username);
    };
    return (await this.verifiedUser(credentials, passwd)) !== undefined;
  }

  /**
   * The user whose password `passwd` is when the check ends, or undefined. A verification is slow and the password
   * may change (or the user go) meanwhile, so the hash is read again after it: a changed one is verified in turn.
   * An unknown user costs a verification all the same.
   */
  private async verifiedUser(
    credentials: () => { user: User; passwdHash: string } | undefined,
    passwd: string,
  ): Promise<User | undefined> {
    let found = credentials();
    if (!found) return this.hasher.verifyDecoy(passwd).then(() => undefined);
    for (let tries = 0; tries < MAX_VERIFICATIONS; tries++) {
      const ok = await this.hasher.verify(found.passwdHash, passwd);
      const current = credentials();
      if (!current) return undefined;
      if (current.passwdHash === found.passwdHash) return ok ? current.user : undefined;
      found = current;
    }
    return undefined;
  }

  userById(id: number): User | undefined {
    return this.store.userById(id);
  }

  listUsers(): User[] {
    return this.store.listUsers();
  }

  listSessions(): Session[] {
    return this.store.activeSessions(this.now());
  }

  /** Deletes expired sessions; returns how many. */
  async sweepExpiredSessions(): Promise<number> {
    const now = this.now();
    const ids = this.store.expiredSessionIds(now);
    if (ids.length === 0) return 0;
    this.store.deleteExpiredSessions(now);
    await this.db.persist();
    this.sessionsEnded$.next({ sessionIds: ids, reason: 'token expired' });
    return ids.length;
  }

  /**
   * While there are no users, creates the first superuser: from the given credentials, or with a random password
   * that the caller shows once. Returns undefined when users exist already.
   */
  async ensureFirstSuperuser(
    username: string,
    passwd: string | undefined,
  ): Promise<{ user: User; generatedPassword?: string } | undefined> {
    if (this.store.countUsers() > 0) return undefined;
    const generatedPassword = passwd === undefined ? newInitialPassword() : undefined;
    const user = await this.addUser(username, passwd ?? generatedPassword!, 'superuser');
    return generatedPassword ? { user, generatedPassword } : { user };
  }
}
