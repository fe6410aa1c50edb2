// Where a proxy is reached, said one way by the CLI's `proxies` and the console's instance page.

/** The fields of a listed proxy (as `proxyMgr/list` gives it) that say where it is reached. */
export interface RemoteFields {
  remoteAddr?: unknown;
  remotePort?: unknown;
  customDomains?: unknown;
  subdomain?: unknown;
}

const text = (value: unknown): string => (typeof value === 'string' || typeof value === 'number' ? String(value) : '');

/**
 * While the proxy runs, where frpc reports it is reached (frps says it: its address and port for tcp and udp, each
 * domain with the server's port for http, https and tcpmux, which a server plugin may have rewritten), each once.
 * Otherwise what the file asks for: `serverAddr:remotePort`, or its domains and subdomain. frpc's text for a proxy
 * that did not start (`:6000`, no host) is not an address and is passed over. Without `serverAddr` (a caller not
 * shown the server) a port is shown as `:port`.
 */
export function remoteOf(p: RemoteFields, serverAddr = ''): string {
  const reported = text(p.remoteAddr)
    .split(',')
    .map((addr) => addr.trim())
    .filter((addr) => addr !== '' && !addr.startsWith(':'));
  if (reported.length > 0) return [...new Set(reported)].join(', ');
  const port = text(p.remotePort);
  if (port !== '' && port !== '0') return `${serverAddr}:${port}`;
  const domains = Array.isArray(p.customDomains) ? p.customDomains.map(text).filter(Boolean) : [];
  const subdomain = text(p.subdomain);
  return [...new Set([...domains, ...(subdomain ? [`${subdomain}.*`] : [])])].join(', ');
}
