import { forTerminal } from '../util/terminal-paint.js';
import { logLine } from './log-line.js';
import { showControls } from '../util/terminal-text.js';
import { systemEntryFromPino } from './log-entries.js';

/** How the daemon writes its log: JSON lines (journals, pipes, collectors) or lines for a person at a terminal. */
export type LogFormat = 'json' | 'pretty';
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];

/**
 * One line pino wrote (secrets already redacted) as a person reads it: the same line as `tunnelward logs --system`
 * shows, with an error's stack below it, indented. Nothing in it acts on a terminal but the colours asked for.
 */
export function prettyLine(json: string, colour: boolean): string {
  const entry = systemEntryFromPino(json);
  if (!entry) return forTerminal(json);
  let text = `${forTerminal(logLine(entry, colour))}\n`;
  // The stream never shows a stack; the operator at the daemon's own terminal gets it.
  if (json.includes('"stack"')) {
    const stack = (JSON.parse(json) as { err?: { stack?: unknown } }).err?.stack;
    if (typeof stack === 'string') text += showControls(stack.replace(/^.*\n/, '')).replace(/^/gm, '    ') + '\n';
  }
  return text;
}
