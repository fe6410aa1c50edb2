/**
 * frpc renders every config file as a Go text/template before parsing it, with the environment as `.Envs`.
 * The one form we let through is `{{ .Envs.NAME }}`, wherever frpc reads it: inside any string, or as a whole value
 * of any kind (`remotePort = {{ .Envs.PORT }}`, which is TOML only once rendered). Every other action could run
 * template code, so it is refused. What a placeholder renders to is an environment value, masked wherever it shows.
 */

/**
 * What frpc reads after `.Envs.`: a Go template field name, letters of either case, digits and "_" (Go's lexer reads
 * `.9` as a number, so not a digit first). ASCII only: an environment variable name is one.
 */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PLACEHOLDER = /\{\{ *\.Envs\.([A-Za-z_][A-Za-z0-9_]*) *\}\}/y;
/** A placeholder, as a pattern the OpenAPI document can state (src/config/string-patterns.ts). */
export const PLACEHOLDER_PATTERN = PLACEHOLDER.source;
const ALL_PLACEHOLDERS = new RegExp(PLACEHOLDER.source, 'g');

export const TEMPLATE_REASON =
  'must not contain "{{" or "}}" other than {{ .Envs.NAME }} placeholders (NAME of letters, digits and "_", not a digit first): ' +
  'frpc renders its config file as a Go template, so anything else would be executed';

/**
 * True when every `{{` in the value opens a placeholder and no `}}` stands outside one. Scans from the left as
 * Go's lexer does, so `{{{ .Envs.A }}` (an action opening on the first two braces) is refused.
 */
export function onlyPlaceholders(value: string): boolean {
  let at = 0;
  for (;;) {
    const open = value.indexOf('{{', at);
    const close = value.indexOf('}}', at);
    if (open < 0) return close < 0;
    if (close >= 0 && close < open) return false;
    PLACEHOLDER.lastIndex = open;
    if (!PLACEHOLDER.test(value)) return false;
    at = PLACEHOLDER.lastIndex;
  }
}

/** True when the value is one placeholder and nothing else: the form a number or a boolean may take. */
export function isPlaceholder(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  PLACEHOLDER.lastIndex = 0;
  return PLACEHOLDER.test(value) && PLACEHOLDER.lastIndex === value.length;
}

/** True when the value holds a placeholder anywhere: what it reads as is known only once frpc renders it. */
export const holdsPlaceholder = (value: string): boolean => value.includes('{{');

/**
 * The TOML text with every placeholder that stands outside a string (`remotePort = {{ .Envs.PORT }}`) put in
 * quotes, so that the text reads as TOML: such a value reads as the placeholder's text, and `bareText` writes it
 * back without quotes where its key is not a string. Strings (all four kinds) and comments are passed over as the
 * TOML grammar reads them.
 */
export function quoteBarePlaceholders(text: string): string {
  if (!text.includes('{{')) return text;
  let out = '';
  let from = 0;
  for (let at = 0; at < text.length;) {
    const c = text[at]!;
    if (c === '#') at = lineEnd(text, at);
    else if (c === '"' || c === "'") at = stringEnd(text, at);
    else if (c === '{' && text[at + 1] === '{') {
      PLACEHOLDER.lastIndex = at;
      if (!PLACEHOLDER.test(text)) at += 2;
      else {
        out += `${text.slice(from, at)}"${text.slice(at, PLACEHOLDER.lastIndex)}"`;
        at = from = PLACEHOLDER.lastIndex;
      }
    } else at++;
  }
  return out + text.slice(from);
}

const lineEnd = (text: string, at: number): number => {
  const end = text.indexOf('\n', at);
  return end < 0 ? text.length : end;
};

/** Where the TOML string opening at `at` ends (basic or literal, one line or multi-line; an unclosed one at its line's end). */
function stringEnd(text: string, at: number): number {
  const quote = text[at]!;
  const multi = text.startsWith(quote.repeat(3), at);
  const close = multi ? quote.repeat(3) : quote;
  for (let i = at + close.length; i < text.length; i++) {
    if (!multi && text[i] === '\n') return i;
    if (quote === '"' && text[i] === '\\') i++;
    else if (text.startsWith(close, i)) {
      let end = i + close.length;
      // A multi-line string may end in one or two quotes of its own kind just before its closing three.
      while (multi && end < i + close.length + 2 && text[end] === quote) end++;
      return end;
    }
  }
  return text.length;
}

/** The environment variables a config file's placeholders read, each once, in order of first use. */
export function envPlaceholders(fileText: string): string[] {
  return [...new Set(Array.from(fileText.matchAll(ALL_PLACEHOLDERS), (match) => match[1]!))];
}

/** The value as frpc renders it with this environment (a variable it lacks reads as `<no value>`, as frpc's does). */
export function renderPlaceholders(value: string, env: Readonly<Record<string, string>>): string {
  return value.replace(ALL_PLACEHOLDERS, (_, name: string) => (Object.hasOwn(env, name) ? env[name]! : '<no value>'));
}
