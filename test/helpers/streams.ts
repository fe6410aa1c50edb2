import { until } from './until.js';
import { WebSocket } from 'ws';

export interface Stream {
  ws: WebSocket;
  messages: any[];
  closed: Promise<{ code: number; reason: string }>;
  /** Waits until `predicate` holds for the messages received so far. */
  waitFor(predicate: (messages: any[]) => boolean, timeoutMs?: number): Promise<any[]>;
}

/**
 * Opens a log stream (with extra upgrade headers, e.g. an API key's Authorization); rejects with
 * `{ status, headers, body }` when the server refuses the upgrade.
 */
export function openStream(url: string, headers: Record<string, string> = {}): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const messages: any[] = [];
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      ws.on('close', (code, reason) => r({ code, reason: reason.toString() })),
    );
    ws.on('message', (data) => messages.push(JSON.parse(data.toString())));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => reject({ status: res.statusCode, headers: res.headers, body: JSON.parse(body) }));
    });
    ws.on('error', (err) => reject(err));
    ws.on('open', () =>
      resolve({
        ws,
        messages,
        closed,
        waitFor: (predicate, timeoutMs = 10_000) =>
          until(() => messages, predicate, {
            timeoutMs,
            everyMs: 20,
            what: `a stream condition (${messages.length} messages so far)`,
          }),
      }),
    );
  });
}

export const wsUrl = (httpUrl: string, path: string) => httpUrl.replace(/^http/, 'ws') + path;
