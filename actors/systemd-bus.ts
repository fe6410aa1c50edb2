import { Subject } from 'rxjs';
import type { MessageBus } from 'dbus-native';
import {
  MANAGER_INTERFACE,
  SYSTEMD_PATH,
  UnitSignals,
  type BusSignal,
  type UnitEvent,
} from '../src/boot/unit-signals.js';
import type { Logger } from '../src/log/logger.js';

/** systemd's own D-Bus socket: PID 1 answers on it directly, with or without a bus daemon (root only). */
export const SYSTEMD_PRIVATE_SOCKET = '/run/systemd/private';

/** How long to wait before connecting again after the connection failed or ended: doubling while it keeps failing. */
const RECONNECT_MS = 500;
const RECONNECT_MAX_MS = 30_000;
/** How long systemd may take to answer the subscription before the connection is given up and tried again. */
const SUBSCRIBE_TIMEOUT_MS = 5000;
const SIGNAL = 4;

/**
 * What systemd says of the tunnel units, pushed by systemd itself: one connection to PID 1 that asks for its
 * signals (Manager.Subscribe) and reads them into unit events (`events$`) the moment systemd sends them, whatever
 * PID 1 logs and wherever it logs it. When the connection is lost it connects again; `resync$` then says that
 * what happened meanwhile must be asked of systemd.
 */
export class SystemdBus {
  readonly events$ = new Subject<UnitEvent>();
  readonly resync$ = new Subject<void>();
  private readonly signals = new UnitSignals();
  private readonly log: Logger;
  private bus: MessageBus | undefined;
  private failures = 0;
  private closed = false;
  private everSubscribed = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    log: Logger,
    private readonly socket = SYSTEMD_PRIVATE_SOCKET,
  ) {
    this.log = log.child({ component: 'systemd-bus' });
  }

  /** Connects and subscribes; resolves when systemd's signals flow, or after the first failure (then retried). */
  start(): Promise<void> {
    return this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const { createClient } = await import('dbus-native');
    const bus = createClient({ socket: this.socket, direct: true, authMethods: ['EXTERNAL'] });
    this.bus = bus;
    let lost = false;
    const onLost = (err?: Error) => {
      if (lost || this.bus !== bus) return;
      lost = true;
      this.bus = undefined;
      this.failures++;
      if (!this.closed) this.reconnect(err);
    };
    bus.connection.on('message', (message: BusSignal & { type?: number }) => {
      if (message.type !== SIGNAL) return;
      for (const event of this.signals.read(message)) this.events$.next(event);
    });
    bus.connection.on('error', onLost);
    bus.connection.on('close', onLost);
    bus.connection.on('end', onLost);
    try {
      await bus.invoke(
        {
          path: SYSTEMD_PATH,
          destination: 'org.freedesktop.systemd1',
          interface: MANAGER_INTERFACE,
          member: 'Subscribe',
        },
        { timeout: SUBSCRIBE_TIMEOUT_MS },
      );
    } catch (err) {
      onLost(err as Error);
      bus.connection.end();
      return;
    }
    if (lost) return;
    this.failures = 0;
    if (this.everSubscribed) {
      this.log.info("systemd's signals are back");
      this.resync$.next();
    } else this.log.debug("following systemd's signals");
    this.everSubscribed = true;
  }

  private reconnect(err: Error | undefined): void {
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_MS * 2 ** Math.max(0, this.failures - 1));
    const message = this.everSubscribed
      ? "lost systemd's signals; connecting again"
      : "cannot follow systemd's signals (tunnel exits are not seen until this works); trying again";
    this.log.warn({ err: err?.message, socket: this.socket, delay }, message);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.connect().catch((e: Error) => this.log.error({ err: e }, 'connecting to systemd failed'));
    }, delay);
    this.retry.unref();
  }

  /** The unit is gone: what was kept of it goes too. */
  forget(id: number): void {
    this.signals.forget(id);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    this.bus?.connection.end();
    this.bus = undefined;
    this.events$.complete();
    this.resync$.complete();
  }
}
