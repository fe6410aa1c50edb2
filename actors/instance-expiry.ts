import type { CommandDone } from '../machines/instance.machine.js';
import { AppError } from '../src/errors.js';
import { dueExpiries, expiriesOf, expiryKey, nextExpiry, timerDelay, type Expiry } from '../src/instances/expiry.js';
import type { InstanceStore } from '../src/instances/instance-store.js';
import type { Logger } from '../src/log/logger.js';
import type { Database } from '../src/storage/database.js';
import { formatIso } from '../src/util/time.js';
import { Subject, type Subscription } from '../src/util/rx.js';

/** An expiry acted on: what the event stream and the webhooks are told. */
export interface Expired {
  event: 'instance.expired' | 'proxy.expired';
  instanceID: number;
  name: string;
  proxy?: string;
  message: string;
}

export interface ExpiryDeps {
  store: InstanceStore;
  db: Database;
  log: Logger;
  /** The instance stopped as an operator's stop does it (its desired state recorded as stopped first). */
  stop: (id: number) => Promise<CommandDone>;
  /**
   * The instance no longer started at boot (its record and its boot service, as systemConfig changes them); resolves
   * with what failed of the boot service, if anything.
   */
  offBoot: (id: number) => Promise<string | undefined>;
  /** The proxy disabled through the change pipeline (a reload of a running tunnel), as an operator disables one. */
  disableProxy: (id: number, proxy: string) => Promise<unknown>;
  /** Something the views show of the instance changed. */
  touched: () => void;
  /** Creates, changes and deletes of instances: an expiry may have been set, moved or dropped. */
  changes$: { subscribe(next: () => void): Subscription };
  now?: () => number;
  /** How long after a failure to act an expiry is tried again. */
  retryMs?: number;
}

const RETRY_MS = 30_000;

/** Who acts on an expiry, as revisions and access see it: tunnelward itself, on an operator's earlier word. */
export const EXPIRY_AUTHOR = { username: 'tunnelward' } as const;
export const EXPIRY_ACCESS = { id: 0, type: 'superuser' } as const;

/**
 * Acts on expiries: one timer, for the next expiry of all instances and proxies (re-armed whenever a record changes);
 * at expiry the instance is stopped through the lifecycle's stop command (and taken off boot: an expired tunnel
 * does not come back by itself) or the proxy disabled through the change pipeline, then the expiry is cleared and
 * announced. Each step is one an operator could take, so a crash anywhere leaves a state the next start-up finishes:
 * an expiry still on record is past, and is acted on again (a stop of a stopped instance and a disable of a disabled
 * proxy change nothing).
 */
export class InstanceExpiry {
  readonly expired$ = new Subject<Expired>();
  private timer: NodeJS.Timeout | undefined;
  /** Expiries being acted on, by key. */
  private readonly busy = new Set<string>();
  /** Expiries whose acting failed: not tried again before this time. */
  private readonly retryAt = new Map<string, number>();
  private sub: Subscription | undefined;
  private closed = false;
  private readonly log: Logger;
  private readonly now: () => number;

  constructor(private readonly deps: ExpiryDeps) {
    this.log = deps.log.child({ component: 'expiry' });
    this.now = deps.now ?? Date.now;
  }

  /** Acts on what expired while tunnelward was away, then on each expiry as it comes. */
  start(): void {
    this.sub = this.deps.changes$.subscribe(() => this.arm());
    this.arm();
  }

  /** The expiries on record, each at the time it is next acted on (after a failure, the retry). */
  private pending(): Expiry[] {
    const records = this.deps.store.all().filter((r) => r.pending === null);
    return expiriesOf(records)
      .filter((e) => !this.busy.has(expiryKey(e)))
      .map((e) => ({ ...e, at: Math.max(e.at, this.retryAt.get(expiryKey(e)) ?? 0) }));
  }

  /** Sets the one timer for the next expiry (none when there is none). */
  private arm(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    const next = nextExpiry(this.pending());
    if (!next) return;
    this.timer = setTimeout(() => this.fire(), timerDelay(next.at, this.now()));
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    for (const expiry of dueExpiries(this.pending(), this.now())) {
      const key = expiryKey(expiry);
      this.busy.add(key);
      void this.act(expiry)
        .then(
          () => this.retryAt.delete(key),
          (err: Error) => {
            this.retryAt.set(key, this.now() + (this.deps.retryMs ?? RETRY_MS));
            this.log.error(
              { instanceID: expiry.instanceID, proxy: expiry.proxy ?? undefined, err },
              'cannot act on an expiry; trying again later',
            );
          },
        )
        .finally(() => {
          this.busy.delete(key);
          this.arm();
        });
    }
    this.arm();
  }

  private async act(expiry: Expiry): Promise<void> {
    const { store } = this.deps;
    // Recorded as it is now: an operator may have changed or cleared it meanwhile.
    const record = store.get(expiry.instanceID);
    if (!record || record.pending !== null) return;
    const at = expiry.proxy === null ? record.expiresAt : record.proxyExpiries[expiry.proxy];
    if (at === null || at === undefined || at > this.now()) return;
    const when = formatIso(at);
    let message: string;
    if (expiry.proxy === null) {
      const done = await this.deps.stop(record.id);
      if (!done.ok && !done.unchanged) throw new Error(`the stop failed: ${done.message}`);
      const onBoot = store.get(record.id)?.bootAtStart === true;
      const bootError = onBoot ? await this.deps.offBoot(record.id) : undefined;
      const boot = !onBoot
        ? ''
        : bootError === undefined
          ? ', and no longer started at boot'
          : `; its boot service could not be turned off: ${bootError}`;
      message =
        `expired at ${when}: ${done.unchanged ? 'it was already stopped' : 'stopped'}${boot}; ` +
        'it stays stopped until an operator starts it';
    } else {
      const proxy = expiry.proxy;
      try {
        await this.deps.disableProxy(record.id, proxy);
        message = `proxy ${proxy} expired at ${when}: disabled`;
      } catch (err) {
        // Gone from the file (changed by hand): there is nothing left to disable.
        if (!(err instanceof AppError && err.status === 404)) throw err;
        message = `proxy ${proxy} expired at ${when}: it is no longer in the config file`;
      }
    }
    this.clear(expiry, at);
    await this.deps.db.persist();
    const name = store.get(record.id)?.name ?? record.name;
    this.log.info({ instanceID: record.id, proxy: expiry.proxy ?? undefined, expiredAt: when }, message);
    this.expired$.next({
      event: expiry.proxy === null ? 'instance.expired' : 'proxy.expired',
      instanceID: record.id,
      name,
      ...(expiry.proxy !== null ? { proxy: expiry.proxy } : {}),
      message,
    });
  }

  /** Clears the expiry acted on, unless an operator has set another meanwhile. */
  private clear(expiry: Expiry, at: number): void {
    const { store } = this.deps;
    const record = store.get(expiry.instanceID);
    if (!record) return;
    if (expiry.proxy === null) {
      if (record.expiresAt === at) store.setExpiry(record.id, null);
    } else if (record.proxyExpiries[expiry.proxy] === at) store.setProxyExpiry(record.id, expiry.proxy, null);
    this.deps.touched();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.sub?.unsubscribe();
    this.expired$.complete();
  }
}
