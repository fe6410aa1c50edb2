// How many tunnels or proxies are in each health state: the counts every summary shows (the list's proxyHealth,
// the self-check's tally, the console's cards), from the one health answer (health.ts).

import type { ProxyStatus } from '../config/proxy-status.js';
import { HEALTH_STATES, proxyHealthIn, type Health, type HealthState } from './health.js';

export type HealthCounts = Record<HealthState, number>;

export const noHealthCounts = (): HealthCounts =>
  Object.fromEntries(HEALTH_STATES.map((state) => [state, 0])) as HealthCounts;

/** Counts of `states` by state, every state present (0 when none). */
export function countHealth(states: Iterable<HealthState>): HealthCounts {
  const counts = noHealthCounts();
  for (const state of states) counts[state]++;
  return counts;
}

/**
 * How many of a tunnel's proxies are in each health state: `enabled` names its enabled proxies (as its file says;
 * undefined when not known, then only what frpc reports is counted), `disabled` how many it has switched off.
 * Each is the answer proxyHealthIn gives, so a tunnel down makes every enabled proxy of it down.
 */
export function proxyHealthCounts(
  tunnel: Health,
  enabled: Iterable<string> | undefined,
  live: ReadonlyMap<string, ProxyStatus> | undefined,
  disabled = 0,
): HealthCounts {
  const names = enabled ?? live?.keys() ?? [];
  const counts = countHealth([...names].map((name) => proxyHealthIn(tunnel, true, live?.get(name)).state));
  counts.stopped += disabled;
  return counts;
}

/** The sum of several counts. */
export function addHealthCounts(into: HealthCounts, more: Readonly<HealthCounts>): HealthCounts {
  for (const state of HEALTH_STATES) into[state] += more[state];
  return into;
}
