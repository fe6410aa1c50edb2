import { badRequest } from '../errors.js';

// Small operations on parsed TOML tables, shared by the config reader and editor.

/** A parsed TOML table. */
export type Table = Record<string, unknown>;

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
