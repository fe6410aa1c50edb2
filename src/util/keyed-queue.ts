/**
 * Runs jobs one at a time per key, in the order they were queued; jobs of different keys run in parallel.
 * A failed job does not stop the ones after it.
 */
export class KeyedQueue<K> {
  private readonly tails = new Map<K, Promise<unknown>>();

  run<T>(key: K, job: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(job, job);
    const tail = result.catch(() => {});
    this.tails.set(key, tail);
    // Forget the key once its queue is empty, so the map does not grow with every key ever seen.
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  get size(): number {
    return this.tails.size;
  }
}
