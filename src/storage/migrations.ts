/**
 * Schema migrations, applied in order; `PRAGMA user_version` records the last one applied.
 * Append new migrations; never edit one that has shipped.
 */
export const MIGRATIONS: readonly string[] = [
  // 1: accounts and sessions
  `
  CREATE TABLE users (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    username    TEXT    NOT NULL UNIQUE COLLATE NOCASE,
    passwd_hash TEXT    NOT NULL,
    type        TEXT    NOT NULL CHECK (type IN ('superuser', 'admin', 'visitor')),
    created_at  INTEGER NOT NULL
  );
  CREATE TABLE sessions (
    id         TEXT    PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token_hash TEXT    NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    expire_at  INTEGER NOT NULL
  );
  CREATE INDEX sessions_user ON sessions(user_id);
  CREATE INDEX sessions_expire ON sessions(expire_at);
  CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  `,
  // 2: tunnel-client instances; pid and start time identify a running process across our own restarts
  `
  CREATE TABLE instances (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT    NOT NULL UNIQUE,
    boot_at_start INTEGER NOT NULL DEFAULT 0,
    run_user      TEXT    NOT NULL,
    config_path   TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    created_by    TEXT    NOT NULL,
    owner_id      INTEGER,
    desired       TEXT    NOT NULL DEFAULT 'stopped' CHECK (desired IN ('running', 'stopped')),
    pid           INTEGER,
    start_ticks   INTEGER
  );
  `,
  // 3: a create or a delete in progress, so that one cut off by a crash is undone or finished at the next start
  `
  ALTER TABLE instances ADD COLUMN pending TEXT CHECK (pending IN ('create', 'delete'));
  `,
  // 4: environment variables of an instance's tunnel, for the {{ .Envs.NAME }} placeholders of its config file
  `
  CREATE TABLE instance_env (
    instance_id INTEGER NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
    name        TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    PRIMARY KEY (instance_id, name)
  );
  `,
  // 5: the audit trail: who changed what, from where, with what outcome (never a secret)
  `
  CREATE TABLE audit (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    user_id     INTEGER,
    username    TEXT    NOT NULL,
    ip          TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    target_type TEXT,
    target_id   TEXT,
    target_name TEXT,
    detail      TEXT,
    status      INTEGER NOT NULL,
    outcome     TEXT    NOT NULL CHECK (outcome IN ('ok', 'failed')),
    message     TEXT    NOT NULL
  );
  CREATE INDEX audit_at ON audit(at);
  `,
  // 6: personal API keys; only a hash of each key is kept, found by the key's public id
  `
  CREATE TABLE api_keys (
    id              TEXT    PRIMARY KEY,
    user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name            TEXT    NOT NULL COLLATE NOCASE,
    key_hash        TEXT    NOT NULL,
    role            TEXT    NOT NULL CHECK (role IN ('superuser', 'admin', 'visitor')),
    rate_per_minute INTEGER,
    created_at      INTEGER NOT NULL,
    created_by      TEXT    NOT NULL,
    expires_at      INTEGER,
    last_used_at    INTEGER,
    UNIQUE (user_id, name)
  );
  `,
  // 7: a failed instance stays failed across tunnelward's restarts, and every instance keeps how its last run ended
  `
  ALTER TABLE instances ADD COLUMN failed INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE instances ADD COLUMN last_exit_code INTEGER;
  ALTER TABLE instances ADD COLUMN last_exit_signal TEXT;
  ALTER TABLE instances ADD COLUMN last_exit_at INTEGER;
  `,
  // 8: labels of an instance (env=prod): what operators select instances by
  `
  CREATE TABLE instance_labels (
    instance_id INTEGER NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
    key         TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    PRIMARY KEY (instance_id, key)
  );
  `,
  // 9: revisions of each instance's config file: who changed it, when, what was asked, the plan and how it went;
  //    the texts are files beside the database (see revision-store.ts). A change not yet committed is pending.
  `
  CREATE TABLE revisions (
    instance_id INTEGER NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
    number      INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    by_user     TEXT    NOT NULL,
    by_key      TEXT,
    kind        TEXT    NOT NULL,
    request     TEXT    NOT NULL,
    plan        TEXT    NOT NULL CHECK (plan IN ('none', 'file only', 'reload', 'restart')),
    reason      TEXT    NOT NULL,
    outcome     TEXT    NOT NULL,
    version     TEXT    NOT NULL,
    status      TEXT    NOT NULL CHECK (status IN ('pending', 'applying', 'committed')),
    previous    INTEGER,
    PRIMARY KEY (instance_id, number)
  );
  `,
  // 10: expiries: when an instance is stopped by itself, and when each of its proxies is disabled (by proxy name:
  //     proxies live in the config file, which frpc reads, and frpc refuses a key it does not know)
  `
  ALTER TABLE instances ADD COLUMN expires_at INTEGER;
  CREATE TABLE proxy_expiries (
    instance_id INTEGER NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
    proxy       TEXT    NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (instance_id, proxy)
  );
  `,
  // 11: end-to-end probes of an instance's proxies, on or off per instance (off by default: see actors/probes.ts)
  `
  ALTER TABLE instances ADD COLUMN probes INTEGER NOT NULL DEFAULT 0;
  `,
  // 12: an instance's own supervision figures over the settings (health policy, memory cap), as JSON; null: none
  `
  ALTER TABLE instances ADD COLUMN policy TEXT;
  `,
  // 13: what an API key may be used for: every route its role allows, or reading /metrics alone (a scraper's key)
  `
  ALTER TABLE api_keys ADD COLUMN scope TEXT NOT NULL DEFAULT 'all' CHECK (scope IN ('all', 'metrics'));
  `,
];
