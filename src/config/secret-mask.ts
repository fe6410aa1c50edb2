import { COMMON_KEYS, visitorKeyTable, type KeySpec } from './frpc-keys.js';
import { proxyKeyTable } from './proxy-keys.js';
import { pluginTypeOf, SECRET_MASK } from './proxy-view.js';
import { isTable, text, type Table } from './toml-tree.js';

/**
 * A config document as it may be shown to someone who must not read its secrets: the value of every key marked
 * secret (auth.token, a proxy's or visitor's secretKey, http and plugin passwords, ...) is replaced by the mask, and
 * so is every value of a key tunnelward does not know, which could be one.
 */
export function maskSecrets(doc: Table): Table {
  const { proxies, visitors, ...settings } = doc;
  const out = maskTable(settings, COMMON_KEYS);
  const blocks = (value: unknown, specsOf: (block: Table) => Readonly<Record<string, KeySpec>>) =>
    Array.isArray(value) ? value.map((block) => (isTable(block) ? maskTable(block, specsOf(block)) : SECRET_MASK)) : [];
  if (proxies !== undefined) out.proxies = blocks(proxies, (b) => proxyKeyTable(text(b.type), pluginTypeOf(b)));
  if (visitors !== undefined) out.visitors = blocks(visitors, (b) => visitorKeyTable(text(b.type)));
  return out;
}

function maskTable(table: Table, specs: Readonly<Record<string, KeySpec>>, prefix = ''): Table {
  const out: Table = {};
  for (const [key, value] of Object.entries(table)) {
    const name = prefix + key;
    if (Object.hasOwn(specs, name)) out[key] = specs[name]!.secret ? SECRET_MASK : value;
    else if (isTable(value)) out[key] = maskTable(value, specs, `${name}.`);
    else out[key] = SECRET_MASK;
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
