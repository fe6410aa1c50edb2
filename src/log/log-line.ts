import { paint, type Colour } from '../util/terminal-paint.js';
import { SYSTEM_LEVEL_NAMES } from './log-entries.js';

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
