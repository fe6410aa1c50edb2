import { Subject, type Subscription } from '../src/util/rx.js';
import { restartDueAt, restartReason, type Policy } from '../src/instances/health-policy.js';
import type { Logger } from '../src/log/logger.js';
import type { Settings } from '../src/settings/table.js';
import type { InstanceLifecycle } from './instance-lifecycle.js';
import type { TunnelStatus } from './tunnel-status.js';

/** A restart the policy made, for the event stream and the webhooks. */
export interface HealthRestart {
  instanceID: number;
  reason: string;
}

/**
 * Acts on a tunnel that runs but carries nothing: one not logged in to its server for `Health.DisconnectedSecs` is
 * restarted in its own queue (after whatever an operator asked before; a stop asked meanwhile wins), counted apart
 * from crashes and never `failed` by itself. A restart that does not bring the login back makes the next wait twice as
 * long (src/instances/health-policy.ts). One timer for every tunnel, set to the earliest restart due.
 */
export class HealthPolicy {
  readonly restarts$ = new Subject<HealthRestart>();
  /** When each tunnel not logged in is due a restart (ms since the epoch). */
  private readonly due = new Map<number, number>();
  /** Restarts in a row in the current outage of each tunnel; ended by a login. */
  private readonly streaks = new Map<number, number>();
  /** Restarts made by the policy per instance since tunnelward started. */
  private readonly counts = new Map<number, number>();
  private total = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private readonly subs: Subscription;
  private readonly log: Logger;

  constructor(
    private readonly settings: () => Readonly<Settings>,
    private readonly status: TunnelStatus,
    private readonly lifecycle: InstanceLifecycle,
    log: Logger,
  ) {
    this.log = log.child({ component: 'health-policy' });
    this.subs = status.changed$.subscribe((id) => this.review(id));
    this.subs.add(
      lifecycle.changes$.subscribe(({ instanceID, to }) => {
        // An operator's stop, or the watchdog's own course, ends the outage as far as the policy is concerned.
        if (to === 'stopped' || to === 'failed') this.streaks.delete(instanceID);
        this.review(instanceID);
      }),
    );
  }

  private policy(): Policy {
    return { disconnectedSecs: this.settings()['Health.DisconnectedSecs'] };
  }

  /** Restarts made by the policy: of one instance, or of all, since tunnelward started. */
  restartsOf(id?: number): number {
    return id === undefined ? this.total : (this.counts.get(id) ?? 0);
  }

  /** The settings changed: every tunnel's due time again. */
  reviewAll(): void {
    for (const id of [...this.due.keys()]) this.review(id);
  }

  /** Works out when a tunnel is due a restart, after any change of its status or state. */
  private review(id: number): void {
    const facts = this.status.of(id);
    if (facts?.connected === true) this.streaks.delete(id);
    const at =
      facts && this.lifecycle.stateOf(id) === 'running'
        ? restartDueAt(facts, this.policy(), this.streaks.get(id) ?? 0)
        : undefined;
    if (at === undefined) {
      this.due.delete(id);
      return;
    }
    this.due.set(id, at);
    if (at < this.timerAt) this.arm(at);
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, at - Date.now()));
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    let next = Infinity;
    for (const [id, at] of this.due) {
      if (at <= now) {
        this.due.delete(id);
        void this.restart(id);
      } else next = Math.min(next, at);
    }
    if (next < Infinity) this.arm(next);
  }

  /** In the tunnel's queue: if it still runs and is still due, restart it. */
  private async restart(id: number): Promise<void> {
    try {
      await this.lifecycle.inSlot(id, async (slot) => {
        const facts = this.status.of(id);
        const streak = this.streaks.get(id) ?? 0;
        const policy = this.policy();
        const at = facts && restartDueAt(facts, policy, streak);
        const now = Date.now();
        if (!facts || at === undefined || at > now || this.lifecycle.stateOf(id) !== 'running') return;
        const reason = restartReason(facts, policy, streak, now);
        this.log.warn({ instanceID: id, reason }, 'restarting a tunnel that carries nothing');
        this.streaks.set(id, streak + 1);
        this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
        this.total++;
        this.restarts$.next({ instanceID: id, reason });
        const done = await this.lifecycle.restartIfRunning(slot);
        if (done && !done.ok)
          this.log.warn({ instanceID: id, reason: done.message }, 'the health restart did not hold');
      });
    } catch (err) {
      // Deleted meanwhile, or its start checks refuse it now (a file gone): the watchdog and the operator see to it.
      this.log.warn({ instanceID: id, reason: (err as Error).message }, 'health restart not made');
    } finally {
      this.review(id);
    }
  }

  /** The instance is gone. */
  forget(id: number): void {
    this.due.delete(id);
    this.streaks.delete(id);
    this.counts.delete(id);
  }

  close(): void {
    clearTimeout(this.timer);
    this.subs.unsubscribe();
    this.restarts$.complete();
  }
}
