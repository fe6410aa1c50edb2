/**
 * Things done every period, each at its own time, kept in the order they fall due: each one done goes to the end, a
 * period on, so a tick looks only at those due and the first that is not, and a thousand followed cost a tick nothing
 * but their own work. A change of the period (or an entry added out of order: `unordered`) puts them back in order
 * first, with none waiting past a period from now.
 */
export class DueOrder<K, T extends { due: number }> extends Map<K, T> {
  /** The period the order was made for; 0: not in order. */
  private orderedFor = 0;

  /** An entry was added whose due time is not the latest: the next `takeDue` sorts it in. */
  unordered(): void {
    this.orderedFor = 0;
  }

  /** Calls `act` for each entry due at `now`, after setting it due a period from now (a late tick does not bunch). */
  takeDue(now: number, periodMs: number, act: (key: K, entry: T) => void): void {
    if (periodMs !== this.orderedFor) this.reorder(now, periodMs);
    for (const [key, entry] of this) {
      if (entry.due > now) break;
      entry.due = now + periodMs;
      this.delete(key);
      this.set(key, entry);
      act(key, entry);
    }
  }

  private reorder(now: number, periodMs: number): void {
    const latest = now + periodMs;
    for (const entry of this.values()) entry.due = Math.min(entry.due, latest);
    const sorted = [...this].sort((a, b) => a[1].due - b[1].due);
    this.clear();
    for (const [key, entry] of sorted) this.set(key, entry);
    this.orderedFor = periodMs;
  }
}
