// The health policy: when a tunnel that runs but carries nothing is restarted. Pure: the actor that watches the
// tunnels and restarts them in their queue is actors/health-policy.ts.

/** What the policy reads of a running tunnel: the live status (actors/tunnel-status.ts) and its probes. */
export interface PolicyFacts {
  /** Logged in to its server; null until frpc says. */
  connected: boolean | null;
  /** Since when `connected` is what it is: for a tunnel not yet logged in, since it was followed (its start). */
  connectedSince: number;
  /** Why it is not connected, in frpc's words. */
  disconnectReason: string | null;
  /**
   * A proxy frpc says runs whose end-to-end probes fail from outside (src/instances/probes.ts), the one failing
   * longest: the tunnel is logged in and carries nothing for its users (a half-open control connection, a server
   * that lost the proxy).
   */
  unreachable?: { proxy: string; since: number; error: string };
}

/**
 * An instance's own supervision figures, over the settings (`systemConfig` `policy`): each one absent follows the
 * setting of the same name.
 */
export interface InstancePolicy {
  disconnectedSecs?: number;
  unreachableSecs?: number;
  memoryMaxMB?: number;
}

/** The setting each figure of an instance's policy stands in for. */
export const POLICY_SETTINGS = {
  disconnectedSecs: 'Health.DisconnectedSecs',
  unreachableSecs: 'Health.UnreachableSecs',
  memoryMaxMB: 'Instance.MemoryMaxMB',
} as const;

/** The figures that apply to an instance: its own, else the settings'. */
export function effectivePolicy(
  settings: { [K in (typeof POLICY_SETTINGS)[keyof typeof POLICY_SETTINGS]]: number },
  own: InstancePolicy,
): Required<InstancePolicy> {
  return {
    disconnectedSecs: own.disconnectedSecs ?? settings['Health.DisconnectedSecs'],
    unreachableSecs: own.unreachableSecs ?? settings['Health.UnreachableSecs'],
    memoryMaxMB: own.memoryMaxMB ?? settings['Instance.MemoryMaxMB'],
  };
}

export interface Policy {
  /** Restart a tunnel not logged in for this long (seconds); 0: never. */
  disconnectedSecs: number;
  /** Restart a tunnel with a proxy unreachable from outside for this long (seconds); 0: never. */
  unreachableSecs: number;
}

/** A restart that did not help is followed by the next after twice the wait, up to this. */
export const MAX_WAIT_SECS = 3600;

/**
 * How long the policy waits before the `streak`-th restart in a row of one outage (the first is 0): the rule's time,
 * doubled for each restart that did not help, at most an hour (or the rule's time, if longer). A server down for a
 * day is then tried a few times an hour, not every few minutes.
 */
export function waitSecs(secs: number, streak: number): number {
  return Math.min(secs * 2 ** Math.min(streak, 20), Math.max(secs, MAX_WAIT_SECS));
}

/** Which rule applies to the tunnel now, if any: not logged in, or logged in with a proxy unreachable from outside. */
function ruleOf(facts: PolicyFacts, policy: Policy): { secs: number; since: number; setting: string } | undefined {
  if (facts.connected !== true)
    return policy.disconnectedSecs > 0
      ? { secs: policy.disconnectedSecs, since: facts.connectedSince, setting: 'Health.DisconnectedSecs' }
      : undefined;
  if (facts.unreachable && policy.unreachableSecs > 0)
    return { secs: policy.unreachableSecs, since: facts.unreachable.since, setting: 'Health.UnreachableSecs' };
  return undefined;
}

/** When the tunnel is due a restart (ms since the epoch), or undefined: it carries, or the rule is off. */
export function restartDueAt(facts: PolicyFacts, policy: Policy, streak: number): number | undefined {
  const rule = ruleOf(facts, policy);
  return rule && rule.since + waitSecs(rule.secs, streak) * 1000;
}

/** Why the policy restarts it, for the log, the event and the operator. */
export function restartReason(facts: PolicyFacts, policy: Policy, streak: number, now: number): string {
  const rule = ruleOf(facts, policy);
  if (!rule) return 'restarted by the health policy';
  const secs = Math.round((now - rule.since) / 1000);
  const what =
    facts.connected === true && facts.unreachable
      ? `proxy ${facts.unreachable.proxy} unreachable from outside for ${secs} s (${facts.unreachable.error}) while frpc says it runs`
      : `${facts.connected === null ? 'not logged in since its start' : 'not connected to its server'} for ${secs} s${
          facts.disconnectReason ? ` (${facts.disconnectReason})` : ''
        }`;
  const nth = streak === 0 ? 'the first' : `restart ${streak + 1}`;
  return `${what}: restarted by the health policy (${rule.setting} ${rule.secs}); ${nth} of this outage, the next after ${waitSecs(rule.secs, streak + 1)} s more without a change`;
}
