import { join } from 'node:path';

/** Every default of tunnelward, in one place. */
export const DEFAULTS = {
  host: '127.0.0.1',
  port: 7600,
  dataDir: './data',
  /** How long a login token stays valid. */
  tokenTtlMs: 60 * 60 * 1000,
  /** Accepted distance between X-Timestamp and the server clock. */
  timestampWindowMs: 3000,
  rateLimitWindowMs: 60 * 1000,
  /** API keys one user may hold, and the longest lifetime one may be given (none: it never expires). */
  apiKeysPerUser: 100,
  apiKeyMaxLifetimeSecs: 10 * 365 * 24 * 60 * 60,
  /** At most this many argon2 computations at once (each takes 64 MiB); more wait in a bounded queue. */
  passwordHashConcurrency: 2,
  passwordHashQueue: 32,
  /** argon2id's memory cost per hash (its library default); TUNNELWARD_ARGON2_MEMORY_KIB lowers it for small hosts and tests. */
  passwordHashMemoryKiB: 65536,
  /** Largest JSON body accepted by the HTTP API. */
  jsonLimit: '256kb',
  /** Deepest nesting of containers accepted in a JSON body. */
  jsonMaxDepth: 64,
  /** How often expired sessions and idle rate-limit windows are swept. */
  sweepIntervalMs: 60 * 1000,
  /** How long shutdown waits for open HTTP requests before closing their sockets. */
  shutdownGraceMs: 5000,
  /** Log streams: a client may be this far behind for `streamSlowGraceMs`, and never `streamHardBufferedBytes`. */
  streamMaxBufferedBytes: 1024 * 1024,
  streamSlowGraceMs: 5000,
  streamHardBufferedBytes: 8 * 1024 * 1024,
  /** Entries of an instance log replayed to a client that connects. */
  streamReplayLines: 100,
  /** Open streams with a token, and (counted apart) without one. */
  streamMaxClients: 1000,
  streamMaxAnonymousClients: 50,
  streamPingIntervalMs: 30_000,
  /** Webhook events waiting at most (past that they are dropped and counted), and the first retry delay. */
  webhookQueueCapacity: 1000,
  webhookRetryDelayMs: 500,
  /** Events kept for clients of /system/events that reconnect and ask for what they missed (`?since=`). */
  eventHistory: 1000,
  /**
   * The database's journal is folded into a new snapshot past this size: each change costs its own size on disk,
   * plus a share of a whole-database write every this many bytes of changes. TUNNELWARD_DB_JOURNAL_BYTES changes it.
   */
  databaseJournalBytes: 4 * 1024 * 1024,
  /** `service install` waits this long for the daemon it started to answer. */
  serviceStartWaitMs: 30_000,
} as const;

/** Defaults of the persisted settings (`settings.toml`); the keys are the contract's flat names. */
export function defaultSettings(dataDir: string) {
  return {
    ListenAddr: DEFAULTS.host,
    ListenPort: String(DEFAULTS.port),
    TunnelPath: 'frpc',
    InstancePath: join(dataDir, 'instances'),
    Debug: false,
    'Watchdog.Enabled': true,
    'Watchdog.Port': 0,
    /** First restart delay after a crash; doubles with each crash in a row up to BackoffMaxSecs. */
    'Watchdog.BackoffSecs': 1,
    'Watchdog.BackoffMaxSecs': 60,
    /** Crashes in a row before an instance is given up (`failed`). */
    'Watchdog.StartLimit': 5,
    /** Exit codes of a tunnel during its start that mean retrying will not help (frpc: 1, a config error): `failed` at once. */
    'Watchdog.NoRetryExitCodes': [1] as number[],
    /** Uptime after which the crash count starts again from zero. */
    'Watchdog.StableSecs': 60,
    /** A start succeeds once the tunnel has stayed up this long. */
    'Instance.StartSecs': 1,
    /** After SIGTERM, wait this long before SIGKILL. */
    'Instance.StopTimeoutSecs': 10,
    'Notification.Enabled': false,
    'Notification.Method': 'webhook',
    'Webhook.Method': 'POST',
    'Webhook.URL': '',
    'Webhook.Headers': {} as Record<string, string>,
    'Webhook.Body': {} as Record<string, unknown>,
    /** Each delivery attempt gives up after this long. */
    'Webhook.TimeoutSecs': 5,
    /** Attempts after the first one, on network errors and 5xx answers (never on 4xx). */
    'Webhook.Retries': 3,
    /** An instance's log file is rotated (renamed to .1, .2, ...) before it grows past this many bytes. */
    'Log.MaxBytes': 10 * 1024 * 1024,
    /** A proxy's or a tunnel's connection change is announced (proxy.up/down, instance.connected/disconnected) once it has held this long. */
    'Alerts.DebounceSecs': 5,
    /**
     * How often each running tunnel's proxy status is read when its log says nothing new: a safety net, since frpc
     * logs every login, lost connection, proxy start and failure, and those are read at once.
     */
    'Status.PollSecs': 300,
    /** Rotated log files kept per instance. */
    'Log.Files': 3,
    /** auto: systemd when /run/systemd/system exists, windows on Windows, else tunnelward runs tunnels itself. */
    InitSystem: 'auto',
    'Systemd.UnitDir': '/etc/systemd/system',
    'Systemd.Systemctl': 'systemctl',
    'Systemd.Journalctl': 'journalctl',
    'InitD.ScriptDir': '/etc/init.d',
    'InitD.UpdateRcD': 'update-rc.d',
    'InitD.PidDir': '/run',
    'InitD.LogDir': '/var/log',
    'Windows.Schtasks': 'schtasks',
    'RateLimit.Login': 5,
    'RateLimit.PerToken': 100,
    /** Self-registrations per minute per IP: its own limit, so that onboarding a few users never meets the login limit. */
    'RateLimit.Register': 30,
    /**
     * The doors the contract opens, kept open on loopback and closed when the daemon listens on any other address
     * ("auto"), unless set to true or false: self-registration through /register, ...
     */
    'Register.Enabled': 'auto' as boolean | 'auto',
    /** ... the system log stream without a token, ... */
    'SystemLog.RequireToken': 'auto' as boolean | 'auto',
    /** ... and a visitor's sight of local addresses and ports, config paths and run-as users. */
    'Visitor.ShowDetails': 'auto' as boolean | 'auto',
    /** HTTPS and WSS with this certificate (PEM, the chain after it) and key; both empty: plain HTTP. */
    'TLS.CertFile': '',
    'TLS.KeyFile': '',
    /** Addresses or CIDRs of reverse proxies whose X-Forwarded-For is believed; nobody else's is. */
    TrustedProxies: [] as string[],
    /** Audit entries older than this are removed, and the oldest past Audit.MaxEntries. */
    'Audit.RetentionDays': 90,
    'Audit.MaxEntries': 20000,
  };
}

export type Settings = ReturnType<typeof defaultSettings>;
export type SettingKey = keyof Settings;
