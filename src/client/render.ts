/** Text for a terminal: tables, durations, colours (only when the output is a terminal that wants them). */
import { randomBytes } from 'node:crypto';
import { SYSTEM_LEVEL_NAMES } from '../log/log-entries.js';
import { escapeControlsInJson, showControls } from '../util/terminal-text.js';

export function useColour(stream: NodeJS.WriteStream = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(stream.isTTY) && !env.NO_COLOR && env.TERM !== 'dumb';
}

const CODES = { red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36, grey: 90, bold: 1 } as const;
export type Colour = keyof typeof CODES;

/**
 * Where a colour code goes, until `forTerminal` makes it real once every control character of the text is shown
 * visibly: unguessable, so that no text a server sends can pass for one.
 */
const COLOUR_MARK = `\u{fdd0}${randomBytes(8).toString('hex')}[`;

export function paint(text: string, colour: Colour | undefined, on: boolean): string {
  // Looked up as an own key: a colour named by the server (a state, a level) may be `constructor`.
  return on && colour && Object.hasOwn(CODES, colour) ? `${COLOUR_MARK}${CODES[colour]}m${text}${COLOUR_MARK}0m` : text;
}

/**
 * What the CLI writes, made safe for a terminal: every control character but tab and newline shown as `\xNN` (in
 * JSON, DEL and C1 escaped as `\u00NN`), then the colours `paint` marked. All output goes through here.
 */
export function forTerminal(text: string, json = false): string {
  return json ? escapeControlsInJson(text) : showControls(text).replaceAll(COLOUR_MARK, '\x1b[');
}

/** Columns padded to their widest cell; `colours` picks a colour per cell (the padding stays uncoloured). */
export function table(
  header: string[],
  rows: string[][],
  colourOf: (row: number, column: number) => Colour | undefined = () => undefined,
  colour = false,
): string {
  // Widths as the cells are shown, control characters escaped.
  const shown = rows.map((row) => row.map(showControls));
  const widths = header.map((h, c) => Math.max(h.length, ...shown.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[], paintCell: (cell: string, c: number) => string) =>
    cells
      .map((cell, c) => paintCell(cell, c) + (c < cells.length - 1 ? ' '.repeat(widths[c]! - cell.length) : ''))
      .join('  ')
      .trimEnd();
  const out = [line(header, (cell) => paint(cell, 'bold', colour))];
  shown.forEach((row, r) => out.push(line(row, (cell, c) => paint(cell, colourOf(r, c), colour))));
  return `${out.join('\n')}\n`;
}

/** Like pm2: 42s, 5m, 3h, 2D. */
export function shortDuration(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}D`;
}

/** Bytes as `ps`-like short text: 812K, 14.2M, 1.1G. */
export function shortBytes(bytes: number): string {
  const units = ['B', 'K', 'M', 'G', 'T'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 || value >= 100 ? Math.round(value) : value.toFixed(1)}${units[unit]}`;
}

/** One colour per instance when the lines of several are mixed (red is kept for errors). */
export const INSTANCE_COLOURS: readonly Colour[] = ['cyan', 'magenta', 'blue', 'yellow', 'green'];

export const STATE_COLOURS: Record<string, Colour> = {
  running: 'green',
  starting: 'yellow',
  stopping: 'yellow',
  backoff: 'yellow',
  failed: 'red',
  stopped: 'grey',
};

/** Instance log levels (frpc's) and system log levels (0-4) to a colour. */
export const LEVEL_COLOURS: Record<string, Colour> = {
  DEBUG: 'grey',
  INFO: 'blue',
  WARN: 'yellow',
  WARNING: 'yellow',
  ERROR: 'red',
  FATAL: 'red',
};

/** A log entry (an instance's, or the daemon's with a numbered level) as one line: time, level, content. */
export function logLine(
  entry: { level: string | number; content: string; timestamp: string },
  colour: boolean,
): string {
  const level =
    typeof entry.level === 'number' ? (SYSTEM_LEVEL_NAMES[entry.level] ?? String(entry.level)) : entry.level;
  return `${paint(entry.timestamp, 'grey', colour)} ${paint(level.padEnd(5), LEVEL_COLOURS[level], colour)} ${entry.content}`;
}
