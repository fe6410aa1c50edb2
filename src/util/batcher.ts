/**
 * Serves requests for keys in batches: a request while no batch runs starts one at once; requests that arrive
 * while a batch runs wait together for the next one. One `systemctl start a b c ...` for a thousand starts that
 * arrive at once, instead of a thousand commands. Each request gets its own key's result.
 */
export class Batcher<K, V> {
  private waiting = new Map<K, Array<{ resolve: (value: V) => void; reject: (err: unknown) => void }>>();
  private running = false;

  /** `run` serves one batch: a result for every key it was given (a missing one fails that key's requests). */
  constructor(private readonly run: (keys: K[]) => Promise<Map<K, V>>) {}

  request(key: K): Promise<V> {
    return new Promise((resolve, reject) => {
      const waiters = this.waiting.get(key);
      if (waiters) waiters.push({ resolve, reject });
      else this.waiting.set(key, [{ resolve, reject }]);
      this.next();
    });
  }

  private next(): void {
    if (this.running || this.waiting.size === 0) return;
    this.running = true;
    const batch = this.waiting;
    this.waiting = new Map();
    this.run([...batch.keys()])
      .then(
        (results) => {
          for (const [key, waiters] of batch) {
            const settle = (w: (typeof waiters)[number]) =>
              results.has(key) ? w.resolve(results.get(key) as V) : w.reject(new Error(`no result for ${String(key)}`));
            waiters.forEach(settle);
          }
        },
        (err: unknown) => {
          for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
        },
      )
      .finally(() => {
        this.running = false;
        this.next();
      });
  }
}

/**
 * A command over many arguments (`systemctl enable a b c`, `mkfifo a b c`) run once for the requests that come
 * together. When the batch fails, each argument is tried alone, so only the request that fails gets the error.
 */
export function batchedCommand<K>(run: (keys: K[]) => Promise<unknown>): (key: K) => Promise<void> {
  const attempt = (keys: K[]) =>
    run(keys).then(
      () => undefined,
      (err: Error) => err,
    );
  const batcher = new Batcher<K, Error | undefined>(async (keys) => {
    const err = await attempt(keys);
    const results = new Map(keys.map((key) => [key, err]));
    if (err && keys.length > 1) for (const key of keys) results.set(key, await attempt([key]));
    return results;
  });
  return async (key) => {
    const err = await batcher.request(key);
    if (err) throw err;
  };
}
