// frpc's own account of its proxies (`GET /api/status`) and of its server connection (its log), read into what
// tunnelward shows. Pure: the calls are made in actors/tunnel-status.ts.

/** What frpc reports of one proxy, and since when tunnelward has seen it so. */
export interface ProxyStatus {
  status: string;
  err: string;
  remoteAddr: string;
  /** When this status (with this err) was first seen, ms since the epoch. */
  since: number;
}

/** `/api/status`: proxy type -> [{name, status, err, remote_addr, ...}]; `{}` before frpc has logged in. */
export function parseStatus(body: string): Map<string, { status: string; err: string; remoteAddr: string }> {
  const parsed = JSON.parse(body) as unknown;
  const out = new Map<string, { status: string; err: string; remoteAddr: string }>();
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return out;
  for (const list of Object.values(parsed as Record<string, unknown>)) {
    if (!Array.isArray(list)) continue;
    for (const item of list as Array<Record<string, unknown>>) {
      if (typeof item?.name !== 'string') continue;
      out.set(item.name, {
        status: typeof item.status === 'string' ? item.status : 'unknown',
        err: typeof item.err === 'string' ? item.err : '',
        remoteAddr: typeof item.remote_addr === 'string' ? item.remote_addr : '',
      });
    }
  }
  return out;
}

/**
 * What a line of frpc's log says of its connection to the server, and whether the proxy status is worth reading
 * again. Every pattern is a line frpc 0.71.0 prints (client/service.go, control.go, proxy/proxy_manager.go,
 * config_manager.go, health/health.go): `try to connect to server...` begins every login, the first one included, and
 * after a lost connection it is the only line at the default level; `login to server success` ends one.
 */
export function readLogLine(content: string): { connected?: boolean; reason?: string; lookAgain: boolean } {
  const connected = connectionIn(content);
  if (connected === false) {
    const reason = disconnectReason(content);
    // What frpc lists now adds nothing: no proxy until it is logged in again (the login line asks then).
    return { connected, ...(reason ? { reason } : {}), lookAgain: false };
  }
  if (connected !== undefined) return { connected, lookAgain: true };
  return {
    lookAgain:
      /start proxy success|start error|proxy added|proxy removed|success reload|health check status change/.test(
        content,
      ),
  };
}

/** What a line of frpc's log says of its connection to the server, if anything (see `readLogLine`). */
export function connectionIn(content: string): boolean | undefined {
  if (content.includes('login to server success')) return true;
  if (/try to connect to server|connect to server error|heartbeat timeout|login to the server failed/.test(content))
    return false;
  return undefined;
}

/**
 * Why frpc is not connected to its server, in words an operator reads, from a line of its log that says so (see
 * `connectionIn`): its own error after `login refused: ` (the server answered and refused: a wrong token, a client
 * frps does not allow) or `server unreachable: ` (no answer: `dial tcp: connect: connection refused`, a name that does not
 * resolve, a timeout; the server's address left out), or `server lost: no heartbeat answer`. Undefined for a line that says only
 * that frpc tries again (`try to connect to server...`): the reason is the error before it or after it.
 */
export function disconnectReason(content: string): string | undefined {
  if (content.includes('heartbeat timeout')) return 'server lost: no heartbeat answer';
  const said = /(?:connect to server error|login to the server failed): (.*?)(?:\. With loginFailExit.*)?$/.exec(
    content,
  );
  if (!said) return undefined;
  const err = withoutServerAddress(said[1]!.trim());
  return REFUSED_LOGIN.test(err) ? `login refused: ${err}` : `server unreachable: ${err}`;
}

/**
 * frpc's error without the server's address (`dial tcp 10.0.0.1:7000: connect: connection refused` ->
 * `dial tcp: connect: connection refused`): the reason is shown to every user, the address only to admins.
 */
const withoutServerAddress = (err: string): string =>
  err
    .replace(/^dial tcp (?:\[[^\]]*\]|[^\s:]+)(?::\d+)?:/, 'dial tcp:')
    .replace(/lookup \S+?:/, 'lookup of the server name:');

/**
 * frps's answers to a login it refuses (server/service.go, pkg/auth: the token check, an OIDC check, a client frps's
 * plugins turn away): the server is there, so retrying will not help until the file or the server changes.
 */
const REFUSED_LOGIN = /token|authoriz|authenticat|oidc|not allowed|forbidden|version|reject/i;

/**
 * frpc logs every call to its admin API (`http request: [/api/status]`, `http response [/api/status]: code [200]`,
 * pkg/util/http/middleware.go): the lines tunnelward's own status reads cause are left out of the tunnel's log,
 * where they would be most of it.
 */
export function withoutStatusReads(text: string): string {
  if (!text.includes('[/api/status]')) return text;
  return text
    .split('\n')
    .filter(
      (line) => !/ (?:http request: \[\/api\/status\]|http response \[\/api\/status\]: code \[200\])\s*$/.test(line),
    )
    .join('\n');
}

/**
 * The tunnel's last lines say it ended because its first login to the server failed (`loginFailExit`, frpc's
 * default, makes frpc exit 1 then, the code of a config error too): a server that can come back, so worth a retry.
 */
export const loginFailedAtStart = (tail: readonly string[]): boolean =>
  tail.some((line) => line.includes('login to the server failed:'));

/** A proxy that works: frpc says it runs. Anything else after a start is a proxy that does not. */
export const isUp = (status: string): boolean => status === 'running';
