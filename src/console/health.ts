import { explain, get, type SelfCheck, type Severity } from './api';
import type { EventStream } from './events';

/** How often an admin's console asks for the self-check on its own: each run writes probes and starts the client. */
const RECHECK_MS = 5 * 60_000;

export interface HealthState {
  report: SelfCheck | null;
  /** When the last answer came (browser ms). */
  checkedAt: number | null;
  running: boolean;
  /** Why the self-check could not be read. */
  error: string;
}

/** How many checks found each severity. */
export function tally(report: SelfCheck | null): Record<Severity, number> {
  const counts: Record<Severity, number> = { ok: 0, warn: 0, fail: 0 };
  for (const check of report?.checks ?? []) counts[check.severity]++;
  return counts;
}

/**
 * The daemon's self-check (GET /system/selfCheck, admin) as one admin tab knows it: read at the start, every
 * five minutes, after the event stream came back from a drop (the daemon may have restarted), and on demand. The
 * header's indicator and the Health page show the same answer.
 */
export class HealthMonitor {
  state: HealthState = { report: null, checkedAt: null, running: false, error: '' };
  private readonly listeners = new Set<(state: HealthState) => void>();
  private pending: Promise<void> | undefined;
  private timer: number | undefined;
  private unsubscribe: (() => void) | undefined;

  start(events: EventStream): void {
    void this.run();
    this.timer = window.setInterval(() => void this.run(), RECHECK_MS);
    this.unsubscribe = events.subscribe((event) => {
      if (event.event === 'resync') void this.run();
    });
  }

  stop(): void {
    window.clearInterval(this.timer);
    this.unsubscribe?.();
  }

  subscribe(listener: (state: HealthState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Runs the self-check; a call while one runs waits for that one. */
  run(): Promise<void> {
    this.pending ??= this.ask().finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async ask(): Promise<void> {
    this.set({ running: true });
    try {
      const reply = await get<SelfCheck>('/system/selfCheck');
      this.set({ report: reply.data, checkedAt: Date.now(), running: false, error: '' });
    } catch (err) {
      this.set({ running: false, error: explain(err) });
    }
  }

  private set(change: Partial<HealthState>): void {
    this.state = { ...this.state, ...change };
    for (const listener of this.listeners) listener(this.state);
  }
}
