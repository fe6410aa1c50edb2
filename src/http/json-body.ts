import { json } from 'co-body';
import type { Middleware } from 'koa';
import { AppError, badRequest } from '../errors.js';
import { isReservedKey, reservedKeyMessage } from '../util/reserved-keys.js';

interface Visit {
  value: unknown;
  /** Containers above this value: the body itself is at depth 0. */
  depth: number;
  parent?: Visit;
  key?: string | number;
}

/** Where a value sits in the body, e.g. `Webhook.Body.items[2]`; walked back from the value, only on failure. */
function locate(visit: Visit): string {
  const keys: Array<string | number> = [];
  for (let v: Visit | undefined = visit; v?.key !== undefined; v = v.parent) keys.push(v.key);
  return keys
    .reverse()
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? key : `.${key}`))
    .join('');
}

/**
 * What is wrong with a parsed JSON body, if anything: nesting deeper than `maxDepth` containers, a string or
 * key that is not well-formed UTF-16 (a lone surrogate, which JSON's `\ud800` escape can produce), or a key that
 * names what every object has (`constructor`, `toString`, ...). Walked with an explicit stack: a body deep enough
 * to matter would overflow a recursive walk.
 */
export function jsonBodyProblem(body: unknown, maxDepth: number): string | undefined {
  const pending: Visit[] = [{ value: body, depth: 0 }];
  while (pending.length > 0) {
    const visit = pending.pop()!;
    const { value } = visit;
    if (typeof value === 'string') {
      if (!value.isWellFormed()) {
        return `request body has invalid Unicode (a lone surrogate) in the string at ${locate(visit) || 'its top level'}`;
      }
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (visit.depth >= maxDepth) return 'request body is nested too deeply';
    const depth = visit.depth + 1;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push({ value: value[i], depth, parent: visit, key: i });
      continue;
    }
    for (const [key, child] of Object.entries(value)) {
      if (!key.isWellFormed()) {
        const where = locate(visit);
        return `request body has invalid Unicode (a lone surrogate) in a key ${where ? `inside ${where}` : 'at its top level'}`;
      }
      if (isReservedKey(key)) {
        const where = locate(visit);
        return reservedKeyMessage('request body', key, where ? `inside ${where}` : 'at its top level');
      }
      pending.push({ value: child, depth, parent: visit, key });
    }
  }
  return undefined;
}

/**
 * A request that carries a body must carry JSON: anything else would silently read as an empty request. A body is
 * carried with a length above zero or in chunks (Transfer-Encoding, no length).
 */
export const requireJsonBody: Middleware = async (ctx, next) => {
  const carriesBody = Boolean(ctx.request.length) || ctx.get('Transfer-Encoding') !== '';
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD' && carriesBody && !ctx.request.is('json')) {
    throw new AppError(415, 'request body must be JSON (Content-Type: application/json)');
  }
  await next();
};

const PARSED_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** The Content-Encodings the parser reads (co-body's, through inflation). */
const ENCODINGS = new Set(['identity', 'gzip', 'deflate', 'br']);

/**
 * Parses a JSON body into `ctx.request.body`: an object or array only (strict), at most `limit` (by path, `larger`) once decompressed
 * (co-body's errors carry their status: 400 for invalid JSON, 413 over the limit). A body compressed as its
 * Content-Encoding says (gzip, deflate, br) is read; one that says another is refused before it is read, one whose
 * data is not what it says when the decompressor fails (its error has no status).
 */
export function parseJsonBody(limit: string, larger: Readonly<Record<string, string>> = {}): Middleware {
  return async (ctx, next) => {
    if (PARSED_METHODS.has(ctx.method) && ctx.request.is('json')) {
      // Content codings are case-insensitive (RFC 9110, 8.4.1): GZIP is gzip, and the decompressor is told so.
      const encoding = (ctx.get('Content-Encoding') || 'identity').trim().toLowerCase();
      if (!ENCODINGS.has(encoding)) {
        throw new AppError(415, `Content-Encoding ${encoding} is not supported (gzip, deflate, br or none)`);
      }
      if (ctx.req.headers['content-encoding'] !== undefined) ctx.req.headers['content-encoding'] = encoding;
      try {
        (ctx.request as { body?: unknown }).body = await json(ctx, { limit: larger[ctx.path] ?? limit, strict: true });
      } catch (err) {
        const { code } = err as NodeJS.ErrnoException;
        // zlib's codes (Z_DATA_ERROR, Z_BUF_ERROR) and brotli's (ERR__ERROR_FORMAT_..., ERR_BROTLI_...).
        if (code !== undefined && /^(Z_|ERR__ERROR|ERR_BROTLI)/.test(code)) {
          throw badRequest(`request body is not valid ${encoding} data`);
        }
        throw err;
      }
    }
    await next();
  };
}

/** Refuses a parsed JSON body that is nested too deeply, holds invalid Unicode or a reserved key, before any route reads it. */
export function checkJsonBody(maxDepth: number): Middleware {
  return async (ctx, next) => {
    const problem = jsonBodyProblem((ctx.request as { body?: unknown }).body, maxDepth);
    if (problem) throw badRequest(problem);
    await next();
  };
}
