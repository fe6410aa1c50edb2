import { stripControls } from '../util/terminal-text.js';
import { formatLogTimestamp } from '../util/time.js';

/** The names of the system log's levels, by number. */
export const SYSTEM_LEVEL_NAMES = ['DEBUG', 'INFO', 'WARNING', 'ERROR', 'FATAL'] as const;

/** An entry of the system log stream: level 0 DEBUG, 1 INFO, 2 WARNING, 3 ERROR, 4 FATAL. */
export interface SystemLogEntry {
  level: number;
  content: string;
  timestamp: string;
}

/** An entry of an instance log stream, parsed from one line of the tunnel client's output. */
export interface InstanceLogEntry {
  level: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  content: string;
  timestamp: string;
  /** The line's place in the instance's log, for a line the daemon read in its current run (see `logSeq`). */
  seq?: number;
}

/**
 * Lines of one instance's log numbered within one run of the daemon: a line's seq is `run * LINES_PER_RUN + n`, n
 * counting from 1 the lines the daemon read from the tunnel since it started, `run` counting the daemon's starts
 * (persisted). Lines keep their order within a run, and a later run's seqs are all above an earlier one's, so a
 * client that reconnects with the last seq it saw gets the lines after it, and can tell a restart by the run.
 */
export const LINES_PER_RUN = 1_000_000_000;

export const logSeq = (run: number, line: number): number => run * LINES_PER_RUN + line;

/** The run of the daemon a log seq is from. */
export const runOfLogSeq = (seq: number): number => Math.floor(seq / LINES_PER_RUN);

const FRPC_LEVELS: Record<string, InstanceLogEntry['level']> = {
  T: 'DEBUG',
  D: 'DEBUG',
  I: 'INFO',
  W: 'WARN',
  E: 'ERROR',
};
/** `2026-11-21 21:06:47.576 [I] [client/service.go:295] try to connect to server...` */
const FRPC_LINE = /^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(\.\d{1,3})? \[([TDIWE])\] (?:\[[\w./-]+:\d+\] )?(.*)$/;

/**
 * Parses one line of frpc's output; colour codes and every other control sequence are stripped first. A line frpc
 * did not format (a Go panic, a message of the shell) becomes an INFO entry stamped with the time it was read.
 * Undefined for a blank line.
 */
export function parseFrpcLine(raw: string, now: number): InstanceLogEntry | undefined {
  const line = stripControls(raw).trimEnd();
  if (line === '') return undefined;
  const m = FRPC_LINE.exec(line);
  if (!m) return { level: 'INFO', content: line, timestamp: formatLogTimestamp(now) };
  const millis = (m[2] ?? '.000').padEnd(4, '0');
  return { level: FRPC_LEVELS[m[3]!]!, content: m[4]!, timestamp: `${m[1]}${millis}` };
}

const PINO_LEVELS: Array<[number, number]> = [
  [60, 4],
  [50, 3],
  [40, 2],
  [30, 1],
  [0, 0],
];
/** Fields of every pino entry that the stream does not repeat in `content`. */
const OMITTED = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'v']);

function describe(value: unknown): string {
  if (value !== null && typeof value === 'object') {
    // Errors: the message only, never a stack (the stream may be read without a token).
    const message = (value as { message?: unknown }).message;
    if (typeof message === 'string') return JSON.stringify(message);
    return JSON.stringify(value);
  }
  return typeof value === 'string' && /^[\w./:@-]*$/.test(value) && value !== '' ? value : JSON.stringify(value);
}

/** Turns one JSON line written by pino (secrets already redacted) into a system log entry. */
export function systemEntryFromPino(line: string): SystemLogEntry | undefined {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line);
  } catch {
    return undefined;
  }
  const pinoLevel = Number(record.level);
  const level = PINO_LEVELS.find(([min]) => pinoLevel >= min)![1];
  const fields = Object.entries(record)
    .filter(([k]) => !OMITTED.has(k))
    .map(([k, v]) => `${k}=${describe(v)}`);
  const msg = typeof record.msg === 'string' ? record.msg : '';
  return {
    level,
    // A message can hold what a client sent (a username tried at /login): no control sequence or line break of it
    // is passed on.
    content: stripControls(fields.length > 0 ? `${msg} (${fields.join(' ')})` : msg).replaceAll('\n', ' '),
    timestamp: formatLogTimestamp(Number(record.time) || Date.now()),
  };
}
