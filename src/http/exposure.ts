import { isIP } from 'node:net';
import type { Settings } from '../settings/defaults.js';

/** 127.0.0.0/8, ::1, localhost: an address only this host can reach. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (bare.startsWith('::ffff:')) return bare.slice(7).startsWith('127.');
  return bare === '::1';
}

/**
 * What the daemon lets in, given where it listens: on loopback the contract's open doors stay open (only this
 * host reaches them); on any other address each one is closed unless its setting opens it explicitly.
 */
export class Exposure {
  readonly exposed: boolean;

  constructor(
    host: string,
    private readonly settings: () => Readonly<Settings>,
    private readonly tls: () => boolean,
  ) {
    this.exposed = !isLoopbackHost(host);
  }

  private open(value: boolean | 'auto'): boolean {
    return value === 'auto' ? !this.exposed : value;
  }

  get registerOpen(): boolean {
    return this.open(this.settings()['Register.Enabled']);
  }

  get systemLogNeedsToken(): boolean {
    const value = this.settings()['SystemLog.RequireToken'];
    return value === 'auto' ? this.exposed : value;
  }

  get visitorSeesDetails(): boolean {
    return this.open(this.settings()['Visitor.ShowDetails']);
  }

  /** Each door open to whoever reaches the port, in words an operator can act on; empty on loopback. */
  openDoors(): string[] {
    if (!this.exposed) return [];
    const doors: string[] = [];
    if (!this.tls()) {
      doors.push(
        'plain HTTP on a non-loopback address: tokens and passwords cross the network in clear (set TLS.CertFile and TLS.KeyFile, or listen on 127.0.0.1 behind a TLS reverse proxy)',
      );
    }
    if (this.registerOpen) doors.push('anyone who reaches the port can register a visitor account (Register.Enabled)');
    if (!this.systemLogNeedsToken)
      doors.push("the daemon's log streams to anyone without a token (SystemLog.RequireToken)");
    if (this.visitorSeesDetails) {
      doors.push('visitors see local addresses and ports, config paths and run-as users (Visitor.ShowDetails)');
    }
    return doors;
  }
}

/** Whether this caller is shown only what a guest may see: a visitor, while `Visitor.ShowDetails` hides details. */
export function seesOnlyGuestView(exposure: Exposure, userType: string): boolean {
  return userType === 'visitor' && !exposure.visitorSeesDetails;
}

/** The fields of a proxy a guest is shown: what it is and whether it works, not where it points. */
const GUEST_PROXY_FIELDS = ['name', 'type', 'enabled', 'status', 'err', 'statusSince'] as const;

export function guestProxyView(proxy: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(GUEST_PROXY_FIELDS.map((key) => [key, proxy[key]]));
}

/** The fields of a visitor a guest is shown: not which proxy it reaches nor where it listens. */
const GUEST_VISITOR_FIELDS = ['name', 'type', 'enabled'] as const;

export function guestVisitorView(visitor: object): Record<string, unknown> {
  return Object.fromEntries(GUEST_VISITOR_FIELDS.map((key) => [key, (visitor as Record<string, unknown>)[key]]));
}
