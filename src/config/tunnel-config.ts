import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { basename, dirname, isAbsolute } from 'node:path';
import { patch } from '@decimalturn/toml-patch';
import { parse, stringify, TomlError } from 'smol-toml';
import { badRequest, conflict, internal, notFound } from '../errors.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { configFileWriteOptions } from '../system/run-user-access.js';
import { COMMON_KEYS, enclosingKey, FEATURE_GATES, LEGACY_COMMON_KEYS } from './frpc-keys.js';
import { withSuggestions } from '../util/closest.js';
import { envPlaceholders, holdsPlaceholder, isPlaceholder, quoteBarePlaceholders } from './go-template.js';
import { normalizeDocument } from './legacy-shape.js';
import { editProxy, readProxyChanges, type ProxyInput } from './proxy-edit.js';
import { REMOTE_PORT_TYPES } from './proxy-keys.js';
import { SECRET_MASK, viewOf, visitorViewOf, type ProxyView, type VisitorView } from './proxy-view.js';
import { markBarePlaceholders, maskSecrets, maskSecretsBeside, secretValues, unmaskSecrets } from './secret-mask.js';
import { checkTree, copyTree, deletePath, getPath, isTable, sameTree, setPath, text, type Table } from './toml-tree.js';
import { checkEntryName, checkValue, messageOf, safeLabel } from './value-check.js';
import { textWithAdditions } from './toml-text.js';
import { checkVisitor } from './visitor-check.js';

export type { ProxyInput, ProxyView, VisitorView };

/** frpc's admin API as tunnelward reaches it. */
export interface AdminEndpoint {
  host: string;
  port: number;
  user: string;
  password: string;
}

/** What an import made: the config, what it holds, and what was changed on the way in. */
export interface ImportedConfig {
  config: TunnelConfig;
  proxyCount: number;
  visitorCount: number;
  notes: string[];
}

/** Problems of an imported file named in one reply, at most. */
const MAX_IMPORT_ERRORS = 20;

/** Settings the instance cannot do without (the API shows them). */
export const NOT_REMOVABLE: ReadonlySet<string> = new Set(['serverAddr', 'serverPort']);
/** Settings that `create` takes from the instance itself, not from additional properties. */
export const BASE_KEYS: ReadonlySet<string> = new Set(['serverAddr', 'serverPort', 'auth.method']);

/** An frpc client config file, held as its parsed TOML document in frpc's current shape. */
export class TunnelConfig {
  private constructor(private readonly doc: Table) {}

  /** Reads the current format and the older one (a `[common]` table, snake_case keys), mapped to current names. */
  static parse(text: string, path?: string): TunnelConfig {
    const what = path === undefined ? 'Config file' : `Config file ${path}`;
    const tree = parseTomlDocument(text, what);
    const config = new TunnelConfig(useConsoleOutput(normalizeDocument(copyTree(tree), what)));
    config.keepSource(text, tree);
    return config;
  }

  /**
   * A config file brought in from elsewhere (read by import-formats), for a new instance: every setting, proxy and
   * visitor checked as the API checks them, every problem named in one 400 by its section (`[common]`, `[ssh]` in
   * INI; `proxies[2] (name ssh)` in the other formats). Its `webServer` is left out (the instance gets tunnelward's
   * own) and a log file is put back on the console; `notes` says so. A TOML file that needs nothing but
   * tunnelward's additions is written as its text with those lines added (see textWithAdditions).
   */
  static imported(
    raw: Table,
    source: { format: string; text: string; notes?: string[]; included?: Array<{ path: string; tree: Table }> },
  ): ImportedConfig {
    const ini = source.format === 'ini';
    const { webServer, ...settings } = normalizeDocument(raw, 'The imported file');
    const proxies = asBlocks(settings.proxies);
    const visitors = asBlocks(settings.visitors);
    delete settings.proxies;
    delete settings.visitors;
    const notes = [...(source.notes ?? [])];
    const errors: string[] = [];
    const unsafe = webServer === undefined ? undefined : unsafeAdminEndpoint(webServer);
    if (unsafe) notes.push(`its webServer was replaced by tunnelward's own admin endpoint: ${unsafe}`);
    if (settings.includes !== undefined) {
      // tunnelward keeps a tunnel in one file: its checks, revisions and rollback cover every proxy.
      if (source.included === undefined)
        errors.push(
          "includes: the included files were not sent: the CLI's import reads and sends them (the API's includedFiles), or put their proxies into this file",
        );
      else notes.push(...bringIn(source.included, proxies, visitors));
      delete settings.includes;
    }
    if (consoleOutputOf(settings))
      notes.push("its log file was replaced by the console: tunnelward keeps the tunnel's log");
    const labels: Labels = {
      settings: ini || isTable(raw.common) ? '[common]' : 'top level',
      block: ini ? (_kind, _index, block) => `[${safeLabel(text(block.name))}]` : blockLabel,
    };
    const config = TunnelConfig.checked(settings, proxies, visitors, errors, labels);
    if (errors.length > 0) throw badRequest(joinErrors(errors));
    config.fillDefaults();
    config.keepTryingAtStart(notes);
    // Kept as it is: the instance's registration keeps it while its port is free (and says which it did).
    if (webServer !== undefined && !unsafe) config.doc.webServer = copyTree(webServer);
    if (source.format === 'toml') config.keepSource(source.text, raw);
    const visitorCount = Array.isArray(config.doc.visitors) ? config.doc.visitors.length : 0;
    return { config, proxyCount: config.blocks().length, visitorCount, notes };
  }

  /**
   * The whole file an operator wrote in place of this one, checked as every edit is checked (each setting, the rules
   * between settings, each proxy and visitor), every problem named in one 400. A secret left as an export masked it
   * keeps its value; the admin endpoint stays tunnelward's whatever the text says of webServer, and `notes` says so.
   */
  replacedBy(content: string): { config: TunnelConfig; notes: string[] } {
    const what = 'The edited file';
    const { doc, unresolved } = unmaskSecrets(normalizeDocument(parseTomlDocument(content, what), what), this.doc);
    const { proxies = [], visitors = [], webServer, ...settings } = doc;
    const notes: string[] = [];
    if (webServer !== undefined && !sameTree(webServer, this.doc.webServer)) {
      notes.push(
        "webServer is tunnelward's own admin endpoint (it reaches the tunnel there, on loopback, with a password only it knows): it was kept as it was, your change to it was not applied",
      );
    }
    if (consoleOutputOf(settings)) notes.push("log.to was put back to the console: tunnelward keeps the tunnel's log");
    const errors = unresolved.map(
      (path) => `${path} is the mask an export shows in place of a secret; put the secret itself`,
    );
    const config = TunnelConfig.checked(settings, proxies as Table[], visitors as Table[], errors);
    if (errors.length > 0) throw badRequest(joinErrors([...new Set(errors)]));
    config.fillDefaults();
    config.keepTryingAtStart(notes);
    if (this.doc.webServer !== undefined) config.doc.webServer = copyTree(this.doc.webServer);
    config.keepSource(content, parseTomlDocument(content, what));
    return { config, notes };
  }

  /**
   * A document's parts checked as the API checks each of them, into a new config; every problem is added to
   * `errors` (the caller refuses the whole when there is any).
   */
  private static checked(
    settings: Table,
    proxies: Table[],
    visitors: Table[],
    errors: string[],
    labels: Labels = { block: blockLabel },
  ): TunnelConfig {
    const config = new TunnelConfig({});
    const settingsErrors = errors.length;
    try {
      config.setCommon(settings);
      const masked = Object.keys(COMMON_KEYS).filter(
        (key) => COMMON_KEYS[key]!.secret && getPath(config.doc, key.split('.')) === SECRET_MASK,
      );
      for (const key of masked)
        errors.push(`${key} is the mask an export shows in place of a secret; put the secret itself`);
      if (config.doc.serverAddr === undefined) errors.push('serverAddr is required: the file names no server');
    } catch (err) {
      errors.push(messageOf(err));
    }
    if (labels.settings !== undefined) {
      for (let i = settingsErrors; i < errors.length; i++) errors[i] = `${labels.settings}: ${errors[i]}`;
    }
    const label = labels.block;
    proxies.forEach((block, index) => {
      try {
        config.addProxy(block);
      } catch (err) {
        errors.push(`${label('proxies', index, block)}: ${messageOf(err)}`);
      }
    });
    const checked: Table[] = [];
    visitors.forEach((block, index) => {
      try {
        const visitor = checkVisitor(block);
        if (checked.some((other) => other.name === visitor.name)) throw badRequest('another visitor has this name');
        checked.push(visitor);
      } catch (err) {
        errors.push(`${label('visitors', index, block)}: ${messageOf(err)}`);
      }
    });
    if (checked.length > 0) config.doc.visitors = checked;
    return config;
  }

  /** frpc's defaults made explicit where tunnelward reads them (the server's port), as create writes them. */
  /**
   * The start-up policy of every file tunnelward writes, unless the operator set it: `loginFailExit = false`, so a
   * server that cannot be reached at start is tried again (the tunnel runs, not connected) and exit 1 keeps meaning
   * a config error. `notes` says it was added.
   */
  private keepTryingAtStart(notes: string[]): void {
    if (this.doc.loginFailExit !== undefined) return;
    this.doc.loginFailExit = false;
    notes.push('loginFailExit = false was added: a server that cannot be reached at start is tried again, not fatal');
  }

  /**
   * frpc's `clientID`, unless the file sets it: `<host>-<instance name>` (see `defaultClientID`), so that a server's
   * list of clients says which host and instance each connection is. `notes` says it was added.
   */
  nameClient(host: string, instance: string, notes?: string[]): void {
    if (this.doc.clientID !== undefined) return;
    const id = defaultClientID(host, instance);
    this.doc.clientID = id;
    notes?.push(`clientID = "${id}" was added: the server's list of clients names this host and instance`);
  }

  private fillDefaults(): void {
    this.doc.serverPort ??= 7000;
    if (getPath(this.doc, ['log', 'disablePrintColor']) === undefined)
      setPath(this.doc, ['log', 'disablePrintColor'], true);
  }

  /**
   * What an operator reads of the file, as a short hash: it changes with any change of theirs or of another's, and
   * not with tunnelward's own admin endpoint. An edit of the whole file names the version it started from.
   * It is the version of the file as it reads back: an edit kept in the layout of an operator's text (an import, an
   * apply) with tunnelward's additions reads back in another key order, and the revision that writes it must have
   * the version the file is found at (else the next change finds it "changed outside tunnelward").
   */
  version(): string {
    return createHash('sha256').update(this.readBack().exportText(false)).digest('hex').slice(0, 16);
  }

  /**
   * The config as its file reads back once written: in the file's key order, which an edit kept in an operator's
   * layout changes (tunnelward's additions go among the text's own keys). What diffs and versions are made from.
   */
  readBack(): TunnelConfig {
    return this.source === undefined ? this : TunnelConfig.parse(this.toString());
  }

  /** Whether `other` holds the same settings, proxies and visitors, key order and layout aside (the admin endpoint too). */
  sameDocumentAs(other: TunnelConfig): boolean {
    const { webServer: _mine, ...mine } = this.doc;
    const { webServer: _theirs, ...theirs } = other.doc;
    return sameTree(mine, theirs);
  }

  /** Whether the top-level settings (all but proxies, visitors and the admin endpoint) are those of `other`. */
  sameSettingsAs(other: TunnelConfig): boolean {
    return sameTree(settingsOf(this.doc), settingsOf(other.doc));
  }

  /** The top-level settings whose values differ in `other`, by their names (never their values: some are secrets). */
  changedSettings(other: TunnelConfig): string[] {
    const mine = settingsOf(this.doc);
    const theirs = settingsOf(other.doc);
    return [...new Set([...Object.keys(mine), ...Object.keys(theirs)])]
      .filter((key) => !sameTree(mine[key], theirs[key]))
      .sort();
  }

  /**
   * A new file for an instance; sets `log.disablePrintColor` so frpc's console lines carry no colour codes, and
   * `loginFailExit = false` so that a server that cannot be reached at start is tried again (the tunnel runs, not
   * connected) instead of ending frpc with code 1, the code of a config error.
   */
  static create(
    base: { serverAddr: string; serverPort: string | number; authMethod: string },
    additional: Record<string, unknown> = {},
  ): TunnelConfig {
    const config = new TunnelConfig({});
    // What the base needs besides (the oidc settings) comes in the additional properties: checked together there.
    config.setCommon(
      {
        serverAddr: base.serverAddr,
        serverPort: base.serverPort,
        auth_method: base.authMethod,
        loginFailExit: false,
        'log.disablePrintColor': true,
      },
      false,
    );
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

  /** The text the config was read from (a file, an edit, a TOML import): toString keeps its comments and layout. */
  private source: string | undefined;

  /**
   * Keeps `text` (read as `tree`) as the source if its keys are where frpc's current shape has them (values may be
   * changed in place, a string port made a number): a file in the older shape is written afresh.
   */
  private keepSource(text: string, tree: Table): void {
    this.source = sameKeys(normalizeDocument(copyTree(tree), 'The file'), tree) ? text : undefined;
  }

  /** Set while tunnelward itself writes the admin endpoint: the only writer of webServer.* keys. */
  private managingAdmin = false;

  /**
   * Where tunnelward reaches the tunnel's admin API (frpc's webServer), if the file turns it on. A file whose
   * webServer an operator set before tunnelward managed it is respected as it is: its port and credentials are used.
   */
  adminEndpoint(): AdminEndpoint | undefined {
    const port = getPath(this.doc, ['webServer', 'port']);
    if (typeof port !== 'number' || port <= 0) return undefined;
    const addr = text(getPath(this.doc, ['webServer', 'addr']));
    // frpc listens on every address for 0.0.0.0 or ::; tunnelward always knocks on loopback.
    const host = addr === '' || addr === '0.0.0.0' || addr === '::' ? '127.0.0.1' : addr;
    return {
      host,
      port,
      user: text(getPath(this.doc, ['webServer', 'user'])),
      password: text(getPath(this.doc, ['webServer', 'password'])),
    };
  }

  /** Turns frpc's admin API on, on loopback only, for tunnelward alone. */
  setAdminEndpoint(port: number, user: string, password: string): void {
    this.managingAdmin = true;
    try {
      // Our own keys break no rule; a file that already breaks one is frpc's to refuse at the start, not ours here.
      this.setCommon(
        {
          'webServer.addr': '127.0.0.1',
          'webServer.port': port,
          'webServer.user': user,
          'webServer.password': password,
        },
        false,
      );
    } finally {
      this.managingAdmin = false;
    }
  }

  /** Takes `other`'s admin endpoint (webServer) as it is, or none where it has none. */
  keepAdminEndpointOf(other: TunnelConfig): void {
    if (other.doc.webServer === undefined) delete this.doc.webServer;
    else this.doc.webServer = copyTree(other.doc.webServer);
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
   * older snake_case ones; nested objects are read as dotted keys; `null` removes a key. All-or-nothing. The
   * settings that result must keep the rules frpc checks between settings (`checkRules`: see settingRules).
   */
  setCommon(patch: Record<string, unknown>, checkRules = true): void {
    if (!isTable(patch)) throw badRequest('modifiedData must be an object of config keys to values');
    const unknown: string[] = [];
    const errors: string[] = [];
    /** By dotted target: where it goes in the file, and its value (undefined removes it). */
    const changes = new Map<string, { path: string[]; value: unknown }>();
    const givenAs = new Map<string, string>();
    for (const [key, value] of flattenPatch(patch)) {
      const label = safeLabel(key);
      const root = key.split('.')[0];
      if (root === 'proxies' || root === 'visitors') {
        errors.push(`${root} cannot be changed through the config file settings; use the proxy endpoints`);
        continue;
      }
      const target = currentCommonName(key);
      if (target.startsWith('webServer.') && !this.managingAdmin) {
        errors.push(
          `${label}: webServer is managed by tunnelward (it reaches each tunnel's admin API on a loopback port of its own, with a password only it knows); leave webServer.* out`,
        );
        continue;
      }
      // An entry of a map key (`metadatas.owner`): set or removed on its own, the other entries kept.
      const map = Object.hasOwn(COMMON_KEYS, target) ? undefined : commonMapKeyOf(target);
      if (!Object.hasOwn(COMMON_KEYS, target) && map === undefined) {
        unknown.push(label);
        continue;
      }
      // A map and one of its entries in one patch say two things of the same entries.
      const overlapping = [...givenAs].find(
        ([other]) => other === target || (map ? other === map : other.startsWith(`${target}.`)),
      );
      if (overlapping !== undefined) {
        errors.push(`${label} and ${overlapping[1]} both set ${target}`);
        continue;
      }
      givenAs.set(target, label);
      const path = map ? [...map.split('.'), target.slice(map.length + 1)] : target.split('.');
      if (value === null) {
        if (NOT_REMOVABLE.has(target)) errors.push(`${label} cannot be removed`);
        else changes.set(target, { path, value: undefined });
        continue;
      }
      try {
        if (map) {
          const spec = COMMON_KEYS[map]!;
          checkEntryName(safeLabel(map), spec, path.at(-1)!);
          const entry = checkValue(label, { kind: spec.kind === 'booleanMap' ? 'boolean' : 'string' }, value);
          changes.set(target, { path, value: entry });
        } else changes.set(target, { path, value: checkValue(label, COMMON_KEYS[target]!, value) });
      } catch (err) {
        errors.push(messageOf(err));
      }
    }
    if (unknown.length > 0) {
      throw badRequest(
        `Unknown config key${unknown.length > 1 ? 's' : ''}: ${withSuggestions(unknown, Object.keys(COMMON_KEYS))}`,
      );
    }
    if (errors.length > 0) throw badRequest([...new Set(errors)].join('; '));
    const { proxies, visitors, ...settings } = this.doc;
    const next = copyTree(settings);
    for (const { path, value } of changes.values()) {
      if (value === undefined) deletePath(next, path);
      else setPath(next, path, value);
    }
    const broken = checkRules ? settingRules(next) : [];
    if (broken.length > 0) throw badRequest(broken.join('; '));
    for (const key of Object.keys(this.doc)) delete this.doc[key];
    Object.assign(this.doc, next, proxies === undefined ? {} : { proxies }, visitors === undefined ? {} : { visitors });
  }

  proxies(): ProxyView[] {
    return this.blocks().map(viewOf);
  }

  /** The `[[visitors]]` entries, kept as they are through every edit and listed read-only. */
  visitors(): VisitorView[] {
    const visitors = this.doc.visitors;
    return Array.isArray(visitors) ? visitors.filter(isTable).map(visitorViewOf) : [];
  }

  /** Appends a proxy with every key frpc knows for its type; unknown keys and wrong types are refused by name. */
  addProxy(input: ProxyInput): ProxyView {
    const block = editProxy(undefined, readProxyChanges(input));
    this.checkConflicts(block, -1, { name: true, remotePort: true });
    this.blocks(true).push(block);
    return viewOf(block);
  }

  /**
   * Changes the proxy named `selector`: keys given change, `null` removes one, every other key keeps its value,
   * known or not. The new name is `newName`, else `input.name`, else unchanged.
   */
  modifyProxy(selector: string, input: ProxyInput, newName?: string): ProxyView {
    const index = this.indexOf(selector);
    let changes = readProxyChanges(input);
    if (newName !== undefined && newName !== '') {
      changes = [
        ...changes.filter((change) => change.key !== 'name'),
        { key: 'name', label: 'newName', value: newName },
      ];
    }
    const old = this.blocks()[index]!;
    const block = editProxy(old, changes);
    const name = text(block.name);
    this.checkConflicts(block, index, {
      name: name !== selector,
      remotePort: block.remotePort !== old.remotePort || block.type !== old.type,
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
    const block = this.blocks()[this.indexOf(name)]!;
    if (enabled) delete block.enabled;
    else block.enabled = false;
    return viewOf(block);
  }

  /** Top-level keys (dotted) that frpc v0.71 does not know; frpc refuses to start with any of them. */
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

  /**
   * The file's text: the text it was read from, with the changes made since written into it (comments, layout and
   * dotted keys kept), or, for a new config, TOML in frpc's current format (settings first, then `[[proxies]]` and
   * `[[visitors]]`).
   */
  toString(): string {
    return fileText(this.doc, this.source);
  }

  /**
   * The file as it may leave tunnelward: without the admin endpoint (tunnelward's, with its password), with every
   * secret masked unless `masked` is false, and without the server's address and port unless `withServer`.
   */
  exportText(masked: boolean, withServer = true): string {
    return this.exportedText(masked ? maskSecrets : (doc) => doc, withServer);
  }

  /**
   * The file as exportText(true) writes it, where a secret that `before` does not hold at the same place shows as
   * changed (NEW_SECRET_MASK): the new side of a masked diff from `before`.
   */
  exportTextBeside(before: TunnelConfig): string {
    return this.exportedText((doc) => maskSecretsBeside(doc, before.doc));
  }

  /** The text of the document without the admin endpoint (and without the server unless `withServer`), `mask`ed. */
  private exportedText(mask: (doc: Table) => Table, withServer = true): string {
    const { webServer: _ours, ...doc } = this.doc;
    if (!withServer) {
      delete doc.serverAddr;
      delete doc.serverPort;
    }
    return unquoteBarePlaceholders(stringifyDocument(mask(doc)), doc);
  }

  /** The document as exportText writes it, as a tree: without the admin endpoint, secrets masked unless `masked` is false. */
  exportTree(masked: boolean): Table {
    const { webServer: _ours, ...doc } = copyTree(this.doc);
    return masked ? maskSecrets(doc) : doc;
  }

  /** The values of its secret keys as frpc reads them with this environment: what is masked wherever it shows. */
  secretValues(env: Readonly<Record<string, string>>): string[] {
    return secretValues(this.doc, env);
  }

  /** The environment variables the file's `{{ .Envs.NAME }}` placeholders read; frpc renders a missing one as `<no value>`. */
  envPlaceholders(): string[] {
    return envPlaceholders(this.toString());
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

  /**
   * What this file's enabled proxies hold on their server, each with the proxy that holds it: a name (frps knows
   * proxies by user and name), a tcp or udp port, a domain or subdomain of a vhost type (per location for http).
   * Two instances on the same server cannot hold the same thing: frps refuses the second at run time.
   */
  serverClaims(): { server: string; claims: Map<string, string> } {
    const claims = new Map<string, string>();
    const user = text(this.doc.user);
    for (const block of this.blocks()) {
      if (block.enabled === false) continue;
      const name = text(block.name);
      const type = text(block.type);
      const hold = (claim: string) => claims.has(claim) || claims.set(claim, name);
      hold(`name ${user ? `${user}.` : ''}${name}`);
      if ((type === 'tcp' || type === 'udp') && Number(block.remotePort) > 0)
        hold(`${type} port ${Number(block.remotePort)}`);
      if (type === 'http' || type === 'https' || type === 'tcpmux') {
        const locations =
          type === 'http' && Array.isArray(block.locations) && block.locations.length > 0
            ? block.locations.map(text)
            : [''];
        const where = (host: string) => locations.map((l) => `${type} ${host}${l}`);
        const domains = Array.isArray(block.customDomains) ? block.customDomains.map((d) => text(d).toLowerCase()) : [];
        for (const domain of domains) where(`domain ${domain}`).forEach(hold);
        if (text(block.subdomain) !== '') where(`subdomain ${text(block.subdomain).toLowerCase()}`).forEach(hold);
      }
    }
    return { server: `${this.serverAddr.toLowerCase()}:${this.serverPort}`, claims };
  }

  /** frpc's `start` list names the proxies to run; a rename must follow it there. */
  private renameInStartList(from: string, to: string): void {
    const start = this.doc.start;
    if (Array.isArray(start)) this.doc.start = start.map((entry) => (entry === from ? to : entry));
  }
}

/** A TOML document as parsed, unchanged; a syntax error is a 400 that names `what` and never quotes the text. */
/** A document's top-level settings: all but proxies, visitors and the admin endpoint. */
const settingsOf = ({ proxies: _p, visitors: _v, webServer: _w, ...settings }: Table): Table => settings;

export function parseTomlDocument(text: string, what: string): Table {
  let tree: Table;
  try {
    // Older files may start with a byte-order mark; big integers in keys we don't own must survive. Keys such as
    // __proto__ are kept as the document's own (never a prototype) so that the check below can refuse them by name.
    tree = parse(quoteBarePlaceholders(text.replace(/^\uFEFF/, '')), {
      integersAsBigInt: 'asNeeded',
      unsafeKeyBehaviour: 'keep',
    });
  } catch (err) {
    if (err instanceof TomlError) {
      throw badRequest(`${what} is not valid TOML (line ${err.line}, column ${err.column}: ${tomlReason(err)})`);
    }
    throw err;
  }
  checkTree(tree, what);
  return tree;
}

function stringifyDocument(doc: Table): string {
  const { proxies, visitors, ...settings } = doc;
  const ordered: Table = { ...settings };
  if (proxies !== undefined) ordered.proxies = proxies;
  if (visitors !== undefined) ordered.visitors = visitors;
  return stringify(ordered);
}

/**
 * The text of a config file holding `doc`. From `source` when there is one: only lines added when tunnelward only
 * added keys (textWithAdditions), else the source patched (toml-patch keeps comments and layout around what
 * changed); either only when it reads back as `doc`, else `doc` written afresh. A placeholder standing for a number
 * or a boolean is written bare, as it was read (quoteBarePlaceholders).
 */
function fileText(doc: Table, source: string | undefined): string {
  const read = (text: string) => parseTomlDocument(text, 'The written file');
  let text: string | undefined;
  if (source !== undefined) {
    const quoted = quoteBarePlaceholders(source.replace(/^\uFEFF/, ''));
    text = textWithAdditions(quoted, doc, read) ?? patchedText(quoted, doc, read);
  }
  return unquoteBarePlaceholders(text ?? stringifyDocument(doc), doc);
}

/** A document's `proxies` or `visitors` as given (anything else is left for the checks to refuse by its place). */
const asBlocks = (value: unknown): Table[] =>
  (value === undefined ? [] : Array.isArray(value) ? value : [value]) as Table[];

/**
 * The proxies and visitors of the included files appended to the file's own, as frpc adds them; what else an
 * included file holds frpc ignores, and so does the import. Returns what the reply notes.
 */
function bringIn(included: Array<{ path: string; tree: Table }>, proxies: Table[], visitors: Table[]): string[] {
  const notes: string[] = [];
  const ignored: string[] = [];
  let count = 0;
  for (const { path, tree } of included) {
    const { proxies: more = [], visitors: moreVisitors = [], ...rest } = normalizeDocument(tree, `includes: ${path}`);
    proxies.push(...asBlocks(more));
    visitors.push(...asBlocks(moreVisitors));
    count += asBlocks(more).length + asBlocks(moreVisitors).length;
    if (Object.keys(rest).length > 0) ignored.push(safeLabel(basename(path)));
  }
  notes.push(
    included.length === 0
      ? 'includes named no file: it was left out'
      : `includes: the ${count} proxies and visitors of ${included.map((f) => safeLabel(basename(f.path))).join(', ')} were brought into the file, and includes was left out (one file holds the tunnel: its changes, revisions and rollback cover every proxy)`,
  );
  if (ignored.length > 0)
    notes.push(
      `settings in ${ignored.join(', ')} were left out: frpc reads only proxies and visitors from an included file`,
    );
  return notes;
}

/** Keys of an operator's webServer that tunnelward can keep: it speaks plain HTTP with basic auth to it. */
const KEPT_ADMIN_KEYS = new Set(['addr', 'port', 'user', 'password', 'assetsDir', 'pprofEnable']);

/**
 * Why an imported file's own webServer (frpc's admin API, which serves the file, auth.token included) cannot be
 * kept, if it cannot: kept only on a loopback address, with a user and a password of 8 characters or more, on a
 * port given as a number, and without TLS.
 */
function unsafeAdminEndpoint(webServer: unknown): string | undefined {
  if (!isTable(webServer)) return 'it was not a table';
  const addr = text(webServer.addr);
  if (addr !== '' && !isLoopbackAddress(addr))
    return `it listened on ${safeLabel(addr)}, not on loopback: anyone who reaches it reads the file, auth.token included`;
  const port = webServer.port;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)
    return 'its port was not a port number';
  if (holdsPlaceholder(text(webServer.user)) || holdsPlaceholder(text(webServer.password)))
    return 'its user or password came from the environment, which tunnelward does not read';
  if (text(webServer.user) === '' || text(webServer.password).length < 8)
    return 'it had no user, or a password shorter than 8 characters';
  const other = Object.keys(webServer).find((key) => !KEPT_ADMIN_KEYS.has(key));
  if (other !== undefined)
    return `tunnelward reaches the admin API over plain HTTP, and webServer.${safeLabel(other)} was set`;
  return undefined;
}

function isLoopbackAddress(addr: string): boolean {
  return addr === '::1' || (isIP(addr) === 4 && addr.startsWith('127.'));
}

/** True when both trees have the same keys at the same places, whatever their values. */
function sameKeys(a: unknown, b: unknown): boolean {
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => sameKeys(item, b[i]));
  if (!isTable(a)) return !isTable(b) && !Array.isArray(b);
  if (!isTable(b) || Object.keys(a).length !== Object.keys(b).length) return false;
  return Object.keys(a).every((key) => Object.hasOwn(b, key) && sameKeys(a[key], b[key]));
}

/**
 * The source patched to read as `doc`, if toml-patch can and the result reads back as `doc`. An array of tables the
 * source lacks (the first `[[visitors]]`) is one toml-patch cannot add: it is written after the patched text.
 */
function patchedText(source: string, doc: Table, read: (text: string) => Table): string | undefined {
  try {
    const had = read(source);
    const added: Table = {};
    const rest: Table = {};
    for (const [key, value] of Object.entries(doc)) {
      const newArray = !Object.hasOwn(had, key) && Array.isArray(value) && value.length > 0 && value.every(isTable);
      (newArray ? added : rest)[key] = value;
    }
    let text = patch(source, rest);
    if (Object.keys(added).length > 0) text = `${text.trimEnd()}\n\n${stringify(added)}`;
    return sameTree(read(text), doc) ? text : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The text with the placeholders that stand for a number or a boolean unquoted: each `= "{{ .Envs.NAME }}"` (or an
 * array item) whose placeholder the document holds only at such keys. One held also as a whole string value could not
 * be told apart: refused.
 */
function unquoteBarePlaceholders(text: string, doc: Table): string {
  const bare = new Set<string>();
  markBarePlaceholders(doc, (placeholder) => (bare.add(placeholder), placeholder));
  if (bare.size === 0) return text;
  const quoted = new Set<string>();
  const walk = (value: unknown): void => {
    if (isPlaceholder(value)) quoted.add(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (isTable(value)) Object.values(value).forEach(walk);
  };
  walk(markBarePlaceholders(doc, () => ''));
  const both = [...bare].filter((placeholder) => quoted.has(placeholder));
  if (both.length > 0)
    throw badRequest(
      `${both.join(', ')} stands both for a number or true/false and for a whole string: use a variable of its own for each`,
    );
  return text.replace(
    /([=[,]\s*)"(\{\{ *\.Envs\.[A-Za-z_][A-Za-z0-9_]* *\}\})"/g,
    (all, before: string, placeholder: string) => (bare.has(placeholder) ? before + placeholder : all),
  );
}

export async function readTunnelConfig(path: string): Promise<TunnelConfig> {
  return TunnelConfig.parse(await readTunnelConfigText(path), path);
}

/**
 * The text of an instance's config file. One removed behind tunnelward's back is a 409 (the instance is there, its
 * file is not) that says what to do; one that cannot be read says why, by its error code only.
 */
export async function readTunnelConfigText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw conflict(
        `the config file ${path} is missing (removed outside tunnelward): restore it, or delete the instance`,
      );
    }
    throw internal(`cannot read the config file ${path}: ${code ?? 'read error'}`);
  }
}

/**
 * Atomic, and readable by tunnelward and the tunnel's run user alone (`configFileWriteOptions`): the file holds
 * `auth.token`. A config, or the text of one as it stood before.
 */
export async function writeTunnelConfig(path: string, config: TunnelConfig | string, runUser: string): Promise<void> {
  await writeFileAtomic(path, config.toString(), await configFileWriteOptions(runUser));
}

function tomlReason(err: TomlError): string {
  // The full message quotes the offending lines, which may hold auth.token: keep only the fixed reason text.
  const reason = (err.message.split('\n')[0] ?? '').replace(/^Invalid TOML document: /, '');
  return /^[A-Za-z0-9 ,.:'-]{1,100}$/.test(reason) ? reason : 'syntax error';
}

/**
 * The tunnel's output is ours: its console is captured, rotated and streamed, and a `log.to` file would bypass
 * all of that. A file that names one is put back on the console at its next write.
 */
function useConsoleOutput(doc: Table): Table {
  const to = getPath(doc, ['log', 'to']);
  if (to !== undefined && to !== 'console') setPath(doc, ['log', 'to'], 'console');
  return doc;
}

/** Puts a `log.to` file back on the console (see useConsoleOutput); true when it named one. */
function consoleOutputOf(settings: Table): boolean {
  const logTo = getPath(settings, ['log', 'to']);
  if (logTo === undefined || logTo === 'console') return false;
  setPath(settings, ['log', 'to'], 'console');
  return true;
}

/** How a refusal names where in the file it is: the settings' section, and a proxy's or visitor's block. */
interface Labels {
  settings?: string;
  block: (kind: 'proxies' | 'visitors', index: number, block: Table) => string;
}

const blockLabel: Labels['block'] = (kind, index, block) =>
  `${kind}[${index}]${typeof block.name === 'string' ? ` (name ${safeLabel(block.name)})` : ''}`;

/** Problems of a whole file, in one message: the first MAX_IMPORT_ERRORS, and how many more. */
function joinErrors(errors: string[]): string {
  const more = errors.length > MAX_IMPORT_ERRORS ? `; and ${errors.length - MAX_IMPORT_ERRORS} more` : '';
  return `${errors.slice(0, MAX_IMPORT_ERRORS).join('; ')}${more}`;
}

function portFamily(block: Table): string | undefined {
  return REMOTE_PORT_TYPES.includes(text(block.type)) && block.remotePort !== undefined ? text(block.type) : undefined;
}

/**
 * What frpc's validation checks between top-level settings (pkg/config/v1/validation in frp 0.71), each broken rule
 * as a message; frpc refuses to start with any of them.
 */
function settingRules(settings: Table): string[] {
  const broken: string[] = [];
  const given = (path: string) => text(getPath(settings, path.split('.'))) !== '';
  if (
    getPath(settings, ['auth', 'method']) === 'oidc' &&
    getPath(settings, ['auth', 'oidc', 'tokenSource']) === undefined
  ) {
    for (const key of ['auth.oidc.clientID', 'auth.oidc.tokenEndpointURL']) {
      if (!given(key)) broken.push(`${key} is required when auth.method is oidc`);
    }
    const url = text(getPath(settings, ['auth', 'oidc', 'tokenEndpointURL']));
    if (url !== '' && !holdsPlaceholder(url) && !isHttpUrl(url))
      broken.push('auth.oidc.tokenEndpointURL must be an absolute http or https URL');
    const params = getPath(settings, ['auth', 'oidc', 'additionalEndpointParams']);
    if (isTable(params) && Object.hasOwn(params, 'scope'))
      broken.push('auth.oidc.additionalEndpointParams.scope is not allowed; use auth.oidc.scope');
    if (isTable(params) && Object.hasOwn(params, 'audience') && given('auth.oidc.audience'))
      broken.push('auth.oidc.audience and auth.oidc.additionalEndpointParams.audience cannot both be set');
  }
  // frpc looks in each include's directory (relative to its working directory, which depends on how it runs).
  const includes = getPath(settings, ['includes']);
  for (const file of Array.isArray(includes) ? includes.map(text) : []) {
    if (holdsPlaceholder(file)) continue;
    if (!isAbsolute(file)) broken.push(`includes: ${safeLabel(file)} must be an absolute path`);
    else if (statSync(dirname(file), { throwIfNoEntry: false }) === undefined)
      broken.push(`includes: the directory ${safeLabel(dirname(file))} does not exist`);
  }
  const gates = getPath(settings, ['featureGates']);
  for (const gate of isTable(gates) ? Object.keys(gates) : []) {
    if (!(FEATURE_GATES as readonly string[]).includes(gate))
      broken.push(
        `featureGates.${safeLabel(gate)}: frpc knows no such feature gate (only ${FEATURE_GATES.join(', ')})`,
      );
  }
  if (given('virtualNet.address') && getPath(settings, ['featureGates', 'VirtualNet']) !== true)
    broken.push("virtualNet.address needs featureGates.VirtualNet = true (frpc's virtual network is behind that gate)");
  // frpc fills an unset (or 0) heartbeat with its default: none with tcpMux (the default), 30 and 90 s without.
  const tcpMux = getPath(settings, ['transport', 'tcpMux']) !== false;
  const seconds = (key: string, fallback: number) => Number(getPath(settings, ['transport', key]) ?? 0) || fallback;
  const interval = seconds('heartbeatInterval', tcpMux ? -1 : 30);
  const timeout = seconds('heartbeatTimeout', tcpMux ? -1 : 90);
  if (interval > 0 && timeout > 0 && timeout < interval) {
    broken.push(
      `transport.heartbeatTimeout (${timeout}) must not be less than transport.heartbeatInterval (${interval})` +
        (tcpMux ? '' : "; without tcpMux frpc's defaults are 30 and 90"),
    );
  }
  return broken;
}

/** An absolute http(s) URL with a host, as frpc's `url.Parse` and its checks read one. */
function isHttpUrl(value: string): boolean {
  if (!/^https?:\/\/[^/?#]+/i.test(value)) return false;
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
}

// ---- small helpers ----

/** Flattens `{ auth: { token } }` to `auth.token`, except where the key's value is itself a table (metadatas). */
function flattenPatch(patch: Table, prefix = ''): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  for (const [key, value] of Object.entries(patch)) {
    const name = prefix + key;
    if (isTable(value) && !Object.hasOwn(COMMON_KEYS, currentCommonName(name)))
      out.push(...flattenPatch(value, `${name}.`));
    else out.push([name, value]);
  }
  return out;
}

/** The map key (`metadatas`, `featureGates`, ...) a dotted name is an entry of, if it is one. */
function commonMapKeyOf(key: string): string | undefined {
  const map = enclosingKey(COMMON_KEYS, key);
  const kind = map === undefined ? undefined : COMMON_KEYS[map]!.kind;
  return kind === 'stringMap' || kind === 'booleanMap' ? map : undefined;
}

function currentCommonName(key: string): string {
  return Object.hasOwn(LEGACY_COMMON_KEYS, key) ? LEGACY_COMMON_KEYS[key]! : key;
}

/**
 * The clientID tunnelward gives a file it creates: the host's name (letters, digits, `.`, `_` and `-` kept, any
 * other character made `-`) and the instance's name. frps refuses a second client with the same clientID (and
 * user) while one is online: instance names are one per daemon, host names one per network.
 */
export const defaultClientID = (host: string, instance: string): string =>
  `${host.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 63) || 'host'}-${instance}`;
