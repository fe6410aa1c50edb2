import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { Middleware } from 'koa';
import type { Logger } from '../log/logger.js';
import type { Settings } from '../settings/table.js';

/** 127.0.0.0/8, ::1, localhost: an address only this host can reach. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (bare.startsWith('::ffff:')) return bare.slice(7).startsWith('127.');
  return bare === '::1';
}

/** Headers a reverse proxy adds: a request that carries one came through a proxy (or says it did). */
const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip', 'x-forwarded-host', 'x-forwarded-proto'];

/** What the `auto` doors are for one request. */
export interface RequestExposure {
  /** Why the `auto` doors are closed to this request; undefined while they are open. */
  readonly closedBecause: 'off loopback' | 'behind a reverse proxy' | undefined;
  readonly registerOpen: boolean;
  readonly systemLogNeedsToken: boolean;
  readonly visitorSeesDetails: boolean;
}

/**
 * What the daemon lets in. The contract's open doors stay open only to this host: on a loopback address, with no
 * reverse proxy named in `TrustedProxies`, to a request that did not come through a proxy. Listening on any other
 * address, naming a proxy, or a request that arrives forwarded closes each door left to `auto`; a door's setting
 * opens or closes it explicitly.
 */
export class Exposure {
  /** Listening on an address other hosts reach. */
  readonly offLoopback: boolean;
  private warnedUntrustedForward = false;

  constructor(
    host: string,
    private readonly settings: () => Readonly<Settings>,
    private readonly tls: () => boolean,
    private readonly log?: Pick<Logger, 'warn'>,
  ) {
    this.offLoopback = !isLoopbackHost(host);
  }

  /** Whether whoever reaches the daemon may be anyone: off loopback, or behind a proxy the settings name. */
  get exposed(): boolean {
    return this.offLoopback || this.settings().TrustedProxies.length > 0;
  }

  private closedBecause(forwarded: boolean): RequestExposure['closedBecause'] {
    if (this.offLoopback) return 'off loopback';
    return forwarded || this.exposed ? 'behind a reverse proxy' : undefined;
  }

  private doors(exposed: boolean) {
    const s = this.settings();
    const open = (value: boolean | 'auto') => (value === 'auto' ? !exposed : value);
    const required = s['SystemLog.RequireToken'];
    return {
      registerOpen: open(s['Register.Enabled']),
      systemLogNeedsToken: required === 'auto' ? exposed : required,
      visitorSeesDetails: open(s['Visitor.ShowDetails']),
    };
  }

  /**
   * The doors for one request (HTTP or a stream's upgrade). The first request that arrives forwarded while
   * `TrustedProxies` is empty is warned about, once: the proxy in front is not named, so every client has its address.
   */
  of(req: Pick<IncomingMessage, 'headers' | 'socket'>): RequestExposure {
    const headers = FORWARDING_HEADERS.filter((name) => req.headers[name] !== undefined);
    const forwarded = headers.length > 0;
    if (forwarded && !this.warnedUntrustedForward && this.settings().TrustedProxies.length === 0) {
      this.warnedUntrustedForward = true;
      this.log?.warn(
        { peer: req.socket.remoteAddress, headers },
        'a request arrived through a reverse proxy while TrustedProxies is empty: forwarded requests find the auto ' +
          "doors closed, and every client has the proxy's address (one login limit for all, the proxy's address in " +
          'the logs and the audit trail); name the proxy in TrustedProxies',
      );
    }
    const closedBecause = this.closedBecause(forwarded);
    return { closedBecause, ...this.doors(closedBecause !== undefined) };
  }

  /** Each door open to whoever reaches the daemon, in words an operator can act on; empty when only this host can. */
  openDoors(): string[] {
    if (!this.exposed) return [];
    const doors: string[] = [];
    // Behind a proxy on loopback, the proxy in front holds the TLS.
    if (this.offLoopback && !this.tls()) {
      doors.push(
        'plain HTTP on a non-loopback address: tokens and passwords cross the network in clear (set TLS.CertFile and TLS.KeyFile, or listen on 127.0.0.1 behind a TLS reverse proxy)',
      );
    }
    const { registerOpen, systemLogNeedsToken, visitorSeesDetails } = this.doors(true);
    if (registerOpen) doors.push('anyone who reaches the port can register a visitor account (Register.Enabled)');
    if (!systemLogNeedsToken) doors.push("the daemon's log streams to anyone without a token (SystemLog.RequireToken)");
    if (visitorSeesDetails) {
      doors.push('visitors see local addresses and ports, config paths and run-as users (Visitor.ShowDetails)');
    }
    return doors;
  }
}

/** Puts what the request may reach in `ctx.state.exposure`, for the routes that keep a door. */
export function requestExposure(exposure: Exposure): Middleware<{ exposure: RequestExposure }> {
  return async (ctx, next) => {
    ctx.state.exposure = exposure.of(ctx.req);
    await next();
  };
}

/** Whether this caller is shown only what a guest may see: a visitor, while `Visitor.ShowDetails` hides details. */
export function seesOnlyGuestView(exposure: RequestExposure, userType: string): boolean {
  return userType === 'visitor' && !exposure.visitorSeesDetails;
}

/** The fields of a proxy a guest is shown: what it is and whether it works, not where it points. */
const GUEST_PROXY_FIELDS = ['name', 'type', 'enabled', 'health', 'status', 'err', 'statusSince'] as const;

export function guestProxyView(proxy: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(GUEST_PROXY_FIELDS.map((key) => [key, proxy[key]]));
}

/** The fields of a visitor a guest is shown: not which proxy it reaches nor where it listens. */
const GUEST_VISITOR_FIELDS = ['name', 'type', 'enabled'] as const;

export function guestVisitorView(visitor: object): Record<string, unknown> {
  return Object.fromEntries(GUEST_VISITOR_FIELDS.map((key) => [key, (visitor as Record<string, unknown>)[key]]));
}
