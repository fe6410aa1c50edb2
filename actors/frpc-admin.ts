import { request } from 'node:http';
import type { AdminEndpoint } from '../src/config/tunnel-config.js';

/** How long a call to a tunnel's admin API may take. */
const ADMIN_TIMEOUT_MS = 5000;

/** One GET of a tunnel's admin API (frpc's webServer), with its Basic credentials. */
export function adminGet(endpoint: AdminEndpoint, path: string): Promise<{ status: number; body: string }> {
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
    req.setTimeout(ADMIN_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${ADMIN_TIMEOUT_MS} ms`)));
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

/** What became of a reload: applied, refused by frpc (its message), or frpc's admin API could not be reached. */
export type ReloadOutcome = { ok: true } | { ok: false; refused: boolean; message: string };

/** A tunnel just started may not serve its admin API yet: a reload that cannot connect is tried again, this often. */
const RELOAD_ATTEMPTS = 6;
const RELOAD_RETRY_MS = 250;

/**
 * Asks the tunnel to re-read its config file and apply its proxies (strict: unknown keys refused). Only proxies
 * and visitors are reloaded; those that did not change keep running undisturbed.
 */
export async function reloadTunnel(endpoint: AdminEndpoint): Promise<ReloadOutcome> {
  let reason = '';
  for (let attempt = 1; attempt <= RELOAD_ATTEMPTS; attempt++) {
    try {
      const { status, body } = await adminGet(endpoint, '/api/reload?strictConfig=true');
      if (status === 200) return { ok: true };
      if (status === 401)
        return { ok: false, refused: false, message: "the tunnel's admin API refused tunnelward's credentials" };
      return { ok: false, refused: true, message: errorText(status, body) };
    } catch (err) {
      reason = (err as Error).message;
      await new Promise((r) => setTimeout(r, RELOAD_RETRY_MS));
    }
  }
  return { ok: false, refused: false, message: `cannot reach the tunnel's admin API: ${reason}` };
}
