import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { parse, stringify, TomlError } from 'smol-toml';
import { AppError, badRequest, conflict, notFound } from '../errors.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { normalizeDocument } from './legacy-shape.js';
import { deletePath, getPath, isTable, setPath, splitList, text, type Table } from './toml-tree.js';
import {
  COMMON_KEYS,
  DOMAIN_TYPES,
  LEGACY_COMMON_KEYS,
  PROXY_TYPES,
  REMOTE_PORT_TYPES,
  type KeySpec,
} from './frpc-keys.js';

/** A proxy as the API shows it: ports as strings ('' when absent), `enabled` always present. */
export interface ProxyView {
  name: string;
  type: string;
  localIP: string;
  localPort: string;
  remotePort: string;
  enabled: boolean;
  customDomains?: string[];
  subdomain?: string;
}

/** Proxy fields as the API sends them; '' means "not given". The older snake_case names are accepted too. */
export interface ProxyInput {
  name?: string;
  type?: string;
  localIP?: string;
  localPort?: string | number;
  remotePort?: string | number;
  customDomains?: string[] | string;
  subdomain?: string;
  local_ip?: string;
  local_port?: string | number;
  remote_port?: string | number;
  custom_domains?: string[] | string;
}


const PROXY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const MAP_ENTRY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const HOST_LABEL = /^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$/;
const DNS_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;
const TEMPLATE_REASON =
  'must not contain "{{" or "}}": frpc renders its config file as a Go template, so they would be executed';
/** Settings the instance cannot do without (the API shows them). */
const NOT_REMOVABLE = new Set(['serverAddr', 'serverPort']);
/** Settings that `create` takes from the instance itself, not from additional properties. */
const BASE_KEYS = new Set(['serverAddr', 'serverPort', 'auth.method']);

/** An frpc client config file, held as its parsed TOML document in frpc's current shape. */
export class TunnelConfig {
  private constructor(private readonly doc: Table) {}

  /** Reads the current format and the older one (a `[common]` table, snake_case keys), mapped to current names. */
  static parse(text: string, path?: string): TunnelConfig {
    const what = path === undefined ? 'Config file' : `Config file ${path}`;
    let raw: Table;
    try {
      // Older files may start with a byte-order mark; big integers in keys we don't own must survive.
      raw = parse(text.replace(/^\uFEFF/, ''), { integersAsBigInt: 'asNeeded', unsafeKeyBehaviour: 'throw' });
    } catch (err) {
      if (err instanceof TomlError) {
        throw badRequest(`${what} is not valid TOML (line ${err.line}, column ${err.column}: ${tomlReason(err)})`);
      }
      throw err;
    }
    return new TunnelConfig(normalizeDocument(raw, what));
  }

  /** A new file for an instance; sets `log.disablePrintColor` so frpc's console lines carry no colour codes. */
  static create(
    base: { serverAddr: string; serverPort: string | number; authMethod: string },
    additional: Record<string, unknown> = {},
  ): TunnelConfig {
    const config = new TunnelConfig({});
    config.setCommon({
      serverAddr: base.serverAddr,
      serverPort: base.serverPort,
      auth_method: base.authMethod,
      'log.disablePrintColor': true,
    });
    if (!isTable(additional)) throw badRequest('additionalProperties must be an object of config keys to values');
    const clashes = flattenPatch(additional)
      .map(([key]) => key)
      .filter((key) => BASE_KEYS.has(currentCommonName(key)));
    if (clashes.length > 0) {
      throw badRequest(
        `${clashes.map(safeLabel).join(', ')} cannot be set in additionalProperties: the instance's own serverAddr, serverPort and auth_method set it`,
      );
    }
    config.setCommon(additional);
    return config;
  }

  get serverAddr(): string {
    return text(this.doc.serverAddr);
  }

  get serverPort(): string {
    return text(this.doc.serverPort);
  }

  get authMethod(): string {
    return text(getPath(this.doc, ['auth', 'method']));
  }

  /**
   * Changes top-level settings only (the API's `configFile` modification). Keys are frpc's dotted names or the
   * older snake_case ones; nested objects are read as dotted keys; `null` removes a key. All-or-nothing.
   */
  setCommon(patch: Record<string, unknown>): void {
    if (!isTable(patch)) throw badRequest('modifiedData must be an object of config keys to values');
    const unknown: string[] = [];
    const errors: string[] = [];
    const changes = new Map<string, unknown>();
    const givenAs = new Map<string, string>();
    for (const [key, value] of flattenPatch(patch)) {
      const label = safeLabel(key);
      const root = key.split('.')[0];
      if (root === 'proxies' || root === 'visitors') {
        errors.push(`${root} cannot be changed through the config file settings; use the proxy endpoints`);
        continue;
      }
      const target = currentCommonName(key);
      if (!Object.hasOwn(COMMON_KEYS, target)) {
        unknown.push(label);
        continue;
      }
      const earlier = givenAs.get(target);
      if (earlier !== undefined) {
        errors.push(`${label} and ${earlier} both set ${target}`);
        continue;
      }
      givenAs.set(target, label);
      if (value === null) {
        if (NOT_REMOVABLE.has(target)) errors.push(`${label} cannot be removed`);
        else changes.set(target, undefined);
        continue;
      }
      try {
        changes.set(target, checkValue(label, COMMON_KEYS[target], value));
      } catch (err) {
        errors.push(messageOf(err));
      }
    }
    if (unknown.length > 0) {
      throw badRequest(`Unknown config key${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`);
    }
    if (errors.length > 0) throw badRequest([...new Set(errors)].join('; '));
    for (const [target, value] of changes) {
      if (value === undefined) deletePath(this.doc, target.split('.'));
      else setPath(this.doc, target.split('.'), value);
    }
  }

  proxies(): ProxyView[] {
    return this.blocks().map(viewOf);
  }

  addProxy(input: ProxyInput): ProxyView {
    const given = readProxyInput(input);
    if (given.name === undefined) throw badRequest('name is required');
    if (given.type === undefined) throw badRequest('type is required');
    const block: Table = { name: given.name, type: given.type, localIP: given.localIP ?? '127.0.0.1' };
    if (given.localPort !== undefined) block.localPort = given.localPort;
    if (given.remotePort !== undefined) block.remotePort = given.remotePort;
    if (given.customDomains !== undefined) block.customDomains = given.customDomains;
    if (given.subdomain !== undefined) block.subdomain = given.subdomain;
    // frpc accepts tcpmux only with its one multiplexer.
    if (given.type === 'tcpmux') block.multiplexer = 'httpconnect';
    checkProxyShape(block, given);
    this.checkConflicts(block, -1, { name: true, remotePort: true });
    this.blocks(true).push(block);
    return viewOf(block);
  }

  /**
   * Changes the proxy named `selector`. Fields not given keep their value, and so do fields we don't manage.
   * The new name is `newName`, else `input.name`, else unchanged.
   */
  modifyProxy(selector: string, input: ProxyInput, newName?: string): ProxyView {
    const index = this.indexOf(selector);
    const given = readProxyInput(input);
    const name = newName === undefined || newName === '' ? (given.name ?? selector) : checkProxyName('newName', newName);
    const old = this.blocks()[index];
    const block: Table = { ...old, name };
    for (const field of ['type', 'localIP', 'localPort', 'remotePort', 'customDomains', 'subdomain'] as const) {
      if (given[field] !== undefined) block[field] = given[field];
    }
    if (block.type !== old.type) dropFieldsOfOtherTypes(block, given);
    checkProxyShape(block, given);
    this.checkConflicts(block, index, {
      name: name !== selector,
      remotePort: given.remotePort !== undefined || block.type !== old.type,
    });
    this.blocks()[index] = block;
    if (name !== selector) this.renameInStartList(selector, name);
    return viewOf(block);
  }

  deleteProxy(name: string): void {
    this.blocks().splice(this.indexOf(name), 1);
  }

  /** Uses frpc's own switch (frp 0.66+): `enabled = false` disables; enabled is the default, so the key goes. */
  setProxyEnabled(name: string, enabled: boolean): ProxyView {
    if (typeof enabled !== 'boolean') throw badRequest('enabled must be true or false');
    const block = this.blocks()[this.indexOf(name)];
    if (enabled) delete block.enabled;
    else block.enabled = false;
    return viewOf(block);
  }

  /** Top-level keys (dotted) that frpc v0.70 does not know; frpc refuses to start with any of them. */
  unknownKeys(): string[] {
    const unknown: string[] = [];
    const walk = (table: Table, prefix: string): void => {
      for (const [key, value] of Object.entries(table)) {
        const name = prefix + key;
        if (prefix === '' && (key === 'proxies' || key === 'visitors')) continue;
        if (Object.hasOwn(COMMON_KEYS, name)) continue;
        if (isTable(value)) walk(value, `${name}.`);
        else unknown.push(name);
      }
    };
    walk(this.doc, '');
    return unknown;
  }

  /** TOML in frpc's current format: settings first, then `[[proxies]]` and `[[visitors]]`. */
  toString(): string {
    const { proxies, visitors, ...settings } = this.doc;
    const ordered: Table = { ...settings };
    if (proxies !== undefined) ordered.proxies = proxies;
    if (visitors !== undefined) ordered.visitors = visitors;
    return stringify(ordered);
  }

  private blocks(create = false): Table[] {
    if (create && this.doc.proxies === undefined) this.doc.proxies = [];
    return (this.doc.proxies as Table[] | undefined) ?? [];
  }

  private indexOf(name: string): number {
    const index = this.blocks().findIndex((block) => block.name === name);
    if (index < 0) throw notFound(`Proxy ${safeLabel(String(name))} not found`);
    return index;
  }

  private checkConflicts(block: Table, self: number, check: { name: boolean; remotePort: boolean }): void {
    const family = portFamily(block);
    this.blocks().forEach((other, index) => {
      if (index === self) return;
      if (check.name && other.name === block.name) {
        throw conflict(`Proxy ${safeLabel(String(block.name))} already exists`);
      }
      // tcp and udp ports are separate on the server, so "dns" may use tcp 53 and udp 53 at once.
      if (
        check.remotePort &&
        family !== undefined &&
        portFamily(other) === family &&
        Number(other.remotePort) === Number(block.remotePort)
      ) {
        throw conflict(`remotePort ${block.remotePort} is already used by proxy ${safeLabel(text(other.name))}`);
      }
    });
  }

  /** frpc's `start` list names the proxies to run; a rename must follow it there. */
  private renameInStartList(from: string, to: string): void {
    const start = this.doc.start;
    if (Array.isArray(start)) this.doc.start = start.map((entry) => (entry === from ? to : entry));
  }
}

export async function readTunnelConfig(path: string): Promise<TunnelConfig> {
  let content: string;
  try {
    content = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw notFound(`Config file not found: ${path}`);
    throw err;
  }
  return TunnelConfig.parse(content, path);
}

/** Atomic, and mode 0600: the file holds `auth.token`. */
export async function writeTunnelConfig(path: string, config: TunnelConfig): Promise<void> {
  await writeFileAtomic(path, config.toString(), { mode: 0o600 });
}

function tomlReason(err: TomlError): string {
  // The full message quotes the offending lines, which may hold auth.token: keep only the fixed reason text.
  const reason = err.message.split('\n')[0].replace(/^Invalid TOML document: /, '');
  return /^[A-Za-z0-9 ,.:'-]{1,100}$/.test(reason) ? reason : 'syntax error';
}

// ---- checking what we are asked to write ----

/** Checks a value against its key's spec and returns it in the type frpc wants. Messages never quote the value. */
function checkValue(label: string, spec: KeySpec, value: unknown): unknown {
  switch (spec.kind) {
    case 'string':
      return checkString(label, value, spec);
    case 'port':
      return checkPort(label, value);
    case 'integer': {
      const n = toInteger(value);
      if (n === undefined) throw badRequest(`${label} must be an integer`);
      return n;
    }
    case 'boolean':
      if (value === true || value === 'true') return true;
      if (value === false || value === 'false') return false;
      throw badRequest(`${label} must be true or false`);
    case 'strings':
      if (!Array.isArray(value)) throw badRequest(`${label} must be an array of strings`);
      return value.map((item) => checkString(label, item, spec));
    case 'stringMap':
    case 'booleanMap': {
      const what = spec.kind === 'stringMap' ? 'strings' : 'true/false';
      if (!isTable(value)) throw badRequest(`${label} must be an object of names to ${what}`);
      const out: Table = {};
      for (const [name, item] of Object.entries(value)) {
        if (!MAP_ENTRY_NAME.test(name) || name === '__proto__') {
          throw badRequest(`${label} entry names must be 1-64 characters from A-Z, a-z, 0-9, "_", "." and "-"`);
        }
        out[name] =
          spec.kind === 'stringMap'
            ? checkString(`${label}.${name}`, item)
            : checkValue(`${label}.${name}`, { kind: 'boolean' }, item);
      }
      return out;
    }
  }
}

function checkString(label: string, value: unknown, spec: Partial<KeySpec> = {}): string {
  if (typeof value !== 'string') throw badRequest(`${label} must be a string`);
  if (value.includes('{{') || value.includes('}}')) throw badRequest(`${label} ${TEMPLATE_REASON}`);
  if (CONTROL_CHARS.test(value)) throw badRequest(`${label} must not contain control characters such as newlines`);
  if (spec.oneOf && !spec.oneOf.includes(value)) throw badRequest(`${label} must be one of: ${spec.oneOf.join(', ')}`);
  if (spec.host && !isHost(value)) throw badRequest(`${label} must be an IPv4 or IPv6 address or a host name`);
  return value;
}

function checkPort(label: string, value: unknown): number {
  const port = toInteger(value);
  if (port === undefined || port < 1 || port > 65535) throw badRequest(`${label} must be a port number from 1 to 65535`);
  return port;
}

function checkProxyName(label: string, value: unknown): string {
  const name = checkString(label, value);
  if (!PROXY_NAME.test(name)) throw badRequest(`${label} must be 1-64 characters from A-Z, a-z, 0-9, "_", "." and "-"`);
  return name;
}

function toInteger(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  if (typeof value === 'string' && /^-?\d{1,15}$/.test(value)) return Number(value);
  return undefined;
}

export function isHost(value: string): boolean {
  if (isIP(value) !== 0) return true;
  if (value.length > 253 || /^[\d.]+$/.test(value)) return false; // "300.1.1.1" is a bad address, not a host name
  return value.split('.').every((label) => HOST_LABEL.test(label));
}

interface ProxyFields {
  name?: string;
  type?: string;
  localIP?: string;
  localPort?: number;
  remotePort?: number;
  customDomains?: string[];
  subdomain?: string;
}

function readProxyInput(input: ProxyInput): ProxyFields {
  if (!isTable(input)) throw badRequest('proxyInfo must be an object');
  const pick = (current: keyof ProxyInput, older?: keyof ProxyInput): unknown => {
    const value = input[current] ?? (older === undefined ? undefined : input[older]);
    return value === '' || value === null ? undefined : value;
  };
  const fields: ProxyFields = {};
  const name = pick('name');
  if (name !== undefined) fields.name = checkProxyName('name', name);
  const type = pick('type');
  if (type !== undefined) fields.type = checkString('type', type, { oneOf: PROXY_TYPES });
  const localIP = pick('localIP', 'local_ip');
  if (localIP !== undefined) fields.localIP = checkString('localIP', localIP, { host: true });
  const localPort = pick('localPort', 'local_port');
  if (localPort !== undefined) fields.localPort = checkPort('localPort', localPort);
  const remotePort = pick('remotePort', 'remote_port');
  if (remotePort !== undefined) fields.remotePort = checkPort('remotePort', remotePort);
  const domains = pick('customDomains', 'custom_domains');
  if (domains !== undefined) {
    const list = typeof domains === 'string' ? splitList(domains) : domains;
    if (!Array.isArray(list)) throw badRequest('customDomains must be an array of host names or a comma-separated string');
    for (const domain of list) {
      const host = checkString('customDomains', domain);
      if (!isHost(host.startsWith('*.') ? host.slice(2) : host)) {
        throw badRequest('customDomains must hold host names (a leading "*." is allowed)');
      }
    }
    if (list.length > 0) fields.customDomains = list as string[];
  }
  const subdomain = pick('subdomain');
  if (subdomain !== undefined) {
    fields.subdomain = checkString('subdomain', subdomain);
    if (!DNS_LABEL.test(fields.subdomain)) {
      throw badRequest('subdomain must be a single DNS label (letters, digits and "-", no dots)');
    }
  }
  return fields;
}

/** The rules frpc applies to a proxy's shape, checked here so a bad block never reaches the file. */
function checkProxyShape(block: Table, given: ProxyFields): void {
  const type = text(block.type);
  if (REMOTE_PORT_TYPES.includes(type)) {
    if (block.remotePort === undefined) throw badRequest('remotePort is required for tcp and udp proxies');
  } else if (given.remotePort !== undefined) {
    throw badRequest(`remotePort is only used by tcp and udp proxies, not ${type}`);
  }
  if (DOMAIN_TYPES.includes(type)) {
    const domains = block.customDomains;
    if (!(Array.isArray(domains) && domains.length > 0) && !block.subdomain) {
      throw badRequest(`a ${type} proxy needs customDomains or subdomain`);
    }
  } else if (given.customDomains !== undefined || given.subdomain !== undefined) {
    throw badRequest(`customDomains and subdomain are only used by http, https and tcpmux proxies, not ${type}`);
  }
  // A plugin serves the connections itself, so it needs no local port.
  if (block.localPort === undefined && block.plugin === undefined) throw badRequest('localPort is required');
}

/** After a type change, fields the new type does not have would make frpc refuse the file. */
function dropFieldsOfOtherTypes(block: Table, given: ProxyFields): void {
  const type = text(block.type);
  if (!REMOTE_PORT_TYPES.includes(type) && given.remotePort === undefined) delete block.remotePort;
  if (!DOMAIN_TYPES.includes(type)) {
    if (given.customDomains === undefined) delete block.customDomains;
    if (given.subdomain === undefined) delete block.subdomain;
  }
  if (type === 'tcpmux') block.multiplexer ??= 'httpconnect';
  else delete block.multiplexer;
}

function portFamily(block: Table): string | undefined {
  return REMOTE_PORT_TYPES.includes(text(block.type)) && block.remotePort !== undefined ? text(block.type) : undefined;
}

function viewOf(block: Table): ProxyView {
  const view: ProxyView = {
    name: text(block.name),
    type: text(block.type),
    localIP: text(block.localIP),
    localPort: text(block.localPort),
    remotePort: text(block.remotePort),
    enabled: block.enabled !== false,
  };
  if (Array.isArray(block.customDomains)) view.customDomains = block.customDomains.map(text);
  if (typeof block.subdomain === 'string') view.subdomain = block.subdomain;
  return view;
}

// ---- small helpers ----

/** Flattens `{ auth: { token } }` to `auth.token`, except where the key's value is itself a table (metadatas). */
function flattenPatch(patch: Table, prefix = ''): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  for (const [key, value] of Object.entries(patch)) {
    const name = prefix + key;
    if (isTable(value) && !Object.hasOwn(COMMON_KEYS, currentCommonName(name))) out.push(...flattenPatch(value, `${name}.`));
    else out.push([name, value]);
  }
  return out;
}

function currentCommonName(key: string): string {
  return Object.hasOwn(LEGACY_COMMON_KEYS, key) ? LEGACY_COMMON_KEYS[key] : key;
}

/** A caller-supplied name as it may appear in a message: quoted when odd, and never long. */
function safeLabel(key: string): string {
  const short = key.length > 64 ? `${key.slice(0, 64)}…` : key;
  return /^[A-Za-z0-9_.-]+$/.test(short) ? short : JSON.stringify(short);
}

function messageOf(err: unknown): string {
  if (err instanceof AppError) return err.message;
  throw err;
}
