import WebSocket from 'ws';
import { isApiKey } from '../accounts/tokens.js';
import { CliError, EXIT } from './errors.js';
import type { paths } from '../generated/api-types.js';

/** The response envelope every HTTP endpoint answers with. */
interface Envelope<T> {
  success: boolean;
  message: string;
  data?: T;
}

export interface Reply<T> {
  message: string;
  data: T;
}

// What each operation takes and answers, from the document's types (src/http/api-types.ts): a call names its path,
// and its body and reply are typed by what the daemon declares for that path.
type Method = 'get' | 'post';
/** The paths that have an operation of this method. */
export type PathOf<M extends Method> = {
  [P in keyof paths]: paths[P][M] extends { responses: object } ? P : never;
}[keyof paths];
type Operation<M extends Method, P extends PathOf<M>> = paths[P][M];
/** The `data` of the operation's 200 reply (undefined for one that has none). */
export type DataOf<M extends Method, P extends PathOf<M>> =
  Operation<M, P> extends { responses: { 200: { content: { 'application/json': infer Body } } } }
    ? Body extends { data: infer Data }
      ? Data
      : Body extends { data?: infer Data }
        ? Data | undefined
        : undefined
    : never;
/** The JSON body a POST takes. */
export type BodyOf<P extends PathOf<'post'>> =
  Operation<'post', P> extends { requestBody?: { content: { 'application/json': infer Body } } } ? Body : never;

/** What a stream's close says: the code, and the reason the server gave. */
export interface StreamEnd {
  code: number;
  reason: string;
}

const CLIENT_HEADER = { 'User-Agent': 'tunnelward-cli' };

/**
 * The daemon's HTTP and WebSocket API as a client sees it: each request stamped with `X-Timestamp` (corrected
 * once by the server's clock if this host's differs by more than the window allows) and the credential (a login
 * token in `X-Token`, an API key in `Authorization: Bearer`), each failure turned into the exit code that means it.
 */
export class ApiClient {
  /** Server clock minus ours, learnt from a refused timestamp. */
  private clockOffset = 0;

  constructor(
    readonly url: string,
    private token?: string,
    /** How long one request may take, answer read included; none when not given. */
    private readonly timeoutMs?: number,
  ) {}

  /** The credential's header: an API key never goes in X-Token, nor in a stream's query string. */
  private credentialHeaders(): Record<string, string> {
    if (!this.token) return {};
    return isApiKey(this.token) ? { Authorization: `Bearer ${this.token}` } : { 'X-Token': this.token };
  }

  get<P extends PathOf<'get'>>(path: P, query: Record<string, string | number> = {}): Promise<Reply<DataOf<'get', P>>> {
    const params = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]));
    const search = params.size > 0 ? `?${params}` : '';
    return this.request('GET', `${path}${search}`);
  }

  post<P extends PathOf<'post'>>(
    path: P,
    body: BodyOf<P>,
    query: Record<string, string> = {},
  ): Promise<Reply<DataOf<'post', P>>> {
    const search = Object.keys(query).length > 0 ? `?${new URLSearchParams(query)}` : '';
    return this.request('POST', `${path}${search}`, JSON.stringify(body ?? {}));
  }

  /** A POST whose body holds what the user typed as it is (a proxy's keys, a setting): the server checks it. */
  postAsTyped<P extends PathOf<'post'>>(
    path: P,
    body: object,
    query: Record<string, string> = {},
  ): Promise<Reply<DataOf<'post', P>>> {
    return this.post(path, body as BodyOf<P>, query);
  }

  private async request<T>(method: string, path: string, body?: string, retried = false): Promise<Reply<T>> {
    const headers: Record<string, string> = {
      ...CLIENT_HEADER,
      'X-Timestamp': String(Date.now() + this.clockOffset),
      ...this.credentialHeaders(),
    };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let res: Response;
    const signal = this.timeoutMs === undefined ? undefined : AbortSignal.timeout(this.timeoutMs);
    try {
      res = await fetch(this.url + path, { method, headers, body, signal });
    } catch (err) {
      throw unreachable(this.url, err, this.timeoutMs);
    }
    let envelope: Envelope<T>;
    try {
      envelope = (await res.json()) as Envelope<T>;
    } catch (err) {
      if (signal?.aborted) throw unreachable(this.url, err, this.timeoutMs);
      throw new CliError(
        EXIT.failed,
        `${this.url} answered ${res.status} without a tunnelward reply: is it tunnelward?`,
      );
    }
    if (envelope.success) return { message: envelope.message, data: envelope.data as T };
    const serverDate = Date.parse(res.headers.get('Date') ?? '');
    if (res.status === 401 && !retried && /^X-Timestamp is outside/.test(envelope.message) && !isNaN(serverDate)) {
      // Another host's clock: the Date header is good to a second, well inside the window.
      this.clockOffset = serverDate + 500 - Date.now();
      return this.request<T>(method, path, body, true);
    }
    throw failure(res.status, envelope.message, this.token, res.headers.get('Retry-After'));
  }

  /**
   * Opens a WebSocket stream and hands each message to `onMessage` until the server closes it or `stop` is
   * called; resolves with how it ended. A refusal before the upgrade is thrown like an HTTP failure.
   */
  stream(
    path: string,
    query: Record<string, string | number>,
    onMessage: (message: unknown) => void,
    onOpen?: () => void,
  ): { ended: Promise<StreamEnd>; stop: () => void } {
    const wsUrl = new URL(this.url.replace(/^http/, 'ws') + path);
    for (const [key, value] of Object.entries(query)) wsUrl.searchParams.set(key, String(value));
    const key = this.token !== undefined && isApiKey(this.token);
    if (this.token && !key) wsUrl.searchParams.set('token', this.token);
    const ws = new WebSocket(wsUrl, { headers: { ...CLIENT_HEADER, ...(key ? this.credentialHeaders() : {}) } });
    if (onOpen) ws.on('open', onOpen);
    const ended = new Promise<StreamEnd>((resolve, reject) => {
      ws.on('message', (data) => {
        try {
          onMessage(JSON.parse(String(data)));
        } catch {
          // A message that is not JSON is not ours to show.
        }
      });
      ws.on('unexpected-response', (_req, res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          let message = `the server refused the stream (${res.statusCode})`;
          try {
            message = (JSON.parse(Buffer.concat(chunks).toString()) as Envelope<unknown>).message;
          } catch {
            // keep the generic message
          }
          reject(failure(res.statusCode ?? 500, message, this.token, null));
          ws.terminate();
        });
      });
      ws.on('error', (err) => (stopped ? resolve({ code: 1000, reason: '' }) : reject(unreachable(this.url, err))));
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
    let stopped = false;
    const stop = () => {
      stopped = true;
      ws.close(1000);
    };
    return { ended, stop };
  }
}

/** What Node says when a server's certificate is not one it trusts. */
const UNTRUSTED_CERTIFICATE =
  /^(DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|CERT_HAS_EXPIRED|ERR_TLS_CERT_ALTNAME_INVALID)$/;

function unreachable(url: string, err: unknown, timeoutMs?: number): CliError {
  if ((err as Error).name === 'TimeoutError')
    return new CliError(EXIT.unreachable, `no answer from ${url} within ${timeoutMs} ms`);
  const cause = (err as { cause?: { code?: string; message?: string } }).cause ?? (err as { code?: string });
  const why = cause?.code ?? (cause as { message?: string })?.message ?? (err as Error).message;
  if (UNTRUSTED_CERTIFICATE.test(why)) {
    return new CliError(
      EXIT.unreachable,
      `the TLS certificate of ${url} is not trusted (${why}): give its CA in NODE_EXTRA_CA_CERTS=/path/to/ca.pem`,
    );
  }
  return new CliError(EXIT.unreachable, `cannot reach tunnelward at ${url} (${why}): is the daemon running?`);
}

function failure(status: number, message: string, credential: string | undefined, retryAfter: string | null): CliError {
  if (status === 401) {
    const hint = !credential
      ? 'log in first: tunnelward login'
      : isApiKey(credential)
        ? 'the API key no longer works: log in with another, tunnelward login --key'
        : 'log in again: tunnelward login';
    return new CliError(EXIT.unauthorised, `${message} (${hint})`);
  }
  if (status === 403) return new CliError(EXIT.unauthorised, message);
  if (status === 429 && retryAfter)
    return new CliError(EXIT.failed, `${message} (retry in ${retryAfter} s)`, status, Number(retryAfter) || undefined);
  return new CliError(EXIT.failed, message, status);
}
