import { badRequest } from '../errors.js';
import { isReservedKey, reservedKeyMessage } from '../util/reserved-keys.js';

// Small operations on parsed TOML tables, shared by the config reader and editor.

/** A parsed TOML table. */
export type Table = Record<string, unknown>;

/** No frpc setting nests deeper than a few tables and arrays. */
export const MAX_DEPTH = 32;

export const tooDeep = (what: string) =>
  badRequest(`${what} nests deeper than ${MAX_DEPTH} levels, which no frpc setting does`);

/**
 * Refuses a parsed document that nests deeper than any frpc setting (a 20 000-part dotted key is 20 000 tables) or
 * holds a key that names what every object has. Walked with an explicit stack, and only as deep as the bound.
 */
export function checkTree(tree: Table, what: string): void {
  const pending: Array<{ value: unknown; depth: number; where: string }> = [{ value: tree, depth: 0, where: '' }];
  while (pending.length > 0) {
    const { value, depth, where } = pending.pop()!;
    if (Array.isArray(value)) {
      if (depth >= MAX_DEPTH) throw tooDeep(what);
      value.forEach((item, i) => pending.push({ value: item, depth: depth + 1, where: `${where}[${i}]` }));
    } else if (isTable(value)) {
      if (depth >= MAX_DEPTH) throw tooDeep(what);
      for (const [key, item] of Object.entries(value)) {
        if (isReservedKey(key))
          throw badRequest(reservedKeyMessage(what, key, where ? `inside ${where}` : 'at its top level'));
        pending.push({ value: item, depth: depth + 1, where: where ? `${where}.${key}` : key });
      }
    }
  }
}

export function isTable(value: unknown): value is Table {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

export function text(value: unknown): string {
  return value === undefined || value === null || typeof value === 'object' ? '' : String(value);
}

export function splitList(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

export function tablesOf(value: unknown, name: string, what: string): Table[] {
  if (value === undefined) return [];
  if (Array.isArray(value) && value.every(isTable)) return value;
  throw badRequest(`${what}: ${name} must be an array of tables ([[${name}]])`);
}

export function getPath(table: Table, path: readonly string[]): unknown {
  let current: unknown = table;
  for (const part of path) {
    if (!isTable(current) || !Object.hasOwn(current, part)) return undefined;
    current = current[part];
  }
  return current;
}

export function setPath(table: Table, path: readonly string[], value: unknown): void {
  let current = table;
  for (const part of path.slice(0, -1)) {
    if (!isTable(current[part])) current[part] = {};
    current = current[part] as Table;
  }
  current[path[path.length - 1]!] = value;
}

/** Removes a key, and the tables it leaves empty. */
export function deletePath(table: Table, path: readonly string[]): void {
  const [head, ...rest] = path;
  if (head === undefined) return;
  if (rest.length === 0) {
    delete table[head];
    return;
  }
  const child = table[head];
  if (!isTable(child)) return;
  deletePath(child, rest);
  if (Object.keys(child).length === 0) delete table[head];
}

/** Merges two parsed tables key by key (a `[common]` key and a top-level table may both define `auth`). */
export function mergeValue(out: Table, key: string, value: unknown): void {
  const existing = out[key];
  if (isTable(existing) && isTable(value)) {
    for (const [k, v] of Object.entries(value)) mergeValue(existing, k, v);
  } else {
    out[key] = value;
  }
}

/** A deep copy of tables and arrays; other values (strings, numbers, TOML dates) are shared, being immutable here. */
export function copyTree<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copyTree) as T;
  if (isTable(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, copyTree(item)])) as T;
  return value;
}

/** Two parsed TOML values alike, key order aside. */
export function sameTree(a: unknown, b: unknown): boolean {
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => sameTree(item, b[i]));
  if (isTable(a)) {
    if (!isTable(b) || Object.keys(a).length !== Object.keys(b).length) return false;
    return Object.keys(a).every((key) => Object.hasOwn(b, key) && sameTree(a[key], b[key]));
  }
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  return a === b;
}
