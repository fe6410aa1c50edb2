// A tunnel's memory cap (Instance.MemoryMaxMB): the one home of what follows from it. systemd enforces it with
// MemoryMax= and MemoryHigh= (reclaim pressure first); in process mode the health policy reads each tunnel's RSS and
// restarts one over its cap. Either way frpc gets GOMEMLIMIT below the cap, so Go's collector works harder before the
// cap is reached (a soft limit: Go may pass it rather than stall).

const MIB = 1024 * 1024;

/** GOMEMLIMIT for a cap: 80% of it, in MiB as Go reads it; undefined without a cap. */
export function goMemLimit(capMB: number): string | undefined {
  return capMB > 0 ? `${Math.max(1, Math.floor(capMB * 0.8))}MiB` : undefined;
}

/** The unit's MemoryHigh= and MemoryMax= for a cap (none without one). */
export function memoryDirectives(capMB: number): Array<[string, string]> {
  if (capMB <= 0) return [];
  return [
    ['MemoryHigh', `${Math.max(1, Math.floor(capMB * 0.9))}M`],
    ['MemoryMax', `${capMB}M`],
  ];
}

/** The variables a tunnel runs with: GOMEMLIMIT from the cap, unless its own variables set it. */
export function withMemoryLimit(env: Readonly<Record<string, string>>, capMB: number): Record<string, string> {
  const limit = goMemLimit(capMB);
  return limit === undefined || 'GOMEMLIMIT' in env ? { ...env } : { GOMEMLIMIT: limit, ...env };
}

/** Over its cap: RSS above it (undefined RSS: the process is gone, nothing to say). */
export function overCap(rssBytes: number | undefined, capMB: number): boolean {
  return capMB > 0 && rssBytes !== undefined && rssBytes > capMB * MIB;
}

export const mib = (bytes: number): number => Math.round((bytes / MIB) * 10) / 10;
