import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';

const statBuffer = Buffer.alloc(1024);

/**
 * The fields of /proc/<pid>/stat after the command name (`state` first), from one read (open, read, close: a tenth
 * of what readFileSync costs on a file /proc says is empty), or undefined when the process is gone.
 */
export function statFields(pid: number): string[] | undefined {
  let text: string;
  try {
    const fd = openSync(`/proc/${pid}/stat`, 'r');
    try {
      text = statBuffer.toString('latin1', 0, readSync(fd, statBuffer, 0, statBuffer.length, 0));
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: fields after it are counted from the last ')'.
  return text.slice(text.lastIndexOf(')') + 2).split(' ');
}

/**
 * Reads what /proc says of a process: its state letter and its start time (clock ticks after boot), which with the
 * pid identifies one process for good (a pid can be reused, a pid and a start time cannot). Undefined when gone.
 */
export function procStat(pid: number): { state: string; startTicks: number } | undefined {
  const rest = statFields(pid);
  return rest && { state: rest[0]!, startTicks: Number(rest[19]) };
}

/** The arguments of a process (UTF-8, as paths are written), or undefined when it is gone. */
export function procArgs(pid: number | string): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return undefined;
  }
}

/** The config file a tunnel's command line names (`... -c <path>`), if any. */
export function configPathOf(args: readonly string[]): string | undefined {
  const at = args.indexOf('-c');
  return at >= 0 ? args[at + 1] : undefined;
}

/** True when a signal can reach the pid (it exists, zombie or not). */
export function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The host's boot id; TUNNELWARD_BOOT_ID stands in for it in tests. */
export function hostBootId(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TUNNELWARD_BOOT_ID) return env.TUNNELWARD_BOOT_ID;
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}

/** Clock ticks per second of /proc's start times (USER_HZ, 100 on every Linux build that matters). */
const TICKS_PER_SECOND = 100;
let bootTimeMs: number | undefined;

/** When a process started (ms since the epoch), from its start time in ticks after boot; null when unknown. */
export function startedAtMs(startTicks: number): number | null {
  if (bootTimeMs === undefined) {
    try {
      bootTimeMs = Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'latin1'))?.[1] ?? NaN) * 1000;
    } catch {
      bootTimeMs = NaN;
    }
  }
  return Number.isFinite(bootTimeMs) ? bootTimeMs + (startTicks * 1000) / TICKS_PER_SECOND : null;
}

/** A live process, identified for good by its pid and start time. */
export interface LiveProcess {
  pid: number;
  startTicks: number;
}

/**
 * Every live (not zombie) process whose command line `select` picks, grouped by what it returns: one pass over /proc.
 */
export function liveProcesses(select: (args: string[]) => string | undefined): Map<string, LiveProcess[]> {
  const found = new Map<string, LiveProcess[]>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) > 57 || !/^\d+$/.test(entry)) continue;
    const args = procArgs(entry);
    const key = args && select(args);
    if (key === undefined) continue;
    const pid = Number(entry);
    const stat = procStat(pid);
    if (!stat || stat.state === 'Z') continue;
    const list = found.get(key) ?? [];
    list.push({ pid, startTicks: stat.startTicks });
    found.set(key, list);
  }
  return found;
}

/**
 * Every live process whose command line runs one of `configPaths` (`... -c <path>`), by path, whatever the number of
 * paths. Finds a tunnel whose pid was never recorded.
 */
export function processesByConfigPath(configPaths: ReadonlySet<string>): Map<string, LiveProcess[]> {
  if (configPaths.size === 0) return new Map();
  return liveProcesses((args) => {
    const path = configPathOf(args);
    return path !== undefined && configPaths.has(path) ? path : undefined;
  });
}
