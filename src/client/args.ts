import { usageError } from './errors.js';

/** A flag a command takes: a switch, or one that takes a value (repeatable ones collect every value). */
export interface FlagSpec {
  name: string;
  short?: string;
  value?: boolean;
  repeat?: boolean;
}

export interface Parsed {
  positional: string[];
  flags: Map<string, string[]>;
}

/** Global flags every client command takes. */
export const GLOBAL_FLAGS: FlagSpec[] = [
  { name: 'url', value: true },
  { name: 'context', value: true },
  { name: 'json' },
];

/** Whether `--help` or `-h` is among the flags (before any `--`): the command is explained, not run. */
export function helpAsked(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}

/** `--name value`, `--name=value`, `-n value`, `-f`; `--` ends the flags. Unknown flags are usage errors. */
export function parseArgs(args: readonly string[], specs: readonly FlagSpec[]): Parsed {
  const all = [...GLOBAL_FLAGS, ...specs];
  const byName = new Map(all.map((spec) => [`--${spec.name}`, spec]));
  for (const spec of all) if (spec.short) byName.set(`-${spec.short}`, spec);
  const parsed: Parsed = { positional: [], flags: new Map() };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      parsed.positional.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      parsed.positional.push(arg);
      continue;
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const spec = byName.get(flag);
    if (!spec) throw usageError(`unknown flag ${flag}`);
    let value = 'true';
    if (spec.value) {
      const given = eq > 0 ? arg.slice(eq + 1) : args[++i];
      if (given === undefined || given === '') throw usageError(`${flag} needs a value`);
      value = given;
    } else if (eq > 0) throw usageError(`${flag} takes no value`);
    const values = parsed.flags.get(spec.name) ?? [];
    if (values.length > 0 && !spec.repeat) throw usageError(`${flag} given twice`);
    parsed.flags.set(spec.name, [...values, value]);
  }
  return parsed;
}

export function flag(parsed: Parsed, name: string): string | undefined {
  return parsed.flags.get(name)?.[0];
}

export function has(parsed: Parsed, name: string): boolean {
  return parsed.flags.has(name);
}

/** A non-negative integer flag, or its default. */
export function countFlag(parsed: Parsed, name: string, fallback: number): number {
  const raw = flag(parsed, name);
  if (raw === undefined) return fallback;
  if (!/^\d{1,6}$/.test(raw)) throw usageError(`--${name} must be a whole number`);
  return Number(raw);
}

/** `key=value`: the value as JSON when it reads as JSON (true, 7000, {"a":1}), else as text. */
export function keyValues(pairs: readonly string[], what: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw usageError(`${what} must be key=value, not ${pair}`);
    const raw = pair.slice(eq + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // text
    }
    out[pair.slice(0, eq)] = value;
  }
  return out;
}
