import { PLACEHOLDER_PATTERN } from './go-template.js';
import type { StringFormat } from './frpc-keys.js';

/**
 * The shapes of the strings frpc's config takes, as regular expressions: value-check.ts checks values with them and
 * the OpenAPI document states them (JSON Schema `pattern`, src/config/key-schema.ts), so the two say one thing.
 * Written in the syntax ECMAScript (in unicode mode, as JSON Schema validators read patterns) and Python's `re` share
 * (the conformance run generates values from the document): `[0-9]` rather than `\d`.
 */

/** A character no string of a config file may hold: a one-line TOML string cannot, and a log line must not. */
const CONTROL_RANGE = '\\u0000-\\u001f\\u007f';
export const CONTROL_CHAR = `[${CONTROL_RANGE}]`;

const V4_SEG = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])';
const V4 = `(?:${V4_SEG}\\.){3}${V4_SEG}`;
const V6_SEG = '[0-9a-fA-F]{1,4}';
/** Node's net.isIP (lib/internal/net.js) as one expression: IPv4, or IPv6 with an optional zone (`%eth0`). */
const IP = `(?:${V4}|(?:${[
  `(?:${V6_SEG}:){7}(?:${V6_SEG}|:)`,
  `(?:${V6_SEG}:){6}(?:${V4}|:${V6_SEG}|:)`,
  `(?:${V6_SEG}:){5}(?::${V4}|(?::${V6_SEG}){1,2}|:)`,
  `(?:${V6_SEG}:){4}(?:(?::${V6_SEG}){0,1}:${V4}|(?::${V6_SEG}){1,3}|:)`,
  `(?:${V6_SEG}:){3}(?:(?::${V6_SEG}){0,2}:${V4}|(?::${V6_SEG}){1,4}|:)`,
  `(?:${V6_SEG}:){2}(?:(?::${V6_SEG}){0,3}:${V4}|(?::${V6_SEG}){1,5}|:)`,
  `(?:${V6_SEG}:){1}(?:(?::${V6_SEG}){0,4}:${V4}|(?::${V6_SEG}){1,6}|:)`,
  `(?::(?:(?::${V6_SEG}){0,5}:${V4}|(?::${V6_SEG}){1,7}|:))`,
].join('|')})(?:%[0-9a-zA-Z.:-]+)?)`;
const LABEL = '[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?';
/** A host name: labels of letters, digits, "_" and "-" (not at either end), not digits and dots alone. */
const NAME = `(?![0-9.]+$)${LABEL}(?:\\.${LABEL})*`;
const DNS_LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const BANDWIDTH = '[0-9]{1,12}(?:\\.[0-9]{1,6})?(?:MB|KB)';

/**
 * A string's shape in the words of JSON Schema that both read: the checks (hasShape) and the document. A host
 * name's length is a maxLength rather than a lookahead, which generators of values from patterns cannot follow.
 */
export interface Shape {
  pattern?: string;
  maxLength?: number;
  anyOf?: Shape[];
}

/** A host: an IP address, or a name of at most 253 characters; `prefix` (its length `extra`) before either. */
const hostParts = (prefix = '', extra = 0): Shape[] => [
  { pattern: `^${prefix}${IP}$` },
  { pattern: `^${prefix}${NAME}$`, maxLength: 253 + extra },
];

/** Each string format of frpc-keys.ts. */
export const FORMAT_SHAPES: Readonly<Record<StringFormat, Shape>> = {
  host: { anyOf: hostParts() },
  domain: { anyOf: [...hostParts(), ...hostParts('\\*\\.', 2)] },
  dnsLabel: { pattern: `^${DNS_LABEL}$` },
  bandwidth: { pattern: `^${BANDWIDTH}$` },
};

/** Every string format. */
export const STRING_FORMATS = Object.keys(FORMAT_SHAPES) as StringFormat[];

const compiled = new Map<string, RegExp>();
/** Whether a string has a shape, as a JSON Schema validator reads it (patterns in unicode mode, as ajv's are). */
export function hasShape(value: string, shape: Shape): boolean {
  if (shape.pattern !== undefined) {
    let pattern = compiled.get(shape.pattern);
    if (!pattern) compiled.set(shape.pattern, (pattern = new RegExp(shape.pattern, 'u')));
    if (!pattern.test(value)) return false;
  }
  if (shape.maxLength !== undefined && [...value].length > shape.maxLength) return false;
  return shape.anyOf === undefined || shape.anyOf.some((part) => hasShape(value, part));
}

/**
 * Text outside control characters in which "{{" and "}}" stand only in placeholders, written without lookarounds
 * (which generators of values from patterns meet only by filtering): braces stand in runs that alternate ("{", "}{}",
 * ...), each run beside other text, and a run before a placeholder ends in "}".
 */
const BRACES = '(?:\\{(?:\\}\\{)*\\}?|\\}(?:\\{\\})*\\{?)';
/** A placeholder, after a run of braces that ends in "}" if any. */
const PLACED = `(?:\\{?(?:\\}\\{)*\\})?${PLACEHOLDER_PATTERN}`;
/** Text that ends in other than a run of braces. */
const units = (exclude: string) => {
  const plain = `[^${CONTROL_RANGE}{}${exclude}]`;
  return `(?:${plain}|${PLACED}|${BRACES}${plain})*`;
};
const text = (exclude: string) => `${units(exclude)}${BRACES}?`;
/** Text holding at least one placeholder: what it reads as is known only once frpc renders it. */
const placeholderText = (exclude: string) => `${units(exclude)}${PLACED}${text(exclude)}`;

/**
 * Text frpc can read as it renders the file: no control character, and no `{{` or `}}` but those of
 * `{{ .Envs.NAME }}` placeholders (go-template.ts's rule).
 */
export const TEXT_PATTERN = `^${text('')}$`;

/** Text with a placeholder, whole-value: the checks leave what it renders to for frpc to judge. */
export const PLACEHOLDER_TEXT_PATTERN = `^${placeholderText('')}$`;

/** A value of a format, or text with a placeholder (whose format frpc checks once it has rendered it). */
export const formattedShape = (format: StringFormat): Shape => {
  const { anyOf, ...one } = FORMAT_SHAPES[format];
  return { anyOf: [...(anyOf ?? [one]), { pattern: PLACEHOLDER_TEXT_PATTERN }] };
};

/** What String.prototype.trim removes: ECMAScript's \\s, spelt out (Python's \\s also holds \\x1c-\\x1f). */
const SPACE_CHARS = '\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
const SPACE = `[${SPACE_CHARS}]`;

/**
 * A host inside a list written as one string, `end` being what follows it: there a lookahead bounds its length, as
 * an item has no maxLength of its own.
 */
const listedHost = (end: string) => `(?:${IP}|(?![0-9.]+${end})(?=[^\\s,]{1,253}${end})${LABEL}(?:\\.${LABEL})*)`;
const LISTED: Readonly<Record<StringFormat, (end: string) => string>> = {
  host: listedHost,
  domain: (end) => `(?:\\*\\.)?${listedHost(end)}`,
  dnsLabel: () => DNS_LABEL,
  bandwidth: () => BANDWIDTH,
};

/**
 * A list written as one string, as the proxy edit reads it (toml-tree.ts's splitList): items separated by commas,
 * each trimmed, empty ones dropped; each item text, or a value of `format` (or text with a placeholder).
 */
export function commaListPattern(format?: StringFormat): string {
  const item = format ? `(?:${LISTED[format](`${SPACE}*(?:,|$)`)}|${placeholderText(',')})` : text(',');
  const slot = `${SPACE}*(?:${item})?${SPACE}*`;
  return `^${slot}(?:,${slot})*$`;
}

/** A list written as one string that names at least one item. */
export const NONEMPTY_LIST_PATTERN = `[^,${SPACE_CHARS}]`;

/** How an absolute path starts, as node's path.isAbsolute reads one on this platform. */
const ABSOLUTE_START = process.platform === 'win32' ? '(?:[\\\\/]|[A-Za-z]:[\\\\/])' : '/';

/** An absolute path as text, or text with a placeholder (whose path frpc reads once it has rendered it). */
export const ABSOLUTE_PATH_PATTERN = `^(?:${ABSOLUTE_START}${text('')}|${placeholderText('')})$`;
