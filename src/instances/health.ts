// "Is it up, and if not, why?": one answer per tunnel and per proxy, computed here and nowhere else, from what the
// lifecycle knows of the process and what frpc says of its connection and proxies. Every view (the API's list,
// status and getInfo, the CLI's ls and status, the console, the metrics, the events) shows this answer.

import type { InstanceState } from '../../machines/instance.machine.js';
import { isUp, type ProxyStatus } from '../config/proxy-status.js';
import { formatIso } from '../util/time.js';
import { probeReason, type ProbeFailure } from './probes.js';

/**
 * - `up`: running, logged in to its server, every proxy running.
 * - `degraded`: running and logged in, some proxies not running.
 * - `down`: meant to run, carrying nothing: starting, restarting after an exit, not logged in, or no proxy running.
 * - `stopped`: not meant to run (stopped by an operator, or never started).
 * - `failed`: the watchdog gave up; only an operator's start leaves it.
 */
export type HealthState = 'up' | 'degraded' | 'down' | 'stopped' | 'failed';
export const HEALTH_STATES: readonly HealthState[] = ['up', 'degraded', 'down', 'stopped', 'failed'];

export interface Health {
  state: HealthState;
  /** Why it is not up, in words taken from what frpc said where it said anything; null when up or stopped. */
  reason: string | null;
  /** Since when this answer holds, as far as this tunnelward saw it (ms since the epoch; null: not known). */
  since: number | null;
}

/** A health as the API shows it: `since` as an ISO time. */
export interface HealthView {
  state: HealthState;
  reason: string | null;
  since: string | null;
}

export const healthView = ({ state, reason, since }: Health): HealthView => ({
  state,
  reason,
  since: since === null ? null : formatIso(since),
});

/** What the health of a tunnel is read from. */
export interface TunnelFacts {
  state: InstanceState;
  /** When it entered that state (null: not known). */
  stateSince: number | null;
  /** Why its last run or start ended (the exit and frpc's last lines, a spawn refused), while it rests after it. */
  lastError: string | null;
  /** What frpc says while it runs; undefined when not followed (not running, or no admin endpoint). */
  live?: {
    connected: boolean | null;
    connectedSince: number;
    disconnectReason: string | null;
    proxies: ReadonlyMap<string, ProxyStatus>;
  };
  /**
   * How many proxies its file has frpc run (enabled); undefined when not known. A tunnel logged in whose frpc has not
   * reported them yet is not up yet.
   */
  expectedProxies?: number;
  /**
   * The proxies whose end-to-end probes failed `Probe.Failures` times in a row (see src/instances/probes.ts): a proxy
   * frpc says runs is down when its probe says the tunnel does not carry (`unreachable from outside: ...`) or its
   * local service does not answer (`local service down: ...`). Absent when the tunnel is not probed.
   */
  probes?: ReadonlyMap<string, ProbeFailure>;
}

/**
 * The health of one proxy of a tunnel whose health is `tunnel`: a disabled one is stopped; while the tunnel is not
 * up or degraded, the proxy shares its answer; else frpc's status of it (`seen`) and its failed probe (`probe`), or down
 * until frpc reports it.
 */
export function proxyHealthIn(
  tunnel: Health,
  enabled: boolean,
  seen: ProxyStatus | undefined,
  probe?: ProbeFailure,
): Health {
  if (!enabled) return { state: 'stopped', reason: 'disabled', since: null };
  if (seen !== undefined) return proxyHealth(seen, probe);
  if (tunnel.state === 'up' || tunnel.state === 'degraded')
    return { state: 'down', reason: 'not reported by frpc (yet)', since: null };
  return tunnel;
}

/**
 * The health of one proxy of a running, connected tunnel: frpc's status and error in words; one that frpc says runs
 * is still down when its probe failed (`probe`).
 */
export function proxyHealth(proxy: ProxyStatus, probe?: ProbeFailure): Health {
  if (!isUp(proxy.status)) return { state: 'down', reason: proxyReason(proxy), since: proxy.since };
  if (probe) return { state: 'down', reason: probeReason(probe), since: Math.max(probe.since, proxy.since) };
  return { state: 'up', reason: null, since: proxy.since };
}

/** frpc's status of a proxy that does not run, with its error (`start error: port already used`). */
function proxyReason({ status, err }: ProxyStatus): string {
  if (status === 'check failed') return `health check failed${err ? `: ${err}` : ''}`;
  if (status === 'new' || status === 'wait start') return 'starting';
  return err ? `${status}: ${err}` : status;
}

export function tunnelHealth(facts: TunnelFacts): Health {
  const { state, stateSince, lastError, live, probes } = facts;
  switch (state) {
    case 'stopped':
      return { state: 'stopped', reason: null, since: stateSince };
    case 'failed':
      return { state: 'failed', reason: lastError ?? 'the watchdog gave up', since: stateSince };
    case 'backoff':
      return {
        state: 'down',
        reason: `restarting after an exit${lastError ? `: ${lastError}` : ''}`,
        since: stateSince,
      };
    case 'starting':
      return { state: 'down', reason: 'starting', since: stateSince };
    case 'stopping':
      return { state: 'down', reason: 'stopping', since: stateSince };
    case 'running':
      return runningHealth(live, stateSince, probes, facts.expectedProxies);
  }
}

function runningHealth(
  live: TunnelFacts['live'],
  stateSince: number | null,
  probes: TunnelFacts['probes'],
  expectedProxies = 0,
): Health {
  // Without an admin endpoint nothing more is known than that the process runs.
  if (live === undefined) return { state: 'up', reason: null, since: stateSince };
  if (live.connected === null) return { state: 'down', reason: 'logging in to the server', since: stateSince };
  if (!live.connected)
    return {
      state: 'down',
      reason: `not connected to the server: ${live.disconnectReason ?? 'connection lost, trying again'}`,
      since: live.connectedSince,
    };
  // Logged in a moment before frpc lists its proxies: up only once they are seen running.
  if (live.proxies.size === 0 && expectedProxies > 0)
    return { state: 'down', reason: 'logged in; its proxies not reported by frpc yet', since: live.connectedSince };
  const down = [...live.proxies].flatMap(([name, proxy]) => {
    const health = proxyHealth(proxy, probes?.get(name));
    return health.state === 'down' ? [{ name, health, probed: isUp(proxy.status) }] : [];
  });
  if (down.length === 0) return { state: 'up', reason: null, since: latest(live.connectedSince, live.proxies) };
  const { name, health: first } = down[0]!;
  const more = down.length > 1 ? ` (and ${down.length - 1} more)` : '';
  const reason = `proxy ${name}: ${first.reason}${more}`;
  const since = Math.min(...down.map(({ health }) => health.since!));
  const all = down.length === live.proxies.size;
  // Every one down: none running as frpc says, or (some running as frpc says, their probes failing) none working.
  const none = down.some(({ probed }) => probed) ? 'no proxy working' : 'no proxy running';
  return { state: all ? 'down' : 'degraded', reason: all ? `${none}: ${reason}` : reason, since };
}

/** When the last of the proxies came up (or the login, if later): since when a tunnel is all up. */
function latest(connectedSince: number, proxies: ReadonlyMap<string, ProxyStatus>): number {
  let at = connectedSince;
  for (const proxy of proxies.values()) at = Math.max(at, proxy.since);
  return at;
}

/**
 * The kind of a tunnel's or a proxy's answer, in a few fixed words: what a label whose values must stay few (the
 * metrics) shows instead of the reason itself, which carries frpc's own words. Read from the reasons this file
 * writes; `other` for none of them (a new one must be added here).
 */
export const REASON_KINDS = [
  'none',
  'failed',
  'restarting',
  'starting',
  'stopping',
  'logging_in',
  'disconnected',
  'proxies_pending',
  'proxies_down',
  'unreachable',
  'local_down',
  'check_failed',
  'start_error',
  'not_reported',
  'disabled',
  'other',
] as const;
export type ReasonKind = (typeof REASON_KINDS)[number];

const KIND_OF_REASON: ReadonlyArray<[RegExp, ReasonKind]> = [
  [/^restarting after an exit/, 'restarting'],
  [/^starting$/, 'starting'],
  [/^stopping$/, 'stopping'],
  [/^logging in to the server$/, 'logging_in'],
  [/^not connected to the server/, 'disconnected'],
  [/^logged in; its proxies not reported/, 'proxies_pending'],
  [/^no proxy working: proxy \S+: unreachable from outside/, 'unreachable'],
  [/^no proxy working: proxy \S+: local service down/, 'local_down'],
  [/^(no proxy (running|working): )?proxy \S+: /, 'proxies_down'],
  [/^unreachable from outside: /, 'unreachable'],
  [/^local service down: /, 'local_down'],
  [/^health check failed/, 'check_failed'],
  [/^start error/, 'start_error'],
  [/^not reported by frpc/, 'not_reported'],
  [/^disabled$/, 'disabled'],
];

export function reasonKind({ state, reason }: Health): ReasonKind {
  if (state === 'failed') return 'failed';
  if (reason === null) return 'none';
  return KIND_OF_REASON.find(([pattern]) => pattern.test(reason))?.[1] ?? 'other';
}
