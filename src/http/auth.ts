import type { Middleware } from 'koa';
import type { AccountService, Authenticated } from '../accounts/account-service.js';
import { hasRole, isUserType, type UserType } from '../accounts/rules.js';
import { forbidden, tooManyRequests, unauthorized } from '../errors.js';
import type { RequestExposure } from './exposure.js';
import type { RateLimiter } from './rate-limiter.js';

export interface AppState {
  auth: Authenticated;
  /** When the request reached us: the timestamp window is measured against it, not against our own delays. */
  receivedAt: number;
  /** Which of the contract's open doors are open to this request. */
  exposure: RequestExposure;
}

/** `X-Timestamp` (Unix ms) must be within `windowMs` of the server clock when the request arrived: a replay is refused. */
export function requireTimestamp(windowMs: number, now: () => number = Date.now): Middleware<Partial<AppState>> {
  return async (ctx, next) => {
    const raw = ctx.get('X-Timestamp');
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

/** Resolves `X-Token` to a live session in `ctx.state.auth`, then counts the request against the token's limit. */
export function authenticate(accounts: AccountService, perToken: RateLimiter): Middleware<AppState> {
  return async (ctx, next) => {
    const token = ctx.get('X-Token');
    if (!token) throw unauthorized('X-Token is required');
    ctx.state.auth = accounts.authenticate(token);
    countTokenRequest(perToken, ctx.state.auth);
    await next();
  };
}

/** Counts one request (or stream upgrade) of a session against its token's limit; past it, 429 until the window ends. */
export function countTokenRequest(perToken: RateLimiter, auth: Authenticated): void {
  const wait = perToken.hit(auth.session.id);
  if (wait > 0) throw tooManyRequests('too many requests for this token, slow down', wait / 1000);
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

/** Who may call a route: anyone, anyone with a fresh `X-Timestamp`, or a live session holding at least this role. */
export type Access = 'public' | 'timestamp' | UserType;

/** The checks that enforce an access level, in the order they run. */
export type AccessGuards = (access: Access) => Middleware<AppState>[];

/** Builds each check once; every route of the app takes its guards from here. */
export function accessGuards(windowMs: number, accounts: AccountService, perToken: RateLimiter): AccessGuards {
  const timestamp = requireTimestamp(windowMs);
  const session = authenticate(accounts, perToken);
  const roles = new Map<UserType, Middleware<AppState>>();
  return (access) => {
    if (access === 'public') return [];
    if (access === 'timestamp') return [timestamp];
    // Checked at run time too: a route must never be defined with a level that means nothing.
    if (!isUserType(access)) throw new Error(`unknown access level: ${String(access)}`);
    if (!roles.has(access)) roles.set(access, requireRole(access));
    return [timestamp, session, roles.get(access)!];
  };
}
