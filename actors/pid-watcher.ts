import { pidExists, procStat } from '../src/system/proc.js';

/** How a process ended, as far as we can know it: a process that is not our child shows only that it ended. */
export interface ProcessExit {
  code: number | null;
  signal: string | null;
  /** Where an init system restarts tunnels itself: what it does next (see the instance machine's `ExitInfo`). */
  next?: 'restart' | 'give-up' | 'stop';
}

/** Every this many polls, watched processes are also checked for zombies and pid reuse (a costlier read). */
const DEEP_CHECK_EVERY = 10;

interface Watched {
  startTicks: number | null;
  exited: Promise<ProcessExit>;
  resolve: (exit: ProcessExit) => void;
}

/** What /proc says beyond a signal 0: a zombie, or another process that got the pid since, has ended too. */
function hasEnded(pid: number, watched: Watched): boolean {
  const stat = procStat(pid);
  return !stat || stat.state === 'Z' || (watched.startTicks !== null && stat.startTicks !== watched.startTicks);
}

/**
 * Notices the exit of processes that are not our children (adopted from an earlier tunnelward, or run by an init
 * system): one timer polls them all with a signal 0, and now and then reads /proc for zombies and reused pids.
 */
export class PidWatcher {
  private readonly watched = new Map<number, Watched>();
  private timer: NodeJS.Timeout | undefined;
  private polls = 0;

  constructor(private readonly pollMs = 1000) {}

  watch(pid: number, startTicks: number | null): Promise<ProcessExit> {
    const known = this.watched.get(pid);
    if (known) return known.exited;
    let resolve!: (exit: ProcessExit) => void;
    const exited = new Promise<ProcessExit>((r) => (resolve = r));
    this.watched.set(pid, { startTicks, exited, resolve });
    this.timer ??= setInterval(() => this.poll(), this.pollMs).unref();
    return exited;
  }

  get size(): number {
    return this.watched.size;
  }

  has(pid: number): boolean {
    return this.watched.has(pid);
  }

  exitOf(pid: number): Promise<ProcessExit> | undefined {
    return this.watched.get(pid)?.exited;
  }

  /** Checks one process now (a hint that it may have ended arrived); a live one stays watched. */
  checkNow(pid: number): void {
    const watched = this.watched.get(pid);
    if (watched && (!pidExists(pid) || hasEnded(pid, watched))) this.end(pid, watched);
  }

  private poll(): void {
    const deep = ++this.polls % DEEP_CHECK_EVERY === 0;
    for (const [pid, watched] of this.watched) {
      if (!pidExists(pid) || (deep && hasEnded(pid, watched))) this.end(pid, watched);
    }
    if (this.watched.size === 0) this.close();
  }

  private end(pid: number, watched: Watched): void {
    this.watched.delete(pid);
    watched.resolve({ code: null, signal: null });
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
