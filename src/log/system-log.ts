import { Subject } from '../util/rx.js';
import { systemEntryFromPino, type SystemLogEntry } from './log-entries.js';

/**
 * The daemon's own log as a stream: every pino entry also enters `entries$`, and the latest `capacity` are kept
 * for replay to each new client (nothing older is kept in memory). Lines are kept as pino wrote them and become
 * entries only when someone reads them: a daemon nobody watches does not parse its own output back.
 */
export class SystemLog {
  readonly entries$ = new Subject<SystemLogEntry>();
  private readonly ring: string[] = [];

  constructor(readonly capacity = 100) {}

  /** pino's tee: receives each serialized line. */
  readonly onLine = (line: string): void => {
    this.ring.push(line);
    if (this.ring.length > this.capacity) this.ring.shift();
    if (!this.entries$.observed) return;
    const entry = systemEntryFromPino(line);
    if (entry) this.entries$.next(entry);
  };

  recent(): SystemLogEntry[] {
    return this.ring.flatMap((line) => systemEntryFromPino(line) ?? []);
  }
}
