import { AppError, badRequest } from '../errors.js';
import type { KeySpec, StringFormat } from './frpc-keys.js';
import { holdsPlaceholder, isPlaceholder, onlyPlaceholders, TEMPLATE_REASON } from './go-template.js';
import { isReservedKey, reservedKeyMessage } from '../util/reserved-keys.js';
import { isTable, type Table } from './toml-tree.js';
import { portTextPattern } from '../settings/values.js';
import { CONTROL_CHAR, FORMAT_SHAPES, hasShape } from './string-patterns.js';

// Checking one value we are asked to write against its key's spec. Messages name the key, never the value.

export const MAP_ENTRY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const ENTRY_NAME_RULE = '1-64 characters from A-Z, a-z, 0-9, "_", "." and "-"';
/** frpc checks annotation keys as Kubernetes does: an optional DNS-subdomain prefix and "/", then a name. */
export const ANNOTATION_KEY =
  /^(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const CONTROL_CHARS = new RegExp(CONTROL_CHAR);
/** The check of a format: its shape, the one the OpenAPI document states. */
const matches = (format: StringFormat) => (value: string) => hasShape(value, FORMAT_SHAPES[format]);

const FORMATS: Readonly<Record<StringFormat, { test: (value: string) => boolean; one: string; many: string }>> = {
  host: { test: matches('host'), one: 'an IPv4 or IPv6 address or a host name', many: 'IP addresses or host names' },
  domain: {
    test: matches('domain'),
    one: 'a host name (a leading "*." is allowed)',
    many: 'host names (a leading "*." is allowed)',
  },
  dnsLabel: {
    test: matches('dnsLabel'),
    one: 'a single DNS label (letters, digits and "-", no dots)',
    many: 'single DNS labels (letters, digits and "-", no dots)',
  },
  bandwidth: {
    test: matches('bandwidth'),
    one: 'a number followed by MB or KB, such as "1MB"',
    many: 'numbers followed by MB or KB',
  },
};

/** What a string of this format must be, as messages and the document say it. */
export const formatRule = (format: StringFormat): string => FORMATS[format].one;

/**
 * Checks a value against its key's spec and returns it in the type frpc wants. A number or a boolean may be one
 * `{{ .Envs.NAME }}` placeholder instead, kept as its text (written bare: frpc reads the value it renders to).
 */
export function checkValue(label: string, spec: KeySpec, value: unknown): unknown {
  if ((spec.kind === 'port' || spec.kind === 'integer' || spec.kind === 'boolean') && isPlaceholder(value))
    return value;
  switch (spec.kind) {
    case 'string':
      return checkString(label, value, spec);
    case 'port':
      return checkPort(label, value);
    case 'integer': {
      const n = toInteger(value);
      if (n === undefined) throw badRequest(`${label} must be an integer`);
      return n;
    }
    case 'boolean':
      if (value === true || value === 'true') return true;
      if (value === false || value === 'false') return false;
      throw badRequest(`${label} must be true or false`);
    case 'strings':
      if (!Array.isArray(value)) throw badRequest(`${label} must be an array of strings`);
      return value.map((item) => checkString(label, item, spec, true));
    case 'stringMap':
    case 'booleanMap': {
      const what = spec.kind === 'stringMap' ? 'strings' : 'true/false';
      if (!isTable(value)) throw badRequest(`${label} must be an object of names to ${what}`);
      const out: Table = {};
      for (const [name, item] of Object.entries(value)) {
        checkEntryName(label, spec, name);
        out[name] =
          spec.kind === 'stringMap'
            ? checkString(`${label}.${name}`, item)
            : checkValue(`${label}.${name}`, { kind: 'boolean' }, item);
      }
      return out;
    }
    case 'nameValues':
      return checkNameValues(label, value);
  }
}

/** An entry name of a map key (`metadatas.<name>`): it becomes a TOML key, so only plain names. */
export function checkEntryName(label: string, spec: KeySpec, name: string): string {
  if (isReservedKey(name)) throw badRequest(reservedKeyMessage(label, name, 'as an entry name'));
  if (spec.annotationEntries) {
    if (!ANNOTATION_KEY.test(name)) {
      throw badRequest(
        `${label} entry names must be a name of up to 63 characters, optionally after a DNS prefix and "/"`,
      );
    }
  } else if (!MAP_ENTRY_NAME.test(name)) {
    throw badRequest(`${label} entry names must be ${ENTRY_NAME_RULE}`);
  }
  return name;
}

/**
 * A string frpc can read: no control characters, no template action but `{{ .Envs.NAME }}`. A fixed choice stays
 * literal (tunnelward reads it: a proxy's type picks its keys, log.to must be the console); a value with a
 * placeholder is otherwise what the environment makes it, so its format is checked by frpc (the change pipeline's
 * verify runs with the instance's environment), not here.
 */
export function checkString(label: string, value: unknown, spec: Partial<KeySpec> = {}, inList = false): string {
  if (typeof value !== 'string') throw badRequest(`${label} must be a string`);
  if (!onlyPlaceholders(value)) throw badRequest(`${label} ${TEMPLATE_REASON}`);
  if (CONTROL_CHARS.test(value)) throw badRequest(`${label} must not contain control characters such as newlines`);
  if (spec.oneOf && !spec.oneOf.includes(value)) {
    const choice = spec.oneOf.length === 1 ? `"${spec.oneOf[0]}"` : `one of: ${spec.oneOf.join(', ')}`;
    throw badRequest(`${label} must be ${choice}${spec.why ? `: ${spec.why}` : ''}`);
  }
  if (holdsPlaceholder(value)) return value;
  const format = spec.format === undefined ? undefined : FORMATS[spec.format];
  if (format && !format.test(value)) {
    throw badRequest(inList ? `${label} must hold ${format.many}` : `${label} must be ${format.one}`);
  }
  return value;
}

/** An integer as a string, as toInteger reads it; a port as a string of as many digits (leading zeros allowed). */
export const INTEGER_TEXT = /^-?\d{1,15}$/;
export const PORT_TEXT_PATTERN = portTextPattern(15);

export function checkPort(label: string, value: unknown): number {
  const port = toInteger(value);
  if (port === undefined || port < 1 || port > 65535)
    throw badRequest(`${label} must be a port number from 1 to 65535`);
  return port;
}

export function toInteger(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  if (typeof value === 'string' && INTEGER_TEXT.test(value)) return Number(value);
  return undefined;
}

/** frpc's `[]HTTPHeader`: an array of `{ name, value }`, decoded strictly. */
function checkNameValues(label: string, value: unknown): Table[] {
  if (!Array.isArray(value) || !value.every(isTable))
    throw badRequest(`${label} must be an array of { name, value } objects`);
  return value.map((item, index) => {
    const at = `${label}[${index}]`;
    if (Object.keys(item).some((key) => key !== 'name' && key !== 'value'))
      throw badRequest(`${at} may hold only name and value`);
    const name = checkString(`${at}.name`, item.name);
    if (!MAP_ENTRY_NAME.test(name)) throw badRequest(`${at}.name must be ${ENTRY_NAME_RULE}`);
    return { name, value: checkString(`${at}.value`, item.value) };
  });
}

/** A caller-supplied name as it may appear in a message: quoted when odd, and never long. */
export function safeLabel(key: string): string {
  const short = key.length > 64 ? `${key.slice(0, 64)}…` : key;
  return /^[A-Za-z0-9_.-]+$/.test(short) ? short : JSON.stringify(short);
}

/** The message of a validation failure, for collecting several; anything else is rethrown. */
export function messageOf(err: unknown): string {
  if (err instanceof AppError) return err.message;
  throw err;
}
