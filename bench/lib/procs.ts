import { readdir, readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';

/** Direct children of a process (spawned by its main thread), from /proc. */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * The processes below `pid` but those in `leaves` and what is below them: with the tunnels as leaves, a few reads of
 * /proc (the daemon, its spawner) whatever the number of tunnels, cheap enough to probe in a tight loop.
 */
export function descendantsBut(pid: number, leaves: ReadonlySet<number>): number[] {
  const all: number[] = [];
  for (const child of childrenOf(pid)) if (!leaves.has(child)) all.push(child, ...descendantsBut(child, leaves));
  return all;
}

/** Every process below `pid`: its children, theirs, and so on (the tunnels are children of the daemon's spawner). */
export const descendantsOf = (pid: number): number[] => descendantsBut(pid, new Set());

/** Every live process whose command line holds `-c <config>`, keyed by that config path. */
export async function processesByConfig(marker: string): Promise<Map<string, number[]>> {
  const found = new Map<string, number[]>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'latin1').catch(() => '');
    if (!cmdline.includes(marker)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'latin1').catch(() => '');
    if (!stat || stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z') continue;
    const args = cmdline.split('\0');
    const config = args[args.indexOf('-c') + 1];
    if (!config) continue;
    found.set(config, [...(found.get(config) ?? []), Number(entry)]);
  }
  return found;
}
