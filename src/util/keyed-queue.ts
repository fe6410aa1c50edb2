/**
 * Runs jobs one at a time per key, in the order they were queued; jobs of different keys run in parallel.
 * A failed job does not stop the ones after it.
 */
export class KeyedQueue<K> {
  private readonly tails = new Map<K, { tail: Promise<unknown>; jobs: number }>();

  run<T>(key: K, job: () => Promise<T>): Promise<T> {
    const queued = this.tails.get(key);
    const previous = queued?.tail ?? Promise.resolve();
    const result = previous.then(job, job);
    const tail = result.catch(() => {});
    const entry = { tail, jobs: (queued?.jobs ?? 0) + 1 };
    this.tails.set(key, entry);
    void tail.then(() => {
      const now = this.tails.get(key)!;
      now.jobs--;
      // Forget the key once its queue is empty, so the map does not grow with every key ever seen.
      if (now.tail === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Jobs of the key queued or running. */
  depth(key: K): number {
    return this.tails.get(key)?.jobs ?? 0;
  }

  get size(): number {
    return this.tails.size;
  }
}
