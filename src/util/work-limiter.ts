/** Thrown by WorkLimiter.run when both its running slots and its queue are full. */
export class WorkQueueFullError extends Error {
  constructor() {
    super('work queue is full');
    this.name = 'WorkQueueFullError';
  }
}

/**
 * Runs at most `concurrency` jobs at once and queues at most `maxQueued` more; past that it refuses at once,
 * so a flood costs a bounded amount of memory and CPU instead of starving everything else.
 */
export class WorkLimiter {
  private running = 0;
  private readonly queue: Array<() => void> = [];

  constructor(
    private readonly concurrency: number,
    private readonly maxQueued: number,
  ) {}

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.queue.length >= this.maxQueued) throw new WorkQueueFullError();
      await new Promise<void>((resolve) => this.queue.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await job();
    } finally {
      const next = this.queue.shift();
      // The slot passes straight to the next job, so `running` stays the same.
      if (next) next();
      else this.running--;
    }
  }

  get pending(): number {
    return this.running + this.queue.length;
  }
}
