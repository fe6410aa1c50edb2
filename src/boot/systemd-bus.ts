import { createConnection, type Socket } from 'node:net';
import { Subject } from '../util/rx.js';
import type { MessageBus } from 'dbus-native';
import type { UnitStatus } from './unit-status.js';
import { MANAGER_INTERFACE, SYSTEMD_PATH, UnitSignals, type BusSignal, type UnitEvent } from './unit-signals.js';
import type { Logger } from '../log/logger.js';

/** systemd's own D-Bus socket: PID 1 answers on it directly, with or without a bus daemon (root only). */
export interface JobWaiter {
  resolve: (result: string) => void;
  reject: (err: Error) => void;
}

/** The longest a job is followed: past systemd's own start timeout (90 s by default) and a stop's, with room. */
const JOB_TIMEOUT_MS = 150_000;

const SYSTEMD_PRIVATE_SOCKET = '/run/systemd/private';

/** How long to wait before connecting again after the connection failed or ended: doubling while it keeps failing. */
const RECONNECT_MS = 500;
const RECONNECT_MAX_MS = 30_000;
/** How long systemd may take to answer the subscription before the connection is given up and tried again. */
const SUBSCRIBE_TIMEOUT_MS = 5000;
const SIGNAL = 4;

/**
 * Sends BEGIN together with AUTH, as systemd's own clients do, instead of after the server's OK. systemd's server
 * (sd-bus, 252 measured) leaves a first message unread when it comes in one read with a BEGIN sent after its OK
 * (the connection then hangs until more bytes come); with BEGIN pipelined, the first message always comes alone.
 */
function beginWithAuth(socket: Socket): Socket {
  const write = socket.write.bind(socket) as (chunk: unknown, ...rest: unknown[]) => boolean;
  let begun = false;
  socket.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (typeof chunk === 'string' && chunk.startsWith('AUTH ')) {
      begun = true;
      return write(`${chunk}BEGIN\r\n`, ...rest);
    }
    if (begun && chunk === 'BEGIN\r\n') return true;
    return write(chunk, ...rest);
  }) as Socket['write'];
  return socket;
}

/** How long a method call may wait for systemd's answer. */
const CALL_TIMEOUT_MS = 60_000;

/**
 * One connection to PID 1 for the tunnel units. It asks for systemd's signals (Manager.Subscribe) and reads them
 * into unit events (`events$`) the moment systemd sends them, whatever PID 1 logs and wherever it logs it; and it
 * acts on units with systemd's own methods (StartUnit and the like, a thousand in one go, each start's job
 * followed to its end), so no systemctl runs and subscribes on the side. When the connection is lost it connects
 * again; `resync$` then says that what happened meanwhile must be asked of systemd.
 */
export class SystemdBus {
  readonly events$ = new Subject<UnitEvent>();
  readonly resync$ = new Subject<void>();
  private signals = new UnitSignals();
  private readonly log: Logger;
  private bus: MessageBus | undefined;
  private failures = 0;
  private closed = false;
  private everSubscribed = false;
  /** The current connection is subscribed: its signals flow, and methods may be called. */
  private subscribed = false;
  /** Calls waiting for the connection to be subscribed again. */
  private readonly waiting = new Set<(subscribed: boolean) => void>();
  private retry: NodeJS.Timeout | undefined;
  /**
   * Jobs followed to their end, by job path: each waiter gets JobRemoved's result (`done`, `failed`, ...). systemd
   * merges a job asked for while the same one is pending into it, so two calls can follow one path: all are told.
   */
  private readonly jobs = new Map<string, Set<JobWaiter>>();

  constructor(
    log: Logger,
    private readonly socket = SYSTEMD_PRIVATE_SOCKET,
    /** How long a job is followed before its caller is told it did not end. */
    private readonly jobTimeoutMs = JOB_TIMEOUT_MS,
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
    // After a loss, what was pictured may have changed unseen: pictures start afresh (and the watched runs are asked).
    if (this.everSubscribed) this.signals = new UnitSignals();
    const bus = createClient({
      stream: beginWithAuth(createConnection(this.socket)),
      direct: true,
      authMethods: ['EXTERNAL'],
    });
    this.bus = bus;
    let lost = false;
    const onLost = (err?: Error) => {
      if (lost || this.bus !== bus) return;
      lost = true;
      this.bus = undefined;
      this.subscribed = false;
      for (const waiters of this.jobs.values())
        for (const waiter of waiters) waiter.reject(new Error(`lost the connection to systemd: ${err?.message}`));
      this.jobs.clear();
      this.failures++;
      if (!this.closed) this.reconnect(err);
    };
    bus.connection.on('message', (message: BusSignal & { type?: number }) => {
      if (message.type !== SIGNAL) return;
      for (const event of this.signals.read(message)) this.events$.next(event);
      if (message.member === 'JobRemoved') {
        const path = String(message.body?.[1]);
        const waiters = this.jobs.get(path);
        this.jobs.delete(path);
        for (const waiter of waiters ?? []) waiter.resolve(String(message.body?.[3]));
      }
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
    this.subscribed = true;
    for (const wake of this.waiting) wake(true);
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

  /**
   * Calls a method of systemd's manager; `onReply` runs as the reply is read, before any message after it (what
   * follows a job needs: its end may come in the same read as the reply that names it).
   */
  private call(
    member: string,
    signature = '',
    body: unknown[] = [],
    onReply?: (value: unknown) => void,
  ): Promise<unknown> {
    if (!this.subscribed) return this.whenSubscribed().then(() => this.call(member, signature, body, onReply));
    const bus = this.bus!;
    return new Promise((resolve, reject) => {
      const message = { path: SYSTEMD_PATH, destination: 'org.freedesktop.systemd1', interface: MANAGER_INTERFACE };
      bus.invoke({ ...message, member, signature, body }, { timeout: CALL_TIMEOUT_MS }, (err, value: unknown) => {
        if (err) return reject(new Error(`systemd: ${member} ${String(body[0] ?? '')}: ${err.message}`));
        onReply?.(value);
        resolve(value);
      });
    });
  }

  /** A call made while the connection is being made (again) waits for it, up to SUBSCRIBE_TIMEOUT_MS. */
  private whenSubscribed(): Promise<void> {
    return new Promise((resolve, reject) => {
      const wake = (subscribed: boolean) => {
        clearTimeout(timer);
        this.waiting.delete(wake);
        if (subscribed) resolve();
        else reject(new Error(`systemd cannot be reached at ${this.socket} (see the daemon's log)`));
      };
      const timer = setTimeout(() => wake(false), SUBSCRIBE_TIMEOUT_MS);
      this.waiting.add(wake);
      if (this.closed) wake(false);
    });
  }

  /** Asks for a unit's job (StartUnit, StopUnit: mode replace) and follows it to its end: JobRemoved's result. */
  private job(member: 'StartUnit' | 'StopUnit', unit: string): Promise<string> {
    const timeoutMs = this.jobTimeoutMs;
    return new Promise((resolve, reject) => {
      let path: string | undefined;
      // A job whose end never comes (a lost signal) must not hold its caller (a start slot) for good.
      const timer = setTimeout(() => {
        if (path !== undefined) this.jobs.get(path)?.delete(waiter);
        reject(new Error(`systemd: ${member} ${unit}: its job did not end within ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
      const waiter: JobWaiter = {
        resolve: (result) => {
          clearTimeout(timer);
          resolve(result);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      this.call(member, 'ss', [unit, 'replace'], (job) => {
        path = String(job);
        let waiters = this.jobs.get(path);
        if (!waiters) this.jobs.set(path, (waiters = new Set()));
        waiters.add(waiter);
      }).catch(waiter.reject);
    });
  }

  /**
   * Starts the unit and follows the start's job to its end: `done` when it runs, otherwise systemd's result or the
   * call's error. When a job ends, systemd has already sent what changed in its unit, so `picture` is up to date.
   */
  startUnit(unit: string): Promise<string> {
    return this.job('StartUnit', unit).catch((err: Error) => err.message);
  }

  /** Stops the unit; with `wait`, until the stop's job has ended. */
  async stopUnit(unit: string, wait = false): Promise<void> {
    if (wait) await this.job('StopUnit', unit);
    else await this.call('StopUnit', 'ss', [unit, 'replace']);
  }

  /** Clears the unit's failed state and start count (a unit that is not failed is left as it is). */
  async resetFailed(unit: string): Promise<void> {
    await this.call('ResetFailedUnit', 's', [unit]).catch(() => undefined);
  }

  /** Sends a signal to every process of the unit. */
  async killUnit(unit: string, signal: number): Promise<void> {
    await this.call('KillUnit', 'ssi', [unit, 'all', signal]);
  }

  /** The unit as systemd's signals left it (undefined when none came since they began). */
  picture(id: number): UnitStatus | undefined {
    return this.signals.picture(id);
  }

  close(): void {
    this.closed = true;
    for (const wake of this.waiting) wake(false);
    clearTimeout(this.retry);
    this.bus?.connection.end();
    this.bus = undefined;
    this.events$.complete();
    this.resync$.complete();
  }
}
