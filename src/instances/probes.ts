// End-to-end probes of a running tunnel's proxies: what to probe (through frps, and the local service directly), how
// the two outcomes compare into a verdict, and how verdicts in a row become what the health answer shows. Pure: the
// connections are made in actors/probes.ts.

import { isUp, type ProxyStatus } from '../config/proxy-status.js';
import type { ProxyView } from '../config/proxy-view.js';

export type ProbeKind = 'tcp' | 'http' | 'https';

/** Where a proxy is probed: through the server (`remote`), and its local service directly (`local`). */
export interface ProbeTarget {
  proxy: string;
  kind: ProbeKind;
  remote: { host: string; port: number };
  local: { host: string; port: number };
  /** http and https: the Host header (and TLS server name) through the server, the one frpc sends locally, the path. */
  hostHeader?: string;
  localHostHeader?: string;
  path?: string;
}

/** What a TCP connection did: could not be made, or was made and then stayed open, sent bytes first, or was closed. */
export type TcpOutcome = { ok: false; error: string } | { ok: true; behaviour: 'open' | 'data' | 'closed' };

/** What an HTTP request got: no answer, or a status. */
export type HttpOutcome = { ok: false; error: string } | { ok: true; status: number };

/** One probe's result: through the server as the service answers directly, or not, and on which side it failed. */
export type ProbeResult = { ok: true } | { ok: false; where: ProbeSide; error: string };

/** `local`: the local service does not answer (told by the direct connection); `outside`: the tunnel does not carry. */
export type ProbeSide = 'local' | 'outside';

/** A proxy whose probes failed `Probe.Failures` times in a row: what the health answer makes of it. */
export interface ProbeFailure {
  where: ProbeSide;
  error: string;
  /** When the first failure of the run was seen (ms since the epoch). */
  since: number;
}

/** `unreachable from outside: ...` or `local service down: ...`: the reason a failed probe gives. */
export const probeReason = ({ where, error }: Pick<ProbeFailure, 'where' | 'error'>): string =>
  where === 'local' ? `local service down: ${error}` : `unreachable from outside: ${error}`;

/**
 * What to probe of each proxy frpc says runs. tcp: the address frps gave it (frpc's `remoteAddr`, which also names
 * the port frps chose for `remotePort = 0`), else `serverAddr:remotePort`. http and https: frps's vhost port and the
 * domain as frps reports them (`sub.example.com:8080`; no port is 80 or 443, as frps writes it), reached at
 * `serverAddr` with that Host header (so a name that resolves elsewhere, a CDN, is not what is probed). Proxies of
 * other types (udp, stcp, xtcp, sudp, tcpmux), with a plugin (no local TCP service to compare with) or with
 * `httpUser` (frps answers 401 without the password) are skipped, with why.
 */
export function probeTargets(
  serverAddr: string,
  proxies: readonly ProxyView[],
  live: ReadonlyMap<string, ProxyStatus>,
): { targets: ProbeTarget[]; skipped: Map<string, string> } {
  const targets: ProbeTarget[] = [];
  const skipped = new Map<string, string>();
  for (const proxy of proxies) {
    const seen = live.get(proxy.name);
    if (proxy.enabled === false || !seen || !isUp(seen.status)) continue;
    const kind = proxy.type;
    if (kind !== 'tcp' && kind !== 'http' && kind !== 'https') {
      skipped.set(proxy.name, `${kind} proxies are not probed`);
      continue;
    }
    if (proxy.plugin !== undefined) {
      skipped.set(proxy.name, 'a plugin serves it: no local service to compare with');
      continue;
    }
    const localPort = portOf(proxy.localPort);
    if (localPort === undefined) {
      skipped.set(proxy.name, 'no localPort');
      continue;
    }
    const local = { host: proxy.localIP || '127.0.0.1', port: localPort };
    const reported = firstAddress(seen.remoteAddr);
    if (kind === 'tcp') {
      const remote = reported ? splitHostPort(reported) : undefined;
      const port = remote?.port ?? portOf(proxy.remotePort);
      if (port === undefined || port === 0) {
        skipped.set(proxy.name, 'no remote port known');
        continue;
      }
      targets.push({ proxy: proxy.name, kind, remote: { host: remote?.host || serverAddr, port }, local });
      continue;
    }
    if (typeof proxy.httpUser === 'string' && proxy.httpUser !== '') {
      skipped.set(proxy.name, 'httpUser set: the server asks for a password');
      continue;
    }
    const vhost = reported ? splitHostPort(reported, kind === 'http' ? 80 : 443) : undefined;
    if (!vhost?.host) {
      skipped.set(proxy.name, 'frpc reported no domain for it');
      continue;
    }
    const locations = Array.isArray(proxy.locations) ? proxy.locations.filter((l) => typeof l === 'string') : [];
    const rewrite = typeof proxy.hostHeaderRewrite === 'string' ? proxy.hostHeaderRewrite : '';
    targets.push({
      proxy: proxy.name,
      kind,
      remote: { host: serverAddr, port: vhost.port! },
      local,
      hostHeader: vhost.host,
      localHostHeader: rewrite || vhost.host,
      path: locations[0] || '/',
    });
  }
  return { targets, skipped };
}

/** The first of frpc's reported addresses (`a.example.com:8080,b.example.com:8080`), when it is one. */
function firstAddress(remoteAddr: string): string | undefined {
  const first = remoteAddr.split(',')[0]?.trim() ?? '';
  return first === '' || first.startsWith(':') ? undefined : first;
}

const portOf = (text: string | undefined): number | undefined => {
  if (!text || !/^\d{1,5}$/.test(text)) return undefined;
  const port = Number(text);
  return port <= 65535 ? port : undefined;
};

/** `host:port`, `[v6]:port`, or frpc's `v6:port` unbracketed; with `defaultPort`, a bare host too. */
export function splitHostPort(addr: string, defaultPort?: number): { host: string; port?: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(addr);
  if (bracketed) return { host: bracketed[1]!, port: portOf(bracketed[2]) ?? defaultPort };
  const colon = addr.lastIndexOf(':');
  const port = colon >= 0 ? portOf(addr.slice(colon + 1)) : undefined;
  if (port === undefined) return { host: addr, port: defaultPort };
  return { host: addr.slice(0, colon), port };
}

/**
 * A tcp probe's verdict. The direct connection says whether the service answers at all: refused or silent, the
 * local service is down, whatever the other side did. Through the server, a connection that cannot be made (refused:
 * frps does not hold the port; no answer: a firewall, a black hole) is unreachable from outside; and one that frps
 * accepts and then closes before the service said anything, where the direct one stays open or sends bytes, is what
 * frps does when frpc cannot carry it to the service. A service that speaks first (ssh, smtp: bytes within the hold)
 * must be heard through the server too, within the timeout: a server that accepts and then says nothing (hung, or a
 * middlebox holding the connection) is caught so. The bytes themselves are not compared: many banners differ per
 * connection; only how each connection behaves is.
 */
export function judgeTcp(local: TcpOutcome, remote: TcpOutcome): ProbeResult {
  if (!local.ok) return { ok: false, where: 'local', error: local.error };
  if (!remote.ok) return { ok: false, where: 'outside', error: remote.error };
  if (remote.behaviour === 'closed' && local.behaviour !== 'closed')
    return { ok: false, where: 'outside', error: 'closed at once by the server: the tunnel did not carry it' };
  if (local.behaviour === 'data' && remote.behaviour === 'open')
    return { ok: false, where: 'outside', error: 'the service speaks first, but nothing came through the server' };
  return { ok: true };
}

/**
 * An http(s) probe's verdict: the same request with the same Host header, through frps's vhost port and directly;
 * the service not answering directly is down; otherwise the class of the status must be the same (frps answers 404
 * for a domain it does not route, and for a service frpc cannot reach).
 */
export function judgeHttp(local: HttpOutcome, remote: HttpOutcome): ProbeResult {
  if (!local.ok) return { ok: false, where: 'local', error: local.error };
  if (!remote.ok) return { ok: false, where: 'outside', error: remote.error };
  if (Math.floor(remote.status / 100) !== Math.floor(local.status / 100))
    return {
      ok: false,
      where: 'outside',
      error: `HTTP ${remote.status} through the server, ${local.status} from the service directly`,
    };
  return { ok: true };
}

/** A proxy's probes so far: the verdict they add up to, and the run of failures under way. */
export interface ProbeState {
  /** null until the first result; `failing` once `Probe.Failures` in a row failed, until one succeeds. */
  verdict: 'reachable' | 'failing' | null;
  /** While failing: the last failure's side and words, and since when it fails. */
  failure: ProbeFailure | null;
  /** Failures in a row, and when the first of them was seen. */
  failures: number;
  firstFailedAt: number | null;
}

/**
 * The state after one more result: a success is reachable at once; failures count, and only `needed` in a row make it
 * failing (a single lost connection is not an outage), keeping the latest words and the first failure's time.
 */
export function nextProbeState(
  previous: ProbeState | undefined,
  result: ProbeResult,
  now: number,
  needed: number,
): ProbeState {
  if (result.ok) return { verdict: 'reachable', failure: null, failures: 0, firstFailedAt: null };
  const failures = (previous?.failures ?? 0) + 1;
  const firstFailedAt = previous?.firstFailedAt ?? now;
  if (failures < Math.max(1, needed))
    return { verdict: previous?.verdict ?? null, failure: previous?.failure ?? null, failures, firstFailedAt };
  return {
    verdict: 'failing',
    failure: { where: result.where, error: result.error, since: firstFailedAt },
    failures,
    firstFailedAt,
  };
}

/** How a state is announced and counted: `reachable`, `unreachable` (from outside), `local down`; null: not yet. */
export function probeVerdictOf(state: ProbeState | undefined): 'reachable' | 'unreachable' | 'local down' | null {
  if (!state || state.verdict === null) return null;
  if (state.verdict === 'reachable') return 'reachable';
  return state.failure?.where === 'local' ? 'local down' : 'unreachable';
}

/** A connection's error in words shown to every user: what went wrong, never the address (admins only see those). */
export function errorWords(err: { code?: string; message?: string }, timeoutSecs: number): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset';
    case 'EHOSTUNREACH':
      return 'host unreachable';
    case 'ENETUNREACH':
      return 'network unreachable';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'the name does not resolve';
    case 'ETIMEDOUT':
    case 'PROBE_TIMEOUT':
      return `no answer within ${timeoutSecs} s`;
    case 'EPIPE':
      return 'connection closed';
    default:
      return (err.message ?? 'failed').replace(/\s*\[?[0-9a-fA-F.:]+\]?:\d+/g, '').trim() || 'failed';
  }
}
