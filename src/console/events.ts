import { endSession, get, requestsLastMinute, streamUrl, type ServerEvent, type SessionEnd } from './api';

export type LinkState = 'connecting' | 'live' | 'down';

/** A WebSocket close code that means the session is over (the HTTP 401 of a stream). */
export const SESSION_ENDED = 4401;

/** What a 4401 close says: "token expired", "logged out", "session removed", ... */
export function closedSession(reason: string, where: string): SessionEnd {
  return {
    kind: /expired/i.test(reason) ? 'expired' : 'ended',
    detail: `${where} closed: ${SESSION_ENDED} ${reason || 'session ended'}`,
  };
}

/**
 * The event stream `/system/events`, one per logged-in tab. It reconnects after a drop with `?since=<last seq>`, so
 * nothing is missed; when the daemon no longer has every missed event (`lost`), or after a reconnect, listeners get
 * a `resync` event and read their data again. While the stream is down, pages fall back to polling.
 */
export class EventStream {
  private ws: WebSocket | undefined;
  private lastSeq: number | undefined;
  private retries = 0;
  private timer: number | undefined;
  private stopped = false;
  private readonly listeners = new Set<(event: ServerEvent) => void>();
  private readonly stateListeners = new Set<(state: LinkState) => void>();
  state: LinkState = 'connecting';

  start(): void {
    this.stopped = false;
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    window.clearTimeout(this.timer);
    const ws = this.ws;
    this.ws = undefined;
    ws?.close(1000, 'console closed');
  }

  subscribe(listener: (event: ServerEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onState(listener: (state: LinkState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  private setState(state: LinkState): void {
    if (this.state === state) return;
    this.state = state;
    for (const listener of this.stateListeners) listener(state);
  }

  private emit(event: ServerEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  private connect(): void {
    if (this.stopped) return;
    let opened = false;
    const ws = new WebSocket(streamUrl('/system/events', { since: this.lastSeq }));
    this.ws = ws;
    ws.onopen = () => {
      opened = true;
    };
    ws.onmessage = (message) => {
      let event: ServerEvent;
      try {
        event = JSON.parse(String(message.data)) as ServerEvent;
      } catch {
        return;
      }
      if (event.event === 'events.start') {
        const reconnected = this.lastSeq !== undefined;
        if (this.lastSeq === undefined || event.lost) this.lastSeq = event.lastSeq;
        this.retries = 0;
        this.setState('live');
        if (event.lost || (reconnected && !event.replayed)) this.emit({ event: 'resync' });
        return;
      }
      if ('seq' in event) this.lastSeq = Math.max(this.lastSeq ?? 0, event.seq);
      this.emit(event);
    };
    ws.onclose = (close) => {
      if (this.ws !== ws || this.stopped) return;
      this.ws = undefined;
      if (close.code === SESSION_ENDED) {
        endSession(closedSession(close.reason, 'the event stream'));
        return;
      }
      this.setState('down');
      // Refused before the upgrade (a browser cannot see why): one request tells whether the session still holds.
      if (!opened && requestsLastMinute() < 60) get('/whoami').catch(() => undefined);
      const delay = Math.min(30_000, 1000 * 2 ** this.retries++);
      this.timer = window.setTimeout(() => this.connect(), delay);
    };
  }
}

/** Runs `task` at most once per `intervalMs` however often it is asked for; a request during a run is kept. */
export function throttle(task: () => Promise<unknown> | void, intervalMs = 1000): { request(): void; cancel(): void } {
  let last = 0;
  let timer: number | undefined;
  let cancelled = false;
  return {
    request() {
      if (timer !== undefined || cancelled) return;
      // Well inside the daemon's 100 requests a minute: slow down when a page has already used many.
      const interval = requestsLastMinute() > 70 ? intervalMs * 5 : intervalMs;
      const wait = Math.max(0, last + interval - Date.now());
      timer = window.setTimeout(() => {
        timer = undefined;
        last = Date.now();
        void Promise.resolve(task()).catch(() => undefined);
      }, wait);
    },
    cancel() {
      cancelled = true;
      window.clearTimeout(timer);
    },
  };
}
