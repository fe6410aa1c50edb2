import type { Middleware } from 'koa';
import type { AccountService, Authenticated } from '../accounts/account-service.js';
import type { ApiKeyService, KeyAuthenticated } from '../accounts/api-key-service.js';
import type { Author } from '../instances/revision-store.js';
import { API_KEY_SCOPE_RULES, hasRole, isUserType, type ApiKeyScope, type UserType } from '../accounts/rules.js';
import { forbidden, tooManyRequests, unauthorized } from '../errors.js';
import type { RequestExposure } from './exposure.js';
import type { RateLimiter } from './rate-limiter.js';

/** Who makes a request: a login session (`X-Token`), or an API key (`Authorization: Bearer`) acting as its owner. */
export type Caller = Authenticated | KeyAuthenticated;

export const viaApiKey = (caller: Caller): caller is KeyAuthenticated => 'apiKey' in caller;

/** Who a change is by, as its revision records it: the user, and the API key it came through. */
export const authorOf = (caller: Caller): Author => ({
  username: caller.user.username,
  ...(viaApiKey(caller) ? { apiKey: caller.apiKey.name } : {}),
});

/** What resolves a request's credentials and counts them against their rate limits. */
export interface CallerCheck {
  accounts: AccountService;
  apiKeys: ApiKeyService;
  perToken: RateLimiter;
}

export interface AppState {
  auth: Caller;
  /** When the request reached us: the timestamp window is measured against it, not against our own delays. */
  receivedAt: number;
  /** Which of the contract's open doors are open to this request. */
  exposure: RequestExposure;
}

/**
 * `X-Timestamp` (Unix ms) must be within `windowMs` of the server clock when the request arrived: a replay is refused.
 * With `optionalFor`, a request whose caller it names may leave it out (one it sends is still checked).
 */
export function requireTimestamp(
  windowMs: number,
  now: () => number = Date.now,
  optionalFor?: (caller: Caller | undefined) => boolean,
): Middleware<Partial<AppState>> {
  return async (ctx, next) => {
    const raw = ctx.get('X-Timestamp');
    if (!raw && optionalFor?.(ctx.state.auth)) return next();
    if (!raw) throw unauthorized('X-Timestamp is required');
    if (!/^-?\d{1,16}$/.test(raw)) throw unauthorized('X-Timestamp must be Unix time in milliseconds (an integer)');
    const skew = Number(raw) - (ctx.state.receivedAt ?? now());
    if (Math.abs(skew) > windowMs) {
      throw unauthorized(
        `X-Timestamp is outside the allowed window of ${windowMs} ms (${Math.abs(skew)} ms ${skew < 0 ? 'behind' : 'ahead of'} the server clock)`,
      );
    }
    await next();
  };
}

/**
 * Resolves the request's credentials to its caller in `ctx.state.auth`, counted against its rate limit. An API key
 * scoped to less than all its role allows is refused (403) unless `keyScope` is its scope.
 */
export function authenticate(check: CallerCheck, keyScope?: ApiKeyScope): Middleware<AppState> {
  return async (ctx, next) => {
    const caller = identifyCaller(check, ctx.get('X-Token'), ctx.get('Authorization'), keyScope);
    if (!caller) throw unauthorized('X-Token is required');
    ctx.state.auth = caller;
    await next();
  };
}

/**
 * The caller behind `X-Token` (a session's token, as the contract sends it) or `Authorization: Bearer <API key>`,
 * counted against its rate limit; undefined when neither is given. A key of a narrower scope than `all` is refused
 * where `keyScope` (the one scope besides `all` that the route or stream takes) is not its scope.
 */
export function identifyCaller(
  check: CallerCheck,
  token: string,
  authorization: string,
  keyScope?: ApiKeyScope,
): Caller | undefined {
  let caller: Caller;
  // Another scheme (a proxy's Basic auth passed on) is not ours to judge: the token decides, as the contract says.
  const bearer = /^Bearer(?: +(\S*))?\s*$/i.exec(authorization);
  if (bearer) {
    if (token) throw unauthorized('send either X-Token or an API key in Authorization, not both');
    caller = check.apiKeys.authenticate(bearer[1] ?? '');
  } else if (token) caller = check.accounts.authenticate(token);
  else return undefined;
  countRequest(check.perToken, caller);
  if (viaApiKey(caller) && caller.apiKey.scope !== 'all' && caller.apiKey.scope !== keyScope) {
    const { name, scope } = caller.apiKey;
    throw forbidden(`API key ${name} has the ${scope} scope: it may be used for ${API_KEY_SCOPE_RULES[scope]}`);
  }
  return caller;
}

/** True for a request made with an API key of this scope. */
const keyOfScope = (scope: ApiKeyScope) => (caller: Caller | undefined) =>
  caller !== undefined && viaApiKey(caller) && caller.apiKey.scope === scope;

/**
 * Counts one request (or stream upgrade) against its credential's limit: a session's token has the per-token
 * limit, an API key its own. Past it, 429 until the window ends.
 */
function countRequest(perToken: RateLimiter, caller: Caller): void {
  const wait = viaApiKey(caller)
    ? perToken.hit(`apiKey:${caller.apiKey.id}`, caller.apiKey.ratePerMinute ?? undefined)
    : perToken.hit(caller.session.id);
  if (wait > 0) {
    throw tooManyRequests(
      `too many requests for this ${viaApiKey(caller) ? 'API key' : 'token'}, slow down`,
      wait / 1000,
    );
  }
}

export function requireRole(minimum: UserType): Middleware<AppState> {
  return async (ctx, next) => {
    if (!hasRole(ctx.state.auth.user.type, minimum)) {
      throw forbidden(`this needs the ${minimum} role${minimum === 'superuser' ? '' : ' or higher'}`);
    }
    await next();
  };
}

/** Counts every request from the client's IP; past the limit the IP gets 429 until its window ends. */
export function limitByIp(limiter: RateLimiter, what: string): Middleware {
  return async (ctx, next) => {
    const wait = limiter.hit(ctx.ip);
    if (wait > 0) throw tooManyRequests(`too many ${what} attempts from this address, try again later`, wait / 1000);
    await next();
  };
}

/**
 * Who may call a route: anyone, anyone with a fresh `X-Timestamp`, or a caller holding at least this role (a live
 * session, or an API key: a key's request carries `X-Timestamp` like any other, as the contract has every request do,
 * except where a route takes a key scoped to it alone: see AccessGuards).
 */
export type Access = 'public' | 'timestamp' | UserType;

/**
 * The checks that enforce an access level, in the order they run. `keyScope`: an API key of that scope (besides
 * `all`) may call the route too, and without `X-Timestamp` (see the metrics scope in API_KEY_SCOPES).
 */
export type AccessGuards = (access: Access, keyScope?: ApiKeyScope) => Middleware<AppState>[];

/** Builds each check once; every route of the app takes its guards from here. */
export function accessGuards(windowMs: number, check: CallerCheck): AccessGuards {
  const timestamp = requireTimestamp(windowMs);
  const session = authenticate(check);
  const roles = new Map<UserType, Middleware<AppState>>();
  const scoped = new Map<ApiKeyScope, Middleware<AppState>[]>();
  return (access, keyScope) => {
    if (access === 'public') return [];
    if (access === 'timestamp') return [timestamp];
    // Checked at run time too: a route must never be defined with a level that means nothing.
    if (!isUserType(access)) throw new Error(`unknown access level: ${String(access)}`);
    if (!roles.has(access)) roles.set(access, requireRole(access));
    if (keyScope === undefined || keyScope === 'all') return [timestamp, session, roles.get(access)!];
    // The credential first: whether X-Timestamp may be left out depends on it.
    if (!scoped.has(keyScope))
      scoped.set(keyScope, [authenticate(check, keyScope), requireTimestamp(windowMs, Date.now, keyOfScope(keyScope))]);
    return [...scoped.get(keyScope)!, roles.get(access)!];
  };
}
