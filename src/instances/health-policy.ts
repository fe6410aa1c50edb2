// The health policy: when a tunnel that runs but carries nothing is restarted. Pure: the actor that watches the
// tunnels and restarts them in their queue is actors/health-policy.ts.

/** What the policy reads of a running tunnel (the live status of actors/tunnel-status.ts). */
export interface PolicyFacts {
  /** Logged in to its server; null until frpc says. */
  connected: boolean | null;
  /** Since when `connected` is what it is: for a tunnel not yet logged in, since it was followed (its start). */
  connectedSince: number;
  /** Why it is not connected, in frpc's words. */
  disconnectReason: string | null;
}

export interface Policy {
  /** Restart a tunnel not logged in for this long (seconds); 0: never. */
  disconnectedSecs: number;
}

/** A restart that did not help is followed by the next after twice the wait, up to this. */
export const MAX_WAIT_SECS = 3600;

/**
 * How long the policy waits before the `streak`-th restart in a row of one outage (the first is 0): the policy's
 * time, doubled for each restart that did not bring the login back, at most an hour (or the policy's time, if longer).
 * A server down for a day is then tried a few times an hour, not every few minutes.
 */
export function waitSecs(policy: Policy, streak: number): number {
  const cap = Math.max(policy.disconnectedSecs, MAX_WAIT_SECS);
  return Math.min(policy.disconnectedSecs * 2 ** Math.min(streak, 20), cap);
}

/** When the tunnel is due a restart (ms since the epoch), or undefined: logged in, or the policy is off. */
export function restartDueAt(facts: PolicyFacts, policy: Policy, streak: number): number | undefined {
  if (policy.disconnectedSecs === 0 || facts.connected === true) return undefined;
  return facts.connectedSince + waitSecs(policy, streak) * 1000;
}

/** Why the policy restarts it, for the log, the event and the operator. */
export function restartReason(facts: PolicyFacts, policy: Policy, streak: number, now: number): string {
  const secs = Math.round((now - facts.connectedSince) / 1000);
  const what = facts.connected === null ? 'not logged in since its start' : 'not connected to its server';
  const why = facts.disconnectReason ? ` (${facts.disconnectReason})` : '';
  const next = waitSecs(policy, streak + 1);
  return `${what} for ${secs} s${why}: restarted by the health policy (Health.DisconnectedSecs ${policy.disconnectedSecs}); ${
    streak === 0 ? 'the first' : `restart ${streak + 1}`
  } of this outage, the next after ${next} s more without a login`;
}
