import pino from 'pino';
import { createApp, listRoutes, type AppDeps } from '../../src/http/app.js';
import type { RouteInfo } from '../../src/http/resource-router.js';
import { DEFAULTS } from '../../src/settings/defaults.js';

/**
 * The routes an app holds. Building the routers calls none of the services they use, so none is given: the deps are
 * partial so that this stays true to `createApp` as its dependencies grow.
 */
export function appRoutes(): RouteInfo[] {
  const inert = {} as never;
  const deps: Partial<AppDeps> = {
    accounts: inert,
    apiKeys: inert,
    supervisor: inert,
    settings: inert,
    limits: { login: inert, register: inert, perToken: inert },
    info: inert,
    dataDir: '',
    timestampWindowMs: DEFAULTS.timestampWindowMs,
    jsonLimit: DEFAULTS.jsonLimit,
    jsonMaxDepth: DEFAULTS.jsonMaxDepth,
    log: pino({ enabled: false }),
    faults: inert,
    restart: () => {},
    webhookStats: inert,
    logTotals: inert,
  };
  return listRoutes(createApp(deps as AppDeps));
}
