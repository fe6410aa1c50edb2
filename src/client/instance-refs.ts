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
}

/** `--id N`, for commands that name instances: an id is never read from a bare word, which is always a name. */
export const ID_FLAG: FlagSpec = { name: 'id', value: true, repeat: true };

export async function listInstances(client: ApiClient): Promise<Listed[]> {
  return (await client.get<Listed[]>('/tunnelAct/instanceMgr/list')).data;
}

/** An instance a command acts on. */
export interface Target {
  id: number;
  name: string;
  state: string;
}

/**
 * References to instances: a bare word is a name (even one of digits, which older instances may have), `#3` or
 * `--id 3` an id. Read from one list; the ones that name nothing come back as `unknown`, each with why.
 */
export async function resolveInstances(
  client: ApiClient,
  refs: readonly string[],
  ids: readonly string[] = [],
): Promise<{ found: Target[]; unknown: Array<{ ref: string; message: string }> }> {
  const list = await listInstances(client);
  const byId = new Map(list.map((i) => [i.instanceID, i]));
  const byName = new Map(list.map((i) => [i.name, i]));
  const found: Target[] = [];
  const unknown: Array<{ ref: string; message: string }> = [];
  const all = [
    ...refs.map((ref) => ({ ref, id: /^#\d+$/.test(ref) ? ref.slice(1) : undefined })),
    ...ids.map((id) => ({ ref: `#${id}`, id })),
  ];
  for (const { ref, id } of all) {
    if (id !== undefined && !/^\d{1,15}$/.test(id)) throw usageError(`an instance id is a number, not ${id}`);
    const hit = id !== undefined ? byId.get(Number(id)) : byName.get(ref);
    if (hit) {
      if (!found.some((t) => t.id === hit.instanceID))
        found.push({ id: hit.instanceID, name: hit.name, state: hit.state });
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
