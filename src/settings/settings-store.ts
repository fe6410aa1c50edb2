import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Subject } from '../util/rx.js';
import { parse, stringify, TomlError } from 'smol-toml';
import { isTable, type Table } from '../config/toml-tree.js';
import { AppError, badRequest, conflict, forbidden, internal } from '../errors.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { trustedProgram } from '../system/trusted-program.js';
import { checkTunnelClient } from '../system/tunnel-client.js';
import { KeyedQueue } from '../util/keyed-queue.js';
import {
  APPLY_AT_NEXT_START,
  checkSetting,
  defaultSettings,
  PROGRAM_KEYS,
  SETTING_KEYS,
  SUPERUSER_KEYS,
  type SettingKey,
  type Settings,
} from './table.js';
import { isSettingKey, namedUnknownKeys } from './schema.js';

export interface SettingsChange {
  changed: SettingKey[];
  settings: Readonly<Settings>;
}

export interface SetResult {
  /** Keys whose value changed. */
  changed: SettingKey[];
  /** Changed keys that only apply at the next start of the daemon. */
  atNextStart: SettingKey[];
  /** Keys tunnelward does not know, left out of the change (never with `strict`). */
  ignored: string[];
}

export interface SetOptions {
  /** An unknown key refuses the whole change (400), instead of being ignored as the contract says. */
  strict?: boolean;
  /** Whether the caller may change SUPERUSER_KEYS (403 otherwise, nothing changed). */
  superuser?: boolean;
}

/** Where a flat key such as `Watchdog.Enabled` lives in the TOML tree: `[Watchdog] Enabled`. */
const pathOf = (key: string): string[] => {
  const dot = key.indexOf('.');
  return dot < 0 ? [key] : [key.slice(0, dot), key.slice(dot + 1)];
};

function lookup(tree: Table, key: string): unknown {
  if (Object.hasOwn(tree, key)) return tree[key]; // a quoted flat key: "Watchdog.Enabled" = true
  let node: unknown = tree;
  for (const part of pathOf(key)) {
    if (!isTable(node) || !Object.hasOwn(node, part)) return undefined;
    node = node[part];
  }
  return node;
}

function assign(tree: Table, key: string, value: unknown): void {
  delete tree[key];
  const parts = pathOf(key);
  let node = tree;
  for (const part of parts.slice(0, -1)) {
    if (!isTable(node[part])) node[part] = {};
    node = node[part] as Table;
  }
  node[parts[parts.length - 1]!] = value;
}

/** Values that TOML cannot hold (null) are refused before they reach the file. */
function findNull(value: unknown, path: string): string | undefined {
  if (value === null) return path;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNull(value[i], `${path}[${i}]`);
      if (found) return found;
    }
  } else if (isTable(value)) {
    for (const [k, v] of Object.entries(value)) {
      const found = findNull(v, `${path}.${k}`);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * The service settings, persisted in `<data dir>/settings.toml`. The file holds only what was set explicitly
 * (plus any key we do not know, which is kept as it is); everything else comes from the defaults.
 */
export class SettingsStore {
  readonly changes$ = new Subject<SettingsChange>();
  private current: Settings;
  /** One change at a time: each starts from what the one before it wrote, so none is lost. */
  private readonly writes = new KeyedQueue<string>();

  private constructor(
    readonly path: string,
    private tree: Table,
    private readonly defaults: Settings,
  ) {
    this.current = SettingsStore.resolve(tree, defaults);
  }

  static async load(dataDir: string): Promise<{ store: SettingsStore; unknownKeys: string[] }> {
    const path = join(dataDir, 'settings.toml');
    let text = '';
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new Error(`cannot read ${path}: ${(err as Error).message}`, { cause: err });
      }
    }
    let tree: Table;
    try {
      tree = parse(text) as Table;
    } catch (err) {
      const where = err instanceof TomlError ? ` at line ${err.line}, column ${err.column}` : '';
      throw new Error(`${path} is not valid TOML${where}`, { cause: err });
    }
    const defaults = defaultSettings(dataDir);
    for (const key of SETTING_KEYS) {
      const value = lookup(tree, key);
      if (value === undefined) continue;
      const problem = checkSetting(key, value);
      if (problem) throw new Error(`${path}: ${problem}`);
    }
    return { store: new SettingsStore(path, tree, defaults), unknownKeys: unknownKeysOf(tree) };
  }

  private static resolve(tree: Table, defaults: Settings): Settings {
    const resolved: Record<string, unknown> = { ...defaults };
    for (const key of SETTING_KEYS) {
      const value = lookup(tree, key);
      if (value !== undefined) resolved[key] = value;
    }
    return Object.freeze(resolved) as Settings;
  }

  get(): Readonly<Settings> {
    return this.current;
  }

  value<K extends SettingKey>(key: K): Settings[K] {
    return this.current[key];
  }

  /**
   * Validates every key first, then writes the file, then applies the change in memory: a bad value (or, `strict`,
   * an unknown key) or a failed write leaves both the file and the running settings as they were. Unknown keys are
   * otherwise left out and named in the result. Concurrent calls run one after the other.
   */
  set(patch: Record<string, unknown>, options: SetOptions = {}): Promise<SetResult> {
    return this.writes.run(this.path, () => this.apply(patch, options));
  }

  private async apply(
    patch: Record<string, unknown>,
    { strict = false, superuser = false }: SetOptions,
  ): Promise<SetResult> {
    const ignored = Object.keys(patch).filter((key) => !isSettingKey(key));
    if (strict && ignored.length > 0) throw badRequest(unknownKeysMessage(ignored));
    const known: Array<[SettingKey, unknown]> = [];
    for (const [key, value] of Object.entries(patch)) {
      if (!isSettingKey(key)) continue;
      const problem = checkSetting(key, value);
      if (problem) throw badRequest(problem);
      const nullAt = findNull(value, key);
      if (nullAt) throw badRequest(`${nullAt} is null, which a setting cannot hold`);
      known.push([key, value]);
    }
    const changed = known.filter(([k, v]) => JSON.stringify(this.current[k]) !== JSON.stringify(v)).map(([k]) => k);
    const guarded = changed.filter((k) => SUPERUSER_KEYS.has(k));
    if (!superuser && guarded.length > 0) {
      throw forbidden(
        `only a superuser may change ${guarded.join(', ')} (programs tunnelward runs, and the directories where it ` +
          'writes what it runs or reads back)',
      );
    }
    for (const key of changed.filter((k) => PROGRAM_KEYS.has(k))) {
      // The tunnel client must also answer as frpc does: a wrong file is refused here, not at every start.
      // A well-formed value naming a file that is not (yet) fit to run: the file's state refuses it (409).
      const check = key === 'TunnelPath' ? checkTunnelClient : trustedProgram;
      await check(patch[key] as string).catch((err: Error) => {
        throw conflict(`${key} ${err.message}`);
      });
    }
    if (changed.length > 0) {
      const tree = structuredClone(this.tree);
      for (const [key, value] of known) assign(tree, key, value);
      await this.write(tree);
      this.tree = tree;
      this.current = SettingsStore.resolve(tree, this.defaults);
      this.changes$.next({ changed, settings: this.current });
    }
    return { changed, atNextStart: changed.filter((k) => APPLY_AT_NEXT_START.has(k)), ignored };
  }

  private async write(tree: Table): Promise<void> {
    let text: string;
    try {
      text = stringify(tree);
    } catch (err) {
      throw badRequest(`settings cannot be stored as TOML: ${(err as Error).message}`);
    }
    try {
      await writeFileAtomic(this.path, `# tunnelward settings: see docs/operator.md "Configuration"\n${text}\n`, {
        mode: 0o600,
      });
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw Object.assign(internal('Failed to save config'), { cause: err });
    }
  }
}

/** `Unknown setting key: Watchdog.Enable (did you mean Watchdog.Enabled?); nothing was changed`. */
function unknownKeysMessage(keys: string[]): string {
  return `Unknown setting key${keys.length > 1 ? 's' : ''}: ${namedUnknownKeys(keys)}; nothing was changed`;
}

/** Top-level names in the file that are neither a setting nor a table holding settings. */
function unknownKeysOf(tree: Table): string[] {
  const known = new Set(SETTING_KEYS.flatMap((k) => [k, ...pathOf(k).slice(0, 1)]));
  const unknown: string[] = [];
  for (const [name, value] of Object.entries(tree)) {
    if (!known.has(name)) unknown.push(name);
    else if (isTable(value) && !isSettingKey(name)) {
      for (const inner of Object.keys(value)) if (!isSettingKey(`${name}.${inner}`)) unknown.push(`${name}.${inner}`);
    }
  }
  return unknown;
}
