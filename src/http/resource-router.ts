import Router, { type RouterMiddleware } from '@koa/router';
import type { Context, Middleware } from 'koa';
import type { z } from 'zod';
import { AppError, notFound } from '../errors.js';
import type { ApiKeyScope } from '../accounts/rules.js';
import type { Access, AccessGuards, AppState } from './auth.js';
import { readInput, type Input, type Operation } from './operation.js';

export type RouteMethod = 'GET' | 'POST';

/** One route as its router holds it: the path it matches exactly and the access level that guards it. */
export interface RouteInfo {
  method: RouteMethod;
  path: string;
  access: Access;
}

type Handler = RouterMiddleware<AppState>;

/** A route's last handler: it gets the request's input as the operation's schemas parsed it. */
export type InputHandler<Body extends z.ZodType, Query extends z.ZodObject> = (
  ctx: Context & { state: AppState },
  input: Input<Body, Query>,
) => Promise<void>;

/**
 * The router of one resource. A route is defined together with its access level, and its guards run before
 * its handlers, so no route exists without its check and no check depends on a path prefix matching the same
 * way as the route does.
 */
export class ResourceRouter {
  readonly routes: RouteInfo[] = [];
  /** The operations declared on this router, as `route` took them. */
  readonly operations: Operation[] = [];
  private readonly router: Router<AppState>;

  constructor(
    private readonly prefix: string,
    private readonly guards: AccessGuards,
  ) {
    // path-to-regexp ignores case and a trailing slash by default; the contract's paths are exact.
    this.router = new Router<AppState>({ prefix, sensitive: true, strict: true });
  }

  get(path: string, access: Access, ...handlers: Handler[]): this {
    return this.define('GET', path, access, handlers);
  }

  post(path: string, access: Access, ...handlers: Handler[]): this {
    return this.define('POST', path, access, handlers);
  }

  /**
   * The route of a declared operation: its access guards, then `before` (a rate limit, say), then the input checked
   * by the operation's schemas (a 400 naming the field otherwise), then the handler with that input.
   */
  route<Body extends z.ZodType, Query extends z.ZodObject>(
    op: Operation<Body, Query>,
    handler: InputHandler<Body, Query>,
    ...before: Handler[]
  ): this {
    if (!op.path.startsWith(this.prefix)) throw new Error(`${op.path} is not under ${this.prefix}`);
    const run: Handler = async (ctx) => handler(ctx as Context & { state: AppState }, readInput(op, ctx as Context));
    this.operations.push(op as Operation);
    const method = op.method === 'get' ? 'GET' : 'POST';
    return this.define(method, op.path.slice(this.prefix.length), op.access, [...before, run], op.keyScope);
  }

  private define(method: RouteMethod, path: string, access: Access, handlers: Handler[], keyScope?: ApiKeyScope): this {
    if (handlers.length === 0) throw new Error(`route ${method} ${path} has no handler`);
    this.router.register(path, [method], [...(this.guards(access, keyScope) as Handler[]), ...handlers]);
    // The path as the router holds it, prefix applied: what the route list reports is what is matched.
    const layer = this.router.stack.at(-1)!;
    this.routes.push({ method, path: String(layer.path), access });
    return this;
  }

  /** The methods served on `path`, by the same matching that dispatches requests; empty when none. */
  methodsAt(path: string): string[] {
    return this.router.match(path, 'GET').path.flatMap((layer) => layer.methods);
  }

  middleware(): Middleware<AppState> {
    return this.router.routes() as Middleware<AppState>;
  }
}

/**
 * Decides 404, 405 and 426 before the body is read: a path no router serves is unknown, a method its routes do not
 * take is refused with the ones they do in `Allow`, and a stream's path without an upgrade says how to connect.
 */
export function routeGate(routers: ResourceRouter[], streamPaths: readonly string[] = []): Middleware {
  return async (ctx, next) => {
    // A stream's path reached here without an upgrade (the server hands upgrades to the streams before Koa).
    if (streamPaths.includes(ctx.path)) {
      if (ctx.method !== 'GET')
        throw new AppError(405, `${ctx.method} is not allowed on ${ctx.path}`, { Allow: 'GET' });
      throw new AppError(426, `${ctx.path} is a WebSocket stream: connect with Upgrade: websocket`, {
        Upgrade: 'websocket',
      });
    }
    const allowed = new Set(routers.flatMap((router) => router.methodsAt(ctx.path)));
    if (allowed.size === 0) throw notFound(`no such endpoint: ${ctx.method} ${ctx.path}`);
    if (!allowed.has(ctx.method)) {
      throw new AppError(405, `${ctx.method} is not allowed on ${ctx.path}`, { Allow: [...allowed].sort().join(', ') });
    }
    await next();
  };
}
