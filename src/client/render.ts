/** Text for a terminal: tables, durations, colours (only when the output is a terminal that wants them). */

export function useColour(stream: NodeJS.WriteStream = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(stream.isTTY) && !env.NO_COLOR && env.TERM !== 'dumb';
}

const CODES = { red: 31, green: 32, yellow: 33, blue: 34, grey: 90, bold: 1 } as const;
export type Colour = keyof typeof CODES;

export function paint(text: string, colour: Colour | undefined, on: boolean): string {
  return on && colour ? `\x1b[${CODES[colour]}m${text}\x1b[0m` : text;
}

/** Columns padded to their widest cell; `colours` picks a colour per cell (the padding stays uncoloured). */
export function table(
  header: string[],
  rows: string[][],
  colourOf: (row: number, column: number) => Colour | undefined = () => undefined,
  colour = false,
): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[], paintCell: (cell: string, c: number) => string) =>
    cells
      .map((cell, c) => paintCell(cell, c) + (c < cells.length - 1 ? ' '.repeat(widths[c]! - cell.length) : ''))
      .join('  ')
      .trimEnd();
  const out = [line(header, (cell) => paint(cell, 'bold', colour))];
  rows.forEach((row, r) => out.push(line(row, (cell, c) => paint(cell, colourOf(r, c), colour))));
  return `${out.join('\n')}\n`;
}

/** Like pm2: 42s, 5m, 3h, 2D. */
export function shortDuration(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}D`;
}

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
