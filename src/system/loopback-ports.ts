import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';

/**
 * Loopback ports for the tunnels' admin APIs. A tunnel's port is written into its file long before frpc binds it,
 * so it is drawn from below the kernel's ephemeral range: the ports the kernel hands out by itself (to outgoing
 * connections and to `listen(0)`) come from that range, and one of them could be holding the port by frpc's start.
 */

/** The lowest port an admin API is given (above the ports services are usually configured on). */
export const ADMIN_PORTS_FROM = 20000;
/** Picks tried before the kernel is asked for any free port instead. */
const PICKS = 64;

export interface PortRange {
  low: number;
  high: number;
}

/** The kernel's ephemeral range, as /proc/sys/net/ipv4/ip_local_port_range says it ("32768\t60999"). */
export function parsePortRange(text: string): PortRange | undefined {
  const m = /^\s*(\d+)\s+(\d+)\s*$/.exec(text);
  if (!m) return undefined;
  const low = Number(m[1]);
  const high = Number(m[2]);
  return low >= 1 && low <= high && high <= 65535 ? { low, high } : undefined;
}

/** The range admin ports are drawn from: below the ephemeral range; none when it starts too low to leave room. */
export function adminPortRange(ephemeral: PortRange | undefined): PortRange | undefined {
  if (!ephemeral) return undefined;
  const high = ephemeral.low - 1;
  return high - ADMIN_PORTS_FROM >= 1000 ? { low: ADMIN_PORTS_FROM, high } : undefined;
}

/** A uniformly drawn port of `range` that `taken` does not hold, within `picks` draws; undefined after them. */
export function pickPort(
  range: PortRange,
  taken: (port: number) => boolean,
  random: () => number = Math.random,
  picks = PICKS,
): number | undefined {
  for (let i = 0; i < picks; i++) {
    const port = range.low + Math.floor(random() * (range.high - range.low + 1));
    if (!taken(port)) return port;
  }
  return undefined;
}

let ephemeral: PortRange | undefined | null = null;

/** This host's ephemeral range, read once; undefined where the system does not say (not Linux). */
function ephemeralRange(): PortRange | undefined {
  if (ephemeral === null) {
    try {
      ephemeral = parsePortRange(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8'));
    } catch {
      ephemeral = undefined;
    }
  }
  return ephemeral;
}

/** Binds 127.0.0.1:port (0: a port the kernel chooses) and lets it go: the port bound, or the bind's error code. */
function tryBind(port: number): Promise<{ port: number } | { code: string | undefined }> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve({ code: err.code }));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
      const bound = (server.address() as AddressInfo).port;
      server.close(() => resolve({ port: bound }));
    });
  });
}

/**
 * Whether a listener can bind 127.0.0.1:port now: `free`, `held` (a listener or a connection of this host holds
 * it), or `unknown` when the bind failed for another reason (no file descriptor left, ...), which says nothing of
 * the port.
 */
export async function loopbackPortState(port: number): Promise<'free' | 'held' | 'unknown'> {
  const bound = await tryBind(port);
  if ('port' in bound) return 'free';
  return bound.code === 'EADDRINUSE' ? 'held' : 'unknown';
}

/**
 * A loopback port free now that `taken` does not hold: drawn from below the ephemeral range where the system says
 * where that is, else (or when the draws find none) one the kernel chooses.
 */
export async function freeLoopbackPort(
  taken: (port: number) => boolean,
  range = adminPortRange(ephemeralRange()),
): Promise<number> {
  if (range) {
    for (let round = 0; round < 16; round++) {
      const port = pickPort(range, taken);
      if (port === undefined) break;
      if ((await loopbackPortState(port)) === 'free') return port;
    }
  }
  for (;;) {
    const bound = await tryBind(0);
    if (!('port' in bound)) throw new Error(`cannot bind a loopback port: ${bound.code ?? 'unknown error'}`);
    if (!taken(bound.port)) return bound.port;
  }
}
