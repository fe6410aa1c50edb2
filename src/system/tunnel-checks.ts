// The self-check's findings about the tunnels, from what was gathered of them (actors/tunnel-survey.ts): the ones
// down, degraded or failed and why, start at boot that cannot happen, files the installed frpc refuses. Pure. Each
// finding is one line however many tunnels it covers: grouped by reason, a few names each.

import type { Verdict } from '../frpc/verify.js';
import type { Health } from '../instances/health.js';
import type { CheckResult } from './self-check.js';

/** One tunnel as the checks see it. */
export interface TunnelFinding {
  name: string;
  health: Health;
  bootAtStart: boolean;
  /** `frpc verify` of its file with the TunnelPath frpc; undefined when its file could not be read (`unread`). */
  verdict?: Verdict;
  unread?: string;
}

/** Whether tunnelward itself starts at boot: its own service (`tunnelward service install`) installed and enabled. */
export interface OwnServiceState {
  /** The unit file's path. */
  unit: string;
  installed: boolean;
  /** true: enabled; false: installed, not enabled; undefined: not installed, or the init system could not say. */
  enabled: boolean | undefined;
  /** What the init system said when it did not say `enabled`. */
  said?: string;
}

/** How much a one-line summary shows: reason groups, names per group, characters per reason. */
export interface SummaryLimits {
  groups: number;
  names: number;
  reasonChars: number;
}

export const SUMMARY_LIMITS: SummaryLimits = { groups: 4, names: 3, reasonChars: 160 };

/** frpc's log prefix: `2025-01-02 10:00:00.123 [E] [client/service.go:295] `. */
const FRPC_LINE_PREFIX =
  /^(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?\s+)?(?:\[[A-Z]\]\s+)?(?:\[[^\]\s]+\.go:\d+\]\s+)?/;

/**
 * A reason in one line, as a group of tunnels shares it: an exit with frpc's last lines becomes the exit and the
 * last line (`exited with code 1: login to the server failed: ...`), without the line's time and source position.
 */
export function shortReason(reason: string, max = SUMMARY_LIMITS.reasonChars): string {
  const lines = reason
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const head = (lines[0] ?? '').replace(/;?\s*last log lines:$/, '');
  const last = lines.length > 1 ? lines.at(-1)!.replace(FRPC_LINE_PREFIX, '') : '';
  const text = last ? `${head}: ${last}` : head;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** `a, b, c and 27 more` */
function someNames(names: readonly string[], shown: number): string {
  const more = names.length - shown;
  return more > 0 ? `${names.slice(0, shown).join(', ')} and ${more} more` : names.join(', ');
}

/**
 * `37 tunnels down: 30 not connected to the server: login refused: ... (a, b, c and 27 more); 7 server unreachable
 * (d, e, f and 4 more)`: the items grouped by their reason (in one line), the biggest group first, at most
 * `limits.groups` groups (the rest counted) and `limits.names` names each.
 */
export function summarise(
  items: ReadonlyArray<{ name: string; reason: string }>,
  what: string,
  limits: SummaryLimits = SUMMARY_LIMITS,
): string {
  const groups = new Map<string, string[]>();
  for (const { name, reason } of items) {
    const key = shortReason(reason, limits.reasonChars);
    const names = groups.get(key);
    if (names) names.push(name);
    else groups.set(key, [name]);
  }
  // Biggest first; equal ones in the order met (Array.prototype.sort is stable).
  const sorted = [...groups].sort((a, b) => b[1].length - a[1].length);
  const shown = sorted
    .slice(0, limits.groups)
    .map(([reason, names]) => `${names.length} ${reason} (${someNames(names, limits.names)})`);
  const rest = sorted.slice(limits.groups);
  if (rest.length > 0) {
    const count = rest.reduce((n, [, names]) => n + names.length, 0);
    shown.push(`${count} more for ${plural(rest.length, 'other reason')}`);
  }
  return `${what}: ${shown.join('; ')}`;
}

const result = (name: string, severity: CheckResult['severity'], message: string): CheckResult => ({
  name,
  ok: severity === 'ok',
  severity,
  message,
});

const reasoned = (tunnels: readonly TunnelFinding[]) =>
  tunnels.map((t) => ({ name: t.name, reason: t.health.reason ?? t.health.state }));

/**
 * Tunnels meant to run and carrying nothing (down) fail the check; some proxies not running (degraded) warn. A
 * monitor that runs `doctor` learns from its exit code that the host is not doing its job, daemon up or not.
 */
export function tunnelsCheck(tunnels: readonly TunnelFinding[]): CheckResult {
  const down = tunnels.filter((t) => t.health.state === 'down');
  const degraded = tunnels.filter((t) => t.health.state === 'degraded');
  const parts = [
    down.length > 0 ? summarise(reasoned(down), `${plural(down.length, 'tunnel')} down`) : '',
    degraded.length > 0 ? summarise(reasoned(degraded), `${plural(degraded.length, 'tunnel')} degraded`) : '',
  ].filter(Boolean);
  if (parts.length > 0) return result('tunnels', down.length > 0 ? 'fail' : 'warn', parts.join('. '));
  if (tunnels.length === 0) return result('tunnels', 'ok', 'no tunnels');
  const states = (['up', 'stopped', 'failed'] as const)
    .map((state) => [state, tunnels.filter((t) => t.health.state === state).length] as const)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${n} ${state}`);
  return result('tunnels', 'ok', `none down or degraded (${states.join(', ')})`);
}

/** Tunnels the watchdog gave up on fail the check, each with the cause of its last exit. */
export function failedCheck(tunnels: readonly TunnelFinding[]): CheckResult {
  const failed = tunnels.filter((t) => t.health.state === 'failed');
  if (failed.length === 0) return result('failedTunnels', 'ok', 'the watchdog has given up on no tunnel');
  return result(
    'failedTunnels',
    'fail',
    summarise(
      reasoned(failed),
      `${plural(failed.length, 'tunnel')} failed (the watchdog gave up; start one to try again)`,
    ),
  );
}

/**
 * Instances set to start at boot while tunnelward itself does not start at boot: warned (all runs now; a reboot
 * would leave them unstarted, or started by their units with nothing watching them until tunnelward starts).
 */
export function bootCheck(
  tunnels: readonly TunnelFinding[],
  service: OwnServiceState,
  /** The init system that runs the tunnels: with its own units, they start at boot without tunnelward. */
  initSystem: string,
): CheckResult {
  const atBoot = tunnels.filter((t) => t.bootAtStart).map((t) => t.name);
  if (atBoot.length === 0) return result('bootAtStart', 'ok', 'no instance is set to start at boot');
  const which = `${plural(atBoot.length, 'instance')} set to start at boot (${someNames(atBoot, SUMMARY_LIMITS.names)})`;
  if (service.enabled === true) return result('bootAtStart', 'ok', `${which}; tunnelward.service is enabled`);
  const why = !service.installed
    ? `tunnelward.service is not installed (no ${service.unit}: tunnelward service install)`
    : service.enabled === false
      ? `tunnelward.service is installed but not enabled (${service.said ?? 'disabled'}: systemctl enable tunnelward.service)`
      : `whether tunnelward.service is enabled is not known (${service.said ?? 'no answer'})`;
  const after =
    initSystem === 'process'
      ? 'after a reboot they stay down until tunnelward is started'
      : 'after a reboot their units start them, but nothing watches them until tunnelward is started';
  return result('bootAtStart', 'warn', `${which}, but tunnelward itself does not start at boot: ${why}; ${after}`);
}

/**
 * Each instance's file as the TunnelPath frpc (`version`) reads it, by `frpc verify`: a file it refuses (a key
 * newer than it, most often) or could not be asked about warns: the tunnel runs on, and its next start fails.
 */
export function filesCheck(tunnels: readonly TunnelFinding[], version: string | undefined): CheckResult {
  const frpc = `the TunnelPath frpc${version ? ` (${version})` : ''}`;
  const refused: Array<{ name: string; reason: string }> = [];
  const unchecked: Array<{ name: string; reason: string }> = [];
  for (const t of tunnels) {
    if (t.unread !== undefined) unchecked.push({ name: t.name, reason: `cannot read it: ${t.unread}` });
    else if (t.verdict && 'refused' in t.verdict) refused.push({ name: t.name, reason: t.verdict.refused });
    else if (t.verdict && 'skipped' in t.verdict) unchecked.push({ name: t.name, reason: t.verdict.skipped });
  }
  const parts = [
    refused.length > 0 ? summarise(refused, `${frpc} refuses ${plural(refused.length, 'config file')}`) : '',
    refused.some((r) => /unknown field/.test(r.reason))
      ? 'an unknown field is most often a key newer than this frpc: install a newer one (tunnelward frp install)'
      : '',
    unchecked.length > 0 ? summarise(unchecked, `${plural(unchecked.length, 'config file')} not checked`) : '',
  ].filter(Boolean);
  if (parts.length > 0) return result('tunnelFiles', 'warn', parts.join('. '));
  if (tunnels.length === 0) return result('tunnelFiles', 'ok', 'no config files');
  return result('tunnelFiles', 'ok', `${frpc} accepts every config file (${tunnels.length})`);
}
