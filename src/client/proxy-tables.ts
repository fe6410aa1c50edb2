import { remoteOf } from '../config/proxy-remote.js';
import { table, timeLeft, type Colour } from './render.js';

// `tunnelward proxies`: an instance's proxies and visitors as tables, with what frpc says of each proxy.

type Listed = Record<string, unknown>;

const text = (value: unknown): string => (typeof value === 'string' || typeof value === 'number' ? String(value) : '');

/** Where the proxy's traffic comes from: a plugin, or the local address. */
function localOf(p: Listed): string {
  const plugin = p.plugin;
  if (typeof plugin === 'object' && plugin !== null) return `plugin ${text((plugin as Listed).type)}`;
  return p.localPort ? `${text(p.localIP) || '127.0.0.1'}:${text(p.localPort)}` : '-';
}

/** The proxy's health (up, down, stopped...), or frpc's status from a daemon that gives none. */
function statusOf(p: Listed): string {
  const health = p.health as { state?: string } | undefined;
  if (p.enabled === false) return 'disabled';
  return health?.state ?? (text(p.status) || '-');
}

/** Why a proxy is not up: its health's reason (frpc's error in words), or frpc's error. */
function errorOf(p: Listed): string {
  const health = p.health as { state?: string; reason?: string | null } | undefined;
  if (p.enabled === false || health?.state === 'stopped') return '';
  return health?.reason ?? text(p.err);
}

const statusColour = (status: string): Colour =>
  status === 'running' || status === 'up'
    ? 'green'
    : status === 'disabled' || status === 'stopped' || status === '-'
      ? 'grey'
      : 'red';

/** The proxies, one row each; frpc's error text in a last column when any proxy has one. */
export function proxyTable(proxies: Listed[], serverAddr: string, colour: boolean): string {
  const withErrors = proxies.some((p) => errorOf(p) !== '');
  const withExpiries = proxies.some((p) => typeof p.expiresAt === 'string');
  const rows = proxies.map((p) => [
    text(p.name),
    text(p.type),
    localOf(p),
    remoteOf(p, serverAddr) || '-',
    statusOf(p),
    ...(withErrors ? [errorOf(p) || '-'] : []),
    ...(withExpiries ? [typeof p.expiresAt === 'string' ? timeLeft(p.expiresAt) : '-'] : []),
  ]);
  return table(
    ['name', 'type', 'local', 'remote', 'health', ...(withErrors ? ['why'] : []), ...(withExpiries ? ['expires'] : [])],
    rows,
    (r, c) => (c === 4 ? statusColour(rows[r]![4]!) : c === 5 && rows[r]![5] !== '-' ? 'red' : undefined),
    colour,
  );
}

/** The visitors (the client side of stcp, sudp and xtcp): which proxy each reaches, and where it listens here. */
export function visitorTable(visitors: Listed[], colour: boolean): string {
  const rows = visitors.map((v) => [
    text(v.name),
    text(v.type),
    [text(v.serverUser), text(v.serverName)].filter(Boolean).join('.') || '-',
    text(v.bindPort) === '' ? '-' : `${text(v.bindAddr) || '127.0.0.1'}:${text(v.bindPort)}`,
    v.enabled === false ? 'disabled' : 'enabled',
  ]);
  return table(
    ['visitor', 'type', 'server name', 'bind', 'enabled'],
    rows,
    (r, c) => (c === 4 && rows[r]![4] === 'disabled' ? 'grey' : undefined),
    colour,
  );
}
