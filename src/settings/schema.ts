import { isIP } from 'node:net';
import { isTable } from '../config/toml-tree.js';
import type { SettingKey, Settings } from './defaults.js';

/** Checks one setting's value; returns the reason it is invalid, or undefined when it is fine. */
type Check = (value: unknown) => string | undefined;

/** Control characters (newlines among them) end up in unit files, command lines and logs: never in a setting. */
const CONTROL = /[\u0000-\u001f\u007f]/;
const SAFE_PATH = /^\/[A-Za-z0-9_./+@:,=-]*$/;
/** The path rule as one pattern (the document's): SAFE_PATH with no `..` segment. */
export const ABSOLUTE_PATH_PATTERN = `^(?!(?:.*/)?\\.\\.(?:/|$))${SAFE_PATH.source.slice(1)}`;
const absolutePath: Check = (v) =>
  typeof v === 'string' && SAFE_PATH.test(v) && !v.split('/').includes('..')
    ? undefined
    : 'must be an absolute path of letters, digits and _ . / + @ : , = -';
/** A program: an absolute path, or a bare name looked up on PATH (a relative path would depend on the working dir). */
export const PROGRAM_NAME = /^[A-Za-z0-9_+-][A-Za-z0-9_.+-]*$/;
const command: Check = (v) =>
  typeof v === 'string' && (PROGRAM_NAME.test(v) || absolutePath(v) === undefined)
    ? undefined
    : 'must be an absolute path, or a program name on PATH (letters, digits and _ . + -)';
/** An IP address or a host name. */
/** A host name as ListenAddr takes one (an IP address is the other form). */
export const HOST_NAME_PATTERN = '^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$';
const address: Check = (v) =>
  typeof v === 'string' && (isIP(v) !== 0 || new RegExp(HOST_NAME_PATTERN).test(v))
    ? undefined
    : 'must be an IP address or a host name';
const boolean: Check = (v) => (typeof v === 'boolean' ? undefined : 'must be a boolean (true or false)');
const intRange =
  (min: number, max: number): Check =>
  (v) =>
    Number.isInteger(v) && (v as number) >= min && (v as number) <= max
      ? undefined
      : `must be an integer from ${min} to ${max}`;
const seconds =
  (min: number, max: number): Check =>
  (v) =>
    typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max
      ? undefined
      : `must be a number of seconds from ${min} to ${max}`;
/** A port from 1 to 65535 as a string of at most 5 digits (leading zeros allowed): the check and the document's pattern. */
export const PORT_STRING_PATTERN =
  '^(?=[0-9]{1,5}$)0*(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$';
const PORT_STRING = new RegExp(PORT_STRING_PATTERN);
const portString: Check = (v) =>
  typeof v === 'string' && PORT_STRING.test(v) ? undefined : 'must be a string holding a port from 1 to 65535';
const oneOf =
  (...allowed: string[]): Check =>
  (v) =>
    typeof v === 'string' && allowed.includes(v) ? undefined : `must be one of: ${allowed.join(', ')}`;
const url: Check = (v) => {
  if (typeof v !== 'string') return 'must be a string';
  if (v === '') return undefined;
  // The URL parser drops tabs and newlines silently: refuse them rather than store what we did not check.
  if (CONTROL.test(v)) return 'must not contain control characters or newlines';
  try {
    const parsed = new URL(v);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? undefined : 'must be an http or https URL';
  } catch {
    return 'must be an http or https URL';
  }
};
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const headers: Check = (v) => {
  if (!isTable(v)) return 'must be an object of header names to string values';
  if (Object.keys(v).some((name) => name.toLowerCase() === 'content-length' || name.toLowerCase() === 'host')) {
    return 'cannot set Content-Length or Host';
  }
  for (const [name, value] of Object.entries(v)) {
    if (!HEADER_NAME.test(name)) return `has an invalid header name: ${JSON.stringify(name)}`;
    // What HTTP can carry as it is: printable ASCII and tabs (Node refuses to send anything else).
    if (typeof value !== 'string' || !/^[\t\x20-\x7e]*$/.test(value)) {
      return `header ${name} must be a single-line string of printable ASCII characters`;
    }
  }
  return undefined;
};
const exitCodes: Check = (v) =>
  Array.isArray(v) && v.length <= 256 && v.every((c) => Number.isInteger(c) && c >= 0 && c <= 255)
    ? undefined
    : 'must be a list of exit codes from 0 to 255';
const object: Check = (v) => (isTable(v) ? undefined : 'must be an object');
const autoOrBoolean: Check = (v) =>
  typeof v === 'boolean' || v === 'auto' ? undefined : 'must be true, false or "auto"';
/** Empty, or an absolute path (certificate files live where an ACME client puts them). */
const optionalPath: Check = (v) => (v === '' ? undefined : absolutePath(v));
const IPV4 = '(?:(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const H = '[0-9A-Fa-f]{1,4}';
const IPV6 = [
  `(?:${H}:){7}${H}`,
  `(?:${H}:){1,7}:`,
  `(?:${H}:){1,6}:${H}`,
  ...[2, 3, 4, 5, 6].map((n) => `(?:${H}:){1,${7 - n}}(?::${H}){1,${n}}`),
  `:(?:(?::${H}){1,7}|:)`,
  `(?:${H}:){6}${IPV4}`,
  `::(?:[fF]{4}(?::0{1,4})?:)?${IPV4}`,
  `(?:${H}:){1,4}:${IPV4}`,
].join('|');
/** An entry of TrustedProxies as the document states it: what parseCidr reads (its test holds them together). */
export const CIDR_PATTERN = `^(?:${IPV4}(?:/(?=\\d{1,3}$)0*(?:3[0-2]|[12]?\\d))?|(?:${IPV6})(?:/(?=\\d{1,3}$)0*(?:12[0-8]|1[01]\\d|[1-9]?\\d))?)$`;
/** How many entries TrustedProxies may hold. */
export const MAX_TRUSTED_PROXIES = 256;
const cidrs: Check = (v) => {
  if (!Array.isArray(v) || v.length > MAX_TRUSTED_PROXIES)
    return `must be a list of IP addresses or CIDRs (at most ${MAX_TRUSTED_PROXIES})`;
  const bad = v.find((entry) => parseCidr(entry) === undefined);
  return bad === undefined ? undefined : `has ${JSON.stringify(bad)}, which is neither an IP address nor a CIDR`;
};

/** `10.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`: the address, its family and prefix length; undefined when invalid. */
export function parseCidr(value: unknown): { address: string; family: 'ipv4' | 'ipv6'; prefix: number } | undefined {
  if (typeof value !== 'string') return undefined;
  const [address = '', bits, ...rest] = value.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return undefined;
  const max = version === 4 ? 32 : 128;
  if (bits !== undefined && !/^\d{1,3}$/.test(bits)) return undefined;
  const prefix = bits === undefined ? max : Number(bits);
  if (prefix > max) return undefined;
  return { address, family: version === 4 ? 'ipv4' : 'ipv6', prefix };
}

/** The type check of every known setting. */
const CHECKS: Record<SettingKey, Check> = {
  ListenAddr: address,
  ListenPort: portString,
  TunnelPath: command,
  InstancePath: absolutePath,
  Debug: boolean,
  'Watchdog.Enabled': boolean,
  'Watchdog.Port': intRange(0, 65535),
  'Watchdog.BackoffSecs': seconds(0.01, 3600),
  'Watchdog.BackoffMaxSecs': seconds(0.01, 86400),
  'Watchdog.StartLimit': intRange(1, 1000),
  'Watchdog.StableSecs': seconds(0.01, 86400),
  'Watchdog.NoRetryExitCodes': exitCodes,
  'Instance.StartSecs': seconds(0, 600),
  'Instance.StopTimeoutSecs': seconds(0.01, 3600),
  'Notification.Enabled': boolean,
  'Notification.Method': oneOf('webhook'),
  'Webhook.Method': oneOf('GET', 'POST', 'PUT', 'PATCH', 'DELETE'),
  'Webhook.URL': url,
  'Webhook.Headers': headers,
  'Webhook.Body': object,
  'Webhook.TimeoutSecs': seconds(0.1, 120),
  'Webhook.Retries': intRange(0, 20),
  'Alerts.DebounceSecs': seconds(0, 3600),
  'Status.PollSecs': seconds(1, 86400),
  'Log.MaxBytes': intRange(256, 1024 * 1024 * 1024),
  'Log.Files': intRange(1, 100),
  InitSystem: oneOf('auto', 'process', 'systemd', 'init.d', 'windows'),
  'Systemd.UnitDir': absolutePath,
  'Systemd.Systemctl': command,
  'Systemd.Journalctl': command,
  'InitD.ScriptDir': absolutePath,
  'InitD.UpdateRcD': command,
  'InitD.PidDir': absolutePath,
  'InitD.LogDir': absolutePath,
  'Windows.Schtasks': command,
  'RateLimit.Login': intRange(1, 1_000_000),
  'RateLimit.PerToken': intRange(1, 1_000_000),
  'RateLimit.Register': intRange(1, 1_000_000),
  'Register.Enabled': autoOrBoolean,
  'SystemLog.RequireToken': autoOrBoolean,
  'Visitor.ShowDetails': autoOrBoolean,
  'TLS.CertFile': optionalPath,
  'TLS.KeyFile': optionalPath,
  TrustedProxies: cidrs,
  'Audit.RetentionDays': intRange(1, 3650),
  'Audit.MaxEntries': intRange(100, 10_000_000),
};

/** Settings that only take effect when the daemon next starts. */
export const APPLY_AT_NEXT_START: ReadonlySet<SettingKey> = new Set<SettingKey>([
  'ListenAddr',
  'ListenPort',
  'InitSystem',
]);

/**
 * Settings that name a program tunnelward runs (as its own user, root most often): only a superuser sets them, and
 * only to a file that only root can change (see trustedProgram), checked again before each use.
 */
export const PROGRAM_KEYS: ReadonlySet<SettingKey> = new Set<SettingKey>([
  'TunnelPath',
  'Systemd.Systemctl',
  'Systemd.Journalctl',
  'InitD.UpdateRcD',
  'Windows.Schtasks',
]);

/**
 * What only a superuser may change: the programs, and the directories where tunnelward writes what it or root runs or
 * reads back (units, init scripts, pid files, their logs, the tunnels' config files it hands to their users).
 */
export const SUPERUSER_KEYS: ReadonlySet<SettingKey> = new Set<SettingKey>([
  ...PROGRAM_KEYS,
  'InstancePath',
  'Systemd.UnitDir',
  'InitD.ScriptDir',
  'InitD.PidDir',
  'InitD.LogDir',
]);

/** Keys whose values are secrets and never appear in logs. */
export const SECRET_KEYS: ReadonlySet<SettingKey> = new Set<SettingKey>(['Webhook.Headers']);

/** Headers that only describe a body: their values ("application/json") are no secret, and masked would garble text. */
const DESCRIPTIVE_HEADERS = new Set(['content-type', 'accept', 'user-agent']);

/** The secret values the settings hold (the values of `Webhook.Headers`, but for descriptive headers): masked in all output. */
export function secretSettingValues(settings: { 'Webhook.Headers': Record<string, string> }): string[] {
  return Object.entries(settings['Webhook.Headers'])
    .filter(([name]) => !DESCRIPTIVE_HEADERS.has(name.toLowerCase()))
    .map(([, value]) => value);
}

export function isSettingKey(key: string): key is SettingKey {
  return Object.hasOwn(CHECKS, key);
}

export const SETTING_KEYS = Object.keys(CHECKS) as SettingKey[];

/** The known key an unknown `key` was most likely meant to be: same letters in another case, or one or two edits away. */
export function closestSettingKey(key: string): SettingKey | undefined {
  const wanted = key.toLowerCase();
  let best: SettingKey | undefined;
  let bestDistance = 3;
  for (const known of SETTING_KEYS) {
    const distance = editDistance(wanted, known.toLowerCase(), bestDistance);
    if (distance < bestDistance) [best, bestDistance] = [known, distance];
  }
  return best;
}

/** `Watchdog.Enable (did you mean Watchdog.Enabled?), Mystery`: unknown keys, each with the key it was likely meant as. */
export function namedUnknownKeys(keys: readonly string[]): string {
  return keys
    .map((key) => {
      const near = closestSettingKey(key);
      return near ? `${key} (did you mean ${near}?)` : key;
    })
    .join(', ');
}

/** Levenshtein distance, or `limit` as soon as it is known to be at least that. */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) >= limit) return limit;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    if (Math.min(...row) >= limit) return limit;
    previous = row;
  }
  return Math.min(previous[b.length]!, limit);
}

/** Returns `"<key> <reason>"` when `value` is not valid for `key`. */
export function checkSetting(key: SettingKey, value: unknown): string | undefined {
  const reason = CHECKS[key](value);
  return reason === undefined ? undefined : `${key} ${reason}`;
}

export type SettingsPatch = Partial<Settings>;
