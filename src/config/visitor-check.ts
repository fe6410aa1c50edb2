import { badRequest } from '../errors.js';
import { withSuggestions } from '../util/closest.js';
import { VISITOR_KEYS, VISITOR_TYPES, visitorKeyTable, type KeySpec } from './frpc-keys.js';
import { SECRET_MASK } from './proxy-view.js';
import { isTable, setPath, text, type Table } from './toml-tree.js';
import { checkString, checkValue, messageOf, safeLabel } from './value-check.js';

const VISITOR_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * A `[[visitors]]` block (in frpc's current names) checked as frpc reads it: only keys of its type, each value of
 * its kind, and what frpc's validation requires (name, serverName, a bindPort other than 0). Every problem is named,
 * never a value. Returns the block with its values in the types frpc wants, name and type first.
 */
export function checkVisitor(block: Table): Table {
  const type = checkString('type', block.type ?? '', { oneOf: VISITOR_TYPES });
  const table = visitorKeyTable(type);
  const out: Table = { name: undefined, type };
  const unknown: string[] = [];
  const errors: string[] = [];
  for (const [key, value] of leaves(block)) {
    const label = safeLabel(key);
    const spec: KeySpec | undefined = table[key];
    if (spec === undefined) {
      if (Object.hasOwn(VISITOR_KEYS, key)) errors.push(`${label} is only used by xtcp visitors, not ${type}`);
      else unknown.push(label);
      continue;
    }
    if (spec.secret && value === SECRET_MASK) {
      errors.push(`${label} is the mask an export shows in place of a secret; put the secret itself`);
      continue;
    }
    try {
      setPath(out, key.split('.'), checkValue(label, spec, value));
    } catch (err) {
      errors.push(messageOf(err));
    }
  }
  if (unknown.length > 0)
    throw badRequest(
      `Unknown visitor key${unknown.length > 1 ? 's' : ''}: ${withSuggestions(unknown, Object.keys(VISITOR_KEYS))}`,
    );
  if (errors.length > 0) throw badRequest(errors.join('; '));
  if (!VISITOR_NAME.test(text(out.name)))
    throw badRequest('name is required: 1-64 characters from A-Z, a-z, 0-9, "_", "." and "-"');
  if (text(out.serverName) === '') throw badRequest('serverName is required (the proxy this visitor reaches)');
  if (out.bindPort === undefined || out.bindPort === 0) throw badRequest('bindPort is required and must not be 0');
  return out;
}

/** Walks nested tables down to the visitor's dotted keys; yields [dotted key, value]. */
function* leaves(table: Table, prefix = ''): Generator<[string, unknown]> {
  for (const [key, value] of Object.entries(table)) {
    const path = prefix + key;
    if (isTable(value) && !Object.hasOwn(VISITOR_KEYS, path)) yield* leaves(value, `${path}.`);
    else yield [path, value];
  }
}
