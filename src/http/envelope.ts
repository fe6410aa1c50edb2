import { STATUS_CODES } from 'node:http';
import type { Context, Middleware } from 'koa';
import { AppError } from '../errors.js';
import { reservedKeyMessage } from '../util/reserved-keys.js';

/** The success envelope; `data` is left out when the operation has none. */
export function reply(ctx: Context, message: string, data?: unknown): void {
  ctx.status = 200;
  ctx.body = data === undefined ? { success: true, message } : { success: true, message, data };
}

/** Replies that carry secrets on purpose (a superuser's export asked for unmasked): left as they are. */
const carryingSecrets = new WeakSet<Context>();

/** The success envelope for a reply whose secrets are its point; every other reply has known secrets masked. */
export function replyWithSecrets(ctx: Context, message: string, data: unknown): void {
  reply(ctx, message, data);
  carryingSecrets.add(ctx);
}

/** What masks known secrets in a reply: its JSON, as an object or as text. */
export interface ReplyRedactor {
  redactJson(text: string): string;
  redactValue<T>(value: T): T;
}

/** A whole failure response in the envelope, for a socket that Koa does not answer (a refused upgrade, a parse error). */
export function rawFailure(status: number, message: string, headers: Record<string, string> = {}): string {
  const body = JSON.stringify({ success: false, message });
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n${extra.join('')}Connection: close\r\n\r\n${body}`
  );
}

/** Errors thrown by co-body and other libraries carry a status but a message we did not write. */
function libraryErrorMessage(err: { status?: number; type?: string; message?: string }): string | undefined {
  if (err.status === 413) return 'request body is too large';
  if (err.status === 415) return 'request body must be application/json';
  // The JSON parser refuses `__proto__` itself, before our check of the body's keys can say where it is.
  if (err.status === 400 && err.message === 'Object contains forbidden prototype property') {
    return reservedKeyMessage('request body', '__proto__', 'in an object');
  }
  // The body's reading, as raw-body says it went wrong (its `type`).
  if (err.type === 'request.aborted') return 'the request was aborted before its body was read whole';
  if (err.type === 'request.size.invalid') return 'the request body is not as long as its Content-Length says';
  if (err.status === 400) return 'request body is not valid JSON';
  return undefined;
}

/**
 * The first middleware: every response, error or not, leaves in the envelope, with every known secret masked (a
 * failure's message may quote a tunnel's log). Errors that are not AppErrors become a 500 with a generic message
 * and are handed to `app.on('error')`, the one place they are logged.
 */
export function envelope(redactor?: ReplyRedactor): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.body === undefined && ctx.status === 404) {
        ctx.status = 404;
        ctx.body = { success: false, message: `no such endpoint: ${ctx.method} ${ctx.path}` };
      }
    } catch (thrown) {
      // Whatever was thrown (null, a string) is answered in the envelope and logged as an Error.
      const err = thrown instanceof Error ? thrown : new Error(`a non-error was thrown: ${typeof thrown}`);
      const e = err as Error & { status?: number; expose?: boolean };
      let status = 500;
      let message = 'internal error';
      if (e instanceof AppError) {
        status = e.status;
        message = e.message;
        ctx.set(e.headers);
      } else {
        const known = typeof e.status === 'number' && e.status < 500 ? libraryErrorMessage(e) : undefined;
        if (known) {
          status = e.status!;
          message = known;
        }
      }
      ctx.status = status;
      ctx.body = { success: false, message };
      if (status >= 500) ctx.app.emit('error', err, ctx);
    }
    if (redactor && !carryingSecrets.has(ctx)) {
      const body: unknown = ctx.body;
      const masked =
        typeof body === 'string'
          ? ctx.response.is('json')
            ? redactor.redactJson(body)
            : body
          : redactor.redactValue(body);
      if (masked !== body) ctx.body = masked;
    }
  };
}
