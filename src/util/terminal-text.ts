/**
 * Text that others wrote (a tunnel's output, what an frp server answers, a username tried at /login) can hold
 * sequences a terminal acts on: set its title, write the clipboard, clear or redraw the screen. What tunnelward keeps
 * loses them; what the CLI prints shows them as `\x1b` and the like.
 */

/** A control character other than tab and newline (every sequence starts with one: ESC or a C1 control). */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;
const CONTROLS = new RegExp(CONTROL.source, 'g');

/**
 * ECMA-48's sequences in their 7-bit (ESC ...) and 8-bit (C1) forms, then any control character left:
 * - OSC, DCS, SOS, PM and APC strings up to BEL or ST (or the end of the line when never ended);
 * - CSI: parameter bytes, intermediate bytes, a final byte;
 * - every other escape sequence: ESC, intermediate bytes, a final byte (`ESC c`, `ESC ( B`, `ESC 7`).
 */
const SEQUENCES =
  /(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]|\x1b[\x20-\x2f]*[\x30-\x7e]|[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

const hex = (char: string) => char.charCodeAt(0).toString(16).padStart(2, '0');

/** The text without control sequences and control characters, tabs and newlines kept. */
export function stripControls(text: string): string {
  return CONTROL.test(text) ? text.replace(SEQUENCES, '') : text;
}

/** Each control character but tab and newline as `\xNN`: the text as a terminal shows it without acting on it. */
export function showControls(text: string): string {
  return CONTROL.test(text) ? text.replace(CONTROLS, (char) => `\\x${hex(char)}`) : text;
}

/**
 * JSON text with the control characters JSON leaves raw (DEL and C1) escaped too: the same value once parsed, and
 * safe on a terminal. The newlines between values and lines stay.
 */
export function escapeControlsInJson(json: string): string {
  return CONTROL.test(json) ? json.replace(CONTROLS, (char) => `\\u00${hex(char)}`) : json;
}
