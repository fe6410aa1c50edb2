import { Subject } from 'rxjs';
import { systemEntryFromPino, type SystemLogEntry } from './log-entries.js';

/**
 * The daemon's own log as a stream: every pino entry also enters `entries$`, and the latest `capacity` are kept
 * for replay to each new client (nothing older is kept in memory).
 */
export class SystemLog {
  readonly entries$ = new Subject<SystemLogEntry>();
  private readonly ring: SystemLogEntry[] = [];

  constructor(readonly capacity = 100) {}

  /** pino's tee: receives each serialized line. */
  readonly onLine = (line: string): void => {
    const entry = systemEntryFromPino(line);
    if (!entry) return;
    this.ring.push(entry);
    if (this.ring.length > this.capacity) this.ring.shift();
    this.entries$.next(entry);
  };

  recent(): SystemLogEntry[] {
    return [...this.ring];
  }
}
