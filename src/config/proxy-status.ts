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

/** What a line of frpc's log says of its connection: logged in, lost it, or neither; and whether to look again. */
export function readLogLine(content: string): { connected?: boolean; lookAgain: boolean } {
  if (/login to server success/.test(content)) return { connected: true, lookAgain: true };
  if (/try to reconnect|connection to server closed|control writer is closing|login to the server failed/.test(content))
    return { connected: false, lookAgain: true };
  return {
    lookAgain: /start proxy success|start error|proxy added|proxy removed|success reload|health check/.test(content),
  };
}

/** A proxy that works: frpc says it runs. Anything else after a start is a proxy that does not. */
export const isUp = (status: string): boolean => status === 'running';
