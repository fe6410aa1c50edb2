import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

/** A full collection that also gives emptied memory back to the system. */
export type Collect = () => Promise<void>;

/**
 * V8's collection for low memory: every generation, the old one compacted, and the pages it empties unmapped (a
 * plain full collection, as `--expose-gc` gives, frees the objects but keeps the heap at the size it grew to).
 * Node offers it only through the inspector protocol, here a session inside the process itself: no port, no
 * debugger, connected only for the call. The collection runs in a task of its own, after the current one.
 */
export const lowMemoryCollection: Collect = async () => {
  // A Node built without the inspector has nothing to offer: the heap then waits for V8's own reducer.
  const inspector = await import('node:inspector').catch(() => undefined);
  if (!inspector) return;
  const session = new inspector.Session();
  session.connect();
  await new Promise<void>((resolve) =>
    session.post('HeapProfiler.collectGarbage', () => {
      // Not from inside the session's own callback: a session disconnected there keeps the process alive.
      setImmediate(() => {
        session.disconnect();
        resolve();
      });
    }),
  );
};

/** Calls `listener` after each of V8's major (mark-compact) collections; returns what stops it. */
export type MajorCollections = (listener: () => void) => () => void;

/** V8's major collections, as Node reports them (its `gc` performance entries). */
export const majorCollections: MajorCollections = (listener) => {
  const observer = new PerformanceObserver((list) => {
    const entries = list.getEntries() as (PerformanceEntry & { detail?: { kind?: number } })[];
    if (entries.some((e) => e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) listener();
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => observer.disconnect();
};

/** When the heap is reclaimed outside a burst of commands: grown this much since the last time, then quiet this long. */
export interface GrowthRule {
  majors: MajorCollections;
  /** The heap's size now, in bytes. */
  heapSize: () => number;
  quietMs: number;
}

/** V8's own rule for its memory reducer, which this replaces: 10% and 10 MiB above the size after the last time, 8 s. */
export const HEAP_GROWTH: GrowthRule = {
  majors: majorCollections,
  heapSize: () => getHeapStatistics().total_heap_size,
  quietMs: 8000,
};
const GROWTH_FACTOR = 1.1;
const GROWTH_BYTES = 10 * 1048576;

export interface Reclaimed {
  /** Why: the end of a burst of commands, or the heap grown since the last collection (then `commands` is 0). */
  reason: 'burst' | 'growth';
  /** Commands in the burst that ended. */
  commands: number;
  /** V8's heap (committed) before and after, in bytes. */
  heapBefore: number;
  heapAfter: number;
  ms: number;
  /** Why the collection could not be run, if it could not. */
  error?: string;
}

/**
 * Gives a burst's memory back once the burst is over. While a thousand tunnels start, a thousand requests and
 * their waits are alive at once, and the database's snapshots follow each other: V8's heap grows to hold them and
 * stays that size after they end. When the last command of a burst has been answered (none left in flight, at
 * least `burst` since the last collection), one collection for low memory does that at once, in a tick of its own
 * after the last reply.
 *
 * Growth that no burst of commands explains (listings, log streams) is given back by the same collection, on V8's
 * own rule for its memory reducer (`growth`): after a major collection that leaves the heap 10% and 10 MiB above
 * its size after the last one of ours, and 8 s without another. The daemon runs with V8's reducer off
 * (node-flags.ts): it measured the heap in the middle of the burst's collection, saw the burst's size as growth,
 * and 8 s later collected the just-collected heap twice more (~150 ms of CPU for 1000 tunnels, freeing ~5 MB).
 */
export class MemoryReclaimer {
  private inFlight = 0;
  private ended = 0;
  private scheduled = false;
  /** The heap's size after the last collection of ours (or when watching began). */
  private base = 0;
  private quiet: NodeJS.Timeout | undefined;
  private stopWatching: (() => void) | undefined;

  constructor(
    private readonly onReclaimed: (done: Reclaimed) => void,
    private readonly burst: number,
    private readonly collect: Collect,
    private readonly growth?: GrowthRule,
  ) {
    if (!growth) return;
    this.base = growth.heapSize();
    this.stopWatching = growth.majors(() => this.majorCollected(growth));
  }

  /** Counts `work` as one command of the current burst. */
  track<T>(work: () => Promise<T>): Promise<T> {
    this.inFlight++;
    return work().finally(() => {
      this.inFlight--;
      this.ended++;
      if (this.inFlight === 0 && this.ended >= this.burst && !this.scheduled) {
        this.scheduled = true;
        // After the reply: it is written in this tick.
        setImmediate(() => void this.reclaim('burst'));
      }
    });
  }

  /** Stops watching the heap's growth. */
  close(): void {
    this.stopWatching?.();
    this.stopWatching = undefined;
    clearTimeout(this.quiet);
  }

  private majorCollected(rule: GrowthRule): void {
    // Each major collection while waiting starts the quiet time again, as V8's reducer does.
    if (this.quiet === undefined && rule.heapSize() < Math.max(this.base * GROWTH_FACTOR, this.base + GROWTH_BYTES)) {
      return;
    }
    this.wait(rule.quietMs);
  }

  private wait(ms: number): void {
    clearTimeout(this.quiet);
    this.quiet = setTimeout(() => {
      this.quiet = undefined;
      if (this.scheduled) return;
      // Commands in flight: the growth is looked at again after as long.
      if (this.inFlight > 0) return this.wait(ms);
      this.scheduled = true;
      void this.reclaim('growth');
    }, ms);
    this.quiet.unref();
  }

  private async reclaim(reason: Reclaimed['reason']): Promise<void> {
    // A new burst began meanwhile: its end collects.
    if (this.inFlight > 0) {
      this.scheduled = false;
      return;
    }
    const commands = reason === 'burst' ? this.ended : 0;
    if (reason === 'burst') this.ended = 0;
    const started = performance.now();
    const heapBefore = getHeapStatistics().total_heap_size;
    let error: string | undefined;
    try {
      await this.collect();
    } catch (err) {
      error = (err as Error).message;
    }
    this.scheduled = false;
    // The collection's own major collections are not growth; a wait they started is over.
    clearTimeout(this.quiet);
    this.quiet = undefined;
    if (this.growth) this.base = this.growth.heapSize();
    this.onReclaimed({
      reason,
      commands,
      heapBefore,
      heapAfter: getHeapStatistics().total_heap_size,
      ms: performance.now() - started,
      ...(error === undefined ? {} : { error }),
    });
  }
}
