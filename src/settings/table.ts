import { join } from 'node:path';
import type { z } from 'zod';
import { DEFAULTS } from './defaults.js';
import {
  absolutePath,
  address,
  autoOrBoolean,
  boolean,
  cidrs,
  command,
  exitCodes,
  headers,
  intRange,
  oneOf,
  optionalPath,
  portString,
  seconds,
  tomlTable,
  url,
} from './values.js';

/**
 * Every persisted setting (`settings.toml`, `/settings/*`), declared once under the contract's flat name: its rule
 * (a zod schema, with the messages a refusal gives), its default, what the document says of it, who may change it
 * and when a change applies. The defaults, the checks, the document and the console's settings form (which reads the
 * document) all come from this table.
 */
interface Spec<S extends z.ZodType> {
  schema: S;
  /** The default, or how it follows from the data dir. */
  default: z.output<S> | ((dataDir: string) => z.output<S>);
  /** What the document says of it. */
  doc: string;
  /** A program tunnelward runs: only a superuser sets it, to a file only root can change, checked before each use. */
  program?: true;
  /** Only a superuser changes it (a program, or a directory where tunnelward writes what it or root runs). */
  superuser?: true;
  /** It takes effect when the daemon next starts. */
  atNextStart?: true;
  /** Its values are secrets: never logged, masked when shown. */
  secret?: true;
}

const setting = <S extends z.ZodType>(schema: S, spec: Omit<Spec<S>, 'schema'>): Spec<S> => ({ schema, ...spec });

const ABSOLUTE_PATH = 'an absolute path of letters, digits and _ . / + @ : , = - (no .. segment)';
const COMMAND =
  'a command: an absolute path, or a program name looked up on PATH; an executable file owned by root and writable by neither group nor others, in directories that are the same (checked when set and before each use)';
const program = (name: string, doc = COMMAND) =>
  setting(command, { default: name, doc, program: true, superuser: true });
const directory = (path: string | ((dataDir: string) => string), doc = ABSOLUTE_PATH) =>
  setting(absolutePath, { default: path, doc, superuser: true });
const doorDoc = (what: string, auto = 'open on loopback, closed off loopback') =>
  `${what}: true, false, or "auto" (${auto})`;

export const SETTINGS_TABLE = {
  ListenAddr: setting(address, {
    default: DEFAULTS.host,
    doc: 'IP address or host name the HTTP API listens on',
    atNextStart: true,
  }),
  ListenPort: setting(portString, {
    default: String(DEFAULTS.port),
    doc: 'port the HTTP API listens on (1-65535), as a string',
    atNextStart: true,
  }),
  TunnelPath: program('frpc', `the frpc binary: ${COMMAND}`),
  InstancePath: directory(
    (dataDir: string) => join(dataDir, 'instances'),
    `directory of the instance config files: ${ABSOLUTE_PATH}`,
  ),
  Debug: setting(boolean, { default: false, doc: 'DEBUG entries in the system log' }),
  'Watchdog.Enabled': setting(boolean, { default: true, doc: 'restart crashed tunnels' }),
  'Watchdog.Port': setting(intRange(0, 65535), {
    default: 0,
    doc: 'kept for the contract; 0: the watchdog runs inside the daemon',
  }),
  'Watchdog.BackoffSecs': setting(seconds(0.01, 3600), {
    default: 1,
    doc: 'first restart delay after a crash, in seconds; it doubles with each crash in a row up to BackoffMaxSecs',
  }),
  'Watchdog.BackoffMaxSecs': setting(seconds(0.01, 86400), { default: 60, doc: 'cap of the restart delay (seconds)' }),
  'Watchdog.StartLimit': setting(intRange(1, 1000), {
    default: 5,
    doc: 'crashes in a row before an instance is given up (failed)',
  }),
  'Watchdog.StableSecs': setting(seconds(0.01, 86400), {
    default: 60,
    doc: 'uptime after which the crash count starts again from zero (seconds)',
  }),
  'Watchdog.NoRetryExitCodes': setting(exitCodes, {
    default: [1],
    doc: "exit codes of a tunnel during its start that mean retrying will not help (frpc's 1: a config error): failed at once",
  }),
  'Instance.StartSecs': setting(seconds(0, 600), {
    default: 1,
    doc: 'a start succeeds once the tunnel has stayed up this long (seconds)',
  }),
  'Instance.MemoryMaxMB': setting(intRange(0, 1_048_576), {
    default: 0,
    doc: "each tunnel's memory cap in MiB (0: none): systemd units get MemoryMax= and MemoryHigh= (90%); in process mode a tunnel whose RSS stays above it is restarted by the health policy; frpc runs with GOMEMLIMIT at 80% of it unless its own variables set one",
  }),
  'Instance.StopTimeoutSecs': setting(seconds(0.01, 3600), {
    default: 10,
    doc: 'after SIGTERM, wait this long before SIGKILL (seconds)',
  }),
  'Notification.Enabled': setting(boolean, { default: false, doc: 'send events to the webhook' }),
  'Notification.Method': setting(oneOf('webhook'), { default: 'webhook', doc: 'how notifications are sent' }),
  'Webhook.Method': setting(oneOf('GET', 'POST', 'PUT', 'PATCH', 'DELETE'), {
    default: 'POST',
    doc: 'HTTP method of the webhook request',
  }),
  'Webhook.URL': setting(url, { default: '', doc: 'http(s) URL of the webhook, or empty' }),
  'Webhook.Headers': setting(headers, {
    default: {},
    doc: 'header name to value; /settings/get shows every value as ******** and sending the mask back keeps the stored value',
    secret: true,
  }),
  'Webhook.Body': setting(tomlTable, {
    default: {},
    doc: 'body template: {{field}} placeholders are filled from the event; empty sends the event itself',
  }),
  'Webhook.TimeoutSecs': setting(seconds(0.1, 120), {
    default: 5,
    doc: 'each delivery attempt gives up after this long (seconds)',
  }),
  'Webhook.Retries': setting(intRange(0, 20), {
    default: 3,
    doc: 'attempts after the first, on network errors and 5xx answers (never on 4xx)',
  }),
  'Webhook.DigestSecs': setting(seconds(0, 3600), {
    default: 0,
    doc: 'with 0, one webhook per connection alert (proxy.up/down, instance.connected/disconnected); otherwise the alerts that come within this long of the first are sent as one alerts.digest webhook per server and direction (down, back up), listing the tunnels and proxies with their reasons',
  }),
  'Alerts.DebounceSecs': setting(seconds(0, 3600), {
    default: 5,
    doc: "a proxy's or a tunnel's connection change is announced (proxy.up/down, instance.connected/disconnected) once it has held this long (seconds)",
  }),
  'Health.DisconnectedSecs': setting(seconds(0, 86400), {
    default: 300,
    doc: 'a running tunnel not logged in to its server for this long is restarted by the health policy, counted apart from crashes and never failed by it (0: never); each restart that does not bring the login back doubles the wait before the next, up to an hour',
  }),
  'Health.UnreachableSecs': setting(seconds(0, 86400), {
    default: 180,
    doc: 'a running tunnel logged in to its server with a proxy frpc says runs but whose end-to-end probes fail from outside for this long (probes on for the instance) is restarted by the health policy (0: never); the wait doubles as for Health.DisconnectedSecs',
  }),
  'Status.PollSecs': setting(seconds(1, 86400), {
    default: 300,
    doc: "how often a running tunnel's proxy status is read when its log says nothing new (seconds): a safety net, since frpc logs every login, lost connection, proxy start and failure, and those are read at once",
  }),
  'Probe.IntervalSecs': setting(seconds(1, 86400), {
    default: 60,
    doc: "how often each proxy of a tunnel whose probes are on is probed end to end, through its server and directly (seconds); each tunnel's probes fall at their own point of the period",
  }),
  'Probe.TimeoutSecs': setting(seconds(0.1, 120), {
    default: 5,
    doc: 'a probe connection or request that has not answered after this long fails (seconds)',
  }),
  'Probe.Failures': setting(intRange(1, 100), {
    default: 3,
    doc: 'probes of a proxy that must fail in a row before its health says so (one success clears it)',
  }),
  'Probe.Concurrency': setting(intRange(1, 1000), {
    default: 64,
    doc: 'proxies probed at the same time at most, over every tunnel (each probe holds two connections for about a second)',
  }),
  'Log.MaxBytes': setting(intRange(256, 1024 * 1024 * 1024), {
    default: 10 * 1024 * 1024,
    doc: "an instance's log file is rotated (renamed to .1, .2, ...) before it grows past this many bytes",
  }),
  'Log.Files': setting(intRange(1, 100), { default: 3, doc: 'rotated log files kept per instance' }),
  InitSystem: setting(oneOf('auto', 'process', 'systemd', 'init.d', 'windows'), {
    default: 'auto',
    doc: 'what runs the tunnels; auto: systemd when /run/systemd/system exists, windows on Windows, else tunnelward runs them itself',
    atNextStart: true,
  }),
  'Systemd.UnitDir': directory('/etc/systemd/system'),
  'Systemd.Systemctl': program('systemctl'),
  'Systemd.Journalctl': program('journalctl'),
  'InitD.ScriptDir': directory('/etc/init.d'),
  'InitD.UpdateRcD': program('update-rc.d'),
  'InitD.PidDir': directory('/run'),
  'InitD.LogDir': directory('/var/log'),
  'Windows.Schtasks': program('schtasks'),
  'RateLimit.Login': setting(intRange(1, 1_000_000), { default: 5, doc: '/login requests per minute per IP' }),
  'RateLimit.PerToken': setting(intRange(1, 1_000_000), { default: 100, doc: 'requests per minute per token' }),
  'RateLimit.Register': setting(intRange(1, 1_000_000), {
    default: 30,
    doc: '/register requests per minute per IP: its own limit, so that onboarding a few users never meets the login limit',
  }),
  // The doors the contract opens, kept open on loopback and closed when the daemon listens on any other address
  // ("auto"), unless set to true or false.
  'Register.Enabled': setting(autoOrBoolean, { default: 'auto', doc: doorDoc('whether /register is open') }),
  'SystemLog.RequireToken': setting(autoOrBoolean, {
    default: 'auto',
    doc: doorDoc('whether /system/getLogs needs a token', 'needed off loopback only'),
  }),
  'Visitor.ShowDetails': setting(autoOrBoolean, {
    default: 'auto',
    doc: doorDoc(
      'whether visitors see local addresses and ports, config paths and run-as users, and may export config files',
    ),
  }),
  'TLS.CertFile': setting(optionalPath, {
    default: '',
    doc: `the certificate (PEM, chain after it) HTTPS and WSS are served with; '' for plain HTTP; ${ABSOLUTE_PATH}; re-read on SIGHUP and on a change`,
  }),
  'TLS.KeyFile': setting(optionalPath, { default: '', doc: `its private key; '' for plain HTTP; ${ABSOLUTE_PATH}` }),
  TrustedProxies: setting(cidrs, {
    default: [],
    doc: "addresses or CIDRs of reverse proxies whose X-Forwarded-For is believed (for rate limits, logs and the audit trail); nobody else's is",
  }),
  'Audit.RetentionDays': setting(intRange(1, 3650), {
    default: 90,
    doc: 'audit entries older than this many days are removed',
  }),
  'Audit.MaxEntries': setting(intRange(100, 10_000_000), {
    default: 20000,
    doc: 'the oldest audit entries past this count are removed',
  }),
  'Revisions.Keep': setting(intRange(1, 100_000), {
    default: 50,
    doc: "revisions of each instance's config file kept for history, diff and rollback; the oldest past this go",
  }),
};

type Table = typeof SETTINGS_TABLE;
export type SettingKey = keyof Table;
export type Settings = { [K in SettingKey]: z.output<Table[K]['schema']> };

/** Every setting's key, in the table's order. */
export const SETTING_KEYS = Object.keys(SETTINGS_TABLE) as SettingKey[];

const specOf = (key: SettingKey): Spec<z.ZodType> => SETTINGS_TABLE[key] as Spec<z.ZodType>;

/** The settings as they are before anything is set (`dataDir` places the instance files). */
export function defaultSettings(dataDir: string): Settings {
  return Object.fromEntries(
    SETTING_KEYS.map((key) => {
      const value = specOf(key).default;
      return [key, structuredClone(typeof value === 'function' ? value(dataDir) : value)];
    }),
  ) as Settings;
}

const keysWhere = (flag: 'program' | 'superuser' | 'atNextStart' | 'secret'): ReadonlySet<SettingKey> =>
  new Set(SETTING_KEYS.filter((key) => specOf(key)[flag]));

/** Settings that name a program tunnelward runs (as its own user, root most often). */
export const PROGRAM_KEYS = keysWhere('program');
/** What only a superuser may change: the programs, and the directories where tunnelward writes what it runs. */
export const SUPERUSER_KEYS = keysWhere('superuser');
/** Settings that only take effect when the daemon next starts. */
export const APPLY_AT_NEXT_START = keysWhere('atNextStart');
/** Keys whose values are secrets and never appear in logs. */
export const SECRET_KEYS = keysWhere('secret');

/** Returns `"<key> <reason>"` when `value` is not valid for `key`. */
export function checkSetting(key: SettingKey, value: unknown): string | undefined {
  const result = specOf(key).schema.safeParse(value);
  if (result.success) return undefined;
  let issue = result.error.issues[0]!;
  // A table's key that breaks its rule: the rule, said of the key.
  if (issue.code === 'invalid_key' && issue.issues[0]) issue = { ...issue.issues[0], path: [...issue.path] };
  // Where inside the value, when it is a list or a table: `TrustedProxies [3] is neither ...`.
  const at = issue.path.map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i ? '.' : ''}${String(part)}`));
  return `${key}${at.length > 0 ? ` ${at.join('')}` : ''} ${issue.message}`;
}

/** A setting as the document shows it: its rule as JSON Schema, what it is, and who changes it when. */
export function settingDocument(key: SettingKey, toJsonSchema: (schema: z.ZodType) => Record<string, unknown>) {
  const spec = specOf(key);
  const notes = [spec.superuser ? 'a superuser sets it' : '', spec.atNextStart ? 'applies at the next start' : '']
    .filter(Boolean)
    .join('; ');
  return { ...toJsonSchema(spec.schema), description: notes ? `${spec.doc}; ${notes}` : spec.doc };
}
