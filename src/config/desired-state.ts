import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { z } from 'zod';
import { badRequest } from '../errors.js';
import { ENV_NAME, isPlaceholder } from './go-template.js';
import { isTable, type Table } from './toml-tree.js';
import { checkLabels } from '../instances/labels.js';
import { POLICY_SETTINGS, type InstancePolicy } from '../instances/health-policy.js';
import { SETTINGS_TABLE } from '../settings/table.js';
import { SECRET_MASK } from './proxy-view.js';

/**
 * The desired state of a host's instances: what `tunnelward apply` converges a daemon to and `tunnelward export --all`
 * writes. One schema, here: the file (YAML or TOML) and the HTTP body of the apply are both read by it. Every
 * attribute left out of an instance is its default (what a create gives), so the file is the whole truth of the
 * instances it names; only `state` left out leaves the instance's running state as it is.
 */

export const DESIRED_FORMATS = ['yaml', 'toml'] as const;
export type DesiredFormat = (typeof DESIRED_FORMATS)[number];

/** The instance's own figures over the settings (Health.DisconnectedSecs, Health.UnreachableSecs, Instance.MemoryMaxMB). */
const policy = z
  .strictObject(
    Object.fromEntries(
      Object.entries(POLICY_SETTINGS).map(([key, setting]) => [
        key,
        SETTINGS_TABLE[setting].schema.optional().describe(`its own ${setting}; left out: the setting's`),
      ]),
    ) as { [K in keyof typeof POLICY_SETTINGS]: z.ZodOptional<z.ZodNumber> },
  )
  .describe('its own health policy and memory cap; a figure left out follows the setting');

/** The name's rule is the catalogue's (a create refuses a name it breaks, in its words). */
const instanceName = z.string().min(1, 'is required').max(64, 'must be at most 64 characters');

/** An frpc client config as a tree, in frpc's own shape: top-level settings, `proxies` and `visitors` arrays. */
const frpcTree = z
  .record(z.string(), z.unknown())
  .describe(
    "the instance's frpc config in frpc's own shape (serverAddr, auth, transport, ..., proxies: [...], visitors: [...]); a secret may be a {{ .Envs.NAME }} reference. webServer is tunnelward's own admin endpoint and clientID defaults to <host>-<name>",
  );

/** What tunnelward keeps of an instance besides its frpc file. */
const attributes = {
  name: instanceName.describe('the instance, by its name (the key of the convergence: a new name is a new instance)'),
  state: z
    .enum(['running', 'stopped'])
    .optional()
    .describe('running or stopped; left out, the instance is left as it runs (a new one stays stopped)'),
  bootAtStart: z.boolean().optional().describe('start at boot, through its boot service (default false)'),
  runUser: z.string().min(1).optional().describe('operating-system user the tunnel runs as (default root)'),
  labels: z.record(z.string(), z.string()).optional().describe('its labels (default none)'),
  env: z
    .array(z.string().regex(ENV_NAME, 'must be an environment variable name'))
    .max(256)
    .optional()
    .describe(
      'the names of its environment variables, never their values (the file reads them as {{ .Envs.NAME }}); the values come with the apply (the CLI takes them from its own environment). Default none',
    ),
  policy: policy.optional(),
  probes: z.boolean().optional().describe('end-to-end probes of its proxies (default false)'),
  expires: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}T/, 'must be an ISO 8601 time (a duration would move at every apply), or null')
    .nullable()
    .optional()
    .describe('when it is stopped by itself, as an ISO 8601 time; null or left out: never'),
};

/** One instance of the file: its frpc config inline (`frpc`), or in a file of its own (`configFile`). */
export const desiredInstanceInFile = z
  .strictObject({
    ...attributes,
    frpc: frpcTree.optional(),
    configFile: z
      .string()
      .min(1)
      .optional()
      .describe('an frpc config file (TOML, INI, YAML or JSON), relative to the desired-state file; read by the CLI'),
  })
  .refine((i) => (i.frpc === undefined) !== (i.configFile === undefined), {
    message: 'give frpc (the config inline) or configFile, one of the two',
  });

/** One instance as the apply receives it: its frpc config as a tree. */
export const desiredInstance = z.strictObject({ ...attributes, frpc: frpcTree }).meta({ id: 'DesiredInstance' });
export type DesiredInstance = z.infer<typeof desiredInstance>;

const uniqueNames = (instances: Array<{ name: string }>, ctx: z.core.$RefinementCtx) => {
  const seen = new Set<string>();
  for (const [index, { name }] of instances.entries()) {
    if (seen.has(name))
      ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `${name} is named twice: names are unique` });
    seen.add(name);
  }
};

export const MAX_DESIRED_INSTANCES = 5000;

/** The desired-state file. */
export const desiredStateFile = z.strictObject({
  instances: z.array(desiredInstanceInFile).max(MAX_DESIRED_INSTANCES).superRefine(uniqueNames),
});
export type DesiredStateFile = z.infer<typeof desiredStateFile>;

/** The instances as the apply takes them. */
export const desiredInstances = z
  .array(desiredInstance)
  .max(MAX_DESIRED_INSTANCES)
  .superRefine(uniqueNames)
  .describe('every instance the host should have, by name');

/** An instance's attributes with every default filled in: what two sides compare. */
export interface Attributes {
  bootAtStart: boolean;
  runUser: string;
  labels: Record<string, string>;
  env: string[];
  policy: InstancePolicy;
  probes: boolean;
  /** ms since the epoch, or null. */
  expiresAt: number | null;
}

export const DEFAULT_RUN_USER = 'root';

/** The attributes a desired instance asks for, defaults filled as a create fills them. */
export function desiredAttributes(instance: DesiredInstance): Attributes {
  let expiresAt: number | null = null;
  if (instance.expires !== undefined && instance.expires !== null) {
    expiresAt = Date.parse(instance.expires);
    if (Number.isNaN(expiresAt)) throw badRequest(`${instance.name}: expires ${instance.expires} is not a time`);
  }
  return {
    bootAtStart: instance.bootAtStart ?? false,
    runUser: instance.runUser ?? DEFAULT_RUN_USER,
    labels: checkLabels(instance.labels ?? {}, `${instance.name}: labels`) as Record<string, string>,
    env: [...new Set(instance.env ?? [])].sort(),
    policy: { ...(instance.policy ?? {}) },
    probes: instance.probes ?? false,
    expiresAt,
  };
}

/**
 * What differs between an instance's attributes and the desired ones, one line each, in words an operator reads:
 * names and figures, never a value of an environment variable (`changedEnv` names those whose value differs).
 */
export function attributeChanges(current: Attributes, desired: Attributes, changedEnv: readonly string[]): string[] {
  const lines: string[] = [];
  const was = (a: unknown, b: unknown, what: string) => {
    if (JSON.stringify(a) !== JSON.stringify(b)) lines.push(`${what}: ${show(a)} -> ${show(b)}`);
  };
  was(current.bootAtStart, desired.bootAtStart, 'bootAtStart');
  was(current.runUser, desired.runUser, 'runUser');
  for (const key of [...new Set([...Object.keys(current.labels), ...Object.keys(desired.labels)])].sort())
    was(current.labels[key] ?? null, desired.labels[key] ?? null, `labels.${key}`);
  for (const key of Object.keys(POLICY_SETTINGS) as Array<keyof InstancePolicy>)
    was(current.policy[key] ?? null, desired.policy[key] ?? null, `policy.${key}`);
  was(current.probes, desired.probes, 'probes');
  was(isoOrNull(current.expiresAt), isoOrNull(desired.expiresAt), 'expires');
  for (const name of desired.env.filter((n) => !current.env.includes(n))) lines.push(`env ${name}: set`);
  for (const name of changedEnv) lines.push(`env ${name}: changed`);
  for (const name of current.env.filter((n) => !desired.env.includes(n))) lines.push(`env ${name}: removed`);
  return lines;
}

const isoOrNull = (at: number | null) => (at === null ? null : new Date(at).toISOString());
const show = (value: unknown) => (value === null ? '(none)' : String(value));

/** The frpc tree as TOML text: what the import and the change pipeline read. */
export function frpcText(tree: Table): string {
  return stringifyToml(tree);
}

/** Reads a desired-state file: YAML or TOML (by `format`, else guessed: TOML first), checked by its schema. */
export function readDesiredState(text: string, format?: DesiredFormat): DesiredStateFile {
  const tree = format === 'yaml' ? readYaml(text) : format === 'toml' ? readToml(text) : guess(text);
  const parsed = desiredStateFile.safeParse(tree);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'the file'}: ${i.message}`);
    throw badRequest(`the desired-state file is refused: ${problems.slice(0, 20).join('; ')}`);
  }
  return parsed.data;
}

function readYaml(text: string): unknown {
  try {
    return parseYaml(text, { maxAliasCount: 100 }) as unknown;
  } catch (err) {
    // The parser's first line says what and where; the lines after it quote the file (left out: it may hold secrets).
    const first = (err as Error).message.split('\n')[0]!.replace(/:$/, '');
    throw badRequest(`the desired-state file is not YAML: ${first}`);
  }
}

function readToml(text: string): unknown {
  try {
    return parseToml(text);
  } catch (err) {
    // As for YAML: the first line and the place, not the quoted file.
    const { message, line, column } = err as Error & { line?: number; column?: number };
    const first = message.split('\n')[0]!.replace(/^Invalid TOML document: /, '');
    throw badRequest(`the desired-state file is not TOML: ${first}${line ? ` at line ${line}, column ${column}` : ''}`);
  }
}

function guess(text: string): unknown {
  try {
    return parseToml(text);
  } catch {
    return readYaml(text);
  }
}

/** The desired state as a file's text. TOML has no null: an attribute at its default is left out there. */
export function writeDesiredState(state: { instances: DesiredInstance[] }, format: DesiredFormat): string {
  if (format === 'yaml') return stringifyYaml(state, { lineWidth: 0 });
  const clean = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(clean)
      : isTable(value)
        ? Object.fromEntries(
            Object.entries(value)
              .filter(([, v]) => v !== null && v !== undefined)
              .map(([k, v]) => [k, clean(v)]),
          )
        : value;
  return stringifyToml(clean(state) as Table);
}

/**
 * An exported frpc tree whose secrets were masked (for a caller who may not read them): each masked value becomes a
 * `{{ .Envs.NAME }}` reference, named after the instance and the key, so that the file is never applied with the
 * mask as if it were the secret. A value that was a reference already is kept. Returns the names it made.
 */
export function referencesForMasked(masked: unknown, clear: unknown, prefix: string, names: string[]): unknown {
  if (Array.isArray(masked))
    return masked.map((item, i) => {
      const block = isTable(item) && typeof item.name === 'string' ? item.name : String(i);
      return referencesForMasked(item, Array.isArray(clear) ? clear[i] : undefined, `${prefix}_${block}`, names);
    });
  if (isTable(masked))
    return Object.fromEntries(
      Object.entries(masked).map(([key, value]) => [
        key,
        referencesForMasked(value, isTable(clear) ? clear[key] : undefined, `${prefix}_${key}`, names),
      ]),
    );
  if (masked !== SECRET_MASK) return masked;
  if (isPlaceholder(clear)) return clear;
  // An environment variable's name starts with a letter or `_`; an instance's name may start with a digit.
  const name = prefix
    .toUpperCase()
    .replace(/[^A-Z0-9_]/g, '_')
    .replace(/^(?=\d)/, '_');
  names.push(name);
  return `{{ .Envs.${name} }}`;
}
