// Validators run before any value reaches a unit file, an init script or a command line. They refuse rather than
// escape: a value that passes needs no quoting in a systemd unit and is safe inside sh single quotes.
import { posix } from 'node:path';
import { badRequest } from '../errors.js';
import { USER_NAME } from '../system/os-users.js';

export const SERVICE_NAME = /^tunnel_[0-9]{1,9}$/;
export const MAX_PATH_LENGTH = 4096;
export const MAX_DESCRIPTION_LENGTH = 200;

// Paths go unquoted into systemd ExecStart= (where `%` is a specifier, `$` expands variables, whitespace and
// quotes split words and `\` escapes) and into init scripts run by sh (where quotes, `$`, backticks, `;&|<>`,
// globs and newlines are syntax). Real install paths never need more than this set, so anything else is refused.
const PATH_CHARS = /^[A-Za-z0-9_./+@:,=-]$/;
const PATH_CHARS_TEXT = 'A-Z a-z 0-9 _ . / + @ : , = -';

// Description= is specifier-expanded by systemd and also lands in an LSB header comment.
const DESCRIPTION_CHAR = /^[^%$\\'"`]$/;

/** A caller-supplied value as it may appear in a message: JSON-quoted (control characters visible), at most 64 chars. */
export function shown(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
}

/** Names the first character of `value` that `allowed` refuses, e.g. `" " at index 4`; undefined when all pass. */
export function firstRefused(value: string, allowed: RegExp): string | undefined {
  const chars = [...value];
  const index = chars.findIndex((c) => !allowed.test(c));
  return index < 0 ? undefined : `${JSON.stringify(chars[index])} at index ${index}`;
}

function requireString(field: string, value: unknown): asserts value is string {
  if (typeof value !== 'string') throw badRequest(`${field} must be a string`);
}

/** The service (unit, init script, task) name of an instance: `tunnel_<id>`. */
export function checkServiceName(name: string): string {
  requireString('serviceName', name);
  if (!SERVICE_NAME.test(name)) {
    throw badRequest(`serviceName must be tunnel_ followed by 1 to 9 digits, got ${shown(name)}`);
  }
  return name;
}

/** The system user a tunnel runs as, in the form useradd accepts. */
export function checkRunUser(user: string, field = 'runUser'): string {
  requireString(field, user);
  if (!USER_NAME.test(user)) {
    throw badRequest(
      `${field} must be a system user name (a lowercase letter or _, then up to 31 of a-z 0-9 _ -, optionally ending in $), got ${shown(user)}`,
    );
  }
  return user;
}

/**
 * An address to listen on: an IP address (v4 or v6) or a host name, nothing a unit or a shell reads as syntax (`%`
 * is a systemd specifier: an IPv6 zone is refused).
 */
export function checkListenHost(host: string, field = 'host'): string {
  requireString(field, host);
  if (!/^[A-Za-z0-9_.:-]{1,253}$/.test(host) || host.startsWith('-')) {
    throw badRequest(`${field} must be an IP address or a host name, got ${shown(host)}`);
  }
  return host;
}

/** An absolute, normalized path made only of characters that are inert in units and sh scripts. */
export function checkPath(field: string, path: string): string {
  requireString(field, path);
  if (!path.startsWith('/')) throw badRequest(`${field} must be an absolute path, got ${shown(path)}`);
  if (path.length > MAX_PATH_LENGTH) throw badRequest(`${field} must be at most ${MAX_PATH_LENGTH} characters long`);
  const refused = firstRefused(path, PATH_CHARS);
  if (refused) {
    throw badRequest(`${field} contains a character that is not allowed (${refused}); allowed: ${PATH_CHARS_TEXT}`);
  }
  if (posix.normalize(path) !== path || path.endsWith('/')) {
    throw badRequest(`${field} must be a normalized path (no //, /./, /../ or trailing /), got ${shown(path)}`);
  }
  return path;
}

/** A one-line human description of a service (derived from the instance name). */
export function checkDescription(text: string): string {
  requireString('description', text);
  if (text.length === 0 || text.length > MAX_DESCRIPTION_LENGTH) {
    throw badRequest(`description must be 1 to ${MAX_DESCRIPTION_LENGTH} characters long`);
  }
  const unprintable = firstRefused(text, /^[\x20-\x7e]$/);
  if (unprintable) throw badRequest(`description must be printable ASCII on one line (${unprintable})`);
  const refused = firstRefused(text, DESCRIPTION_CHAR);
  if (refused) throw badRequest(`description must not contain % $ \\ or quotes (${refused})`);
  if (text.trim() !== text) throw badRequest('description must not start or end with a space');
  return text;
}
