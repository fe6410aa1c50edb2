import type { TunnelConfig } from '../config/tunnel-config.js';
import { ENV_NAME } from '../config/go-template.js';
import { badRequest } from '../errors.js';
import type { SecretRedactor } from '../log/secret-redactor.js';
import type { Database } from '../storage/database.js';
import { NOT_RESERVED } from '../util/reserved-keys.js';

/** The longest variable name kept. */
const MAX_NAME = 128;
/** What the runner sets itself: the tunnel's identity is not an instance's to change. */
const RESERVED = new Set(['PATH', 'HOME', 'USER', 'LOGNAME']);
const MAX_VALUE = 64 * 1024;
/**
 * What the dynamic loader and libc read at a program's start: glibc's list of variables unsafe for setuid programs
 * (sysdeps/generic/unsecvars.h, UNSECURE_ENVVARS), the MALLOC_* aliases of its tunables that it erases for them too
 * (elf/dl-tunables.list), and every LD_* (the loader's own, not all of them in that list). A tunnel may run as
 * root: any of these would load code, or read files, of the caller's choosing.
 */
const LOADER_VARIABLES = new Set([
  'GCONV_PATH',
  'GETCONF_DIR',
  'GLIBC_TUNABLES',
  'HOSTALIASES',
  'LOCALDOMAIN',
  'LOCPATH',
  'MALLOC_ARENA_MAX',
  'MALLOC_ARENA_TEST',
  'MALLOC_CHECK_',
  'MALLOC_MMAP_MAX_',
  'MALLOC_MMAP_THRESHOLD_',
  'MALLOC_PERTURB_',
  'MALLOC_TOP_PAD_',
  'MALLOC_TRACE',
  'MALLOC_TRIM_THRESHOLD_',
  'NIS_PATH',
  'NLSPATH',
  'RESOLV_HOST_CONF',
  'RES_OPTIONS',
  'TMPDIR',
  'TZDIR',
]);
/** Every variable of the loader's own (LD_LIBRARY_PATH, LD_PRELOAD, ...). */
const LOADER_PREFIX = 'LD_';
const isLoaderVariable = (name: string) => name.startsWith(LOADER_PREFIX) || LOADER_VARIABLES.has(name);

/** Shown in place of every value: these are secrets kept out of config files. */
export const ENV_MASK = '********';

/** What `check` takes, as JSON Schema (the OpenAPI document states it): names to values, null removing one. */
export const ENVIRONMENT_CHANGES = {
  type: 'object',
  minProperties: 1,
  propertyNames: {
    pattern: ENV_NAME.source,
    maxLength: MAX_NAME,
    allOf: [
      NOT_RESERVED,
      { not: { enum: [...RESERVED, ...LOADER_VARIABLES] } },
      { not: { pattern: `^${LOADER_PREFIX}` } },
    ],
  },
  additionalProperties: {
    anyOf: [
      { type: 'string', maxLength: MAX_VALUE, pattern: '^[^\\u0000]*$', not: { const: ENV_MASK } },
      { type: 'null' },
    ],
  },
};

/**
 * The environment variables of each instance's tunnel: write-only secrets (a value is never shown, only its
 * name), kept in the database (mode 0600), passed to that tunnel's process and nowhere else. Held in memory,
 * written through; callers persist the database after a change.
 */
export class InstanceEnvStore {
  private readonly byInstance = new Map<number, Map<string, string>>();
  private readonly configsKnown = new Map<number, number>();

  constructor(
    private readonly db: Database,
    /** Where every value, and every secret of the config files its tunnels run with, is made known for masking. */
    private readonly redactor?: SecretRedactor,
  ) {
    for (const row of db.all<{ instance_id: number; name: string; value: string }>('SELECT * FROM instance_env')) {
      this.mapOf(row.instance_id).set(row.name, row.value);
    }
    for (const id of this.byInstance.keys()) this.knowEnvironment(id);
  }

  private knowEnvironment(id: number): void {
    this.redactor?.set(`instance ${id} environment`, this.byInstance.get(id)?.values() ?? []);
  }

  /** Makes the secrets of the instance's config file known for masking, as its tunnel reads them (placeholders filled). */
  knowConfig(id: number, config: TunnelConfig): void {
    this.redactor?.set(`instance ${id} config`, config.secretValues(this.of(id)));
    this.configsKnown.set(id, (this.configsKnown.get(id) ?? 0) + 1);
  }

  /** How many times the instance's config secrets were made known: whoever remembers a file as known compares it. */
  configKnownCount(id: number): number {
    return this.configsKnown.get(id) ?? 0;
  }

  private mapOf(id: number): Map<string, string> {
    let map = this.byInstance.get(id);
    if (!map) {
      map = new Map();
      this.byInstance.set(id, map);
    }
    return map;
  }

  /** The variables as the tunnel gets them. */
  of(id: number): Record<string, string> {
    return Object.fromEntries(this.byInstance.get(id) ?? []);
  }

  /** The names, each with the mask for its value: what the API shows. */
  masked(id: number): Record<string, string> {
    return Object.fromEntries([...(this.byInstance.get(id)?.keys() ?? [])].sort().map((name) => [name, ENV_MASK]));
  }

  /** Sets (a string) or removes (null) each variable; every one is checked before any is changed. */
  change(id: number, changes: Record<string, unknown>): void {
    this.apply(id, this.check(changes), this.mapOf(id));
  }

  /** Checks every change (names, values) as `change` does, changing nothing; the changes as entries. */
  check(changes: Record<string, unknown>): Array<[string, unknown]> {
    const entries = Object.entries(changes);
    if (entries.length === 0) throw badRequest('modifiedData must name at least one environment variable');
    for (const [name, value] of entries) {
      // A name frpc's `{{ .Envs.NAME }}` can read; what the loader reads stays refused in its own (upper) case.
      if (!ENV_NAME.test(name) || name.length > MAX_NAME)
        throw badRequest(
          `environment variable names are letters, digits and "_", not starting with a digit, at most ${MAX_NAME} characters: ${JSON.stringify(name.slice(0, 64))}`,
        );
      if (RESERVED.has(name)) throw badRequest(`${name} is set by tunnelward for every tunnel and cannot be changed`);
      if (isLoaderVariable(name))
        throw badRequest(
          `${name} is read by the dynamic loader or the C library at start-up (glibc's unsafe variables for privileged programs): a tunnel may run as root, so it cannot be set`,
        );
      if (value === null) continue;
      if (typeof value !== 'string') throw badRequest(`${name} must be a string, or null to remove it`);
      if (value === ENV_MASK) throw badRequest(`${name} is the mask shown in place of a value; send the value itself`);
      if (value.includes('\0') || value.length > MAX_VALUE)
        throw badRequest(`${name} must be at most ${MAX_VALUE} characters, without NUL`);
    }
    return entries;
  }

  private apply(id: number, entries: Array<[string, unknown]>, map: Map<string, string>): void {
    this.db.transaction(() => {
      for (const [name, value] of entries) {
        if (value === null) {
          this.db.run('DELETE FROM instance_env WHERE instance_id = ? AND name = ?', [id, name]);
          map.delete(name);
        } else {
          this.db.run(
            'INSERT INTO instance_env (instance_id, name, value) VALUES (?, ?, ?) ON CONFLICT(instance_id, name) DO UPDATE SET value = excluded.value',
            [id, name, value as string],
          );
          map.set(name, value as string);
        }
      }
    });
    this.knowEnvironment(id);
  }

  /** Forgets an instance's variables (its rows go with its record). */
  forget(id: number): void {
    this.byInstance.delete(id);
    this.configsKnown.delete(id);
    this.redactor?.forget(`instance ${id} environment`);
    this.redactor?.forget(`instance ${id} config`);
  }
}

/** The placeholders of a config file that the instance has no variable for: a start would give frpc `<no value>`. */
export function missingEnvironment(placeholders: readonly string[], env: Record<string, string>): string[] {
  return placeholders.filter((name) => !Object.hasOwn(env, name));
}
