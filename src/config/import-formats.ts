import { parse as parseToml } from 'smol-toml';
import { AppError, badRequest } from '../errors.js';
import {
  COMMON_KEYS,
  INI_COMMON_KEYS,
  INI_COMMON_PREFIXES,
  INI_PROXY_KEYS,
  INI_PROXY_PREFIXES,
  INI_VISITOR_KEYS,
} from './frpc-keys.js';
import { isReservedKey, reservedKeyMessage } from '../util/reserved-keys.js';
import { isTable, MAX_DEPTH, tooDeep, type Table } from './toml-tree.js';
import { parseTomlDocument } from './tunnel-config.js';
import { safeLabel } from './value-check.js';

/**
 * Reading the text of an frpc client config file in any format frpc reads: TOML (its current format and the older
 * TOML shape), INI (its legacy format), YAML and JSON. The result is the tree as written, in whichever shape the file
 * has; legacy-shape's `normalizeDocument` maps it to frpc's current names. Messages name lines and keys, never a
 * value: the text holds auth.token.
 */

export const IMPORT_FORMATS = ['toml', 'ini', 'yaml', 'json'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

const WHAT = 'content';

/** A config file's text as read: its format, its tree, and what was left out on the way (`notes`). */
export interface ReadConfig {
  format: ImportFormat;
  tree: Table;
  notes: string[];
  /** The text as read (a byte-order mark removed). */
  text: string;
}

/** The tree of `text`, read as `format`, or as the format it is guessed to be. */
export async function readConfigText(text: string, format?: string): Promise<ReadConfig> {
  const content = text.replace(/^\uFEFF/, '');
  if (format !== undefined) {
    if (!(IMPORT_FORMATS as readonly string[]).includes(format))
      throw badRequest(`format must be one of: ${IMPORT_FORMATS.join(', ')}`);
    return { format: format as ImportFormat, ...(await readAs(format as ImportFormat, content)), text: content };
  }
  const guessed = await guessFormat(content);
  const read = guessed.tree ? { tree: guessed.tree, notes: [] } : await readAs(guessed.format, content);
  return { format: guessed.format, ...read, text: content };
}

async function readAs(format: ImportFormat, text: string): Promise<{ tree: Table; notes: string[] }> {
  if (format === 'ini') return readIni(text);
  return { tree: await readTree(format, text), notes: [] };
}

function readTree(format: Exclude<ImportFormat, 'ini'>, text: string): Table | Promise<Table> {
  switch (format) {
    case 'toml':
      return parseTomlDocument(text, WHAT);
    case 'json':
      return readJson(text);
    case 'yaml':
      return readYaml(text);
  }
}

/**
 * JSON starts with `{`. TOML is tried first; a TOML document with a `[common]` table beside tables that are no
 * frpc setting is INI written in TOML's syntax (proxy sections). Text that is not TOML is INI when it has a
 * `[common]` section or `key = value` lines under section headers that TOML cannot read, and YAML when it reads as
 * a mapping. Anything else is refused with TOML's reason.
 */
async function guessFormat(text: string): Promise<{ format: ImportFormat; tree?: Table }> {
  if (text.trimStart().startsWith('{')) return { format: 'json' };
  let tomlError: unknown;
  try {
    const tree = parseTomlDocument(text, WHAT);
    return isTable(tree.common) && Object.keys(tree).some((key) => !isTomlRoot(key, tree[key]))
      ? { format: 'ini' }
      : { format: 'toml', tree };
  } catch (err) {
    // TOML that is refused for what it holds (too deep, a reserved key) is TOML all the same: that is the answer.
    if (err instanceof AppError && !err.message.startsWith(`${WHAT} is not valid TOML`)) throw err;
    tomlError = err;
  }
  if (looksLikeIni(text)) return { format: 'ini' };
  const yaml = await readYaml(text).catch(() => undefined);
  if (yaml !== undefined) return { format: 'yaml', tree: yaml };
  if (!(tomlError instanceof AppError)) throw tomlError;
  const reason = tomlError.message.replace(/^content is not valid TOML \((.*)\)$/s, '$1');
  throw badRequest(
    `content is in none of the formats frpc reads (as TOML: ${reason}); ` +
      `give format (${IMPORT_FORMATS.join(', ')}) to see why it cannot be read as one of them`,
  );
}

/** A top-level key of a TOML file in either shape: a setting's first part, `common`, proxies, visitors. */
function isTomlRoot(key: string, value: unknown): boolean {
  if (!isTable(value) || key === 'common') return true;
  return Object.keys(COMMON_KEYS).some((name) => name === key || name.startsWith(`${key}.`));
}

const SECTION = /^\s*\[([^[\]]*)\]\s*$/;
const SETTING = /^\s*([^=:#;[\s][^=:]*?)\s*[=:]\s*(.*?)\s*$/;

/** INI as frpc writes it: every setting under a section header, and either [common] or a value TOML cannot read. */
function looksLikeIni(text: string): boolean {
  let inSection = false;
  let untomlish = false;
  for (const line of text.split(/\r?\n/)) {
    if (/^\s*([#;].*)?$/.test(line)) continue;
    const section = SECTION.exec(line);
    if (section) {
      if (section[1]!.trim() === 'common') return true;
      inSection = true;
    } else if (!inSection) {
      return false;
    } else {
      const setting = SETTING.exec(line);
      untomlish ||= setting !== null && !isTomlValue(setting[2]!);
    }
  }
  return untomlish;
}

function isTomlValue(value: string): boolean {
  try {
    parseToml(`v = ${value}`);
    return true;
  } catch {
    return false;
  }
}

// ---- INI: frpc's legacy format (go-ini with inline comments kept and bare keys meaning true) ----

/**
 * frpc's INI file as the older shape that `normalizeDocument` reads: `{ common, proxies: [{ name, ... }] }`, every
 * value a string, each section other than [common] a proxy (or a visitor, with `role = visitor`). What frpc's
 * legacy reader does beyond renaming happens here: a proxy's type defaults to tcp, `authenticate_*` become
 * `auth.additionalScopes`, `oidc_additional_*` the OIDC endpoint parameters, and `log_way` (which frpc's
 * conversion ignores) goes.
 */
function readIni(text: string): { tree: Table; notes: string[] } {
  const sections = new Map<string, Table>();
  let current: Table | undefined;
  text.split(/\r?\n/).forEach((line, index) => {
    const at = `line ${index + 1}`;
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) return;
    if (trimmed.startsWith('[')) {
      const header = SECTION.exec(trimmed);
      const name = header?.[1]!.trim() ?? '';
      if (trimmed.startsWith('[[')) throw badRequest(`content is not valid INI (${at}: [[...]] is TOML's array table)`);
      if (name === '') throw badRequest(`content is not valid INI (${at}: a section header is [name])`);
      if (name.startsWith('range:')) {
        throw badRequest(
          `section ${safeLabel(name)}: INI range sections (a proxy per port of a range) cannot be imported; write a section per port`,
        );
      }
      if (name === 'DEFAULT') throw badRequest(`${at}: frpc ignores the [DEFAULT] section; move its keys`);
      current = sections.get(name) ?? {};
      sections.set(name, current);
      return;
    }
    if (current === undefined) throw badRequest(`content is not valid INI (${at}: a setting before any [section])`);
    const setting = SETTING.exec(trimmed);
    const key = setting ? setting[1]! : trimmed;
    checkKeyName(key, `at line ${index + 1}`);
    current[key] = setting ? unquote(setting[2]!) : 'true';
  });
  const common = sections.get('common');
  if (common === undefined) throw badRequest('content has no [common] section, which every frpc INI file has');
  const ignored: string[] = [];
  const read = (section: string, keys: Table, names: ReadonlySet<string>, prefixes: readonly string[]) => {
    const unread = Object.keys(keys).filter((key) => !names.has(key) && !prefixes.some((p) => key.startsWith(p)));
    for (const key of unread) delete keys[key];
    if (unread.length > 0) ignored.push(`[${safeLabel(section)}] ${unread.map(safeLabel).join(', ')}`);
    return unread;
  };
  const notes: string[] = [];
  const perProxy = read('common', common, INI_COMMON_KEYS, INI_COMMON_PREFIXES).filter((key) =>
    INI_PROXY_KEYS.has(key),
  );
  const proxies: Table[] = [];
  for (const [name, keys] of sections) {
    if (name === 'common') continue;
    const role = keys.role ?? 'server';
    if (role !== 'server' && role !== 'visitor')
      throw badRequest(`[${safeLabel(name)}]: role must be server or visitor`);
    if (role === 'server') read(name, keys, INI_PROXY_KEYS, INI_PROXY_PREFIXES);
    else read(name, keys, INI_VISITOR_KEYS, []);
    const block: Table = { ...keys, name };
    if (role === 'server') block.type ??= 'tcp'; // frpc's legacy default
    proxies.push(block);
  }
  if (ignored.length > 0)
    notes.push(`frpc's INI reader ignores these keys, so they were left out: ${ignored.join('; ')}`);
  if (perProxy.length > 0) {
    notes.push(
      `${perProxy.join(', ')} in [common] set nothing (frpc reads ${perProxy.length > 1 ? 'them' : 'it'} in proxy sections only): put ${perProxy.length > 1 ? 'them' : 'it'} in each proxy that needs ${perProxy.length > 1 ? 'them' : 'it'}`,
    );
  }
  return { tree: { common: iniCommon(common), proxies }, notes };
}

function iniCommon(keys: Table): Table {
  const out: Table = {};
  const scopes: string[] = [];
  const params: Table = {};
  for (const [key, value] of Object.entries(keys)) {
    const scope =
      key === 'authenticate_heartbeats'
        ? 'HeartBeats'
        : key === 'authenticate_new_work_conns'
          ? 'NewWorkConns'
          : undefined;
    if (scope !== undefined) {
      if (value !== 'true' && value !== 'false') throw badRequest(`${key} must be true or false`);
      if (value === 'true') scopes.push(scope);
    } else if (key.startsWith('oidc_additional_') && key.length > 'oidc_additional_'.length) {
      params[key.slice('oidc_additional_'.length)] = value;
    } else if (key !== 'log_way') {
      out[key] = value;
    }
  }
  const oidc = Object.keys(params).length > 0 ? { oidc: { additionalEndpointParams: params } } : {};
  if (scopes.length > 0 || Object.keys(oidc).length > 0)
    out.auth = { ...(scopes.length > 0 ? { additionalScopes: scopes } : {}), ...oidc };
  return out;
}

/** go-ini takes a value wrapped in matching quotes as what is between them. */
function unquote(value: string): string {
  const quoted = value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0];
  return quoted ? value.slice(1, -1) : value;
}

// ---- JSON and YAML: the current structure, as frpc reads them too ----

function readJson(text: string): Table {
  let tree: unknown;
  try {
    tree = JSON.parse(text);
  } catch (err) {
    // V8's message quotes the text around the error: keep only where it is.
    const at = /at position (\d+)/.exec((err as Error).message);
    throw badRequest(`content is not valid JSON${at ? ` (${lineAndColumn(text, Number(at[1]))})` : ''}`);
  }
  return settingsTree(tree, 'JSON');
}

async function readYaml(text: string): Promise<Table> {
  // Flow collections nested thousands deep cost the parser hundreds of MB before it gives up: refused first.
  if (flowDepth(text) > MAX_DEPTH) throw tooDeep(WHAT);
  const { parse, YAMLError } = await import('yaml');
  let tree: unknown;
  try {
    // Pretty errors quote the offending lines (and cost a regular expression of the text): the code says enough.
    tree = parse(text, { maxAliasCount: 100, prettyErrors: false });
  } catch (err) {
    if (!(err instanceof YAMLError)) throw badRequest('content is not valid YAML');
    const reason = err.code.toLowerCase().replaceAll('_', ' ');
    throw badRequest(`content is not valid YAML (${lineAndColumn(text, err.pos[0])}: ${reason})`);
  }
  return settingsTree(tree, 'YAML');
}

/** How deep `[` and `{` nest in the text (quotes not considered: an upper bound of YAML's flow nesting). */
function flowDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (const char of text) {
    if (char === '[' || char === '{') deepest = Math.max(deepest, ++depth);
    else if ((char === ']' || char === '}') && depth > 0) depth--;
  }
  return deepest;
}

/** A JSON or YAML document as a tree of settings: a mapping, with `null` (frpc's "not set") left out. */
function settingsTree(tree: unknown, format: string): Table {
  if (!isTable(tree)) throw badRequest(`content is ${format} but not a mapping of settings`);
  return withoutNulls(tree, 0) as Table;
}

/** YAML's aliases can make a document contain itself: the depth limit ends that too. */
function withoutNulls(value: unknown, depth: number): unknown {
  if (depth > MAX_DEPTH) throw tooDeep(WHAT);
  if (Array.isArray(value)) return value.map((item) => withoutNulls(item, depth + 1));
  if (!isTable(value)) return value;
  const out: Table = {};
  for (const [key, item] of Object.entries(value)) {
    checkKeyName(key, `${depth === 0 ? 'at its top level' : `${depth} levels down`}`);
    if (item !== null) out[key] = withoutNulls(item, depth + 1);
  }
  return out;
}

function checkKeyName(key: string, where: string): void {
  if (isReservedKey(key)) throw badRequest(reservedKeyMessage(WHAT, key, where));
}

function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${before.at(-1)!.length + 1}`;
}
