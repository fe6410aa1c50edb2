import { Subject } from '../src/util/rx.js';
import { crashPoint } from '../src/util/crash-points.js';
import type { Draft, NotificationEvent } from '../src/events/vocabulary.js';

/**
 * Events after a sequence number: all of them, or `lost` when some are no longer kept. `restarted`: the number is
 * from before the daemon's start, so what followed it then, and while no daemon ran, is not known; the events
 * are those of this run.
 */
export type Since = { events: NotificationEvent[]; restarted?: true } | { lost: true; oldest: number | null };

/** Where the events' numbers come from (storage/meta.ts's PersistentCounter). */
export interface EventNumbers {
  /** The last number handed out before the hub began. */
  readonly current: number;
  next(): number;
  /** Nothing when `n` may be shown now; otherwise a promise of when it may (no restart can hand it out again). */
  saved(n: number): Promise<void> | undefined;
}

/**
 * Every event of the daemon, numbered once (`seq`, persisted, monotonic across restarts) and stamped, then handed
 * to whoever follows: the webhook notifier and the clients of `/system/events`. An event whose number is not yet
 * safe from reuse after a crash waits (with those after it, in order) until it is. The latest ones are kept, so a
 * client that reconnects can ask for what it missed.
 */
export class EventHub {
  readonly events$ = new Subject<NotificationEvent>();
  /** The latest events, oldest first from `start`: a ring, so keeping one more does not move the others. */
  private readonly history: NotificationEvent[] = [];
  private start = 0;
  private last: number;
  /** The last number before this run's first: every number of an earlier run is at most this. */
  private readonly base: number;
  /** Numbered, waiting for their numbers to be saved, oldest first. */
  private held: NotificationEvent[] = [];

  constructor(
    private readonly numbers: EventNumbers,
    private readonly capacity: number,
    /** Masks known secrets in each event before anyone hears of it (clients, webhooks). */
    private readonly redact: <T>(value: T) => T = (value) => value,
  ) {
    this.last = numbers.current;
    this.base = numbers.current;
  }

  /** The seq of the latest event handed out. */
  get lastSeq(): number {
    return this.last;
  }

  publish(draft: Draft): void {
    const event: NotificationEvent = { ...this.redact(draft), at: new Date().toISOString(), seq: this.numbers.next() };
    const saved = this.numbers.saved(event.seq);
    if (saved === undefined && this.held.length === 0) return this.issue(event);
    this.held.push(event);
    // Numbers are saved in order: once this one's is, so are those of the events held before it.
    if (saved === undefined) this.release(event.seq);
    else void saved.then(() => this.release(event.seq));
  }

  private release(upTo: number): void {
    while (this.held.length > 0 && this.held[0]!.seq <= upTo) this.issue(this.held.shift()!);
  }

  private issue(event: NotificationEvent): void {
    this.last = event.seq;
    if (this.history.length < this.capacity) this.history.push(event);
    else {
      this.history[this.start] = event;
      this.start = (this.start + 1) % this.capacity;
    }
    this.events$.next(event);
    crashPoint('event:issued', { id: event.seq });
  }

  /** The events after `seq`, in order, if every one of them is still kept. */
  since(seq: number): Since {
    // A number of an earlier run: this run's events are what is known after it.
    const restarted = seq < this.base ? { restarted: true as const } : {};
    const from = Math.max(seq, this.base);
    if (from === this.last) return { events: [], ...restarted };
    const oldest = this.history[this.start]?.seq ?? null;
    // Numbers from the future (a database restored from a backup) or from before what is kept: a gap.
    if (from > this.last || oldest === null || from < oldest - 1) return { lost: true, oldest };
    const ordered = [...this.history.slice(this.start), ...this.history.slice(0, this.start)];
    return { events: ordered.filter((e) => e.seq > from), ...restarted };
  }

  close(): void {
    this.events$.complete();
  }
}
