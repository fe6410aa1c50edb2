import { stringify } from 'smol-toml';
import { isTable, sameTree, type Table } from './toml-tree.js';

/**
 * An operator's TOML file kept as they wrote it (comments, layout, dotted keys) when tunnelward only adds to it: the
 * keys `doc` holds and the text does not are written into the text, each as one new line, and nothing else changes.
 * Undefined when the text says anything else than `doc` (a value changed or removed, a key renamed), or when the
 * lines cannot go in so that the text reads as `doc`: the caller writes `doc` afresh then.
 */
export function textWithAdditions(source: string, doc: Table, read: (text: string) => Table): string | undefined {
  const additions = addedLeaves(read(source), doc, []);
  if (additions === undefined) return undefined;
  if (additions.length === 0) return source;
  const eol = source.includes('\r\n') ? '\r\n' : '\n';
  const lines = source.split('\n').map((line) => line.replace(/\r$/, ''));
  if (lines.at(-1) === '') lines.pop();
  const { tables, arrays } = tableHeaders(lines);
  /** New lines, by the line they follow (-1: the file's start). */
  const inserts = new Map<number, string[]>();
  const add = (after: number, line: string) => inserts.set(after, [...(inserts.get(after) ?? []), line]);
  for (const [path, value] of additions) {
    const entry = (rest: Path) => `${rest.map((part) => keyPart(String(part))).join('.')} = ${tomlValue(value)}`;
    // A key of a `[[proxies]]` entry goes under that entry's header.
    const [root, index, ...inEntry] = path;
    if (typeof index === 'number') {
      const header = arrays.get(String(root))?.[index];
      if (header === undefined) return undefined;
      add(header, entry(inEntry));
      continue;
    }
    // Under the header of the deepest table of the path the file opens with one, else a dotted key at the top.
    const depth = [...Array(path.length - 1).keys()]
      .map((i) => path.length - 1 - i)
      .find((n) => tables.has(path.slice(0, n).join('.')));
    add(
      depth === undefined ? rootEnd(lines) : tables.get(path.slice(0, depth).join('.'))!,
      entry(path.slice(depth ?? 0)),
    );
  }
  const out = [...(inserts.get(-1) ?? [])];
  lines.forEach((line, index) => out.push(line, ...(inserts.get(index) ?? [])));
  const text = out.join(eol) + eol;
  try {
    return sameTree(read(text), doc) ? text : undefined;
  } catch {
    return undefined;
  }
}

/** Where a value is: table keys, and an entry's index in an array of tables. */
type Path = Array<string | number>;

/**
 * The leaves of `doc` the text's tree lacks, by path (into the entries of a top-level array of tables too);
 * undefined when the tree holds anything `doc` does not.
 */
function addedLeaves(tree: Table, doc: Table, at: Path): Array<[Path, unknown]> | undefined {
  if (Object.keys(tree).some((key) => !Object.hasOwn(doc, key))) return undefined;
  const added: Array<[Path, unknown]> = [];
  for (const [key, value] of Object.entries(doc)) {
    const path = [...at, key];
    const had = tree[key];
    let inner: Array<[Path, unknown]> | undefined = [];
    if (!Object.hasOwn(tree, key)) inner = leaves(value, path);
    else if (isTable(value) && isTable(had)) inner = addedLeaves(had, value, path);
    else if (at.length === 0 && tableArrays(value, had)) {
      for (const [index, entry] of (value as Table[]).entries()) {
        const more = addedLeaves((had as Table[])[index]!, entry, [...path, index]);
        if (more === undefined) return undefined;
        inner.push(...more);
      }
    } else if (!sameTree(had, value)) inner = undefined;
    if (inner === undefined) return undefined;
    added.push(...inner);
  }
  return added;
}

function tableArrays(a: unknown, b: unknown): boolean {
  return Array.isArray(a) && Array.isArray(b) && a.length === b.length && [...a, ...b].every(isTable);
}

function leaves(value: unknown, path: Path): Array<[Path, unknown]> {
  if (!isTable(value)) return [[path, value]];
  return Object.entries(value).flatMap(([key, item]) => leaves(item, [...path, key]));
}

/**
 * The table headers of the text by dotted name: the line of each `[a.b]`, and of each `[[a]]` in order. Only
 * tables outside arrays of tables count (`[proxies.transport]` is part of the entry above it).
 */
function tableHeaders(lines: string[]): { tables: Map<string, number>; arrays: Map<string, number[]> } {
  const tables = new Map<string, number>();
  const arrays = new Map<string, number[]>();
  const nameOf = (raw: string) =>
    raw
      .split('.')
      .map((part) => part.trim())
      .join('.');
  lines.forEach((line, index) => {
    const header = /^\s*(\[\[?)\s*([A-Za-z0-9_.\s-]+?)\s*\]\]?\s*(?:#.*)?$/.exec(line);
    if (!header) return;
    const name = nameOf(header[2]!);
    if (header[1] === '[[') arrays.set(name, [...(arrays.get(name) ?? []), index]);
    else if (![...arrays.keys()].some((array) => name.startsWith(`${array}.`))) tables.set(name, index);
  });
  return { tables, arrays };
}

/**
 * The last line of the top-level keys: before the first table header and the comments and blank lines just above
 * it, which belong to that table. -1 when the file opens with a table.
 */
function rootEnd(lines: string[]): number {
  const first = lines.findIndex((line) => /^\s*\[/.test(line));
  let end = (first < 0 ? lines.length : first) - 1;
  if (first >= 0) while (end >= 0 && /^\s*(#.*)?$/.test(lines[end]!)) end--;
  return end;
}

function keyPart(part: string): string {
  return /^[A-Za-z0-9_-]+$/.test(part) ? part : JSON.stringify(part);
}

function tomlValue(value: unknown): string {
  return stringify({ v: value }).replace(/^v = /, '').trimEnd();
}
