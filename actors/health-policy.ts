import { Subject, type Subscription } from '../src/util/rx.js';
import {
  effectivePolicy,
  restartDueAt,
  restartReason,
  type InstancePolicy,
  type Policy,
  type PolicyFacts,
} from '../src/instances/health-policy.js';
import { isUp } from '../src/config/proxy-status.js';
import type { Observable } from '../src/util/rx.js';
import type { ProbeFacts } from './probes.js';
import { mib, overCap } from '../src/instances/memory-cap.js';
import { ProcessUsage } from '../src/system/process-usage.js';
import type { Logger } from '../src/log/logger.js';
import type { Settings } from '../src/settings/table.js';
import type { InstanceLifecycle } from './instance-lifecycle.js';
import type { TunnelStatus } from './tunnel-status.js';

/** frpc's words when the address it serves its admin API on is taken (it exits 1 at once). */
const ADMIN_PORT_TAKEN = /listen tcp 127\.0\.0\.1:(\d+): bind: address already in use/;
const ADMIN_PORT_RETRIES = 3;

/** How often the tunnels' memory is looked at while a cap is set (process mode). */
const MEMORY_LOOK_MS = 5000;

/** A restart the policy made, for the event stream and the webhooks. */
export interface HealthRestart {
  instanceID: number;
  reason: string;
}

/**
 * Acts on a tunnel that runs but carries nothing, or has grown past its memory cap: one not logged in to its server
 * for `Health.DisconnectedSecs`, or (process mode) over `Instance.MemoryMaxMB` at two looks in a row, is restarted in
 * its own queue (after whatever an operator asked before; a stop asked meanwhile wins), counted apart from crashes
 * and never `failed` by itself. A restart that does not bring the login back makes the next wait twice as
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

  /** Looks at the tunnels' memory while a cap is set and nothing else enforces it. */
  private memoryTimer: NodeJS.Timeout | undefined;
  /** Restarts for an admin port taken at the start, per tunnel, since it last ran. */
  private readonly portRetries = new Map<number, number>();
  /** Tunnels seen over the cap at the last look (a second look in a row restarts them). */
  private overCap = new Set<number>();
  private readonly usage = new ProcessUsage();

  constructor(
    private readonly settings: () => Readonly<Settings>,
    private readonly status: TunnelStatus,
    private readonly lifecycle: InstanceLifecycle,
    log: Logger,
    /** An instance's own figures over the settings. */
    private readonly ownPolicy: (id: number) => Readonly<InstancePolicy>,
    /** The port of the tunnel's admin API, as its file says. */
    private readonly adminPortOf: (id: number) => Promise<number | undefined>,
    /** The running tunnels' processes, for the memory cap in process mode (systemd's MemoryMax= does it there). */
    private readonly processes: (() => Array<{ id: number; pid: number }>) | undefined,
  ) {
    this.log = log.child({ component: 'health-policy' });
    this.watchMemory();
    this.subs = status.changed$.subscribe((id) => this.review(id));
    this.subs.add(
      lifecycle.changes$.subscribe(({ instanceID, to, reason }) => {
        // An operator's stop, or the watchdog's own course, ends the outage as far as the policy is concerned.
        if (to === 'stopped' || to === 'failed') this.streaks.delete(instanceID);
        if (to === 'running') this.portRetries.delete(instanceID);
        if (to === 'failed' && reason !== undefined) void this.adminPortTaken(instanceID, reason);
        this.review(instanceID);
      }),
    );
  }

  private probes: ProbeFacts | undefined;

  /** The figures that apply to a tunnel: its own, else the settings'. */
  private policy(id: number): Policy & { memoryMaxMB: number } {
    return effectivePolicy(this.settings(), this.ownPolicy(id));
  }

  /** Reads the end-to-end probes too, once they run: a proxy unreachable from outside for Health.UnreachableSecs. */
  watchProbes(probes: ProbeFacts & { changed$: Observable<number> }): void {
    this.probes = probes;
    this.subs.add(probes.changed$.subscribe((id) => this.review(id)));
  }

  /** What the policy reads of a running tunnel, or undefined when it is not followed. */
  private factsOf(id: number): PolicyFacts | undefined {
    const live = this.status.of(id);
    if (!live) return undefined;
    const facts: PolicyFacts = {
      connected: live.connected,
      connectedSince: live.connectedSince,
      disconnectReason: live.disconnectReason,
    };
    // A proxy frpc says runs, that its probes find unreachable from outside (not a local service down: a restart of
    // frpc does not bring a service back), the one failing longest. Counted from when frpc said it runs: failures
    // from before (the run a restart ended) are not this run's, or a restart would be followed by another at once.
    for (const [proxy, failure] of this.probes?.failuresOf(id) ?? []) {
      const seen = live.proxies.get(proxy);
      if (failure.where !== 'outside' || !seen || !isUp(seen.status)) continue;
      const since = Math.max(failure.since, seen.since);
      if (!facts.unreachable || since < facts.unreachable.since)
        facts.unreachable = { proxy, since, error: failure.error };
    }
    return facts;
  }

  /**
   * A tunnel that failed because another program took its admin port between the start's check and frpc's bind (a
   * port frps bound for a proxy, say; frpc then exits 1, a code that is not retried): started again in its slot,
   * whose start check gives it a new port. At most ADMIN_PORT_RETRIES times before it runs again.
   */
  private async adminPortTaken(id: number, reason: string): Promise<void> {
    const port = Number(ADMIN_PORT_TAKEN.exec(reason)?.[1]);
    if (!port || port !== (await this.adminPortOf(id).catch(() => undefined))) return;
    const tries = this.portRetries.get(id) ?? 0;
    if (tries >= ADMIN_PORT_RETRIES) return;
    this.portRetries.set(id, tries + 1);
    const why = `its admin port ${port} was taken by another program as frpc started (bind: address already in use): started again with a new port by the health policy`;
    await this.restart(id, () => (this.lifecycle.stateOf(id) === 'failed' ? why : undefined), 'whatever its state');
  }

  /** The memory cap of a tunnel in MiB (its own, else Instance.MemoryMaxMB); 0: none. */
  memoryCapOf(id: number): number {
    return this.policy(id).memoryMaxMB;
  }

  /** Restarts made by the policy: of one instance, or of all, since tunnelward started. */
  restartsOf(id?: number): number {
    return id === undefined ? this.total : (this.counts.get(id) ?? 0);
  }

  /** The settings changed: every tunnel's due time again. */
  reviewAll(): void {
    for (const id of [...this.due.keys()]) this.review(id);
  }

  /** An instance's own figures changed: its due time again. */
  policyChanged(id: number): void {
    this.review(id);
  }

  /** In process mode, the tunnels' memory is looked at every 5 s (a look costs nothing while no tunnel has a cap). */
  private watchMemory(): void {
    if (this.processes === undefined) return;
    this.memoryTimer = setInterval(() => this.lookAtMemory(), MEMORY_LOOK_MS);
    this.memoryTimer.unref();
  }

  /**
   * One read of /proc per running tunnel. A tunnel over the cap at two looks in a row (a moment's peak is left to
   * GOMEMLIMIT and Go's collector) is restarted.
   */
  private lookAtMemory(): void {
    const capped = (this.processes?.() ?? []).flatMap((p) => {
      const capMB = this.policy(p.id).memoryMaxMB;
      return capMB > 0 ? [{ ...p, capMB }] : [];
    });
    const usage = this.usage.of(capped.map((p) => p.pid));
    const over = new Set<number>();
    for (const { id, pid, capMB } of capped) {
      const rss = usage.get(pid)?.rssBytes;
      if (!overCap(rss, capMB)) continue;
      over.add(id);
      if (!this.overCap.has(id)) continue;
      const reason = `memory: RSS ${mib(rss!)} MiB over the cap of ${capMB} MiB (Instance.MemoryMaxMB): restarted by the health policy`;
      void this.restart(id, () => (this.lifecycle.stateOf(id) === 'running' ? reason : undefined));
      over.delete(id);
    }
    this.overCap = over;
  }

  /** Works out when a tunnel is due a restart, after any change of its status or state. */
  private review(id: number): void {
    const facts = this.factsOf(id);
    if (facts?.connected === true && !facts.unreachable) this.streaks.delete(id);
    const at =
      facts && this.lifecycle.stateOf(id) === 'running'
        ? restartDueAt(facts, this.policy(id), this.streaks.get(id) ?? 0)
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

  /** Not carrying for the policy's time, as seen in the tunnel's slot: why to restart it, or undefined. */
  private notCarrying(id: number): string | undefined {
    const facts = this.factsOf(id);
    const streak = this.streaks.get(id) ?? 0;
    const policy = this.policy(id);
    const at = facts && restartDueAt(facts, policy, streak);
    const now = Date.now();
    if (!facts || at === undefined || at > now || this.lifecycle.stateOf(id) !== 'running') return undefined;
    this.streaks.set(id, streak + 1);
    return restartReason(facts, policy, streak, now);
  }

  /** In the tunnel's queue: if `why` (asked there) still gives a reason, restart it. */
  private async restart(
    id: number,
    why: () => string | undefined = () => this.notCarrying(id),
    when: 'if running' | 'whatever its state' = 'if running',
  ): Promise<void> {
    try {
      await this.lifecycle.inSlot(id, async (slot) => {
        const reason = why();
        if (reason === undefined) return;
        this.log.warn({ instanceID: id, reason }, 'restarting a tunnel by the health policy');
        this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
        this.total++;
        this.restarts$.next({ instanceID: id, reason });
        const done =
          when === 'if running' ? await this.lifecycle.restartIfRunning(slot) : await this.lifecycle.restartIn(slot);
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
    clearInterval(this.memoryTimer);
    this.subs.unsubscribe();
    this.restarts$.complete();
  }
}
