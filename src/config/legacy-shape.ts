import {
  COMMON_KEYS,
  LEGACY_COMMON_KEYS,
  LEGACY_COMMON_PREFIXES,
  LEGACY_PROXY_KEYS,
  LEGACY_PROXY_PREFIXES,
  LEGACY_VISITOR_KEYS,
  VISITOR_KEYS,
  type KeySpec,
} from './frpc-keys.js';
import { ALL_PROXY_KEYS } from './proxy-keys.js';
import { getPath, isTable, mergeValue, setPath, splitList, tablesOf, type Table } from './toml-tree.js';

/**
 * Reading frpc config files in the older shape: a `[common]` table, snake_case keys, `role` on proxy blocks,
 * string ports. Everything is mapped to frpc's current names and types; keys we do not know are kept as they are.
 */
export function normalizeDocument(raw: Table, what: string): Table {
  // The older shape keeps settings in a [common] table; its keys join the top level, ahead of the rest.
  const settings: Table = {};
  if (isTable(raw.common)) for (const [key, value] of Object.entries(raw.common)) mergeValue(settings, key, value);
  for (const [key, value] of Object.entries(raw)) {
    if (key === 'proxies' || key === 'visitors' || (key === 'common' && isTable(value))) continue;
    mergeValue(settings, key, value);
  }
  const doc = normalizeBlock(settings, LEGACY_COMMON_KEYS, LEGACY_COMMON_PREFIXES, COMMON_KEYS);

  const proxies: Table[] = [];
  const visitors: Table[] = [];
  for (const block of tablesOf(raw.proxies, 'proxies', what)) {
    // Older files marked the two roles with `role`; frpc's current format has separate arrays instead.
    if (block.role === 'visitor') {
      visitors.push(normalizeVisitor(block));
      continue;
    }
    const proxy = normalizeBlock(block, LEGACY_PROXY_KEYS, LEGACY_PROXY_PREFIXES, ALL_PROXY_KEYS);
    if (proxy.role === 'server') delete proxy.role;
    proxies.push(proxy);
  }
  for (const block of tablesOf(raw.visitors, 'visitors', what)) visitors.push(normalizeVisitor(block));
  if (raw.proxies !== undefined || proxies.length > 0) doc.proxies = proxies;
  if (raw.visitors !== undefined || visitors.length > 0) doc.visitors = visitors;
  return doc;
}

function normalizeVisitor(block: Table): Table {
  const visitor = normalizeBlock(block, LEGACY_VISITOR_KEYS, [], VISITOR_KEYS);
  if (visitor.role === 'visitor') delete visitor.role;
  return visitor;
}

/** Maps older keys to their current dotted place (a current key wins over its older spelling) and fixes types. */
function normalizeBlock(
  source: Table,
  legacy: Readonly<Record<string, string>>,
  prefixes: ReadonlyArray<readonly [string, string]>,
  specs: Readonly<Record<string, KeySpec>>,
): Table {
  const out: Table = {};
  for (const [key, value] of Object.entries(source)) {
    const path = legacyPath(key, value, legacy, prefixes);
    if (path === undefined) mergeValue(out, key, value);
    else if (getPath(source, path) === undefined && getPath(out, path) === undefined) setPath(out, path, value);
  }
  for (const [key, spec] of Object.entries(specs)) {
    const path = key.split('.');
    const value = getPath(out, path);
    if (value === undefined) continue;
    const fixed = coerce(spec, value);
    if (fixed !== value) setPath(out, path, fixed);
  }
  return out;
}

function legacyPath(
  key: string,
  value: unknown,
  legacy: Readonly<Record<string, string>>,
  prefixes: ReadonlyArray<readonly [string, string]>,
): string[] | undefined {
  if (isTable(value)) return undefined; // older files hold plain values; a table is already in the current shape
  if (Object.hasOwn(legacy, key)) return legacy[key]!.split('.');
  for (const [prefix, table] of prefixes) {
    if (key.startsWith(prefix) && key.length > prefix.length) return [...table.split('.'), key.slice(prefix.length)];
  }
  return undefined;
}

/** Lossless fixes of values frpc would refuse: `"7000"` for a port (the older API wrote strings), `"a,b"` for a list. */
function coerce(spec: KeySpec, value: unknown): unknown {
  switch (spec.kind) {
    case 'port':
    case 'integer':
      return typeof value === 'string' && /^-?\d{1,15}$/.test(value.trim()) ? Number(value.trim()) : value;
    case 'boolean':
      return value === 'true' ? true : value === 'false' ? false : value;
    case 'strings':
      return typeof value === 'string' ? splitList(value) : value;
    default:
      return value;
  }
}
