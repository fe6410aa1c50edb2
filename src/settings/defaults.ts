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
  /** Largest desired state an apply accepts (a thousand instances with a few proxies each is about 1 MB). */
  applyJsonLimit: '16mb',
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
