// What one line of `journalctl -o json` says about a tunnel unit: output of the tunnel, or systemd's own account of
// the unit (a process exit, the end of a run, a start done or failed). Pure: the follower that reads the journal
// is in actors/systemd-journal.ts.
import { constants } from 'node:os';

/** The journal fields tunnelward reads (journalctl `--output-fields`; cursor and timestamps come always). */
export const JOURNAL_FIELDS = [
  'MESSAGE',
  'MESSAGE_ID',
  'UNIT',
  '_SYSTEMD_UNIT',
  '_PID',
  'INVOCATION_ID',
  '_SYSTEMD_INVOCATION_ID',
  'EXIT_CODE',
  'EXIT_STATUS',
  'UNIT_RESULT',
  'JOB_TYPE',
  'JOB_RESULT',
] as const;

// systemd's catalogue ids of the messages PID 1 writes about units (systemd/sd-messages.h).
const UNIT_STARTED = '39f53479d3a045ac8e11786248231fbf';
const UNIT_FAILED_TO_START = 'be02cf6855d2428ba40df7e9d022f03d';
const PROCESS_EXIT = '98e322203f7a4ed290d09fe03c09fe15';
const UNIT_SUCCESS = '7ad2d189f7e94e70a38c781354912448';
const UNIT_FAILURE_RESULT = 'd9b373ed55a64feb8242e02dbe79a49c';

const TUNNEL_UNIT = /^tunnel_([0-9]{1,9})\.service$/;

export type JournalEvent =
  /** A line the tunnel wrote (its stdout or stderr). */
  | { kind: 'output'; id: number; invocation: string; text: string }
  /** The unit's main process exited (systemd logs this only for an exit it counts as a failure). */
  | { kind: 'exit'; id: number; invocation: string; code: number | null; signal: string | null }
  /** The run ended: cleanly (`success`), or failed with systemd's result (`exit-code`, `signal`, `timeout`, ...). */
  | { kind: 'ended'; id: number; invocation: string; success: boolean; result: string }
  /** A start of the unit is done: a new run is up (an operator's start or systemd's own restart). */
  | { kind: 'started'; id: number; invocation: string }
  /** A start of the unit failed without a run: systemd's start limit, for one. */
  | { kind: 'startFailed'; id: number; invocation: string };

export interface JournalLine {
  cursor: string | undefined;
  event: JournalEvent | undefined;
}

const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, number]) => [number, name]));

/** A signal number as Node names it (`9` -> `SIGKILL`). */
export const signalName = (signal: number): string => SIGNAL_NAMES.get(signal) ?? `SIG${signal}`;

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
 * Reads one journal entry. Only trusted fields decide who wrote it: `_PID` and `_SYSTEMD_UNIT` are set by journald
 * itself, so a message about a unit counts only when PID 1 wrote it, and output only when it came from that unit.
 */
export function parseJournalLine(line: string): JournalLine {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return { cursor: undefined, event: undefined };
  }
  const cursor = typeof entry.__CURSOR === 'string' ? entry.__CURSOR : undefined;
  return { cursor, event: eventOf(entry) };
}

function eventOf(entry: Record<string, unknown>): JournalEvent | undefined {
  if (entry._PID !== '1') {
    const id = unitId(entry._SYSTEMD_UNIT);
    if (id === undefined) return undefined;
    return { kind: 'output', id, invocation: text(entry._SYSTEMD_INVOCATION_ID), text: text(entry.MESSAGE) };
  }
  const id = unitId(entry.UNIT);
  if (id === undefined) return undefined;
  const invocation = text(entry.INVOCATION_ID);
  switch (entry.MESSAGE_ID) {
    case PROCESS_EXIT: {
      const status = Number(entry.EXIT_STATUS);
      const exited = entry.EXIT_CODE === 'exited';
      return {
        kind: 'exit',
        id,
        invocation,
        code: exited && Number.isInteger(status) ? status : null,
        signal: !exited && Number.isInteger(status) ? signalName(status) : null,
      };
    }
    case UNIT_SUCCESS:
      return { kind: 'ended', id, invocation, success: true, result: 'success' };
    case UNIT_FAILURE_RESULT:
      return { kind: 'ended', id, invocation, success: false, result: text(entry.UNIT_RESULT) };
    case UNIT_STARTED:
      return entry.JOB_TYPE === 'start' && entry.JOB_RESULT === 'done'
        ? { kind: 'started', id, invocation }
        : undefined;
    case UNIT_FAILED_TO_START:
      return { kind: 'startFailed', id, invocation };
    default:
      return undefined;
  }
}
