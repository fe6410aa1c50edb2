import { connect, type Socket } from 'node:net';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { InstanceState } from '../machines/instance.machine.js';
import type { ProxyView } from '../src/config/proxy-view.js';
import type { TunnelConfig } from '../src/config/tunnel-config.js';
import type { InstanceRecord } from '../src/instances/instance-store.js';
import {
  errorWords,
  judgeHttp,
  judgeTcp,
  nextProbeState,
  probeReason,
  probeTargets,
  probeVerdictOf,
  type HttpOutcome,
  type ProbeFailure,
  type ProbeResult,
  type ProbeState,
  type ProbeTarget,
  type TcpOutcome,
} from '../src/instances/probes.js';
import type { Logger } from '../src/log/logger.js';
import type { Settings } from '../src/settings/table.js';
import { Subject, type Subscription } from '../src/util/rx.js';
import { DueOrder } from '../src/util/due-order.js';
import type { TunnelStatusView } from './tunnel-status.js';

/** How long a tcp connection is watched once made: long enough for frps to close one that frpc could not carry. */
const HOLD_MS = 1000;
/** How often the probes that are due are started (one timer for every tunnel probed). */
const TICK_MS = 1000;

/** A probe's verdict changed, once it has held for `Alerts.DebounceSecs`: `proxy.unreachable` or `proxy.reachable`. */
export interface ProbeAlert {
  event: 'proxy.unreachable' | 'proxy.reachable';
  instanceID: number;
  proxy: string;
  from: string | null;
  /** `unreachable from outside`, `local service down` or `reachable`. */
  to: string;
  err?: string;
}

/** What the prober reads of the instances: the supervisor's facade. */
export interface ProbeSubjects {
  views(): Array<{ record: InstanceRecord }>;
  exists(id: number): boolean;
  record(id: number): InstanceRecord;
  stateOf(id: number): InstanceState;
  readConfig(id: number): Promise<TunnelConfig>;
  readonly status: { of(id: number): TunnelStatusView | undefined };
  readonly catalogueChanges$: { subscribe(next: (change: { instanceID: number }) => void): Subscription };
}

/** What the health answer, the views and the metrics read of the probes. */
export interface ProbeFacts {
  /** Changes whenever a health the probes make changes. */
  readonly version: number;
  /** The proxies of the instance whose probes failed `Probe.Failures` in a row; undefined when none is failing. */
  failuresOf(id: number): ReadonlyMap<string, ProbeFailure> | undefined;
  /** Probed proxies by verdict, probes made by outcome, and the time they took. */
  stats(): ProbeStats;
}

export interface ProbeStats {
  proxies: { reachable: number; unreachable: number; localDown: number; pending: number };
  probes: { ok: number; failed: number };
  /** Probes under way, and waiting for a slot. */
  inFlight: number;
  queued: number;
  /** Sum of every probe's duration (ms): with `probes`, the mean. */
  totalMs: number;
}

interface Tracked {
  due: number;
  /** Probes of this round not yet done. */
  pending: number;
  states: Map<string, ProbeState>;
  /** The proxies of its file, read once per revision. */
  config?: { revision: number; serverAddr: string; proxies: ProxyView[] };
}

interface Job {
  id: number;
  tracked: Tracked;
  target: ProbeTarget;
}

/**
 * End-to-end probes of the tunnels whose `probes` are on: for each proxy that frpc says runs, while the tunnel runs
 * and is logged in, a connection (tcp) or a request (http, https) through the server, beside the same to the local
 * service, every `Probe.IntervalSecs`; the verdict (src/instances/probes.ts) goes into the health answer once
 * `Probe.Failures` in a row agree. One timer for all; each tunnel's round falls at a random point of the period (so a
 * thousand turned on together spread over it); at most `Probe.Concurrency` probes at once, the rest wait their turn.
 */
export class Prober implements ProbeFacts {
  readonly alerts$ = new Subject<ProbeAlert>();
  /** An instance whose probe verdicts changed (undebounced, at most once per 200 ms): what a UI re-reads on. */
  readonly changed$ = new Subject<number>();
  private readonly tracked = new DueOrder<number, Tracked>();
  private readonly queue: Job[] = [];
  private inFlight = 0;
  private changes = 0;
  private ticker: NodeJS.Timeout | undefined;
  private readonly dirty = new Set<number>();
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly announced = new Map<string, string>();
  private readonly pendingAlerts = new Map<string, NodeJS.Timeout>();
  private readonly totals = { ok: 0, failed: 0, totalMs: 0 };
  private readonly subscription: Subscription;
  private readonly log: Logger;
  private closed = false;

  constructor(
    private readonly settings: () => Readonly<Settings>,
    private readonly subjects: ProbeSubjects,
    log: Logger,
  ) {
    this.log = log.child({ component: 'probes' });
    for (const { record } of subjects.views()) this.sync(record.id);
    // A record turned on or off, created or deleted.
    this.subscription = subjects.catalogueChanges$.subscribe(({ instanceID }) => this.sync(instanceID));
  }

  get version(): number {
    return this.changes;
  }

  failuresOf(id: number): ReadonlyMap<string, ProbeFailure> | undefined {
    const tracked = this.tracked.get(id);
    if (!tracked) return undefined;
    let failing: Map<string, ProbeFailure> | undefined;
    for (const [name, state] of tracked.states)
      if (state.verdict === 'failing' && state.failure) (failing ??= new Map()).set(name, state.failure);
    return failing;
  }

  stats(): ProbeStats {
    const proxies = { reachable: 0, unreachable: 0, localDown: 0, pending: 0 };
    for (const tracked of this.tracked.values())
      for (const state of tracked.states.values()) {
        const verdict = probeVerdictOf(state);
        if (verdict === 'reachable') proxies.reachable++;
        else if (verdict === 'unreachable') proxies.unreachable++;
        else if (verdict === 'local down') proxies.localDown++;
        else proxies.pending++;
      }
    const { ok, failed, totalMs } = this.totals;
    return { proxies, probes: { ok, failed }, inFlight: this.inFlight, queued: this.queue.length, totalMs };
  }

  /** Follows the instance when its probes are on, forgets it when they are off or it is gone. */
  private sync(id: number): void {
    if (this.closed) return;
    const on = this.subjects.exists(id) && this.subjects.record(id).probes;
    const tracked = this.tracked.get(id);
    if (on && !tracked) {
      const intervalMs = this.intervalMs();
      this.tracked.set(id, { due: Date.now() + Math.random() * intervalMs, pending: 0, states: new Map() });
      // Added out of order: the next tick sorts it in.
      this.tracked.unordered();
      this.ticker ??= setInterval(() => this.tick(), Math.min(TICK_MS, intervalMs)).unref();
    } else if (!on && tracked) {
      this.tracked.delete(id);
      this.forget(id, tracked);
      if (this.tracked.size === 0) {
        clearInterval(this.ticker);
        this.ticker = undefined;
      }
    }
  }

  private intervalMs(): number {
    return this.settings()['Probe.IntervalSecs'] * 1000;
  }

  /** Starts the rounds that are due (see DueOrder). */
  private tick(): void {
    this.tracked.takeDue(Date.now(), this.intervalMs(), (id, tracked) => void this.round(id, tracked));
  }

  /** One round of an instance: a probe of each proxy frpc says runs, queued; none while it is not running and logged in. */
  private async round(id: number, tracked: Tracked): Promise<void> {
    // The last round is still under way (a slow server, a long queue): this one is skipped, not piled up.
    if (tracked.pending > 0) return;
    const live = this.subjects.status.of(id);
    if (this.subjects.stateOf(id) !== 'running' || live?.connected !== true) {
      this.forget(id, tracked);
      return;
    }
    let config = tracked.config;
    try {
      const revision = this.subjects.record(id).revision;
      if (config?.revision !== revision) {
        const file = await this.subjects.readConfig(id);
        config = tracked.config = { revision, serverAddr: file.serverAddr, proxies: file.proxies() };
      }
    } catch (err) {
      this.log.debug({ instanceID: id, reason: (err as Error).message }, 'cannot read the config file to probe');
      return;
    }
    if (this.tracked.get(id) !== tracked) return;
    const { targets } = probeTargets(config.serverAddr, config.proxies, live.proxies);
    const probed = new Set(targets.map((t) => t.proxy));
    // Proxies no longer probed (gone, disabled, or down as frpc says, which the health tells by itself).
    for (const name of [...tracked.states.keys()])
      if (!probed.has(name)) {
        tracked.states.delete(name);
        this.forgetAlert(`${id}/${name}`);
        this.touched(id);
      }
    tracked.pending = targets.length;
    for (const target of targets) this.queue.push({ id, tracked, target });
    this.pump();
  }

  private pump(): void {
    const cap = this.settings()['Probe.Concurrency'];
    while (this.inFlight < cap && this.queue.length > 0) {
      const job = this.queue.shift()!;
      this.inFlight++;
      void this.run(job).finally(() => {
        this.inFlight--;
        job.tracked.pending--;
        this.pump();
      });
    }
  }

  private async run({ id, tracked, target }: Job): Promise<void> {
    if (this.tracked.get(id) !== tracked || this.closed) return;
    const timeoutSecs = this.settings()['Probe.TimeoutSecs'];
    const started = Date.now();
    const result = await probe(target, timeoutSecs).catch((err: Error): ProbeResult => ({
      ok: false,
      where: 'outside',
      error: errorWords(err, timeoutSecs),
    }));
    const now = Date.now();
    this.totals.totalMs += now - started;
    if (result.ok) this.totals.ok++;
    else this.totals.failed++;
    // Stopped, unfollowed or turned off meanwhile: the result says nothing of what is now.
    if (this.tracked.get(id) !== tracked || this.closed) return;
    const live = this.subjects.status.of(id);
    if (live?.connected !== true) return;
    const previous = tracked.states.get(target.proxy);
    const next = nextProbeState(previous, result, now, this.settings()['Probe.Failures']);
    tracked.states.set(target.proxy, next);
    const before = probeVerdictOf(previous);
    const after = probeVerdictOf(next);
    if (before !== after || previous?.failure?.error !== next.failure?.error) this.touched(id);
    if (before !== after && after !== null) {
      this.log.debug({ instanceID: id, proxy: target.proxy, verdict: after, err: next.failure?.error }, 'probe');
      this.announce(id, target.proxy, after, next.failure);
    }
  }

  /** The instance is not probed now (stopped, not logged in, turned off): its verdicts go, and nothing is announced. */
  private forget(id: number, tracked: Tracked): void {
    if (tracked.states.size > 0) {
      tracked.states.clear();
      this.touched(id);
    }
    for (const key of [...this.pendingAlerts.keys()]) if (key.startsWith(`${id}/`)) this.forgetAlert(key);
    for (const key of [...this.announced.keys()]) if (key.startsWith(`${id}/`)) this.announced.delete(key);
  }

  private forgetAlert(key: string): void {
    clearTimeout(this.pendingAlerts.get(key));
    this.pendingAlerts.delete(key);
    this.announced.delete(key);
  }

  /**
   * A verdict is announced once it has held for `Alerts.DebounceSecs` and differs from the last one announced (as the
   * status alerts are); reachable at first sight is no news.
   */
  private announce(
    id: number,
    proxy: string,
    verdict: 'reachable' | 'unreachable' | 'local down',
    failure: ProbeFailure | null,
  ): void {
    const key = `${id}/${proxy}`;
    clearTimeout(this.pendingAlerts.get(key));
    const to =
      verdict === 'reachable'
        ? 'reachable'
        : verdict === 'unreachable'
          ? 'unreachable from outside'
          : 'local service down';
    const timer = setTimeout(() => {
      this.pendingAlerts.delete(key);
      const last = this.announced.get(key);
      if (last === to) return;
      this.announced.set(key, to);
      if (last === undefined && verdict === 'reachable') return;
      this.alerts$.next({
        event: verdict === 'reachable' ? 'proxy.reachable' : 'proxy.unreachable',
        instanceID: id,
        proxy,
        from: last ?? null,
        to,
        ...(failure ? { err: probeReason(failure) } : {}),
      });
    }, this.settings()['Alerts.DebounceSecs'] * 1000);
    timer.unref();
    this.pendingAlerts.set(key, timer);
  }

  private touched(id: number): void {
    this.changes++;
    this.dirty.add(id);
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      const ids = [...this.dirty];
      this.dirty.clear();
      for (const changed of ids) this.changed$.next(changed);
    }, 200);
  }

  close(): void {
    this.closed = true;
    this.subscription.unsubscribe();
    clearInterval(this.ticker);
    clearTimeout(this.flushTimer);
    for (const timer of this.pendingAlerts.values()) clearTimeout(timer);
    this.pendingAlerts.clear();
    this.queue.length = 0;
    this.alerts$.complete();
    this.changed$.complete();
  }
}

/** One probe: directly and through the server, judged together (http: both at once). */
export async function probe(target: ProbeTarget, timeoutSecs: number): Promise<ProbeResult> {
  const timeoutMs = timeoutSecs * 1000;
  if (target.kind === 'tcp') {
    // Both at once; the connection through the server is watched as long as the service's: a service that speaks
    // first (a banner) is given the whole timeout to be heard through the server too, and one that does not answer
    // ends it at once (its verdict is the service's).
    const local = tcpOutcome(target.local.host, target.local.port, timeoutMs, timeoutSecs, Promise.resolve(HOLD_MS));
    const holdMs = local.then((l) => (!l.ok ? 0 : l.behaviour === 'data' ? timeoutMs : HOLD_MS));
    const remote = tcpOutcome(target.remote.host, target.remote.port, timeoutMs, timeoutSecs, holdMs);
    return judgeTcp(await local, await remote);
  }
  const [local, remote] = await Promise.all([
    httpOutcome(target, 'local', timeoutMs, timeoutSecs),
    httpOutcome(target, 'remote', timeoutMs, timeoutSecs),
  ]);
  return judgeHttp(local, remote);
}

/**
 * A tcp connection, watched once made until `holdMs` (from its start) have passed: it stays open, the other side sends
 * bytes first, or it is closed (a reset counts as closed); or it cannot be made within the timeout.
 */
export function tcpOutcome(
  host: string,
  port: number,
  timeoutMs: number,
  timeoutSecs: number,
  holdMs: Promise<number>,
): Promise<TcpOutcome> {
  return new Promise((resolve) => {
    let connected = false;
    let done = false;
    let hold: NodeJS.Timeout | undefined;
    const startedAt = Date.now();
    const socket: Socket = connect({ host, port });
    const finish = (outcome: TcpOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(hold);
      socket.removeAllListeners();
      socket.on('error', () => {});
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(
      () => finish({ ok: false, error: errorWords({ code: 'PROBE_TIMEOUT' }, timeoutSecs) }),
      timeoutMs,
    );
    socket.once('connect', () => {
      connected = true;
      clearTimeout(timer);
      void holdMs.then((ms) => {
        if (done) return;
        const left = Math.min(ms, timeoutMs) - (Date.now() - startedAt);
        hold = setTimeout(() => finish({ ok: true, behaviour: 'open' }), Math.max(0, left));
      });
    });
    socket.once('data', () => finish({ ok: true, behaviour: 'data' }));
    socket.once('end', () => finish({ ok: true, behaviour: 'closed' }));
    socket.once('close', () =>
      finish(connected ? { ok: true, behaviour: 'closed' } : { ok: false, error: 'connection closed' }),
    );
    socket.once('error', (err: NodeJS.ErrnoException) =>
      finish(connected ? { ok: true, behaviour: 'closed' } : { ok: false, error: errorWords(err, timeoutSecs) }),
    );
  });
}

/** The probe's request (GET, the Host header; TLS with that name, any certificate) and the status it got. */
export function httpOutcome(
  target: ProbeTarget,
  side: 'local' | 'remote',
  timeoutMs: number,
  timeoutSecs: number,
): Promise<HttpOutcome> {
  return new Promise((resolve) => {
    const { host, port } = target[side];
    const hostHeader = (side === 'local' ? target.localHostHeader : target.hostHeader) ?? host;
    const tls = target.kind === 'https';
    const finish = (outcome: HttpOutcome) => {
      clearTimeout(timer);
      req.removeAllListeners('error');
      req.on('error', () => {});
      req.destroy();
      resolve(outcome);
    };
    const options = {
      host,
      port,
      path: target.path ?? '/',
      method: 'GET',
      headers: { Host: hostHeader, 'User-Agent': 'tunnelward-probe' },
      agent: false as const,
      ...(tls ? { servername: hostHeader.replace(/:\d+$/, ''), rejectUnauthorized: false } : {}),
    };
    const req = (tls ? httpsRequest : httpRequest)(options, (res: IncomingMessage) => {
      res.on('error', () => {});
      finish({ ok: true, status: res.statusCode ?? 0 });
    });
    req.on('error', (err: NodeJS.ErrnoException) => finish({ ok: false, error: errorWords(err, timeoutSecs) }));
    req.end();
    const timer = setTimeout(
      () => finish({ ok: false, error: errorWords({ code: 'PROBE_TIMEOUT' }, timeoutSecs) }),
      timeoutMs,
    );
  });
}
