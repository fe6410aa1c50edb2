import Koa from 'koa';
import type { Logger } from 'pino';
import type { InstanceSupervisor } from '../../actors/instance-supervisor.js';
import type { AccountService } from '../accounts/account-service.js';
import type { ApiKeyService } from '../accounts/api-key-service.js';
import type { SettingsStore } from '../settings/settings-store.js';
import type { RuntimeFaults } from '../system/self-check.js';
import type { SoftwareInfo } from '../system/software-info.js';
import type { AuditTrail } from '../audit/audit-trail.js';
import { auditRequests } from './audit.js';
import { clientAddress, type TrustedProxies } from './client-address.js';
import { apiReferenceAssets } from './api-reference.js';
import { consoleAssets } from './console-assets.js';
import { envelope, type ReplyRedactor } from './envelope.js';
import { requestExposure, type Exposure } from './exposure.js';
import { checkJsonBody, parseJsonBody, requireJsonBody } from './json-body.js';
import { DEFAULTS } from '../settings/defaults.js';
import { STREAM_PATHS } from './log-streams.js';
import type { RateLimiter } from './rate-limiter.js';
import { accountRoutes } from './routes/accounts.js';
import { apiKeyRoutes } from './routes/api-keys.js';
import { applyDesiredState, applyRoutes } from './routes/apply.js';
import { instanceRoutes } from './routes/instances.js';
import { metricsRoutes, type RequestCounts } from './routes/metrics.js';
import { openApiRoutes } from './routes/openapi.js';
import { proxyRoutes } from './routes/proxies.js';
import { sessionRoutes } from './routes/sessions.js';
import { settingsRoutes } from './routes/settings.js';
import { systemRoutes } from './routes/system.js';
import { userRoutes } from './routes/users.js';
import { accessGuards, type AccessGuards, type AppState } from './auth.js';
import { routeGate, type ResourceRouter, type RouteInfo } from './resource-router.js';

export interface RateLimits {
  login: RateLimiter;
  register: RateLimiter;
  perToken: RateLimiter;
}

export interface AppDeps {
  accounts: AccountService;
  apiKeys: ApiKeyService;
  supervisor: InstanceSupervisor;
  settings: SettingsStore;
  limits: RateLimits;
  info: SoftwareInfo;
  dataDir: string;
  timestampWindowMs: number;
  jsonLimit: string;
  /** Containers a JSON body may nest; deeper ones are refused before any route reads them. */
  jsonMaxDepth: number;
  log: Logger;
  /** Faults the daemon keeps serving through, for the self-check. */
  faults: RuntimeFaults;
  /** Restarts the daemon in place; called once the reply to /system/restart has been sent or its client has gone. */
  restart: () => void;
  /** The clock requests are timed by (the timestamp window); tests inject their own. */
  now?: () => number;
  /** When this daemon started (Unix ms), for its uptime; the start of this process when not given. */
  startedAt?: number;
  /** For the metrics: webhook outcomes and tunnel output so far. */
  webhookStats: () => { published: number; delivered: number; failed: number; dropped: number };
  logTotals: () => { lines: number; bytes: number };
  /** What is open given where the daemon listens, whether a proxy is in front, and where a request came from. */
  exposure: Exposure;
  /** Whose X-Forwarded-For is believed. */
  trustedProxies: TrustedProxies;
  /** Where each state-changing request is recorded. */
  audit: AuditTrail;
  /** The built web console served at `/` (default: dist/console); none is served when it does not exist. */
  consoleDir?: string;
  /** Masks every known secret in every reply. */
  redactor?: ReplyRedactor;
}

/** What every route module receives: the app's dependencies and the checks behind each access level. */
export interface RouteDeps extends AppDeps {
  guards: AccessGuards;
}

const routeLists = new WeakMap<Koa<AppState>, RouteInfo[]>();

/** Every HTTP route of an app built by `createApp`, as its routers hold them. */
export function listRoutes(app: Koa<AppState>): RouteInfo[] {
  return [...(routeLists.get(app) ?? [])];
}

/** Builds the Koa app from its dependencies; the caller owns the HTTP server. */
export function createApp(deps: AppDeps): Koa<AppState> {
  const app = new Koa<AppState>();
  const now = deps.now ?? Date.now;
  const httpLog = deps.log.child({ component: 'http' });

  app.on('error', (err: Error, ctx?: Koa.Context) => {
    httpLog.error({ err, method: ctx?.method, path: ctx?.path }, 'request failed');
  });

  const requests: RequestCounts = new Map();
  let known = new Set<string>();
  app.use(clientAddress(deps.trustedProxies));
  app.use(requestExposure(deps.exposure));
  app.use(async (ctx, next) => {
    ctx.state.receivedAt = now();
    // Every answer is JSON (or the console's files, typed exactly): never to be sniffed into something else.
    ctx.set('X-Content-Type-Options', 'nosniff');
    const started = performance.now();
    try {
      await next();
    } finally {
      // Counted by declared route: a path that is none is "unmatched", so the labels stay few.
      const route = known.has(`${ctx.method} ${ctx.path}`) ? ctx.path : 'unmatched';
      const key = `${route}|${ctx.status}`;
      requests.set(key, (requests.get(key) ?? 0) + 1);
      // The path only: a query string may carry a token.
      httpLog.debug(
        {
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          ip: ctx.ip,
          ms: Math.round(performance.now() - started),
        },
        'request',
      );
    }
  });
  app.use(auditRequests(deps.audit, now));
  app.use(envelope(deps.redactor));
  // The web console's static files, before the gate that answers 404 for every path no API route serves.
  app.use(consoleAssets(deps.consoleDir));
  // The API reference page (GET /docs/api), public as /openapi.json is.
  app.use(apiReferenceAssets());

  const routeDeps: RouteDeps = {
    ...deps,
    guards: accessGuards(deps.timestampWindowMs, {
      accounts: deps.accounts,
      apiKeys: deps.apiKeys,
      perToken: deps.limits.perToken,
    }),
  };
  const resources = [
    systemRoutes,
    accountRoutes,
    userRoutes,
    sessionRoutes,
    apiKeyRoutes,
    settingsRoutes,
    instanceRoutes,
    applyRoutes,
    proxyRoutes,
    openApiRoutes,
  ];
  const routers: ResourceRouter[] = [
    ...resources.map((routes) => routes(routeDeps)),
    metricsRoutes({ ...routeDeps, requests }),
  ];
  known = new Set(routers.flatMap((router) => router.routes.map((r) => `${r.method} ${r.path}`)));
  routeLists.set(
    app,
    routers.flatMap((router) => router.routes),
  );

  app.use(routeGate(routers, STREAM_PATHS));
  app.use(requireJsonBody);
  app.use(parseJsonBody(deps.jsonLimit, { [applyDesiredState.path]: DEFAULTS.applyJsonLimit }));
  app.use(checkJsonBody(deps.jsonMaxDepth));
  for (const router of routers) app.use(router.middleware());
  return app;
}
