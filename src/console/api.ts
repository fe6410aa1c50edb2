/**
 * The console's only way to the daemon: its HTTP API. Every request carries `X-Timestamp` (Unix ms, corrected by
 * the server's clock when they differ) and, once logged in, `X-Token`. The token is kept in this tab's
 * sessionStorage (never in a URL of the page); the WebSocket streams take it as `?token=`, as the API requires.
 */

import type { components } from '../generated/api-types.js';

export type Role = components['schemas']['UserType'];

export const ROLES: Role[] = ['visitor', 'admin', 'superuser'];

/** Whether `role` is at least `minimum` (superuser > admin > visitor). */
export const atLeast = (role: Role, minimum: Role): boolean => ROLES.indexOf(role) >= ROLES.indexOf(minimum);

export type Me = components['schemas']['WhoAmI'];

/** A refusal or failure, with the API's own message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Seconds to wait, from Retry-After on a 429. */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Why the console went back to the login page. */
export interface SessionEnd {
  kind: 'expired' | 'ended' | 'logout';
  /** Where it was noticed, and what the daemon said. */
  detail: string;
}

const TOKEN_KEY = 'tunnelward.token';

function storage(): Storage | undefined {
  try {
    return window.sessionStorage;
  } catch {
    return undefined;
  }
}

let token: string | null = storage()?.getItem(TOKEN_KEY) ?? null;
/** Server clock minus this browser's clock, learnt from a refused timestamp. */
let clockOffset = 0;
let sessionEnded: ((end: SessionEnd) => void) | undefined;
/** When each recent request was sent: the daemon allows 100 a minute per token. */
const sent: number[] = [];

export const getToken = (): string | null => token;

export function setToken(value: string | null): void {
  token = value;
  if (value) storage()?.setItem(TOKEN_KEY, value);
  else storage()?.removeItem(TOKEN_KEY);
}

/** Called once by the app: what to do when the daemon says the session is over. */
export function onSessionEnded(handler: (end: SessionEnd) => void): void {
  sessionEnded = handler;
}

/** Ends the session on this side (the token is forgotten) and tells the app why. */
export function endSession(end: SessionEnd): void {
  if (!token && end.kind !== 'logout') return;
  setToken(null);
  sessionEnded?.(end);
}

/** The daemon's clock as this browser best knows it. */
export const serverNow = (): number => Date.now() + clockOffset;

/** Requests sent in the last minute. */
export function requestsLastMinute(): number {
  const since = Date.now() - 60_000;
  while (sent.length > 0 && sent[0]! < since) sent.shift();
  return sent.length;
}

/** A path of the API as a URL, relative to where the console is served (so it also works below a prefix). */
export function apiUrl(path: string, params: Record<string, string | number | undefined> = {}): URL {
  const url = new URL(path.replace(/^\//, ''), document.baseURI);
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined) url.searchParams.set(key, String(value));
  }
  return url;
}

/** The URL of a WebSocket stream: same origin, ws: or wss:, with the token as the API requires. */
export function streamUrl(path: string, params: Record<string, string | number | undefined> = {}): string {
  const url = apiUrl(path, { ...params, token: token ?? undefined });
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return url.toString();
}

/** What a 401's message says about the session. */
export function sessionEndFrom(message: string, where: string): SessionEnd {
  return { kind: /expired/i.test(message) ? 'expired' : 'ended', detail: `${where}: ${message}` };
}

/** A clock refusal: "... (1234 ms behind the server clock)". */
function clockCorrection(message: string, sentAt: number, dateHeader: string | null): number | undefined {
  const m = /(\d+) ms (behind|ahead of) the server clock/.exec(message);
  if (m) return Number(m[1]) * (m[2] === 'behind' ? 1 : -1);
  const date = dateHeader ? Date.parse(dateHeader) : NaN;
  return Number.isNaN(date) ? undefined : date + 500 - sentAt;
}

interface Envelope<T> {
  success: boolean;
  message: string;
  data?: T;
}

export interface Reply<T> {
  message: string;
  data: T;
}

async function request<T>(method: 'GET' | 'POST', path: string, body: unknown, retried = false): Promise<Reply<T>> {
  const headers: Record<string, string> = {};
  const sentAt = serverNow();
  headers['X-Timestamp'] = String(Math.round(sentAt));
  const usedToken = token;
  if (usedToken) headers['X-Token'] = usedToken;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  sent.push(Date.now());
  let res: Response;
  try {
    res = await fetch(path.startsWith('http') ? path : apiUrl(path), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch {
    throw new ApiError(0, 'The daemon cannot be reached. Is it running?');
  }
  let envelope: Envelope<T>;
  try {
    envelope = (await res.json()) as Envelope<T>;
  } catch {
    throw new ApiError(res.status, `Unexpected reply from the daemon (HTTP ${res.status}).`);
  }
  if (res.status === 401 && /^X-Timestamp/.test(envelope.message)) {
    const correction = clockCorrection(envelope.message, sentAt, res.headers.get('Date'));
    if (!retried && correction !== undefined) {
      clockOffset += correction;
      return request<T>(method, path, body, true);
    }
  } else if (res.status === 401 && usedToken && usedToken === token) {
    endSession(sessionEndFrom(envelope.message, `${method} ${path.split('?')[0]}`));
  }
  if (!res.ok || !envelope.success) {
    const retryAfter = res.status === 429 ? Number(res.headers.get('Retry-After')) || 1 : undefined;
    throw new ApiError(res.status, envelope.message || `HTTP ${res.status}`, retryAfter);
  }
  return { message: envelope.message, data: envelope.data as T };
}

export function get<T>(path: string, params: Record<string, string | number | undefined> = {}): Promise<Reply<T>> {
  const query = apiUrl(path, params).search;
  return request<T>('GET', path + query, undefined);
}

export function post<T = unknown>(path: string, body: unknown = {}): Promise<Reply<T>> {
  return request<T>('POST', path, body);
}

/** A message for a person: what the daemon said, with a hint where a status needs one. */
export function explain(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 429) {
      return `${err.message} (try again in ${err.retryAfter ?? 1} s).`;
    }
    if (err.status === 403) return `Not allowed: ${err.message}`;
    return err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

// ---- What the API returns: the document's schemas (src/http/api-types.ts, generated from the declarations) ----

type Schemas = components['schemas'];

export type InstanceState = Schemas['InstanceState'];
export type InstanceRuntime = Schemas['InstanceRuntime'];
export type InstanceSummary = Schemas['InstanceSummary'];
export type InstanceInfo = Schemas['InstanceInfo'];
/** A proxy as the list shows it: what a guest is shown, and the keys and details an admin's view adds. */
export type Proxy = Schemas['GuestProxy'] & Partial<Schemas['ListedProxy']>;
/** A [[visitors]] entry: a guest is shown only name, type and enabled. */
export type Visitor = Schemas['GuestVisitor'] & Partial<Schemas['Visitor']>;
export type ProxyList = Schemas['ProxyList'];
export type BulkResult = Schemas['BulkCommandResult'];
export type User = Schemas['User'];
export type Session = Schemas['Session'];
/**
 * One message of /system/events (an event, or the stream's first message), or `resync`: the console's own word
 * to its pages that events were missed, so what they show must be read again.
 */
export type ServerEvent = Schemas['Event'] | Schemas['EventsStart'] | { event: 'resync' };
/** A line of a log stream: the system log's (a pino level number) or an instance's (a level name). */
export type LogEntry = Schemas['SystemLogEntry'] | Schemas['InstanceLogEntry'];
/** What a check of GET /system/selfCheck found: `warn` is a problem the daemon works on with. */
export type Severity = Schemas['CheckResult']['severity'];
export type SelfCheck = Schemas['SelfCheck'];
/** A personal API key as /apiKeyMgr/list shows it: never its secret. */
export type ApiKey = Schemas['ApiKey'];
/** The reply of /apiKeyMgr/create: the only time the key itself is seen. */
export type NewApiKey = Schemas['NewApiKey'];
