import { randomBytes } from 'node:crypto';
import { readTunnelConfig, type AdminEndpoint, type TunnelConfig } from '../src/config/tunnel-config.js';
import { conflict } from '../src/errors.js';
import type { InstanceRecord } from '../src/instances/instance-store.js';
import { freeLoopbackPort, loopbackPortState } from '../src/system/loopback-ports.js';

/** The Basic user tunnelward uses on each tunnel's admin API. */
const ADMIN_USER = 'tunnelward';
const adminPassword = () => randomBytes(24).toString('base64url');

type ServerClaims = ReturnType<TunnelConfig['serverClaims']>;

/**
 * What a create or an edit under way holds until its file is written: what its proxies take on their server, and
 * a new admin port. Checked like what is on record, so two requests at once cannot both take the same one; then
 * committed (the registry records it for the instance) or released.
 */
export interface Reservation {
  readonly claims: ServerClaims;
  readonly port: number | undefined;
}

/**
 * What the instances hold that must be unique across them: what each one's proxies take on its server (a remote
 * port, a domain, a name) and the loopback port of each tunnel's admin API. Read from the config files once, then kept
 * as the change pipeline writes them: reserve, then commit or release. The one owner of these caches.
 */
/** The proxy names each file's claims hold (see `enabledProxies`). */
const proxyNames = new WeakMap<ServerClaims, ReadonlySet<string>>();

export class InstanceRegistry {
  private claims: Map<number, ServerClaims> | undefined;
  private claimsLoad: Promise<Map<number, ServerClaims>> | undefined;
  private endpoints: Map<number, AdminEndpoint> | undefined;
  private endpointsLoad: Promise<Map<number, AdminEndpoint>> | undefined;
  private readonly held = new Set<Reservation>();
  /** Goes up whenever what the files are known to hold changes (see enabledProxies). */
  private changes = 0;

  constructor(
    private readonly records: () => InstanceRecord[],
    private readonly nameOf: (id: number) => string | undefined,
  ) {}

  /**
   * Holds what `config` takes on its server, once nothing of it is held by another instance (`self` excepted) on
   * the same server nor by another request under way (frps would refuse one of the two at run time): a 409 naming
   * the other otherwise. With `newPort`, also a free loopback port for the admin API (written into `config`).
   */
  async reserve(config: TunnelConfig, options: { self?: number; newPort?: boolean } = {}): Promise<Reservation> {
    const mine = config.serverClaims();
    if (mine.claims.size > 0) {
      const recorded = await this.allClaims();
      // From here to the hold, nothing waits: no other request can come in between.
      this.checkClaims(mine, recorded, options.self);
    }
    const reservation: { claims: ServerClaims; port: number | undefined } = { claims: mine, port: undefined };
    this.held.add(reservation);
    if (options.newPort) {
      try {
        // An operator's own endpoint (kept by an import: see TunnelConfig.imported) stays while its port is free.
        const own = config.adminEndpoint();
        if (!own || !(await this.holdOwnPort(reservation, own.port)))
          config.setAdminEndpoint(await this.freeAdminPort(reservation), ADMIN_USER, adminPassword());
      } catch (err) {
        this.held.delete(reservation);
        throw err;
      }
    }
    return reservation;
  }

  private checkClaims(mine: ServerClaims, recorded: Map<number, ServerClaims>, self: number | undefined): void {
    const others: Array<{ id: number | undefined; claims: ServerClaims }> = [...recorded]
      .filter(([id]) => id !== self)
      .map(([id, claims]) => ({ id, claims }));
    for (const pending of this.held) others.push({ id: undefined, claims: pending.claims });
    for (const { id: otherId, claims: other } of others) {
      if (other.server !== mine.server) continue;
      for (const [claim, proxy] of mine.claims) {
        const holder = other.claims.get(claim);
        if (holder === undefined) continue;
        if (otherId === undefined)
          throw conflict(
            `proxy ${proxy}: ${describeClaim(claim)} is being taken by proxy ${holder} of another request on the same server ${mine.server}`,
          );
        const otherName = this.nameOf(otherId) ?? String(otherId);
        throw conflict(
          `proxy ${proxy}: ${describeClaim(claim)} is already used by proxy ${holder} of instance ${otherName} (${otherId}) on the same server ${mine.server}`,
        );
      }
    }
  }

  /** The instance's file now holds what was reserved (and `endpoint`, its admin API): recorded as its own. */
  commit(reservation: Reservation, id: number, endpoint: AdminEndpoint | undefined): void {
    this.held.delete(reservation);
    this.claims?.set(id, reservation.claims);
    this.changes++;
    if (endpoint) this.endpoints?.set(id, endpoint);
    else this.endpoints?.delete(id);
  }

  release(reservation: Reservation): void {
    this.held.delete(reservation);
  }

  /** The instance's file was put back to `config` (a change undone): what it holds is as that says. */
  restored(id: number, config: TunnelConfig): void {
    this.claims?.set(id, config.serverClaims());
    this.changes++;
    const endpoint = config.adminEndpoint();
    if (endpoint) this.endpoints?.set(id, endpoint);
  }

  forget(id: number): void {
    this.claims?.delete(id);
    this.changes++;
    this.endpoints?.delete(id);
  }

  /** The server (`host:port`, host in lower case) the instance's file names. */
  async serverOf(id: number): Promise<string | undefined> {
    return (await this.allClaims()).get(id)?.server;
  }

  /** Where tunnelward reaches the tunnel's admin API, as its file says. */
  async adminEndpoint(id: number): Promise<AdminEndpoint | undefined> {
    return (await this.allEndpoints()).get(id);
  }

  /** Reads what every file holds, once (start-up): enabledProxies knows every instance from then on. */
  async load(): Promise<void> {
    await this.allClaims();
    this.changes++;
  }

  /** A count that changes whenever enabledProxies may answer otherwise. */
  get version(): number {
    return this.changes;
  }

  /**
   * The names of the instance's enabled proxies as its file says (each one holds its name on its server); undefined
   * while the files have not been read, or when the instance's file could not be.
   */
  enabledProxies(id: number): ReadonlySet<string> | undefined {
    const held = this.claims?.get(id);
    if (!held) return undefined;
    // Asked per instance by every list and health answer: made once per file's claims (replaced, not changed).
    let names = proxyNames.get(held);
    if (!names) proxyNames.set(held, (names = new Set(held.claims.values())));
    return names;
  }

  private async allClaims(): Promise<Map<number, ServerClaims>> {
    if (this.claims) return this.claims;
    this.claimsLoad ??= this.readEveryFile((config) => config.serverClaims()).then((claims) => (this.claims = claims));
    return this.claimsLoad;
  }

  private async allEndpoints(): Promise<Map<number, AdminEndpoint>> {
    if (this.endpoints) return this.endpoints;
    this.endpointsLoad ??= this.readEveryFile((config) => config.adminEndpoint()).then(
      (endpoints) => (this.endpoints = endpoints),
    );
    return this.endpointsLoad;
  }

  /**
   * One fact of every instance's config file, each file read once however many ask at the same time (a thousand
   * starts at once must not read a thousand files each). A file that cannot be read holds nothing we can know of;
   * its own edits will say why.
   */
  private async readEveryFile<T>(fact: (config: TunnelConfig) => T | undefined): Promise<Map<number, T>> {
    const facts = new Map<number, T>();
    for (const record of this.records()) {
      const config = await readTunnelConfig(record.configPath).catch(() => undefined);
      const value = config && fact(config);
      if (value !== undefined) facts.set(record.id, value);
    }
    return facts;
  }

  /**
   * A loopback port for a tunnel's admin API: one free now that no other instance's file names nor a reservation
   * holds, from below the kernel's ephemeral range (see loopback-ports).
   */
  /** Holds the port when no instance and no request under way has it, and nothing on loopback holds it. */
  private async holdOwnPort(reservation: { port: number | undefined }, port: number): Promise<boolean> {
    const taken = this.takenAdminPorts(await this.allEndpoints());
    if (taken(port) || (await loopbackPortState(port)) !== 'free' || taken(port)) return false;
    reservation.port = port; // checked again and held with no wait
    return true;
  }

  private takenAdminPorts(recorded: Map<number, { port: number }>): (port: number) => boolean {
    return (port) => [...this.held].some((r) => r.port === port) || [...recorded.values()].some((e) => e.port === port);
  }

  private async freeAdminPort(reservation: { port: number | undefined }): Promise<number> {
    const taken = this.takenAdminPorts(await this.allEndpoints());
    for (;;) {
      const port = await freeLoopbackPort(taken);
      // Checked again, and held, with no wait: two creates at once get two ports.
      if (!taken(port)) return (reservation.port = port);
    }
  }
}

/** A claim as an operator reads it: `tcp port 6022` -> `remotePort 6022 (tcp)`. */
function describeClaim(claim: string): string {
  const [kind, what, ...rest] = claim.split(' ');
  if (kind === 'name') return `the name ${[what, ...rest].join(' ')}`;
  if (what === 'port') return `remotePort ${rest.join(' ')} (${kind})`;
  return `${what === 'domain' ? 'custom domain' : 'subdomain'} ${rest.join(' ')} (${kind})`;
}
