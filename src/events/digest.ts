// The digest of connection alerts: one webhook per server and direction for what one outage (or its end) did, in
// place of one per tunnel and proxy. Pure: the actor that gathers the alerts over `Webhook.DigestSecs` is
// actors/alert-digest.ts.

import type { Draft, NotificationEvent, NotificationKind } from './vocabulary.js';

/** The alerts a digest gathers: what frpc says of a tunnel's connection and of its proxies. */
const CONNECTION_ALERTS: ReadonlySet<NotificationKind> = new Set<NotificationKind>([
  'proxy.up',
  'proxy.down',
  'instance.connected',
  'instance.disconnected',
]);

export const isConnectionAlert = (event: { event: NotificationKind }): boolean => CONNECTION_ALERTS.has(event.event);

/** One line of a digest: a tunnel, or one of its proxies, that went down or came back. */
export interface DigestItem {
  instanceID: number;
  name: string;
  /** Absent: the tunnel's connection itself. */
  proxy?: string;
  /** Why it went down, as the alert said. */
  err?: string;
}

/** Where a tunnel connects (`host:port`), as its file says; undefined when not known. */
export type ServerOf = (instanceID: number) => string | undefined;

const down = (kind: NotificationKind) => kind === 'proxy.down' || kind === 'instance.disconnected';

/**
 * The digests of the alerts gathered over one window: one per server and direction (`down`, then `up`), each listing
 * the tunnels and proxies in the order the alerts came. A tunnel or proxy that went down and came back within the
 * window is in both. Tunnels whose server is not known are gathered under `unknown server`.
 */
export function digestsOf(alerts: readonly NotificationEvent[], serverOf: ServerOf): Draft[] {
  const groups = new Map<string, { server: string; to: 'down' | 'up'; items: DigestItem[] }>();
  for (const alert of alerts) {
    if (!isConnectionAlert(alert) || alert.instanceID === null) continue;
    const server = serverOf(alert.instanceID) ?? 'unknown server';
    const to = down(alert.event) ? 'down' : 'up';
    const key = `${to} ${server}`;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { server, to, items: [] }));
    group.items.push({
      instanceID: alert.instanceID,
      name: alert.name,
      ...(alert.proxy !== undefined ? { proxy: alert.proxy } : {}),
      ...(to === 'down' && alert.err ? { err: alert.err } : {}),
    });
  }
  const ordered = [...groups.values()].sort((a, b) => (a.to === b.to ? 0 : a.to === 'down' ? -1 : 1));
  return ordered.map(({ server, to, items }) => ({
    event: 'alerts.digest',
    instanceID: null,
    name: server,
    from: null,
    to,
    exitCode: null,
    signal: null,
    message: summaryOf(server, to, items),
    items,
  }));
}

/** `server 10.0.0.5:7000: 3 tunnels and 6 proxies down: home (login refused: ...), nas, cam; proxies home/ssh, ...`. */
export function summaryOf(server: string, to: 'down' | 'up', items: readonly DigestItem[]): string {
  const tunnels = items.filter((i) => i.proxy === undefined);
  const proxies = items.filter((i) => i.proxy !== undefined);
  const counts = [
    ...(tunnels.length > 0 ? [plural(tunnels.length, 'tunnel')] : []),
    ...(proxies.length > 0 ? [plural(proxies.length, 'proxy', 'proxies')] : []),
  ].join(' and ');
  const named = (list: readonly DigestItem[], label: (i: DigestItem) => string) => {
    const shown = list.slice(0, LISTED).map((i) => (i.err ? `${label(i)} (${i.err})` : label(i)));
    return list.length > LISTED ? [...shown, `${list.length - LISTED} more`].join(', ') : shown.join(', ');
  };
  const parts = [
    ...(tunnels.length > 0 ? [`tunnels ${named(tunnels, (i) => i.name)}`] : []),
    ...(proxies.length > 0 ? [`proxies ${named(proxies, (i) => `${i.name}/${i.proxy}`)}`] : []),
  ];
  return `server ${server}: ${counts} ${to === 'down' ? 'down' : 'back up'}: ${parts.join('; ')}`;
}

/** Names listed in a digest's message (all of them are in its items). */
const LISTED = 10;

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
