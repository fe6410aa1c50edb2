import { Subject } from '../src/util/rx.js';
import { DueOrder } from '../src/util/due-order.js';
import { isUp, parseStatus, readLogLine, type ProxyStatus } from '../src/config/proxy-status.js';
import type { AdminEndpoint } from '../src/config/tunnel-config.js';
import type { InstanceLogEntry } from '../src/log/log-entries.js';
import type { Logger } from '../src/log/logger.js';
import type { Settings } from '../src/settings/table.js';
import { adminGet } from '../src/frpc/admin-api.js';

/** An alert, once the state it announces has held for `Alerts.DebounceSecs`. */
export interface StatusAlert {
  event: 'proxy.up' | 'proxy.down' | 'instance.connected' | 'instance.disconnected';
  instanceID: number;
  proxy?: string;
  from: string | null;
  to: string;
  err?: string;
}

/** What an operator reads of a running tunnel's connection and proxies. */
export interface TunnelStatusView {
  /** Logged in to its server; null until known. */
  connected: boolean | null;
  /** Since when `connected` is what it is (ms since the epoch). */
  connectedSince: number;
  /** Why it is not connected, in frpc's words (see disconnectReason); null when it is, or nothing was said. */
  disconnectReason: string | null;
  proxies: ReadonlyMap<string, ProxyStatus>;
}

/** After a hint from the log, wait this long for the lines that usually follow, then look once. */
const HINT_DELAY_MS = 150;
/** How often the polls that are due are made (one timer for every tunnel followed). */
const TICK_MS = 1000;
/** `changed$` says an instance changed at most this often; its first change after a quiet spell at once. */
const CHANGED_EVERY_MS = 200;

/** A tunnel's log, as the status reads it: one listener slot, not a subscription per tunnel. */
export interface HintSource {
  hints: ((entries: InstanceLogEntry[]) => void) | undefined;
  /** What the log said of the connection before it was followed, if anything. */
  readonly connectionSaid?: boolean | undefined;
  /** And why it was not connected, if a line said. */
  readonly disconnectSaid?: string | undefined;
}

interface Tracked {
  endpoint: AdminEndpoint;
  connected: boolean | null;
  connectedSince: number;
  disconnectReason: string | null;
  proxies: Map<string, ProxyStatus>;
  /** When the next poll is due (ms since the epoch). */
  due: number;
  hint: NodeJS.Timeout | undefined;
  busy: boolean;
  again: boolean;
  /** Lines that said something of the connection so far: a read begun before the last of them is out of date. */
  said: number;
  log: HintSource;
  /** After a start: announces a tunnel that has not logged in within the debounce. */
  loginTimer?: NodeJS.Timeout;
}

/**
 * Live status of every running tunnel from frpc's own admin API: read when the tunnel's log says something changed
 * (a login, a lost connection, a proxy started or failed, a reload), and otherwise every `Status.PollSecs`, so a
 * thousand idle tunnels cost a few reads a second, not a thousand. Changes become alerts once they have held for
 * `Alerts.DebounceSecs`, so a flapping link does not flood.
 */
export class TunnelStatus {
  readonly alerts$ = new Subject<StatusAlert>();
  private readonly tracked = new DueOrder<number, Tracked>();
  /** The last state announced per instance (`<id>`) and per proxy (`<id>/<name>`). */
  private readonly announced = new Map<string, string>();
  private readonly pending = new Map<string, { timer: NodeJS.Timeout; alert: StatusAlert }>();
  private changes = 0;
  /** Instances whose live status changed and is not told yet, with when it is to be told (see touched). */
  private readonly dirty = new Map<number, number>();
  /** When each instance's change was last told. */
  private readonly told = new Map<number, number>();
  private flushTimer: NodeJS.Timeout | undefined;
  private flushAt = Infinity;
  /** Makes the polls that are due; runs while any tunnel is followed. */
  private ticker: NodeJS.Timeout | undefined;
  /**
   * An instance whose live status (connection, any proxy's status) changed: at once (in the next turn, so the lines
   * read together count once), then at most once per instance per CHANGED_EVERY_MS. What a UI re-reads on,
   * undebounced (first sights too, which the alerts leave out).
   */
  readonly changed$ = new Subject<number>();
  private readonly log: Logger;

  constructor(
    private readonly settings: () => Readonly<Settings>,
    log: Logger,
  ) {
    this.log = log.child({ component: 'status' });
  }

  /** Changes whenever what the views show changes. */
  get version(): number {
    return this.changes;
  }

  of(id: number): TunnelStatusView | undefined {
    return this.tracked.get(id);
  }

  /**
   * Starts following a tunnel that runs: its admin endpoint, and its log for hints. `started`: it runs because it was
   * just started (not taken over at tunnelward's start), so its first login is news: `instance.connected` is
   * announced once it holds, or `instance.disconnected` with the reason when no login holds within the debounce.
   */
  follow(id: number, endpoint: AdminEndpoint, log: HintSource, started = false): void {
    this.unfollow(id, false);
    // Each tunnel's polls fall a period after its own start: a thousand started together are read over a
    // period as they were started, not all in the same second.
    const due = Date.now() + this.pollMs();
    const tracked: Tracked = {
      endpoint,
      connected: null,
      connectedSince: Date.now(),
      disconnectReason: null,
      proxies: new Map(),
      due,
      hint: undefined,
      busy: false,
      again: false,
      said: 0,
      log,
    };
    log.hints = (entries) => {
      for (const { content } of entries) {
        const said = readLogLine(content);
        if (said.connected !== undefined) {
          tracked.said++;
          this.setConnected(id, said.connected, said.reason);
        }
        if (said.lookAgain) this.hint(id);
      }
    };
    this.tracked.set(id, tracked);
    // Followed from now: what it says of its login counts from here (a UI and the health policy look again).
    this.touched(id);
    if (started) this.awaitLogin(id, tracked);
    if (log.connectionSaid !== undefined) this.setConnected(id, log.connectionSaid, log.disconnectSaid);
    if (!this.ticker) {
      this.ticker = setInterval(() => this.pollDue(), TICK_MS);
      this.ticker.unref();
    }
    this.hint(id);
  }

  /**
   * A start's login is news either way: its first sight is announced (not only recorded), and a tunnel that says
   * nothing of its login within the debounce (a server that swallows the connection) is announced disconnected.
   */
  private awaitLogin(id: number, tracked: Tracked): void {
    this.announced.set(String(id), 'started');
    const delayMs = this.settings()['Alerts.DebounceSecs'] * 1000;
    const timer = setTimeout(() => {
      if (this.tracked.get(id) !== tracked || tracked.connected !== null) return;
      // Announced, not recorded: the tunnel is still logging in as far as anyone knows (a slow host's login may yet
      // come), and its health says so.
      this.announced.set(String(id), 'instance.disconnected');
      this.alerts$.next({
        event: 'instance.disconnected',
        instanceID: id,
        from: null,
        to: 'disconnected',
        err: tracked.disconnectReason ?? `no login within ${delayMs / 1000} s of the start`,
      });
    }, delayMs);
    timer.unref();
    tracked.loginTimer = timer;
  }

  private pollMs(): number {
    return this.settings()['Status.PollSecs'] * 1000;
  }

  /** Polls the tunnels that are due (see DueOrder). */
  private pollDue(): void {
    this.tracked.takeDue(Date.now(), this.pollMs(), (id) => this.look(id));
  }

  /** Stops following (the tunnel stopped or crashed): its status is no longer known, and nothing is announced. */
  unfollow(id: number, forget = true): void {
    const tracked = this.tracked.get(id);
    if (tracked) {
      clearTimeout(tracked.hint);
      clearTimeout(tracked.loginTimer);
      tracked.log.hints = undefined;
      this.tracked.delete(id);
      this.touched(id);
      if (this.tracked.size === 0) {
        clearInterval(this.ticker);
        this.ticker = undefined;
      }
    }
    if (!forget) return;
    for (const [key, { timer }] of this.pending) {
      if (key === String(id) || key.startsWith(`${id}/`)) {
        clearTimeout(timer);
        this.pending.delete(key);
      }
    }
    for (const key of this.announced.keys())
      if (key === String(id) || key.startsWith(`${id}/`)) this.announced.delete(key);
    this.told.delete(id);
  }

  private hint(id: number): void {
    const tracked = this.tracked.get(id);
    if (!tracked || tracked.hint) return;
    tracked.hint = setTimeout(() => {
      tracked.hint = undefined;
      this.look(id);
    }, HINT_DELAY_MS);
  }

  /** Reads `/api/status` once (a read asked for while one is under way is done right after it). */
  private look(id: number): void {
    const tracked = this.tracked.get(id);
    if (!tracked) return;
    if (tracked.busy) {
      tracked.again = true;
      return;
    }
    tracked.busy = true;
    const said = tracked.said;
    adminGet(tracked.endpoint, '/api/status')
      .then(({ status, body }) => {
        if (this.tracked.get(id) !== tracked) return;
        if (status !== 200) throw new Error(`HTTP ${status}`);
        // The log spoke of the connection meanwhile (a lost server): what frpc listed before it is out of date, and
        // its proxies would say it connected. The log's next login asks again.
        if (tracked.said !== said) return;
        this.apply(id, tracked, parseStatus(body));
      })
      .catch((err: Error) => this.log.debug({ instanceID: id, reason: err.message }, 'cannot read the tunnel status'))
      .finally(() => {
        tracked.busy = false;
        if (tracked.again) {
          tracked.again = false;
          this.look(id);
        }
      });
  }

  private apply(id: number, tracked: Tracked, now: Map<string, { status: string; err: string; remoteAddr: string }>) {
    // Nothing at all: frpc has not logged in (or has no proxy); its log tells which.
    if (now.size === 0) {
      if (tracked.proxies.size > 0) {
        tracked.proxies.clear();
        this.touched(id);
      }
      return;
    }
    this.setConnected(id, true);
    const at = Date.now();
    for (const name of tracked.proxies.keys()) {
      if (!now.has(name)) {
        tracked.proxies.delete(name);
        this.touched(id);
        this.forgetProxy(id, name);
      }
    }
    for (const [name, seen] of now) {
      const known = tracked.proxies.get(name);
      if (known && known.status === seen.status && known.err === seen.err && known.remoteAddr === seen.remoteAddr)
        continue;
      const since = known && known.status === seen.status && known.err === seen.err ? known.since : at;
      tracked.proxies.set(name, { ...seen, since });
      this.touched(id);
      if (!known || known.status !== seen.status) {
        const up = isUp(seen.status);
        // Transitional states (new, wait start) announce nothing by themselves; they settle within a moment.
        if (!up && (seen.status === 'new' || seen.status === 'wait start')) continue;
        this.announce(`${id}/${name}`, {
          event: up ? 'proxy.up' : 'proxy.down',
          instanceID: id,
          proxy: name,
          from: known?.status ?? null,
          to: seen.status,
          ...(seen.err ? { err: seen.err } : {}),
        });
      }
    }
  }

  /** `reason`: why it is not connected, when the line said (a later line saying only "trying again" keeps it). */
  private setConnected(id: number, connected: boolean, reason?: string): void {
    const tracked = this.tracked.get(id);
    if (!tracked) return;
    const why = connected ? null : (reason ?? tracked.disconnectReason);
    if (why !== tracked.disconnectReason) {
      tracked.disconnectReason = why;
      this.touched(id);
    }
    if (tracked.connected === connected) return;
    const from = tracked.connected;
    tracked.connected = connected;
    tracked.connectedSince = Date.now();
    this.touched(id);
    if (!connected && tracked.proxies.size > 0) {
      // Its server gone, no proxy of the tunnel carries anything: each one that was up is down (debounced alike).
      for (const [name, proxy] of tracked.proxies)
        if (isUp(proxy.status))
          this.announce(`${id}/${name}`, {
            event: 'proxy.down',
            instanceID: id,
            proxy: name,
            from: proxy.status,
            to: 'disconnected',
            err: 'server lost',
          });
      tracked.proxies.clear();
    }
    this.announce(String(id), {
      event: connected ? 'instance.connected' : 'instance.disconnected',
      instanceID: id,
      from: from === null ? null : from ? 'connected' : 'disconnected',
      to: connected ? 'connected' : 'disconnected',
    });
  }

  /**
   * Announces a state once it has held for the debounce time, and only when it differs from the last one
   * announced. A first sight that is good news (connected, a proxy up after a start) is recorded, not announced.
   */
  private announce(key: string, alert: StatusAlert): void {
    const state = alert.event;
    clearTimeout(this.pending.get(key)?.timer);
    const fire = () => {
      this.pending.delete(key);
      const last = this.announced.get(key);
      if (last === state) return;
      this.announced.set(key, state);
      const goodNews = state === 'proxy.up' || state === 'instance.connected';
      if (last === undefined && goodNews) return;
      this.alerts$.next(this.withReason(alert));
    };
    const delayMs = this.settings()['Alerts.DebounceSecs'] * 1000;
    const timer = setTimeout(fire, delayMs);
    timer.unref();
    this.pending.set(key, { timer, alert });
  }

  /**
   * Why it went down, as known when the state has held (frpc says it after its first retry): the tunnel's reason, for
   * itself and for each proxy that went down with its connection (`server lost` until frpc says more).
   */
  private withReason(alert: StatusAlert): StatusAlert {
    const lost = alert.event === 'instance.disconnected' || alert.to === 'disconnected';
    const why = lost ? this.tracked.get(alert.instanceID)?.disconnectReason : undefined;
    return why ? { ...alert, err: why } : alert;
  }

  private forgetProxy(id: number, name: string): void {
    const key = `${id}/${name}`;
    clearTimeout(this.pending.get(key)?.timer);
    this.pending.delete(key);
    this.announced.delete(key);
  }

  private touched(id: number): void {
    this.changes++;
    if (this.dirty.has(id)) return;
    const at = Math.max(Date.now(), (this.told.get(id) ?? -Infinity) + CHANGED_EVERY_MS);
    this.dirty.set(id, at);
    this.flushBy(at);
  }

  /** One timer for every instance waiting to be told: set for the first of them. */
  private flushBy(at: number): void {
    if (this.flushAt <= at) return;
    clearTimeout(this.flushTimer);
    this.flushAt = at;
    this.flushTimer = setTimeout(() => this.flush(), Math.max(0, at - Date.now()));
  }

  private flush(): void {
    this.flushTimer = undefined;
    this.flushAt = Infinity;
    const now = Date.now();
    let next = Infinity;
    for (const [id, at] of this.dirty) {
      if (at > now) {
        next = Math.min(next, at);
        continue;
      }
      this.dirty.delete(id);
      this.told.set(id, now);
      this.changed$.next(id);
    }
    if (next < Infinity) this.flushBy(next);
  }

  close(): void {
    for (const id of [...this.tracked.keys()]) this.unfollow(id);
    clearTimeout(this.flushTimer);
    this.alerts$.complete();
    this.changed$.complete();
  }
}
