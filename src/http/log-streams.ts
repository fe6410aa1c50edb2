import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { map, share, type Observable, type Subscription } from '../util/rx.js';
import { WebSocketServer, type WebSocket } from 'ws';
import type { EventHub } from '../../actors/event-hub.js';
import type { InstanceSupervisor } from '../../actors/instance-supervisor.js';
import { may } from '../accounts/access.js';
import type { AccountService, Authenticated } from '../accounts/account-service.js';
import type { ApiKeyService } from '../accounts/api-key-service.js';
import { AppError } from '../errors.js';
import { DEFAULTS } from '../settings/defaults.js';
import type { Logger } from '../log/logger.js';
import type { SystemLog } from '../log/system-log.js';
import { rawFailure } from './envelope.js';
import { identifyCaller, viaApiKey, type Caller } from './auth.js';
import type { Exposure, RequestExposure } from './exposure.js';
import type { RateLimiter } from './rate-limiter.js';

/** Earlier lines of an instance log a client may ask for (`?lines=`): read from the files at connect. */
const MAX_REPLAY_LINES = 1000;

/** An event or log seq in `?since=`: 0 (nothing seen yet) or more (the check and the document's pattern). */
export const SEQ_PATTERN = '^[0-9]{1,15}$';
const SEQ = new RegExp(SEQ_PATTERN);

/** Close codes: 44xx mirror the HTTP status that would have refused the client. */
export const CLOSE = {
  sessionEnded: 4401,
  accessWithdrawn: 4403,
  instanceDeleted: 4404,
  tooSlow: 4429,
  shuttingDown: 1001,
} as const;

/** The paths the WebSocket streams are served on (upgrade requests only); each has its handler in `LogStreams`. */
export const STREAM_PATHS = ['/system/getLogs', '/system/events', '/tunnelAct/instanceMgr/logs'] as const;
export type StreamPath = (typeof STREAM_PATHS)[number];

const isStreamPath = (path: string): path is StreamPath => (STREAM_PATHS as readonly string[]).includes(path);

type StreamHandler = (url: URL, req: IncomingMessage, socket: Duplex, head: Buffer, exposure: RequestExposure) => void;

export interface LogStreamOptions {
  /** Bytes a client may have waiting for longer than `slowGraceMs`; past that it is closed as too slow. */
  maxBufferedBytes: number;
  /** How long a client may stay above `maxBufferedBytes` (a burst it catches up with is fine). */
  slowGraceMs: number;
  /** Bytes a client may never have waiting, however briefly: the bound on memory per client. */
  hardBufferedBytes: number;
  /** Entries of an instance log sent to a client when it connects. */
  replayLines: number;
  /** Open streams with a token at most; more are refused with 503. */
  maxClients: number;
  /** Open streams without a token at most, counted apart so that anonymous clients cannot crowd out owners. */
  maxAnonymousClients: number;
  /** A client that does not answer a ping within this period is dropped. */
  pingIntervalMs: number;
}

export const DEFAULT_STREAM_OPTIONS: LogStreamOptions = {
  maxBufferedBytes: DEFAULTS.streamMaxBufferedBytes,
  slowGraceMs: DEFAULTS.streamSlowGraceMs,
  hardBufferedBytes: DEFAULTS.streamHardBufferedBytes,
  replayLines: DEFAULTS.streamReplayLines,
  maxClients: DEFAULTS.streamMaxClients,
  maxAnonymousClients: DEFAULTS.streamMaxAnonymousClients,
  pingIntervalMs: DEFAULTS.streamPingIntervalMs,
};

interface Deps {
  accounts: AccountService;
  /** API keys, sent in `Authorization: Bearer` on the upgrade request (never in the query string). */
  apiKeys: ApiKeyService;
  supervisor: InstanceSupervisor;
  systemLog: SystemLog;
  events: EventHub;
  log: Logger;
  exposure: Exposure;
  /** The per-token request limit: an upgrade with a token (or key) counts as one request. */
  perToken: RateLimiter;
}

/** A connected client: a bounded send buffer, and the subscriptions and timers to drop when it goes. */
class StreamClient {
  private readonly subscriptions: Subscription[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Since when more than the soft limit has been waiting. */
  private behindSince: number | undefined;
  alive = true;

  constructor(
    readonly ws: WebSocket,
    readonly auth: Caller | undefined,
    /** The instance followed, with its owner; absent on the system log stream. */
    readonly instance: { id: number; ownerId: number | null } | undefined,
    private readonly options: LogStreamOptions,
    private readonly onTooSlow: () => void,
  ) {
    ws.on('pong', () => (this.alive = true));
  }

  /**
   * False (and the client closed) when it cannot keep up: more than the hard limit waiting at once, or more than
   * the soft limit for longer than the grace period. Memory per client stays bounded either way.
   */
  keepingUp(now = Date.now()): boolean {
    const waiting = this.ws.bufferedAmount;
    const { maxBufferedBytes, hardBufferedBytes, slowGraceMs } = this.options;
    if (waiting <= maxBufferedBytes) {
      this.behindSince = undefined;
      return true;
    }
    this.behindSince ??= now;
    if (waiting <= hardBufferedBytes && now - this.behindSince <= slowGraceMs) return true;
    this.close(CLOSE.tooSlow, `client too slow: more than ${maxBufferedBytes} bytes waiting for ${slowGraceMs} ms`);
    this.onTooSlow();
    return false;
  }

  /** Sends one entry, unless the client cannot keep up. */
  send(data: Buffer | string): void {
    if (this.ws.readyState !== this.ws.OPEN || !this.keepingUp()) return;
    this.ws.send(data, { binary: false });
  }

  follow(source: Observable<Buffer | string>): void {
    this.subscriptions.push(source.subscribe((data) => this.send(data)));
  }

  /**
   * Sends several entries as one write: corking the socket turns a message per line into one system call per
   * chunk of output, which is what lets one tunnel's lines reach many clients at once.
   */
  followBatches(source: Observable<Buffer[]>): void {
    this.subscriptions.push(
      source.subscribe((batch) => {
        const socket = (this.ws as unknown as { _socket?: Socket })._socket;
        socket?.cork();
        for (const data of batch) this.send(data);
        socket?.uncork();
      }),
    );
  }

  closeAt(when: number, code: number, reason: string): void {
    this.timer = setTimeout(() => this.close(code, reason), Math.max(0, Math.min(when - Date.now(), 2 ** 31 - 1)));
  }

  close(code: number, reason: string): void {
    this.dispose();
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) {
      this.ws.close(code, reason);
      // A peer that reads nothing would keep the close frame and our buffer waiting: cut it off soon after.
      setTimeout(() => this.ws.terminate(), 1000).unref();
    }
  }

  dispose(): void {
    for (const s of this.subscriptions.splice(0)) s.unsubscribe();
    clearTimeout(this.timer);
  }
}

/** Writes a refusal in the response envelope on a socket that asked for an upgrade, and closes it. */
function refuse(socket: Duplex, status: number, message: string, headers?: Record<string, string>): void {
  socket.end(rawFailure(status, message, headers));
}

const toBuffer = (entry: unknown) => Buffer.from(JSON.stringify(entry));

/** An instance's log is for its owner and for superusers (see may). */
const mayFollow = (user: Authenticated['user'], ownerId: number | null) => may(user, 'logs', { name: '', ownerId });

/**
 * The WebSocket log streams on the daemon's own HTTP server: `/system/getLogs` (the daemon's log; token optional)
 * and `/tunnelAct/instanceMgr/logs` (one instance's output; token required, owner or superuser). Every check
 * happens before the upgrade and refuses with the contract's status and message.
 */
export class LogStreams {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 4096 });
  private readonly clients = new Set<StreamClient>();
  private anonymous = 0;
  private readonly subscriptions: Subscription[] = [];
  private readonly pinger: NodeJS.Timeout;
  private readonly log: Logger;
  /** Each system entry serialized once, however many clients follow. */
  private readonly systemLog$: Observable<Buffer>;
  /** Each event serialized once, likewise. */
  private readonly events$: Observable<Buffer>;

  constructor(
    server: Server,
    private readonly deps: Deps,
    private readonly options: LogStreamOptions = DEFAULT_STREAM_OPTIONS,
  ) {
    this.log = deps.log.child({ component: 'streams' });
    this.systemLog$ = deps.systemLog.entries$.pipe(map(toBuffer), share());
    this.events$ = deps.events.events$.pipe(map(toBuffer), share());
    server.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
    this.subscriptions.push(
      deps.accounts.sessionsEnded$.subscribe(({ sessionIds, reason }) => {
        const ended = new Set(sessionIds);
        for (const client of this.clients) {
          if (client.auth && !viaApiKey(client.auth) && ended.has(client.auth.session.id)) {
            client.close(CLOSE.sessionEnded, reason);
          }
        }
      }),
      deps.apiKeys.revoked$.subscribe(({ keyIds, reason }) => {
        const revoked = new Set(keyIds);
        for (const client of this.clients) {
          if (client.auth && viaApiKey(client.auth) && revoked.has(client.auth.apiKey.id)) {
            client.close(CLOSE.sessionEnded, reason);
          }
        }
      }),
      deps.accounts.roleChanged$.subscribe(({ userId, type }) => {
        for (const client of this.clients) {
          if (client.auth?.user.id !== userId || !client.instance) continue;
          if (!mayFollow({ ...client.auth.user, type }, client.instance.ownerId)) {
            client.close(CLOSE.accessWithdrawn, 'your role no longer gives access to this instance');
          }
        }
      }),
    );
    this.pinger = setInterval(() => this.sweep(), 1000);
    this.pinger.unref();
  }

  get size(): number {
    return this.clients.size;
  }

  /** One handler per path of `STREAM_PATHS`: the type keeps the list and the dispatch the same. */
  private readonly handlers: Record<StreamPath, StreamHandler> = {
    '/system/getLogs': (...args) => this.systemStream(...args),
    '/system/events': (url, req, socket, head) => this.eventStream(url, req, socket, head),
    '/tunnelAct/instanceMgr/logs': (url, req, socket, head) => this.instanceStream(url, req, socket, head),
  };

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://localhost');
    try {
      const exposure = this.deps.exposure.of(req);
      if (!isStreamPath(url.pathname)) throw new AppError(404, `no such stream: ${url.pathname}`);
      this.handlers[url.pathname](url, req, socket, head, exposure);
    } catch (err) {
      if (err instanceof AppError) refuse(socket, err.status, err.message, err.headers);
      else {
        this.log.error({ err }, 'log stream upgrade failed');
        refuse(socket, 500, 'internal error');
      }
    }
  }

  private systemStream(url: URL, req: IncomingMessage, socket: Duplex, head: Buffer, exposure: RequestExposure): void {
    // Off loopback or behind a proxy the daemon's log is not for whoever reaches it (SystemLog.RequireToken).
    const auth = exposure.systemLogNeedsToken ? this.requiredToken(url, req) : this.optionalToken(url, req);
    const { lines, follow } = replayParams(url, this.deps.systemLog.capacity, this.deps.systemLog.capacity);
    this.accept(req, socket, head, auth, undefined, (client) => {
      for (const entry of this.deps.systemLog.recent().slice(-lines || Infinity)) client.send(toBuffer(entry));
      if (follow) client.follow(this.systemLog$);
      else client.close(1000, 'end of log');
    });
  }

  /** A token (or key) is required, as for an instance log; whoever may list the instances may follow their events. */
  private requiredToken(url: URL, req: IncomingMessage): Caller {
    const auth = this.optionalToken(url, req);
    if (!auth) throw new AppError(401, 'Token is required');
    return auth;
  }

  /** `?token=` or an API key in `Authorization`, checked when given and counted against its limit like any request. */
  private optionalToken(url: URL, req: IncomingMessage): Caller | undefined {
    return identifyCaller(this.deps, url.searchParams.get('token') ?? '', req.headers.authorization ?? '');
  }

  /**
   * `/system/events`: every event as it happens (`instance.state` for each change of state, created, modified,
   * deleted, ...), numbered like the webhook's. The first message says where the stream stands: `lastSeq`, and
   * with `?since=N` either the events after N that follow it, or `lost` when some of them are no longer kept.
   */
  private eventStream(url: URL, req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const rawSince = url.searchParams.get('since');
    if (rawSince !== null && !SEQ.test(rawSince)) throw new AppError(400, 'since must be an event seq (an integer)');
    const auth = this.requiredToken(url, req);
    const { events } = this.deps;
    this.accept(req, socket, head, auth, undefined, (client) => {
      const since = rawSince === null ? undefined : events.since(Number(rawSince));
      const lost = since !== undefined && 'lost' in since;
      client.send(
        JSON.stringify({
          event: 'events.start',
          lastSeq: events.lastSeq,
          ...(since === undefined
            ? {}
            : lost
              ? { lost: true, oldestKept: since.oldest }
              : { replayed: since.events.length, ...(since.restarted ? { restarted: true } : {}) }),
          ...(lost ? { message: `events after ${rawSince} are no longer all kept: read the list again` } : {}),
          ...(since && !lost && since.restarted
            ? { message: `tunnelward restarted after event ${rawSince}: the events while it was down are not known` }
            : {}),
        }),
      );
      if (since && !lost) for (const event of since.events) client.send(toBuffer(event));
      client.follow(this.events$);
    });
  }

  private instanceStream(url: URL, req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const rawId = url.searchParams.get('instanceID');
    if (rawId === null || rawId === '') throw new AppError(400, 'instanceID is required');
    if (!/^\d{1,15}$/.test(rawId) || Number(rawId) < 1) throw new AppError(400, 'invalid instanceID format');
    const auth = this.requiredToken(url, req);
    const id = Number(rawId);
    let record;
    try {
      record = this.deps.supervisor.view(id).record;
    } catch {
      throw new AppError(404, 'Instance not found');
    }
    if (!mayFollow(auth.user, record.ownerId)) throw new AppError(403, "You don't have access to this instance");
    const channel = this.deps.supervisor.logs.channel(id);
    const { lines, follow } = replayParams(url, this.options.replayLines, MAX_REPLAY_LINES);
    const rawSince = url.searchParams.get('since');
    if (rawSince !== null && !SEQ.test(rawSince)) throw new AppError(400, 'since must be a log seq (an integer)');
    this.accept(req, socket, head, auth, { id, ownerId: record.ownerId }, (client) => {
      const deleted = this.deps.supervisor.deleted$.subscribe((gone) => {
        if (gone === id) client.close(CLOSE.instanceDeleted, 'instance deleted');
      });
      client.ws.once('close', () => deleted.unsubscribe());
      // Once the file holds every line read so far, the lines replayed from it and those followed from then on
      // meet with nothing missed or repeated (nothing is read between the two).
      void channel.file.idle().then(() => {
        if (client.ws.readyState !== client.ws.OPEN) return;
        const replay =
          rawSince === null ? channel.recentEntries(lines) : channel.entriesAfter(Number(rawSince), MAX_REPLAY_LINES);
        for (const entry of replay) client.send(toBuffer(entry));
        if (!follow) return client.close(1000, 'end of log');
        client.followBatches(channel.serialized$);
      });
    });
  }

  private accept(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    auth: Caller | undefined,
    instance: StreamClient['instance'],
    start: (client: StreamClient) => void,
  ): void {
    if (
      auth
        ? this.clients.size - this.anonymous >= this.options.maxClients
        : this.anonymous >= this.options.maxAnonymousClients
    ) {
      throw new AppError(503, `too many log streams open${auth ? '' : ' without a token'}, try again later`);
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      if (!auth) this.anonymous++;
      const tooSlow = () =>
        this.log.warn(
          { instanceID: instance?.id, limit: this.options.maxBufferedBytes },
          'closed a log stream client that is too slow',
        );
      const client = new StreamClient(ws, auth, instance, this.options, tooSlow);
      this.clients.add(client);
      ws.on('close', () => {
        client.dispose();
        if (this.clients.delete(client) && !auth) this.anonymous--;
      });
      ws.on('error', () => ws.terminate());
      const expireAt = auth && (viaApiKey(auth) ? auth.apiKey.expiresAt : auth.session.expireAt);
      if (expireAt)
        client.closeAt(expireAt, CLOSE.sessionEnded, viaApiKey(auth!) ? 'API key expired' : 'token expired');
      start(client);
    });
  }

  private sweeps = 0;

  /**
   * Every second: drops clients that stay behind even when nothing new is sent to them; every ping interval:
   * drops clients that did not answer the previous ping. A dead or stuck peer must not hold resources.
   */
  private sweep(): void {
    const pinging = ++this.sweeps % Math.max(1, Math.round(this.options.pingIntervalMs / 1000)) === 0;
    for (const client of this.clients) {
      if (!client.keepingUp() || !pinging) continue;
      if (!client.alive) {
        client.dispose();
        client.ws.terminate();
        continue;
      }
      client.alive = false;
      client.ws.ping();
    }
  }

  close(): void {
    clearInterval(this.pinger);
    for (const s of this.subscriptions) s.unsubscribe();
    for (const client of this.clients) client.close(CLOSE.shuttingDown, 'tunnelward is stopping');
    this.wss.close();
  }
}

/**
 * `?lines=N` (how many earlier entries to send first, `fallback` when not given, at most `max`) and `?follow=0` (send those, then close
 * with 1000 "end of log"): what a client that only wants the tail asks for.
 */
function replayParams(url: URL, fallback: number, max: number): { lines: number; follow: boolean } {
  const rawLines = url.searchParams.get('lines');
  const rawFollow = url.searchParams.get('follow');
  if (rawLines !== null && !/^\d{1,6}$/.test(rawLines)) throw new AppError(400, 'lines must be a whole number');
  if (rawFollow !== null && !['0', '1', 'true', 'false'].includes(rawFollow)) {
    throw new AppError(400, 'follow must be 1 or 0 (true or false)');
  }
  return {
    lines: Math.min(rawLines === null ? fallback : Number(rawLines), max),
    follow: rawFollow === null || rawFollow === '1' || rawFollow === 'true',
  };
}
