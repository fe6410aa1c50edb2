/** Text for a terminal: tables, durations, colours (only when the output is a terminal that wants them). */
import { showControls } from '../util/terminal-text.js';
import { paint, type Colour } from '../util/terminal-paint.js';

export { forTerminal, paint, useColour, type Colour } from '../util/terminal-paint.js';
export { LEVEL_COLOURS, logLine } from '../log/log-line.js';

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

/** A time ahead in two units at most: 45s, 5m30s, 1h59m, 6d23h; `due` once it has come. */
export function timeLeft(at: string, now = Date.now()): string {
  const seconds = Math.floor((Date.parse(at) - now) / 1000);
  if (!(seconds > 0)) return 'due';
  const units: Array<[string, number]> = [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ];
  const first = units.findIndex(([, size]) => seconds >= size);
  const [bigUnit, big] = units[first]!;
  const next = units[first + 1];
  const whole = Math.floor(seconds / big);
  const rest = next ? Math.floor((seconds % big) / next[1]) : 0;
  return `${whole}${bigUnit}${next && rest > 0 ? `${rest}${next[0]}` : ''}`;
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

/** A tunnel's health (src/instances/health.ts) as the tables colour it. */
export const HEALTH_COLOURS: Record<string, Colour> = {
  up: 'green',
  degraded: 'yellow',
  down: 'red',
  failed: 'red',
  stopped: 'grey',
};

/**
 * An object as `key  value` lines, its keys aligned: what `status NAME` prints. Values read as words: a health as
 * `down: <reason> (since <time>)`, switches as the names of those on, counts as `name n`, nothing as `-`.
 */
export function detailLines(info: Record<string, unknown>): string {
  const shown = Object.entries(info).filter(([, v]) => v !== null && v !== undefined && v !== '');
  const width = Math.max(...shown.map(([k]) => k.length));
  return shown.map(([k, v]) => `${k.padEnd(width)}  ${detailValue(v)}`).join('\n') + '\n';
}

const isoTime = (text: string) => text.replace('T', ' ').replace(/(\.\d+)?Z$/, '');

function detailValue(value: unknown): string {
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map(detailValue).join(', ');
  if (value === null || typeof value !== 'object') return String(value);
  const entries = Object.entries(value).filter(([, v]) => v !== null && v !== undefined);
  if (entries.length === 0) return '-';
  const record = value as Record<string, unknown>;
  if (typeof record.state === 'string' && 'since' in record) {
    const reason = typeof record.reason === 'string' ? `: ${record.reason}` : '';
    const since = typeof record.since === 'string' ? ` (since ${isoTime(record.since)})` : '';
    return `${record.state}${reason}${since}`;
  }
  if (entries.every(([, v]) => typeof v === 'boolean')) {
    const on = entries.filter(([, v]) => v).map(([k]) => k);
    return on.length === 0 ? 'none' : on.join(', ');
  }
  return entries
    .map(([k, v]) =>
      typeof v === 'number' ? `${k} ${v}` : `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`,
    )
    .join(', ');
}
