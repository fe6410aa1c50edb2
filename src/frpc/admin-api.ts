import { request } from 'node:http';
import type { AdminEndpoint } from '../config/tunnel-config.js';

/** How long a call to a tunnel's admin API may take. */
const ADMIN_TIMEOUT_MS = 5000;

/** One GET of a tunnel's admin API (frpc's webServer), with its Basic credentials. */
export function adminGet(
  endpoint: AdminEndpoint,
  path: string,
  timeoutMs = ADMIN_TIMEOUT_MS,
): Promise<{ status: number; body: string }> {
  const auth = Buffer.from(`${endpoint.user}:${endpoint.password}`).toString('base64');
  return new Promise((resolve, reject) => {
    const req = request(
      { host: endpoint.host, port: endpoint.port, path, agent: false, headers: { Authorization: `Basic ${auth}` } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** frpc's error text: JSON `{"Code", "Msg"}` from 0.68 on, plain text before. */
function errorText(status: number, body: string): string {
  try {
    const msg = (JSON.parse(body) as { Msg?: unknown }).Msg;
    if (typeof msg === 'string' && msg) return msg;
  } catch {
    // plain text
  }
  return body.trim() || `HTTP ${status}`;
}

/**
 * What became of a reload: applied; refused by frpc (the file is invalid to it, or applying it failed: its message);
 * or frpc could not be asked (no answer, no connection, an answer that is neither): then nothing says the change
 * is wrong, and a restart applies it instead.
 */
export type ReloadOutcome = { ok: true } | { ok: false; refused: boolean; message: string };

export interface ReloadBounds {
  /** How long one call may go unanswered. */
  timeoutMs: number;
  /** A tunnel just started may not listen yet: a refused connection is tried again for this long. */
  connectForMs: number;
}

const RELOAD_BOUNDS: ReloadBounds = { timeoutMs: 3000, connectForMs: 2000 };
const CONNECT_RETRY_MS = 100;

/**
 * Asks the tunnel to re-read its config file and apply its proxies (strict: unknown keys refused). Only proxies
 * and visitors are reloaded; those that did not change keep running undisturbed. Bounded: one call of at most
 * `timeoutMs`, after connections refused for at most `connectForMs`; a timeout is never read as a refusal.
 */
export async function reloadTunnel(
  endpoint: AdminEndpoint,
  bounds: ReloadBounds = RELOAD_BOUNDS,
): Promise<ReloadOutcome> {
  const until = Date.now() + bounds.connectForMs;
  for (;;) {
    try {
      const { status, body } = await adminGet(endpoint, '/api/reload?strictConfig=true', bounds.timeoutMs);
      if (status === 200) return { ok: true };
      // 400: the file is invalid to frpc; 500: frpc could not apply it. Either way it runs on what it had.
      if (status === 400 || status === 500) return { ok: false, refused: true, message: errorText(status, body) };
      if (status === 401)
        return { ok: false, refused: false, message: "the tunnel's admin API refused tunnelward's credentials" };
      return { ok: false, refused: false, message: `the tunnel's admin API answered HTTP ${status}` };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const message = (err as Error).message;
      if (code !== 'ECONNREFUSED' || Date.now() + CONNECT_RETRY_MS > until)
        return { ok: false, refused: false, message: `cannot reach the tunnel's admin API: ${message}` };
      await new Promise((r) => setTimeout(r, CONNECT_RETRY_MS));
    }
  }
}
