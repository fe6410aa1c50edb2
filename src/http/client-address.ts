import { BlockList, isIP } from 'node:net';
import type { Middleware } from 'koa';
import { parseCidr } from '../settings/values.js';

/** The addresses of `TrustedProxies` as one matcher, built again only when the setting changes. */
export class TrustedProxies {
  private source: readonly string[] | undefined;
  private list = new BlockList();
  private empty = true;

  constructor(private readonly current: () => readonly string[]) {}

  private matcher(): BlockList | undefined {
    const entries = this.current();
    if (entries !== this.source) {
      this.source = entries;
      this.list = new BlockList();
      for (const entry of entries) {
        const cidr = parseCidr(entry);
        if (cidr) this.list.addSubnet(cidr.address, cidr.prefix, cidr.family);
      }
      this.empty = entries.length === 0;
    }
    return this.empty ? undefined : this.list;
  }

  trusts(address: string): boolean {
    const list = this.matcher();
    if (!list) return false;
    const bare = unmapped(address);
    const version = isIP(bare);
    return version !== 0 && list.check(bare, version === 4 ? 'ipv4' : 'ipv6');
  }

  /**
   * The client's address: the peer's, unless the peer is a trusted proxy; then X-Forwarded-For is read from the
   * right, each hop believed only while the one that reported it is trusted. An entry that is not an address ends
   * the walk at the proxy that sent it.
   */
  clientOf(peer: string, forwardedFor: string | undefined): string {
    let client = unmapped(peer);
    if (!forwardedFor || !this.trusts(client)) return client;
    const hops = forwardedFor
      .split(',')
      .map((hop) => hop.trim())
      .filter(Boolean);
    while (hops.length > 0 && this.trusts(client)) {
      const next = unmapped(hops.pop()!);
      if (isIP(next) === 0) break;
      client = next;
    }
    return client;
  }
}

/** `::ffff:10.0.0.1` is 10.0.0.1: an IPv4 client of a dual-stack socket. */
function unmapped(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/** Sets `ctx.ip` to the real client for everything after it: rate limits, logs, the audit trail. */
export function clientAddress(proxies: TrustedProxies): Middleware {
  return async (ctx, next) => {
    ctx.request.ip = proxies.clientOf(ctx.req.socket.remoteAddress ?? '', ctx.get('X-Forwarded-For') || undefined);
    await next();
  };
}
