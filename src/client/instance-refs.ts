import { labelKeyProblem, labelValueProblem } from '../instances/labels.js';
import type { ApiClient } from './api.js';
import type { FlagSpec, Parsed } from './args.js';
import { CliError, EXIT, usageError } from './errors.js';

/** An instance as the list shows it. */
export interface Listed {
  instanceID: number;
  name: string;
  state: string;
  pid: number | null;
  uptimeSecs?: number;
  restarts: number;
  connected: boolean | null;
  proxyStatus: Record<string, number>;
  /** Is it up, and if not why (src/instances/health.ts). */
  health?: { state: string; reason: string | null; since: string | null };
  bootAtStart: boolean;
  labels: Record<string, string>;
  /** While running: the share of one core the tunnel uses (100 = one core), and its resident memory. */
  cpuPercent?: number;
  rssBytes?: number;
  /** When it, or each of its proxies that has one, expires (ISO 8601; only those set). */
  expiresAt?: string;
  proxyExpiries?: Record<string, string>;
}

/** `--id N`, for commands that name instances: an id is never read from a bare word, which is always a name. */
export const ID_FLAG: FlagSpec = { name: 'id', value: true, repeat: true };

/** `--label KEY=VALUE`, repeatable: with several, an instance must have every one. */
export const LABEL_FLAG: FlagSpec = { name: 'label', short: 'l', value: true, repeat: true };

/** How a command's usage names what it selects. */
export const SELECTION_USAGE = "<name|#id|'pattern'>... [--id ID]... [--label KEY=VALUE]...";

/** A name with `*`, `?` or `[...]` is a pattern (instance names never hold them): quote it, or the shell expands it. */
export const isGlob = (ref: string) => /[*?[]/.test(ref);

/** A shell-style pattern as a regular expression over whole names: `*` any run, `?` one character, `[a-c]` a set. */
export function globPattern(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    const close = c === '[' ? glob.indexOf(']', i + 2) : -1;
    if (c === '*') source += '.*';
    else if (c === '?') source += '.';
    else if (close > 0) {
      const set = glob.slice(i + 1, close);
      const negated = set[0] === '!' || set[0] === '^';
      const body = (negated ? set.slice(1) : set).replace(/[\\\]^]/g, '\\$&');
      source += `[${negated ? '^' : ''}${body}]`;
      i = close;
    } else source += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/** `--label KEY=VALUE` pairs, each key and value checked as the server checks labels. */
export function labelSelector(args: Parsed): Array<[string, string]> {
  return (args.flags.get('label') ?? []).map((pair) => {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw usageError(`--label takes KEY=VALUE, not ${pair}`);
    const key = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    const problem = labelKeyProblem(key) ?? labelValueProblem(key, value);
    if (problem) throw usageError(problem);
    return [key, value];
  });
}

const hasLabels = (i: Listed, selector: ReadonlyArray<[string, string]>) =>
  selector.every(([key, value]) => Object.hasOwn(i.labels ?? {}, key) && i.labels[key] === value);

export async function listInstances(client: ApiClient): Promise<Listed[]> {
  return (await client.get('/tunnelAct/instanceMgr/list')).data;
}

/** An instance a command acts on. */
export interface Target {
  id: number;
  name: string;
  state: string;
}

/** What a selection found, in the list's order, and the references that found nothing, each with why. */
export interface Resolved {
  found: Target[];
  unknown: Array<{ ref: string; message: string }>;
}

/**
 * References to instances: a bare word is a name (even one of digits, which older instances may have), `#3` or
 * `--id 3` an id, `'web-*'` every name the pattern matches. Read from one list; the ones that name nothing come back
 * as `unknown`, each with why. `labels` narrows what they name (or, with no reference, selects from every instance).
 */
export async function resolveInstances(
  client: ApiClient,
  refs: readonly string[],
  ids: readonly string[] = [],
  labels: ReadonlyArray<[string, string]> = [],
): Promise<Resolved> {
  return resolveIn(await listInstances(client), refs, ids, labels);
}

/** `resolveInstances` over a list already read. */
export function resolveIn(
  list: readonly Listed[],
  refs: readonly string[],
  ids: readonly string[] = [],
  labels: ReadonlyArray<[string, string]> = [],
): Resolved {
  const labelled = labels.map(([k, v]) => `${k}=${v}`).join(',');
  if (refs.length === 0 && ids.length === 0) {
    const found = list.filter((i) => hasLabels(i, labels)).map(targetOf);
    return {
      found,
      unknown: found.length > 0 ? [] : [{ ref: labelled, message: `no instance has labels ${labelled}` }],
    };
  }
  const picked = resolveRefs(list, refs, ids);
  if (labels.length === 0) return picked;
  const withLabels = new Set(list.filter((i) => hasLabels(i, labels)).map((i) => i.instanceID));
  const found = picked.found.filter((t) => withLabels.has(t.id));
  if (picked.found.length > 0 && found.length === 0)
    picked.unknown.push({ ref: labelled, message: `none of the instances named has labels ${labelled}` });
  return { found, unknown: picked.unknown };
}

const targetOf = (i: Listed): Target => ({ id: i.instanceID, name: i.name, state: i.state });

function resolveRefs(list: readonly Listed[], refs: readonly string[], ids: readonly string[]): Resolved {
  const byId = new Map(list.map((i) => [i.instanceID, i]));
  const byName = new Map(list.map((i) => [i.name, i]));
  const found: Target[] = [];
  const unknown: Array<{ ref: string; message: string }> = [];
  const all = [
    ...refs.map((ref) => ({ ref, id: /^#\d+$/.test(ref) ? ref.slice(1) : undefined })),
    ...ids.map((id) => ({ ref: `#${id}`, id })),
  ];
  const seen = new Set<number>();
  const add = (hit: Listed) => {
    if (seen.has(hit.instanceID)) return;
    seen.add(hit.instanceID);
    found.push(targetOf(hit));
  };
  for (const { ref, id } of all) {
    if (id === undefined && isGlob(ref)) {
      const pattern = globPattern(ref);
      const hits = list.filter((i) => pattern.test(i.name));
      hits.forEach(add);
      if (hits.length === 0) unknown.push({ ref, message: `no instance matches ${ref}` });
      continue;
    }
    if (id !== undefined && !/^\d{1,15}$/.test(id)) throw usageError(`an instance id is a number, not ${id}`);
    const hit = id !== undefined ? byId.get(Number(id)) : byName.get(ref);
    if (hit) {
      add(hit);
      continue;
    }
    const hint =
      id === undefined && /^\d+$/.test(ref) && byId.has(Number(ref))
        ? ` (for the instance numbered ${ref}, write #${ref} or --id ${ref})`
        : '';
    unknown.push({ ref, message: id !== undefined ? `no instance numbered ${id}` : `no instance named ${ref}${hint}` });
  }
  return { found, unknown };
}

/** Every reference must name an instance: the first that does not fails the command. */
export async function resolveAll(
  client: ApiClient,
  refs: readonly string[],
  ids: readonly string[] = [],
): Promise<Target[]> {
  const { found, unknown } = await resolveInstances(client, refs, ids);
  if (unknown.length > 0) throw new CliError(EXIT.failed, unknown.map((u) => u.message).join('; '));
  return found;
}

/**
 * The one instance a command acts on: the first positional (a name or `#id`), or `--id N`; the other positionals are
 * the command's own.
 */
export async function oneInstance(client: ApiClient, args: Parsed): Promise<{ target: Target; rest: string[] }> {
  const ids = args.flags.get('id') ?? [];
  if (ids.length > 1) throw usageError('one instance only');
  const ref = ids.length > 0 ? undefined : args.positional[0];
  const rest = args.positional.slice(ids.length > 0 ? 0 : 1);
  if (ref === undefined && ids.length === 0) throw usageError('name the instance (its name, or #id, or --id ID)');
  const [target] = await resolveAll(client, ref === undefined ? [] : [ref], ids);
  return { target: target!, rest };
}

/** The one instance a command acts on, and nothing else. */
export async function onlyInstance(client: ApiClient, args: Parsed): Promise<Target> {
  const { target, rest } = await oneInstance(client, args);
  if (rest.length > 0) throw usageError(`one instance only, not ${rest.join(' ')}`);
  return target;
}

/** Whether the command line selects instances: names, `#id`s, patterns, `--id` or `--label`. */
export const selects = (args: Parsed) => args.positional.length > 0 || args.flags.has('id') || args.flags.has('label');

/**
 * The instances the command line selects, from one list: when none is, that is the command's failure (exit 1, with
 * why); else the references that found nothing are reported with the rest.
 */
export function selected(args: Parsed, list: readonly Listed[]): Resolved {
  const resolved = resolveIn(list, args.positional, args.flags.get('id') ?? [], labelSelector(args));
  if (resolved.found.length === 0) throw new CliError(EXIT.failed, resolved.unknown.map((u) => u.message).join('; '));
  return resolved;
}
