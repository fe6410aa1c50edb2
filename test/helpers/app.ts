import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { AccountService } from '../../src/accounts/account-service.js';
import { ApiKeyService } from '../../src/accounts/api-key-service.js';
import { PasswordHasher } from '../../src/accounts/password-hasher.js';
import { AuditTrail } from '../../src/audit/audit-trail.js';
import { TrustedProxies } from '../../src/http/client-address.js';
import { Exposure } from '../../src/http/exposure.js';
import { createApp } from '../../src/http/app.js';
import { RateLimiter } from '../../src/http/rate-limiter.js';
import { DEFAULTS } from '../../src/settings/defaults.js';
import { SettingsStore } from '../../src/settings/settings-store.js';
import { Database } from '../../src/storage/database.js';
import { loadSoftwareInfo } from '../../src/system/software-info.js';
import { ADMIN, TEST_HASH_MEMORY_KIB, tempDir, type RequestOptions, type Response } from './daemon.js';

/** A clock that moves only when told to. */
export class FakeClock {
  constructor(private time = Date.UTC(2026, 0, 1)) {}
  now = (): number => this.time;
  advance(ms: number): void {
    this.time += ms;
  }
}

export interface InProcessApp {
  clock: FakeClock;
  url: string;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<Response<T>>;
  login(username?: string, passwd?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * The HTTP app alone, in this process, on the real account service, settings and rate limiters, with time from a
 * fake clock: what the HTTP layer does with tokens, timestamps and limits, without a daemon and without sleeping.
 * Instance routes have no supervisor here.
 */
export async function inProcessApp(
  options: { settingsToml?: string; tokenTtlMs?: number; rateWindowMs?: number } = {},
): Promise<InProcessApp> {
  const dir = await tempDir('tunnelward-app-');
  if (options.settingsToml !== undefined) await writeFile(join(dir, 'settings.toml'), options.settingsToml);
  const clock = new FakeClock();
  const db = await Database.open(join(dir, 'tunnelward.db'));
  const { store: settings } = await SettingsStore.load(dir);
  const accounts = new AccountService(
    db,
    new PasswordHasher(2, 32, TEST_HASH_MEMORY_KIB),
    options.tokenTtlMs ?? DEFAULTS.tokenTtlMs,
    clock.now,
  );
  await accounts.ensureFirstSuperuser(ADMIN.username, ADMIN.passwd);
  const apiKeys = new ApiKeyService(db, accounts, () => settings.value('RateLimit.PerToken'), clock.now);
  const window = options.rateWindowMs ?? DEFAULTS.rateLimitWindowMs;
  const app = createApp({
    accounts,
    apiKeys,
    supervisor: {} as never,
    settings,
    limits: {
      login: new RateLimiter(() => settings.value('RateLimit.Login'), window, clock.now),
      register: new RateLimiter(() => settings.value('RateLimit.Register'), window, clock.now),
      perToken: new RateLimiter(() => settings.value('RateLimit.PerToken'), window, clock.now),
    },
    info: loadSoftwareInfo(),
    dataDir: dir,
    timestampWindowMs: DEFAULTS.timestampWindowMs,
    jsonLimit: DEFAULTS.jsonLimit,
    jsonMaxDepth: DEFAULTS.jsonMaxDepth,
    log: pino({ enabled: false }),
    faults: { database: () => undefined, instanceLogs: () => [], tls: () => undefined, openDoors: () => [] },
    exposure: new Exposure(
      '127.0.0.1',
      () => settings.get(),
      () => false,
    ),
    trustedProxies: new TrustedProxies(() => settings.value('TrustedProxies')),
    audit: new AuditTrail(db, pino({ enabled: false }), () => ({ retentionDays: 90, maxEntries: 20000 })),
    webhookStats: () => ({ published: 0, delivered: 0, failed: 0, dropped: 0 }),
    logTotals: () => ({ lines: 0, bytes: 0 }),
    restart: () => {},
    now: clock.now,
  });
  const server: Server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const request = async <T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<Response<T>> => {
    const headers: Record<string, string> = { ...opts.headers };
    const timestamp = opts.timestamp === undefined ? clock.now() : opts.timestamp;
    if (timestamp !== null) headers['X-Timestamp'] = String(timestamp);
    if (opts.token) headers['X-Token'] = opts.token;
    let body: string | undefined;
    if (opts.body !== undefined) {
      headers['Content-Type'] ??= 'application/json';
      body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    }
    const res = await fetch(url + path, { method, headers, body });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Response<T>['body'] };
  };
  return {
    clock,
    url,
    request,
    async login(username = ADMIN.username, passwd = ADMIN.passwd) {
      const res = await request('POST', '/login', { body: { username, passwd } });
      if (!res.body.success) throw new Error(`login of ${username} failed: ${res.status} ${res.body.message}`);
      return res.body.data.token;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      apiKeys.close();
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
