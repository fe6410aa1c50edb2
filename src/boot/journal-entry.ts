// What one line of `journalctl -o json` says: output of a tunnel unit. Pure: the follower that reads the journal
// is in actors/systemd-journal.ts. What systemd says of the units themselves comes through its D-Bus signals
// (unit-signals.ts), not through the messages PID 1 may or may not write to the journal.

/** The journal fields tunnelward reads (journalctl `--output-fields`; cursor and timestamps come always). */
export const JOURNAL_FIELDS = ['MESSAGE', '_SYSTEMD_UNIT', '_SYSTEMD_INVOCATION_ID'] as const;

const TUNNEL_UNIT = /^tunnel_([0-9]{1,9})\.service$/;

/** A line the tunnel wrote (its stdout or stderr). */
export interface JournalOutput {
  id: number;
  invocation: string;
  text: string;
}

export interface JournalLine {
  cursor: string | undefined;
  output: JournalOutput | undefined;
}

/** journald keeps a message that is not valid UTF-8 as an array of bytes. */
function text(value: unknown): string {
  if (Array.isArray(value)) return Buffer.from(value as number[]).toString('utf8');
  return typeof value === 'string' ? value : '';
}

const unitId = (unit: unknown): number | undefined => {
  const m = typeof unit === 'string' ? TUNNEL_UNIT.exec(unit) : null;
  return m ? Number(m[1]) : undefined;
};

/**
 * Reads one journal entry. Only a trusted field decides who wrote it: `_SYSTEMD_UNIT` is set by journald itself,
 * so output counts only when it came from that unit's processes.
 */
export function parseJournalLine(line: string): JournalLine {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return { cursor: undefined, output: undefined };
  }
  const cursor = typeof entry.__CURSOR === 'string' ? entry.__CURSOR : undefined;
  const id = unitId(entry._SYSTEMD_UNIT);
  if (id === undefined) return { cursor, output: undefined };
  return { cursor, output: { id, invocation: text(entry._SYSTEMD_INVOCATION_ID), text: text(entry.MESSAGE) } };
}
