import { notFound } from '../src/errors.js';
import type { InstanceRecord } from '../src/instances/instance-store.js';
import { KeyedQueue } from '../src/util/keyed-queue.js';

const MINT = Symbol('slot');

/**
 * Proof that its holder runs in an instance's queue slot: every command and every change of the instance runs in
 * one, one at a time, in the order they came. Only the queue makes a slot, for the one job it runs, and closes it when
 * that job ends; a function that must run in the queue (a command, an apply by restart, a write of the config file)
 * takes a slot, so that calling it from anywhere else does not compile, and using a slot after its job fails.
 */
export class Slot {
  #open = true;

  /** @internal made by InstanceQueue only */
  constructor(
    mint: typeof MINT,
    readonly id: number,
  ) {
    if (mint !== MINT) throw new Error('a slot is made by the instance queue only');
  }

  /** Throws unless the job this slot was made for is still running. */
  check(): void {
    if (!this.#open) throw new Error(`the queue slot of instance ${this.id} was used after its job ended`);
  }

  close(): void {
    this.#open = false;
  }
}

/** One queue per instance: jobs of an instance run one at a time in their order; instances run side by side. */
export class InstanceQueue {
  private readonly queue = new KeyedQueue<number>();

  constructor(private readonly recordOf: (id: number) => InstanceRecord | undefined) {}

  /**
   * Runs `job` in the instance's slot, after every job queued before it, with the instance's record as it is when
   * the job begins (a 404 when it is gone by then).
   */
  /** Commands and changes of the instance queued or running: what its status shows as `queued`. */
  depth(id: number): number {
    return this.queue.depth(id);
  }

  run<T>(id: number, job: (slot: Slot, record: InstanceRecord) => Promise<T>): Promise<T> {
    return this.queue.run(id, async () => {
      const record = this.recordOf(id);
      if (!record || record.pending === 'create') throw notFound(`instance ${id} not found`);
      const slot = new Slot(MINT, id);
      try {
        return await job(slot, record);
      } finally {
        slot.close();
      }
    });
  }
}
