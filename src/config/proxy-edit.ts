import { badRequest } from '../errors.js';
import { withSuggestions } from '../util/closest.js';
import { LEGACY_PROXY_KEYS, type KeySpec } from './frpc-keys.js';
import {
  ALL_PROXY_KEYS,
  DOMAIN_TYPES,
  isKeyGroup,
  mapKeyOf,
  PLUGIN_TYPES,
  pluginsWithKey,
  PROXY_TYPES,
  proxyKeyTable,
  REMOTE_PORT_TYPES,
  requiredPluginKeys,
  typesWithKey,
} from './proxy-keys.js';
import { pluginTypeOf, SECRET_MASK } from './proxy-view.js';
import { copyTree, deletePath, getPath, isTable, setPath, splitList, text, type Table } from './toml-tree.js';
import { checkEntryName, checkString, checkValue, messageOf, safeLabel } from './value-check.js';

/**
 * Proxy fields as the API sends them: frpc's keys, nested (`{ transport: { useEncryption: true } }`) or dotted
 * (`"transport.useEncryption": true`), or the older snake_case names. `''` means "not given"; `null` removes.
 */
export type ProxyInput = Record<string, unknown>;

/** One requested change: a key, one entry of a map key (`metadatas.owner`), or a whole table (`plugin: null`). */
export interface ProxyChange {
  key: string;
  /** The name as the caller gave it, safe to show. */
  label: string;
  /** `null` removes. */
  value: unknown;
  entry?: string;
  group?: boolean;
}

/** A proxy's name inside its instance. */
export const PROXY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Reads proxyInfo into changes by frpc's dotted names; every key that no proxy type has is refused by name. */
export function readProxyChanges(input: unknown): ProxyChange[] {
  if (!isTable(input)) throw badRequest('proxyInfo must be an object');
  const unknown: string[] = [];
  const changes: ProxyChange[] = [];
  const givenAs = new Map<string, string>();
  for (const [path, label, value] of leaves(input)) {
    const change = changeAt(path, label, value);
    // A blank is "not given"; a key no proxy has is refused whatever its value.
    if (value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) {
      if (change === undefined && !isKeyGroup(path)) unknown.push(label);
      continue;
    }
    if (change === undefined) {
      unknown.push(label);
      continue;
    }
    // A whole map and one of its entries, or two spellings of one key, would make the result depend on order.
    const target = change.entry === undefined ? change.key : `${change.key}.${change.entry}`;
    const earlier = givenAs.get(target) ?? givenAs.get(change.entry === undefined ? `${target}.*` : change.key);
    if (earlier !== undefined) throw badRequest(`${label} and ${earlier} both set ${safeLabel(target)}`);
    givenAs.set(target, label);
    if (change.entry !== undefined) givenAs.set(`${change.key}.*`, label);
    changes.push(change);
  }
  if (unknown.length > 0)
    throw badRequest(
      `Unknown proxy key${unknown.length > 1 ? 's' : ''}: ${withSuggestions(unknown, Object.keys(ALL_PROXY_KEYS))}`,
    );
  return changes;
}

/**
 * The block that `changes` make of `old` (a new proxy when `old` is undefined). Keys not changed keep their
 * value, known or not; `old` itself is never touched, so a refused change leaves nothing half done.
 */
export function editProxy(old: Table | undefined, requested: readonly ProxyChange[]): Table {
  const creating = old === undefined;
  // Removing has no meaning for a proxy that does not exist yet.
  const changes = creating ? requested.filter((change) => change.value !== null) : requested;
  const find = (key: string) => changes.find((change) => change.key === key && change.entry === undefined);
  if (creating && find('name') === undefined) throw badRequest('name is required');
  const typeChange = find('type');
  if (creating && typeChange === undefined) throw badRequest('type is required');
  if (typeChange?.value === null) throw badRequest(`${typeChange.label} cannot be removed`);
  const type = typeChange ? checkString(typeChange.label, typeChange.value, { oneOf: PROXY_TYPES }) : text(old?.type);

  const block = copyTree(old ?? {});
  const pluginType = newPluginType(block, find('plugin.type'), find('plugin'));
  const table = proxyKeyTable(type, pluginType);
  const errors: string[] = [];
  for (const change of changes) {
    try {
      applyChange(block, change, table, { type, pluginType, old });
    } catch (err) {
      errors.push(messageOf(err));
    }
  }
  if (errors.length > 0) throw badRequest([...new Set(errors)].join('; '));
  // A key of the old type (or plugin) would make frpc refuse the file under the new one.
  if (!creating && (text(old.type) !== type || pluginTypeOf(old) !== pluginType)) dropKeysNotIn(block, table);
  const settled = settleDefaults(block, type, creating);
  checkShape(settled, type, pluginType);
  return settled;
}

/** Walks nested objects down to frpc's keys, mapping older top-level names; yields [dotted key, label, value]. */
function* leaves(table: Table, prefix = ''): Generator<[string, string, unknown]> {
  for (const [key, value] of Object.entries(table)) {
    const older = prefix === '' && !isTable(value) && value !== null && Object.hasOwn(LEGACY_PROXY_KEYS, key);
    const path = older ? LEGACY_PROXY_KEYS[key]! : prefix + key;
    const label = safeLabel(prefix + key);
    if (isTable(value) && !Object.hasOwn(ALL_PROXY_KEYS, path) && mapKeyOf(path) === undefined) {
      yield* leaves(value, `${path}.`);
    } else {
      yield [path, label, value];
    }
  }
}

function changeAt(path: string, label: string, value: unknown): ProxyChange | undefined {
  if (Object.hasOwn(ALL_PROXY_KEYS, path)) return { key: path, label, value };
  const mapKey = mapKeyOf(path);
  if (mapKey !== undefined) return { key: mapKey, label, value, entry: path.slice(mapKey.length + 1) };
  if (value === null && isKeyGroup(path)) return { key: path, label, value, group: true };
  return undefined;
}

function newPluginType(block: Table, typeChange?: ProxyChange, groupChange?: ProxyChange): string | undefined {
  if (groupChange?.group) return undefined;
  if (typeChange === undefined) return pluginTypeOf(block);
  if (typeChange.value === null) return undefined;
  return checkString(typeChange.label, typeChange.value, { oneOf: PLUGIN_TYPES });
}

interface EditContext {
  type: string;
  pluginType: string | undefined;
  old: Table | undefined;
}

function applyChange(
  block: Table,
  change: ProxyChange,
  table: Readonly<Record<string, KeySpec>>,
  ctx: EditContext,
): void {
  const { key, label, value } = change;
  const path = key.split('.');
  if (change.group) {
    deletePath(block, path);
    return;
  }
  if (value === null) {
    // Removing a key the type does not have is harmless, and cleans a file that has one anyway.
    if (key === 'name' || key === 'type') throw badRequest(`${label} cannot be removed`);
    if (change.entry !== undefined) deletePath(block, [...path, change.entry]);
    else if (key === 'plugin.type')
      delete block.plugin; // frpc refuses a plugin table without a type
    else deletePath(block, path);
    return;
  }
  if (!Object.hasOwn(table, key)) throw badRequest(notOfThisProxy(label, key, ctx));
  const spec = table[key]!;
  if (change.entry !== undefined) {
    checkEntryName(key, spec, change.entry);
    setPath(block, [...path, change.entry], checkString(label, value));
    return;
  }
  if (spec.secret && value === SECRET_MASK) {
    // A secret sent back as the list shows it keeps its value, as /settings/set does with masked headers.
    if (ctx.old !== undefined && getPath(ctx.old, path) !== undefined) return;
    throw badRequest(`${label} is the mask the list shows in place of a secret; send the secret itself`);
  }
  setPath(block, path, checkProxyValue(label, key, spec, value));
}

function checkProxyValue(label: string, key: string, spec: KeySpec, value: unknown): unknown {
  if (key === 'name') {
    const name = checkString(label, value);
    if (!PROXY_NAME.test(name))
      throw badRequest(`${label} must be 1-64 characters from A-Z, a-z, 0-9, "_", "." and "-"`);
    return name;
  }
  if (spec.kind === 'strings') {
    const list = typeof value === 'string' ? splitList(value) : value;
    if (!Array.isArray(list)) throw badRequest(`${label} must be an array of strings or a comma-separated string`);
    return checkValue(label, spec, list);
  }
  return checkValue(label, spec, value);
}

function notOfThisProxy(label: string, key: string, ctx: EditContext): string {
  if (!key.startsWith('plugin.'))
    return `${label} is only used by ${listText(typesWithKey(key))} proxies, not ${ctx.type}`;
  if (ctx.pluginType === undefined) return `${label} is a plugin option: set plugin.type too`;
  const owners = pluginsWithKey(key.slice('plugin.'.length));
  return `${label} is not an option of the ${ctx.pluginType} plugin (only of ${listText(owners)})`;
}

function listText(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

function dropKeysNotIn(block: Table, table: Readonly<Record<string, KeySpec>>): void {
  for (const key of Object.keys(ALL_PROXY_KEYS)) if (!Object.hasOwn(table, key)) deletePath(block, key.split('.'));
}

/** frpc's defaults made explicit where the API shows them, and `enabled = true` left implicit as frpc writes it. */
function settleDefaults(block: Table, type: string, creating: boolean): Table {
  if (block.enabled === true) delete block.enabled;
  if (type === 'tcpmux' && block.multiplexer === undefined) block.multiplexer = 'httpconnect'; // its only one
  if (!creating) return block;
  // A plugin serves the connections itself, so only a proxy without one gets the usual local address.
  const localIP = block.localIP ?? (block.plugin === undefined ? '127.0.0.1' : undefined);
  return { name: block.name, type: block.type, ...(localIP === undefined ? {} : { localIP }), ...block };
}

/** The rules frpc's validation applies to a proxy, checked here so a bad block never reaches the file. */
function checkShape(block: Table, type: string, pluginType: string | undefined): void {
  if (REMOTE_PORT_TYPES.includes(type) && block.remotePort === undefined) {
    throw badRequest('remotePort is required for tcp and udp proxies');
  }
  if (DOMAIN_TYPES.includes(type)) {
    const domains = block.customDomains;
    if (!(Array.isArray(domains) && domains.length > 0) && !block.subdomain) {
      throw badRequest(`a ${type} proxy needs customDomains or subdomain`);
    }
  }
  if (pluginType === undefined && block.localPort === undefined) throw badRequest('localPort is required');
  for (const key of requiredPluginKeys(pluginType ?? '')) {
    if (getPath(block, ['plugin', key]) === undefined)
      throw badRequest(`plugin.${key} is required by the ${pluginType} plugin`);
  }
  if (getPath(block, ['healthCheck', 'type']) === 'http' && !getPath(block, ['healthCheck', 'path'])) {
    throw badRequest('healthCheck.path is required for an http health check');
  }
}
