import { badRequest } from '../errors.js';

/** An instance's labels: `env=prod`, `team=web`; what selections (`--label env=prod`) match. */
export type Labels = Readonly<Record<string, string>>;

/** A name, or a value that is not empty: Kubernetes' rule (alphanumerics at both ends; `-`, `_`, `.` between). */
const NAME = /^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;
/** A key's optional prefix: a DNS subdomain (lowercase labels joined by dots), at most 253 characters. */
const PREFIX = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;
/** The rules as the document states them: a key `[prefix/]name` (the prefix's length aside), a value. */
export const LABEL_KEY_PATTERN = `^(?:${PREFIX.source.slice(1, -1)}/)?${NAME.source.slice(1, -1)}$`;
export const LABEL_VALUE_PATTERN = `^(?:${NAME.source.slice(1, -1)})?$`;
/** More than any selection needs; a record stays small. */
export const MAX_LABELS = 64;

const quoted = (text: string) => JSON.stringify(text.slice(0, 80));

/** Why a label key is not one, or undefined: `[prefix/]name`, as Kubernetes has them. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !PREFIX.test(prefix)))
    return `label key ${quoted(key)}: its prefix must be a DNS subdomain (lowercase letters, digits, "-" and ".", at most 253 characters)`;
  if (!NAME.test(name))
    return `label key ${quoted(key)}: its name must be 1-63 characters, letters, digits, "-", "_" or ".", starting and ending with a letter or digit`;
  return undefined;
}

/** Why a label value is not one, or undefined: empty, or 1-63 characters as a key's name. */
export function labelValueProblem(key: string, value: string): string | undefined {
  if (value === '' || NAME.test(value)) return undefined;
  return `label ${key}: its value ${quoted(value)} must be empty or 1-63 characters, letters, digits, "-", "_" or ".", starting and ending with a letter or digit`;
}

/**
 * Labels as a request gives them (`{"env": "prod"}`), each checked; a 400 names the first that is not one. With
 * `removals`, a null value removes that label (a change), else every value must be a string (a whole set).
 */
export function checkLabels(given: unknown, field: string, removals = false): Record<string, string | null> {
  if (typeof given !== 'object' || given === null || Array.isArray(given))
    throw badRequest(`${field} must be an object of label keys to values`);
  const entries = Object.entries(given);
  if (entries.length > MAX_LABELS) throw badRequest(`${field} may hold at most ${MAX_LABELS} labels`);
  for (const [key, value] of entries) {
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) throw badRequest(keyProblem);
    if (value === null && removals) continue;
    if (typeof value !== 'string')
      throw badRequest(`label ${key} must be a string${removals ? ', or null to remove it' : ''}`);
    const valueProblem = labelValueProblem(key, value);
    if (valueProblem) throw badRequest(valueProblem);
  }
  return given as Record<string, string | null>;
}

/** Labels after a change (null removes); more than MAX_LABELS is a 400. Keys are kept sorted: one order everywhere. */
export function changedLabels(current: Labels, changes: Readonly<Record<string, string | null>>): Labels {
  const next: Record<string, string> = { ...current };
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) delete next[key];
    else next[key] = value;
  }
  const keys = Object.keys(next).sort();
  if (keys.length > MAX_LABELS) throw badRequest(`an instance may have at most ${MAX_LABELS} labels`);
  return Object.freeze(Object.fromEntries(keys.map((k) => [k, next[k]!])));
}
