import { readFileSync } from 'node:fs';
import { startedAtMs, statFields } from './proc.js';

/** What one look at /proc/<pid>/stat says of a process's use of the machine. */
export interface ProcSample {
  startTicks: number;
  /** utime + stime, in clock ticks. */
  cpuTicks: number;
  rssPages: number;
}

/** CPU (one core = 100) and resident memory of a running process. */
export interface Usage {
  cpuPercent: number;
  rssBytes: number;
}

/** Clock ticks per second of /proc's times (USER_HZ: 100 on every Linux build that matters). */
const TICKS_PER_SECOND = 100;
/** Below this, a delta of ticks says more about the tick than the process: the last figure is kept. */
const MIN_INTERVAL_MS = 1000;

/** One read of /proc/<pid>/stat, or undefined when the process is gone. */
export function readProcSample(pid: number): ProcSample | undefined {
  const rest = statFields(pid);
  if (!rest) return undefined;
  const sample = {
    cpuTicks: Number(rest[11]) + Number(rest[12]),
    startTicks: Number(rest[19]),
    rssPages: Number(rest[21]),
  };
  return Number.isFinite(sample.cpuTicks + sample.startTicks + sample.rssPages) ? sample : undefined;
}

let pageBytes: number | undefined;
/** The page size /proc counts rss in: our own rss in bytes (Node reads it from the same file) over it in pages. */
function pageSize(): number {
  if (pageBytes === undefined) {
    pageBytes = 4096;
    try {
      const pages = Number(readFileSync('/proc/self/statm', 'latin1').split(' ')[1]);
      const ratio = process.memoryUsage.rss() / pages;
      if (Number.isFinite(ratio) && ratio > 0) pageBytes = 2 ** Math.round(Math.log2(ratio));
    } catch {
      // not Linux: the usual size
    }
  }
  return pageBytes;
}

/**
 * CPU and memory of processes, from one read of /proc per pid and never a wait: CPU is the share of a core the
 * process used since the last look at it (at least a second before; a look sooner gives the last figure again), or,
 * at the first look, since it started (what `ps` shows).
 */
export class ProcessUsage {
  private readonly last = new Map<number, { sample: ProcSample; at: number; cpuPercent: number }>();

  constructor(
    private readonly read: (pid: number) => ProcSample | undefined = readProcSample,
    private readonly now: () => number = Date.now,
    private readonly startedAt: (startTicks: number) => number | null = startedAtMs,
    private readonly pageBytes: () => number = pageSize,
  ) {}

  /** The usage of each pid that is still there; what is kept of the others is forgotten. */
  of(pids: Iterable<number>): Map<number, Usage> {
    const now = this.now();
    const usage = new Map<number, Usage>();
    const seen = new Set<number>();
    for (const pid of pids) {
      seen.add(pid);
      const sample = this.read(pid);
      if (!sample) continue;
      const before = this.last.get(pid);
      let cpuPercent: number;
      if (before && before.sample.startTicks === sample.startTicks) {
        if (now - before.at < MIN_INTERVAL_MS) {
          usage.set(pid, { cpuPercent: before.cpuPercent, rssBytes: sample.rssPages * this.pageBytes() });
          continue;
        }
        cpuPercent = share(sample.cpuTicks - before.sample.cpuTicks, now - before.at);
      } else {
        const started = this.startedAt(sample.startTicks);
        cpuPercent = started === null ? 0 : share(sample.cpuTicks, now - started);
      }
      this.last.set(pid, { sample, at: now, cpuPercent });
      usage.set(pid, { cpuPercent, rssBytes: sample.rssPages * this.pageBytes() });
    }
    for (const pid of this.last.keys()) if (!seen.has(pid)) this.last.delete(pid);
    return usage;
  }
}

/** Ticks over a wall-clock span as a percentage of one core, to one decimal. */
function share(ticks: number, spanMs: number): number {
  if (spanMs <= 0 || ticks <= 0) return 0;
  return Math.round((ticks / TICKS_PER_SECOND / (spanMs / 1000)) * 1000) / 10;
}
