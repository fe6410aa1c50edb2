import { timingSafeEqual } from 'node:crypto';
import { Subject, type Subscription } from '../util/rx.js';
import { badRequest, conflict, forbidden, notFound, unauthorized } from '../errors.js';
import { DEFAULTS } from '../settings/defaults.js';
import type { Database } from '../storage/database.js';
import type { AccountService, User } from './account-service.js';
import { ApiKeyStore, type ApiKey } from './api-key-store.js';
import { checkApiKeyName, hasRole, lowerRole, METRICS_ROLE, type ApiKeyScope, type UserType } from './rules.js';
import { apiKeyId, hashToken, newApiKey } from './tokens.js';

export type { ApiKey } from './api-key-store.js';

/** A request made with an API key: its owner, with the role the key acts with (the lower of the two). */
export interface KeyAuthenticated {
  user: User;
  apiKey: ApiKey;
}

/** Keys that stopped working, so that streams opened with them can close. */
export interface KeysRevoked {
  keyIds: string[];
  reason: 'API key revoked' | 'password changed' | 'user removed';
}

export interface NewKeySpec {
  name: string;
  role?: UserType;
  /** What it may be used for; every route its role allows when left out. */
  scope?: ApiKeyScope;
  /** Seconds from now; none: it never expires. */
  expiresInSecs?: number;
  /** Requests per minute; none: the per-token limit. */
  ratePerMinute?: number;
}

/** Which key a revocation names: its public id, or its name among one user's keys. */
export type KeyRef = { keyId: string } | { userId: number; name: string };

const isSuperuser = (user: User) => user.type === 'superuser';

/**
 * Personal API keys: created by a user for themself (or by a superuser for anyone), scoped to a role no higher than
 * the creator's and the owner's, stored only as a hash, revocable, optionally expiring, each with its own rate limit.
 * A password change or the owner's removal revokes every key of that user; a lower role caps them while it lasts.
 */
export class ApiKeyService {
  readonly revoked$ = new Subject<KeysRevoked>();
  private readonly store: ApiKeyStore;
  private readonly subscription: Subscription;

  constructor(
    private readonly db: Database,
    private readonly accounts: AccountService,
    /** The per-token limit: a key's default, and the most a key made by anyone but a superuser may have. */
    private readonly perTokenLimit: () => number,
    private readonly now: () => number = Date.now,
  ) {
    this.store = new ApiKeyStore(db);
    // A password is the root of an account: whoever knew the old one may have made keys with it.
    this.subscription = accounts.passwordRetiring$.subscribe(({ userId, reason }) => this.revokeAllOf(userId, reason));
  }

  /** Creates a key and returns it whole: the only time it is seen, and only once it is saved. */
  async create(
    creator: User,
    ownerId: number,
    spec: NewKeySpec,
  ): Promise<{ key: string; apiKey: ApiKey; owner: User }> {
    if (creator.id !== ownerId && !isSuperuser(creator)) {
      throw forbidden('only a superuser may create API keys for another user');
    }
    const owner = this.ownerOf(ownerId);
    const scope = spec.scope ?? 'all';
    // A metrics key does nothing its role is needed for but read /metrics: by default it has no more than that role.
    const highest = lowerRole(creator.type, owner.type);
    const role = spec.role ?? (scope === 'metrics' ? lowerRole(highest, METRICS_ROLE) : highest);
    if (!hasRole(creator.type, role)) throw forbidden(`role ${role} is above your own (${creator.type})`);
    // What the owner or the caller may not have is refused as such (403); a malformed request is a 400.
    if (!hasRole(owner.type, role))
      throw forbidden(`role ${role} is above the role of ${owner.username} (${owner.type})`);
    // A key that may read /metrics alone is no use without the role /metrics needs.
    if (scope === 'metrics' && !hasRole(role, METRICS_ROLE))
      throw forbidden(`a metrics key needs the ${METRICS_ROLE} role or higher (what /metrics needs), not ${role}`);
    const problem = checkApiKeyName(spec.name) ?? this.checkLimits(spec);
    if (problem) throw badRequest(problem);
    const perToken = this.perTokenLimit();
    if (spec.ratePerMinute !== undefined && spec.ratePerMinute > perToken && !isSuperuser(creator)) {
      throw forbidden(`ratePerMinute above the per-token limit (${perToken}) needs a superuser`);
    }
    if (this.store.byName(ownerId, spec.name)) {
      throw conflict(`${owner.username} already has an API key named ${spec.name}`);
    }
    if (this.store.ofUser(ownerId).length >= DEFAULTS.apiKeysPerUser) {
      throw conflict(`${owner.username} already has ${DEFAULTS.apiKeysPerUser} API keys, the most one user may have`);
    }
    const { id, key } = newApiKey();
    const now = this.now();
    const apiKey: ApiKey = {
      id,
      userId: ownerId,
      name: spec.name,
      role,
      scope,
      ratePerMinute: spec.ratePerMinute ?? null,
      createdAt: now,
      createdBy: creator.username,
      expiresAt: spec.expiresInSecs === undefined ? null : now + spec.expiresInSecs * 1000,
      lastUsedAt: null,
    };
    this.store.insert(apiKey, hashToken(key));
    await this.db.persist();
    return { key, apiKey, owner };
  }

  private checkLimits(spec: NewKeySpec): string | undefined {
    const { expiresInSecs, ratePerMinute } = spec;
    const maxSecs = DEFAULTS.apiKeyMaxLifetimeSecs;
    if (
      expiresInSecs !== undefined &&
      (!Number.isSafeInteger(expiresInSecs) || expiresInSecs < 1 || expiresInSecs > maxSecs)
    ) {
      return `expiresIn must be a whole number of seconds from 1 to ${maxSecs}`;
    }
    if (ratePerMinute === undefined) return undefined;
    if (!Number.isSafeInteger(ratePerMinute) || ratePerMinute < 1 || ratePerMinute > 1_000_000) {
      return 'ratePerMinute must be a whole number from 1 to 1000000';
    }
    return undefined;
  }

  private ownerOf(userId: number): User {
    const owner = this.accounts.userById(userId);
    if (!owner) throw notFound(`user ${userId} not found`);
    return owner;
  }

  /** The keys of a user, without their secrets: the caller's own, or anyone's for a superuser. */
  list(actor: User, ownerId: number): { owner: User; keys: ApiKey[] } {
    if (actor.id !== ownerId && !isSuperuser(actor))
      throw forbidden("only a superuser may list another user's API keys");
    const owner = this.ownerOf(ownerId);
    return { owner, keys: this.store.ofUser(ownerId) };
  }

  /** Revokes one key, at once: its owner's or, for a superuser, anyone's. */
  async revoke(actor: User, ref: KeyRef): Promise<ApiKey> {
    let key: ApiKey | undefined;
    if ('keyId' in ref) {
      key = this.store.byId(ref.keyId);
      // Another user's key id is as unknown as a made-up one: ids are not to be probed.
      if (key && key.userId !== actor.id && !isSuperuser(actor)) key = undefined;
      if (!key) throw notFound(`API key ${ref.keyId} not found`);
    } else {
      if (ref.userId !== actor.id && !isSuperuser(actor)) {
        throw forbidden("only a superuser may revoke another user's API keys");
      }
      const owner = this.ownerOf(ref.userId);
      key = this.store.byName(ref.userId, ref.name);
      if (!key) throw notFound(`${owner.username} has no API key named ${ref.name}`);
    }
    this.store.delete(key.id);
    await this.db.persist();
    this.revoked$.next({ keyIds: [key.id], reason: 'API key revoked' });
    return key;
  }

  /** Part of the account change that retires the password: saved with it, in the same snapshot. */
  private revokeAllOf(userId: number, reason: KeysRevoked['reason']): void {
    const keyIds = this.store.deleteOfUser(userId);
    if (keyIds.length > 0) this.revoked$.next({ keyIds, reason });
  }

  /** Resolves a key to its owner and scope; the error message starts with `Invalid API key:` and says why. */
  authenticate(key: string): KeyAuthenticated {
    const id = apiKeyId(key);
    if (!id) throw unauthorized('Invalid API key: not a tunnelward API key (twk_<id>_<secret>)');
    const stored = this.store.byId(id);
    if (!stored || !sameHash(stored.keyHash, hashToken(key))) throw unauthorized('Invalid API key: unknown or revoked');
    const now = this.now();
    if (stored.expiresAt !== null && stored.expiresAt <= now) throw unauthorized('Invalid API key: expired');
    const owner = this.accounts.userById(stored.userId);
    if (!owner) throw unauthorized('User not found');
    if (this.store.touch(id, now)) void this.db.persist().catch(() => undefined);
    const { keyHash: _, ...apiKey } = stored;
    return { user: { ...owner, type: lowerRole(owner.type, stored.role) }, apiKey: { ...apiKey, lastUsedAt: now } };
  }

  /** The requests per minute a key may make. */
  rateOf(key: ApiKey): number {
    return key.ratePerMinute ?? this.perTokenLimit();
  }

  close(): void {
    this.subscription.unsubscribe();
  }
}

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
