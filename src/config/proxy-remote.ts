// Where a proxy is reached, said one way by the CLI's `proxies` and the console's instance page.

/** The fields of a listed proxy (as `proxyMgr/list` gives it) that say where it is reached. */
export interface RemoteFields {
  remoteAddr?: unknown;
  remotePort?: unknown;
  customDomains?: unknown;
  subdomain?: unknown;
}

const text = (value: unknown): string => (typeof value === 'string' || typeof value === 'number' ? String(value) : '');
const hostOf = (addr: string) => addr.replace(/:\d+$/, '').toLowerCase();

/**
 * Each place the file asks for (`serverAddr:remotePort`, each custom domain, the subdomain), as frpc reports it while
 * the proxy runs (frps's address and port, a domain with the server's port), else as configured; each once.
 * frpc's own text for a proxy that did not start (`:6000`, no host) is not an address and is passed over. Without
 * `serverAddr` (a caller not shown the server) a port is shown as `:port`.
 */
export function remoteOf(p: RemoteFields, serverAddr = ''): string {
  const reported = text(p.remoteAddr)
    .split(',')
    .map((addr) => addr.trim())
    .filter((addr) => addr !== '' && !addr.startsWith(':'));
  const domains = Array.isArray(p.customDomains) ? p.customDomains.map(text).filter(Boolean) : [];
  const subdomain = text(p.subdomain);
  const port = text(p.remotePort);
  const parts: string[] = [];
  if (port !== '' && port !== '0') parts.push(reported.find((a) => a.endsWith(`:${port}`)) ?? `${serverAddr}:${port}`);
  else if (domains.length === 0 && !subdomain && reported[0]) parts.push(reported[0]);
  for (const domain of domains) parts.push(reported.find((a) => hostOf(a) === domain.toLowerCase()) ?? domain);
  if (subdomain) {
    const prefix = `${subdomain.toLowerCase()}.`;
    parts.push(reported.find((a) => hostOf(a).startsWith(prefix)) ?? `${subdomain}.*`);
  }
  return [...new Set(parts)].join(', ');
}
