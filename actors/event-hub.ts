import { Subject } from 'rxjs';
import type { Draft, NotificationEvent } from './webhook-notifier.js';

/** Events after a sequence number: all of them, or `lost` when some are no longer kept. */
export type Since = { events: NotificationEvent[] } | { lost: true; oldest: number | null };

/**
 * Every event of the daemon, numbered once (`seq`, persisted, monotonic across restarts) and stamped, then handed
 * to whoever follows: the webhook notifier and the clients of `/system/events`. The latest ones are kept, so a
 * client that reconnects can ask for what it missed.
 */
export class EventHub {
  readonly events$ = new Subject<NotificationEvent>();
  /** The latest events, oldest first from `start`: a ring, so keeping one more does not move the others. */
  private readonly history: NotificationEvent[] = [];
  private start = 0;
  private last: number;

  constructor(
    private readonly nextSeq: () => number,
    /** The last number handed out before this hub began. */
    lastSeq: number,
    private readonly capacity: number,
    /** Masks known secrets in each event before anyone hears of it (clients, webhooks). */
    private readonly redact: <T>(value: T) => T = (value) => value,
  ) {
    this.last = lastSeq;
  }

  get lastSeq(): number {
    return this.last;
  }

  publish(draft: Draft): NotificationEvent {
    const event: NotificationEvent = { ...this.redact(draft), at: new Date().toISOString(), seq: this.nextSeq() };
    this.last = event.seq;
    if (this.history.length < this.capacity) this.history.push(event);
    else {
      this.history[this.start] = event;
      this.start = (this.start + 1) % this.capacity;
    }
    this.events$.next(event);
    return event;
  }

  /** The events after `seq`, in order, if every one of them is still kept. */
  since(seq: number): Since {
    if (seq === this.last) return { events: [] };
    const oldest = this.history[this.start]?.seq ?? null;
    // Numbers from the future (a database restored from a backup) or from before what is kept: a gap.
    if (seq > this.last || oldest === null || seq < oldest - 1) return { lost: true, oldest };
    const ordered = [...this.history.slice(this.start), ...this.history.slice(0, this.start)];
    return { events: ordered.filter((e) => e.seq > seq) };
  }

  close(): void {
    this.events$.complete();
  }
}
