import { resolve } from 'node:path';
import { LOG_FORMATS, type LogFormat } from '../log/pretty-line.js';
import { DEFAULTS } from '../settings/defaults.js';
import { DAEMON_NICE } from '../system/priority.js';

/** What the daemon runs with, resolved from flags, then the environment, then settings.toml, then defaults. */
export interface DaemonOptions {
  dataDir: string;
  host: string;
  port: number;
  adminUser: string;
  adminPassword: string | undefined;
  /** Token lifetime (the contract's 1 hour); TUNNELWARD_TOKEN_TTL_MS shortens it for tests. */
  tokenTtlMs: number;
  /** Rate-limit window (the contract's 1 minute); TUNNELWARD_RATE_WINDOW_MS shortens it for tests. */
  rateWindowMs: number;
  /** argon2's memory cost per password hash, in KiB. */
  hashMemoryKiB: number;
  /** The database journal's size past which a snapshot is written; TUNNELWARD_DB_JOURNAL_BYTES changes it. */
  databaseJournalBytes: number;
  /** The daemon's nice value above its tunnels' (src/system/priority.ts); TUNNELWARD_DAEMON_NICE changes it. */
  daemonNice: number;
}

/** Flags of `serve`, as given on the command line. */
export interface ServeFlags {
  dataDir?: string;
  host?: string;
  port?: string;
  tlsCert?: string;
  tlsKey?: string;
  logFormat?: string;
}

export function parsePort(value: string, from: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) {
    throw new Error(
      `${from} must be a port number from 0 to 65535 (0 picks a free port), not ${JSON.stringify(value)}`,
    );
  }
  return Number(value);
}

/** `--log-format`, then TUNNELWARD_LOG_FORMAT, then pretty on a terminal and JSON anywhere else (a journal, a pipe). */
export function resolveLogFormat(flags: ServeFlags, env: NodeJS.ProcessEnv, isTTY: boolean): LogFormat {
  const [value, from] = flags.logFormat
    ? [flags.logFormat, '--log-format']
    : [env.TUNNELWARD_LOG_FORMAT, 'TUNNELWARD_LOG_FORMAT'];
  if (!value) return isTTY ? 'pretty' : 'json';
  if (!(LOG_FORMATS as readonly string[]).includes(value))
    throw new Error(`${from} must be ${LOG_FORMATS.join(' or ')}, not ${JSON.stringify(value)}`);
  return value as LogFormat;
}

/** The data dir comes from flags or the environment only: settings.toml lives inside it. */
export function resolveDataDir(flags: ServeFlags, env: NodeJS.ProcessEnv): string {
  return resolve(flags.dataDir ?? env.TUNNELWARD_DATA_DIR ?? DEFAULTS.dataDir);
}

function positiveMs(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  if (!/^\d{1,10}$/.test(value) || Number(value) < 1)
    throw new Error(`${name} must be a positive number of milliseconds`);
  return Number(value);
}

function journalBytes(value: string | undefined): number {
  if (value === undefined || value === '') return DEFAULTS.databaseJournalBytes;
  if (!/^\d{1,10}$/.test(value) || Number(value) > 1024 * 1024 * 1024)
    throw new Error(
      'TUNNELWARD_DB_JOURNAL_BYTES must be a number of bytes from 0 (a snapshot for every write) to 1 GiB',
    );
  return Number(value);
}

function daemonNice(value: string | undefined): number {
  if (value === undefined || value === '') return DAEMON_NICE;
  if (!/^-?\d{1,2}$/.test(value) || Number(value) < -20 || Number(value) > 19)
    throw new Error('TUNNELWARD_DAEMON_NICE must be a nice value from -20 to 19');
  return Number(value);
}

function hashMemory(value: string | undefined): number {
  if (value === undefined || value === '') return DEFAULTS.passwordHashMemoryKiB;
  if (!/^\d{1,8}$/.test(value) || Number(value) < 8192 || Number(value) > 4_194_304) {
    throw new Error('TUNNELWARD_ARGON2_MEMORY_KIB must be a number of KiB from 8192 (8 MiB) to 4194304 (4 GiB)');
  }
  return Number(value);
}

export function resolveOptions(
  flags: ServeFlags,
  env: NodeJS.ProcessEnv,
  settings: { ListenAddr: string; ListenPort: string },
): DaemonOptions {
  const port =
    flags.port !== undefined
      ? parsePort(flags.port, '--port')
      : env.TUNNELWARD_PORT
        ? parsePort(env.TUNNELWARD_PORT, 'TUNNELWARD_PORT')
        : parsePort(settings.ListenPort, 'ListenPort');
  return {
    dataDir: resolveDataDir(flags, env),
    host: flags.host ?? (env.TUNNELWARD_HOST || settings.ListenAddr),
    port,
    adminUser: env.TUNNELWARD_ADMIN_USER || 'admin',
    adminPassword: env.TUNNELWARD_ADMIN_PASSWORD || undefined,
    tokenTtlMs: positiveMs(env.TUNNELWARD_TOKEN_TTL_MS, 'TUNNELWARD_TOKEN_TTL_MS', DEFAULTS.tokenTtlMs),
    rateWindowMs: positiveMs(env.TUNNELWARD_RATE_WINDOW_MS, 'TUNNELWARD_RATE_WINDOW_MS', DEFAULTS.rateLimitWindowMs),
    hashMemoryKiB: hashMemory(env.TUNNELWARD_ARGON2_MEMORY_KIB),
    databaseJournalBytes: journalBytes(env.TUNNELWARD_DB_JOURNAL_BYTES),
    daemonNice: daemonNice(env.TUNNELWARD_DAEMON_NICE),
  };
}
