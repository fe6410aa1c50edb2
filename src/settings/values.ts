import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * The kinds of value a setting holds, as zod schemas: each checks a value with the message a request gets (the
 * sentence's end: "must be ..."), and its JSON Schema is what the document says of it.
 */

const CONTROL = /[\u0000-\u001f\u007f]/;

/** A schema whose every failure says the same thing. */
const saying = (message: string) => ({ error: () => message });

export const boolean = z.boolean(saying('must be a boolean (true or false)'));

export const intRange = (min: number, max: number) => {
  const says = saying(`must be an integer from ${min} to ${max}`);
  return z.int(says).min(min, says).max(max, says);
};

export const seconds = (min: number, max: number) => {
  const says = saying(`must be a number of seconds from ${min} to ${max}`);
  return z.number(says).min(min, says).max(max, says);
};

export const oneOf = <const T extends readonly [string, ...string[]]>(...allowed: T) =>
  z.enum(allowed, saying(`must be one of: ${allowed.join(', ')}`));

/** A port from 1 to 65535 as a string of at most `digits` digits (leading zeros allowed). */
export const portTextPattern = (digits: number) =>
  `^(?=[0-9]{1,${digits}}$)0*(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$`;
/** A port setting: at most 5 digits. */
export const PORT_STRING_PATTERN = portTextPattern(5);
export const portString = z
  .string(saying('must be a string holding a port from 1 to 65535'))
  .regex(new RegExp(PORT_STRING_PATTERN), 'must be a string holding a port from 1 to 65535');

/** An absolute path of safe characters with no `..` segment. */
export const ABSOLUTE_PATH_PATTERN = '^(?!(?:.*/)?\\.\\.(?:/|$))/[A-Za-z0-9_./+@:,=-]*$';
const PATH_RULE = 'must be an absolute path of letters, digits and _ . / + @ : , = -';
export const absolutePath = z.string(saying(PATH_RULE)).regex(new RegExp(ABSOLUTE_PATH_PATTERN), PATH_RULE);
/** Empty, or an absolute path (certificate files live where an ACME client puts them). */
export const optionalPath = z.union([z.literal(''), absolutePath], saying(PATH_RULE));

/** A program: an absolute path, or a bare name looked up on PATH (a relative path would depend on the working dir). */
export const PROGRAM_NAME = /^[A-Za-z0-9_+-][A-Za-z0-9_.+-]*$/;
const COMMAND_RULE = 'must be an absolute path, or a program name on PATH (letters, digits and _ . + -)';
export const command = z.union([z.string().regex(PROGRAM_NAME), absolutePath], saying(COMMAND_RULE));

/** A host name as ListenAddr takes one (an IP address is the other form). */
export const HOST_NAME_PATTERN = '^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$';
export const address = z.union(
  [z.ipv4(), z.ipv6(), z.string().regex(new RegExp(HOST_NAME_PATTERN))],
  saying('must be an IP address or a host name'),
);

/** Empty, or an http(s) URL: what the URL parser reads, with no control characters (it drops tabs and newlines). */
export const url = z
  .string(saying('must be a string'))
  .refine((v) => !CONTROL.test(v), 'must not contain control characters or newlines')
  .refine((v) => {
    if (v === '') return true;
    try {
      const { protocol } = new URL(v);
      return protocol === 'http:' || protocol === 'https:';
    } catch {
      return false;
    }
  }, 'must be an http or https URL')
  .meta({ pattern: '^(?:[hH][tT][tT][pP][sS]?://[^\\x00-\\x20\\x7f]+)?$' });

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Header names to values HTTP can carry as they are (printable ASCII and tabs); never Content-Length or Host. */
export const headers = z.record(
  z
    .string()
    .regex(HEADER_NAME, 'has an invalid header name')
    .refine((name) => !['content-length', 'host'].includes(name.toLowerCase()), 'cannot set Content-Length or Host')
    .meta({ not: { pattern: '^(?:[Cc][Oo][Nn][Tt][Ee][Nn][Tt]-[Ll][Ee][Nn][Gg][Tt][Hh]|[Hh][Oo][Ss][Tt])$' } }),
  z.string(saying('must be a single-line string of printable ASCII characters')).regex(/^[\t\x20-\x7e]*$/, {
    error: 'must be a single-line string of printable ASCII characters',
  }),
  {
    error: (issue) =>
      issue.code === 'invalid_type' ? 'must be an object of header names to string values' : undefined,
  },
);

export const exitCodes = z
  .array(intRange(0, 255), saying('must be a list of exit codes from 0 to 255'))
  .max(256, 'must be a list of at most 256 exit codes');

/** What TOML can hold: anything JSON has but null, at any depth. */
const tomlValue: z.ZodType = z
  .lazy(() =>
    z.union([z.string(), z.number(), z.boolean(), z.array(tomlValue), z.record(z.string(), tomlValue)], {
      error: (issue) =>
        issue.input === null ? 'is null, which a setting cannot hold' : 'is not a value TOML can hold',
    }),
  )
  .meta({ id: 'TomlValue', description: 'any JSON value but null, at any depth (settings.toml is TOML: no null)' });
export const tomlTable = z.record(z.string(), tomlValue, saying('must be an object'));

export const autoOrBoolean = z.union([z.boolean(), z.literal('auto')], saying('must be true, false or "auto"'));

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
/** An IP address or a CIDR as a pattern (the document's); parseCidr reads the same, and the tests hold them together. */
export const CIDR_PATTERN = `^(?:${IPV4}(?:/(?=\\d{1,3}$)0*(?:3[0-2]|[12]?\\d))?|(?:${IPV6})(?:/(?=\\d{1,3}$)0*(?:12[0-8]|1[01]\\d|[1-9]?\\d))?)$`;

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

/** How many entries TrustedProxies may hold. */
export const MAX_TRUSTED_PROXIES = 256;
const CIDRS_RULE = `must be a list of IP addresses or CIDRs (at most ${MAX_TRUSTED_PROXIES})`;
export const cidrs = z
  .array(z.string().meta({ pattern: CIDR_PATTERN }), saying(CIDRS_RULE))
  .max(MAX_TRUSTED_PROXIES, CIDRS_RULE)
  .superRefine((list, ctx) => {
    const bad = list.find((entry) => parseCidr(entry) === undefined);
    if (bad !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `has ${JSON.stringify(bad)}, which is neither an IP address nor a CIDR`,
      });
    }
  });
