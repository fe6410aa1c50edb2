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

export interface Reclaimed {
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
 * stays that size after they end, until its memory reducer, after some seconds of quiet, gets to it. When the last
 * command of a burst has been answered (none left in flight, at least `burst` since the last collection), one
 * collection for low memory does that at once, in a tick of its own after the last reply.
 */
export class MemoryReclaimer {
  private inFlight = 0;
  private ended = 0;
  private scheduled = false;

  constructor(
    private readonly onReclaimed: (done: Reclaimed) => void,
    private readonly burst: number,
    private readonly collect: Collect,
  ) {}

  /** Counts `work` as one command of the current burst. */
  track<T>(work: () => Promise<T>): Promise<T> {
    this.inFlight++;
    return work().finally(() => {
      this.inFlight--;
      this.ended++;
      if (this.inFlight === 0 && this.ended >= this.burst && !this.scheduled) {
        this.scheduled = true;
        // After the reply: it is written in this tick.
        setImmediate(() => void this.reclaim());
      }
    });
  }

  private async reclaim(): Promise<void> {
    // A new burst began meanwhile: its end collects.
    if (this.inFlight > 0) {
      this.scheduled = false;
      return;
    }
    const commands = this.ended;
    this.ended = 0;
    const started = performance.now();
    const heapBefore = getHeapStatistics().total_heap_size;
    let error: string | undefined;
    try {
      await this.collect();
    } catch (err) {
      error = (err as Error).message;
    }
    this.scheduled = false;
    this.onReclaimed({
      commands,
      heapBefore,
      heapAfter: getHeapStatistics().total_heap_size,
      ms: performance.now() - started,
      ...(error === undefined ? {} : { error }),
    });
  }
}
