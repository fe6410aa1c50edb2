import { proxyKeyTable } from './proxy-keys.js';
import { getPath, isTable, setPath, text, type Table } from './toml-tree.js';

/** Shown in place of a secret, the same mask /settings/get shows for webhook headers. */
export const SECRET_MASK = '********';

/** What the proxy list adds to each proxy's keys (its health, frpc's live status): read-only, ignored when sent back. */
export const LISTED_ONLY_FIELDS = ['health', 'status', 'err', 'remoteAddr', 'statusSince'] as const;

/**
 * A proxy as the API shows it: name, type, localIP, localPort and remotePort as strings ('' when absent) and
 * `enabled` always, as the specification lists them; then every other key of the proxy's type that the block
 * holds, nested as in the file, secrets masked. Keys frpc does not know for the type are not shown: one of them
 * could hold a secret we cannot recognise.
 */
export interface ProxyView {
  name: string;
  type: string;
  localIP: string;
  localPort: string;
  remotePort: string;
  enabled: boolean;
  [key: string]: unknown;
}

const SHOWN_FIRST = new Set(['name', 'type', 'localIP', 'localPort', 'remotePort', 'enabled']);

export function pluginTypeOf(block: Table): string | undefined {
  const type = getPath(block, ['plugin', 'type']);
  return typeof type === 'string' && type !== '' ? type : undefined;
}

export function viewOf(block: Table): ProxyView {
  const view: ProxyView = {
    name: text(block.name),
    type: text(block.type),
    localIP: text(block.localIP),
    localPort: text(block.localPort),
    remotePort: text(block.remotePort),
    enabled: block.enabled !== false,
  };
  for (const [key, spec] of Object.entries(proxyKeyTable(view.type, pluginTypeOf(block)))) {
    if (SHOWN_FIRST.has(key)) continue;
    const path = key.split('.');
    const value = getPath(block, path);
    if (value !== undefined) setPath(view, path, spec.secret ? SECRET_MASK : jsonValue(value));
  }
  return view;
}

/** A TOML value as JSON can carry it: a big integer becomes a string. */
function jsonValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(jsonValue);
  if (isTable(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, jsonValue(item)]));
  return typeof value === 'bigint' ? String(value) : value;
}

/**
 * A `[[visitors]]` entry as the API lists it: what it is, which proxy it reaches and where it listens locally
 * (`bindPort` as a string like the proxies' ports, '' when absent; frpc binds 127.0.0.1 when `bindAddr` is empty).
 * Its secretKey is never shown.
 */
export interface VisitorView {
  name: string;
  type: string;
  serverName: string;
  serverUser: string;
  bindAddr: string;
  bindPort: string;
  enabled: boolean;
}

export function visitorViewOf(block: Table): VisitorView {
  return {
    name: text(block.name),
    type: text(block.type),
    serverName: text(block.serverName),
    serverUser: text(block.serverUser),
    bindAddr: text(block.bindAddr),
    bindPort: text(block.bindPort),
    enabled: block.enabled !== false,
  };
}
