/** Colours on a terminal: marked while text is built, made real once every control character of it is shown. */
import { randomBytes } from 'node:crypto';
import { escapeControlsInJson, showControls } from './terminal-text.js';

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
