import { COMMON_KEYS, visitorKeyTable, type KeySpec } from './frpc-keys.js';
import { isPlaceholder, renderPlaceholders } from './go-template.js';
import { proxyKeyTable } from './proxy-keys.js';
import { pluginTypeOf, SECRET_MASK } from './proxy-view.js';
import { isTable, text, type Table } from './toml-tree.js';

/**
 * A config document as it may be shown to someone who must not read its secrets: the value of every key marked
 * secret (auth.token, a proxy's or visitor's secretKey, http and plugin passwords, ...) is replaced by the mask, and
 * so is every value of a key tunnelward does not know, which could be one.
 */
export function maskSecrets(doc: Table): Table {
  return mapValues(doc, (_, spec, value) => (spec && !spec.secret ? value : SECRET_MASK));
}

/**
 * Shown in a diff's new side in place of a secret that is not what the old side held there: a changed token shows
 * as changed without showing either value.
 */
const NEW_SECRET_MASK = `${SECRET_MASK} (new value)`;

/**
 * The document masked as maskSecrets masks it, beside `before`: each masked value that `before` does not hold at the
 * same place (a proxy or visitor found by its name) is NEW_SECRET_MASK. The new side of a masked diff.
 */
export function maskSecretsBeside(doc: Table, before: Table): Table {
  const was = new Map<string, string | undefined>();
  mapValues(before, (name, spec, value) => {
    if (!spec || spec.secret) was.set(placeOf(before, name), JSON.stringify(value));
    return value;
  });
  return mapValues(doc, (name, spec, value) => {
    if (spec && !spec.secret) return value;
    return was.get(placeOf(doc, name)) === JSON.stringify(value) ? SECRET_MASK : NEW_SECRET_MASK;
  });
}

/** A value's place in the document with a proxy or visitor named by its name, not its index: `proxies["web"].x`. */
function placeOf(doc: Table, name: string): string {
  return name.replace(/^(proxies|visitors)\[(\d+)\]/, (whole, kind: string, index: string) => {
    const block = (doc[kind] as unknown[] | undefined)?.[Number(index)];
    return isTable(block) && typeof block.name === 'string' ? `${kind}[${JSON.stringify(block.name)}]` : whole;
  });
}

/**
 * The values of the document's secret keys as frpc reads them (placeholders rendered with `env`): what must never be
 * shown, wherever it turns up.
 */
export function secretValues(doc: Table, env: Readonly<Record<string, string>>): string[] {
  const found: string[] = [];
  mapValues(doc, (_, spec, value) => {
    if (spec?.secret && typeof value === 'string') found.push(renderPlaceholders(value, env));
    return value;
  });
  return found;
}

/**
 * The document with each placeholder that stands for a number or a boolean (`remotePort = {{ .Envs.PORT }}`)
 * replaced by `mark(placeholder)`: what the writer turns back into the bare placeholder once the text is made.
 */
export function markBarePlaceholders(doc: Table, mark: (placeholder: string) => string): Table {
  const bare = (value: unknown) => (isPlaceholder(value) ? mark(value) : value);
  return mapValues(doc, (_, spec, value) => {
    if (spec?.kind === 'port' || spec?.kind === 'integer' || spec?.kind === 'boolean') return bare(value);
    if (spec?.kind === 'booleanMap' && isTable(value))
      return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, bare(item)]));
    return value;
  });
}

/**
 * The document with each value (a leaf under the known keys, or a value of an unknown key: `spec` undefined)
 * replaced by `map`.
 */
function mapValues(doc: Table, map: (name: string, spec: KeySpec | undefined, value: unknown) => unknown): Table {
  const { proxies, visitors, ...settings } = doc;
  const out = mapTable(settings, COMMON_KEYS, '', '', map);
  const blocks = (
    kind: string,
    value: unknown,
    specsOf: (block: Table) => Readonly<Record<string, KeySpec>>,
  ): unknown[] =>
    Array.isArray(value)
      ? value.map((block, index) =>
          isTable(block)
            ? mapTable(block, specsOf(block), '', `${kind}[${index}].`, map)
            : map(`${kind}[${index}]`, undefined, block),
        )
      : [];
  if (proxies !== undefined)
    out.proxies = blocks('proxies', proxies, (b) => proxyKeyTable(text(b.type), pluginTypeOf(b)));
  if (visitors !== undefined) out.visitors = blocks('visitors', visitors, (b) => visitorKeyTable(text(b.type)));
  return out;
}

function mapTable(
  table: Table,
  specs: Readonly<Record<string, KeySpec>>,
  prefix: string,
  where: string,
  map: (name: string, spec: KeySpec | undefined, value: unknown) => unknown,
): Table {
  const out: Table = {};
  for (const [key, value] of Object.entries(table)) {
    const name = prefix + key;
    if (Object.hasOwn(specs, name)) out[key] = map(where + name, specs[name]!, value);
    else if (isTable(value)) out[key] = mapTable(value, specs, `${name}.`, where, map);
    else out[key] = map(where + name, undefined, value);
  }
  return out;
}

/**
 * A document an operator edited from a masked one: where it still holds the mask, the value is the one `current`
 * holds at the same place (a proxy or visitor found by its name). Masks with nothing behind them are `unresolved`.
 */
export function unmaskSecrets(edited: Table, current: Table): { doc: Table; unresolved: string[] } {
  const unresolved: string[] = [];
  const { proxies, visitors, ...settings } = edited;
  const { proxies: _p, visitors: _v, ...currentSettings } = current;
  const doc = unmaskTable(settings, currentSettings, '', unresolved);
  for (const [kind, blocks] of [
    ['proxies', proxies],
    ['visitors', visitors],
  ] as const) {
    if (blocks === undefined) continue;
    const before = Array.isArray(current[kind]) ? (current[kind] as unknown[]).filter(isTable) : [];
    doc[kind] = Array.isArray(blocks)
      ? blocks.map((block, index) => {
          if (!isTable(block)) return block;
          const same = before.find((other) => other.name === block.name);
          return unmaskTable(block, same, `${kind}[${index}].`, unresolved);
        })
      : blocks;
  }
  return { doc, unresolved };
}

function unmaskTable(table: Table, current: Table | undefined, prefix: string, unresolved: string[]): Table {
  const out: Table = {};
  for (const [key, value] of Object.entries(table)) {
    const was = current?.[key];
    if (value === SECRET_MASK) {
      if (was === undefined || isTable(was)) unresolved.push(prefix + key);
      out[key] = was === undefined || isTable(was) ? value : was;
    } else if (isTable(value))
      out[key] = unmaskTable(value, isTable(was) ? was : undefined, `${prefix}${key}.`, unresolved);
    else out[key] = value;
  }
  return out;
}
