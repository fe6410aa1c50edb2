/**
 * frpc renders every config file as a Go text/template before parsing it, with the environment as `.Envs`.
 * The one form we let through is `{{ .Envs.NAME }}`, which keeps a secret out of the file, and only in a field
 * that holds a secret: frpc shows the others (an address it dials, a name) in its log, and so to whoever reads it.
 * Every other action could run template code, so it is refused.
 */

/**
 * What frpc reads after `.Envs.`: a Go template field name, letters of either case, digits and "_" (Go's lexer reads
 * `.9` as a number, so not a digit first). ASCII only: an environment variable name is one.
 */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PLACEHOLDER = /\{\{ *\.Envs\.([A-Za-z_][A-Za-z0-9_]*) *\}\}/y;
const ALL_PLACEHOLDERS = new RegExp(PLACEHOLDER.source, 'g');

export const TEMPLATE_REASON =
  'must not contain "{{" or "}}" other than {{ .Envs.NAME }} placeholders (NAME of letters, digits and "_", not a digit first): ' +
  'frpc renders its config file as a Go template, so anything else would be executed';

export const PLACEHOLDER_REASON =
  'cannot hold a {{ .Envs.NAME }} placeholder: only secret fields (auth.token, auth.oidc.clientSecret, ' +
  "a proxy's or visitor's secretKey, httpPassword, plugin passwords, ...) may read the instance's environment; " +
  'frpc shows other values in its log, and dials the addresses (a proxy URL among them), which would reveal the variable';

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

/** The environment variables a config file's placeholders read, each once, in order of first use. */
export function envPlaceholders(fileText: string): string[] {
  return [...new Set(Array.from(fileText.matchAll(ALL_PLACEHOLDERS), (match) => match[1]!))];
}

/** The value as frpc renders it with this environment (a variable it lacks reads as `<no value>`, as frpc's does). */
export function renderPlaceholders(value: string, env: Readonly<Record<string, string>>): string {
  return value.replace(ALL_PLACEHOLDERS, (_, name: string) => (Object.hasOwn(env, name) ? env[name]! : '<no value>'));
}
