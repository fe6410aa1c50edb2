/** What a known secret is replaced with wherever it turns up. */
export const REDACTED = '***';

/**
 * Shorter values are not masked: a secret of 3 characters is no secret, and masking every "abc" or "7000" in every
 * line would hide more than it protects (GitHub Actions and GitLab mask the same way, above a minimum length).
 */
export const MIN_SECRET_LENGTH = 4;

/** JSON texts at least this long are remembered with their masked form. */
const REMEMBERED_JSON = 16 * 1024;

/** The first two characters (low bytes) as a number under 65536: a table of these rules out most places at once. */
const pairAt = (text: string, at: number): number =>
  ((text.charCodeAt(at) & 0xff) << 8) | (text.charCodeAt(at + 1) & 0xff);

/** Characters that pick a candidate: the first MIN_SECRET_LENGTH of a secret, as one number. */
function keyAt(text: string, at: number): number {
  let key = 0;
  for (let i = 0; i < MIN_SECRET_LENGTH; i++) key = (Math.imul(key, 31) + text.charCodeAt(at + i)) | 0;
  return key;
}

/** A secret, and the same inside a JSON string, where a quote, a backslash or a control character is escaped. */
function formsOf(value: string): string[] {
  const escaped = JSON.stringify(value).slice(1, -1);
  return escaped === value ? [value] : [value, escaped];
}

/** Where a form of this length goes in a list kept longest first (a longer secret is tried before its prefix). */
function longestFirst(list: readonly string[], length: number): number {
  const at = list.findIndex((form) => form.length < length);
  return at < 0 ? list.length : at;
}

/**
 * Every secret tunnelward knows (instances' environment values and config-file secrets, webhook header values), and
 * the one function that masks them in text that leaves it: replies, log files and streams, the audit, events and
 * webhooks. Secrets are grouped by source, so each source replaces its own when they change.
 *
 * A scan costs one lookup per character whatever the number of secrets (an index on each secret's first
 * characters), so a thousand tunnels' tokens do not slow every log line down.
 */
export class SecretRedactor {
  private readonly sources = new Map<string, readonly string[]>();
  /**
   * Every form a known secret takes (itself, and as it reads inside a JSON string), with how many sources hold it;
   * the forms by the key of their first characters, longest first; and which first pairs of characters any form
   * has, with how many. Kept up to date by each change of a source, so a thousand tunnels learning their secrets
   * one by one cost a thousand small updates, not a thousand rebuilds.
   */
  private readonly held = new Map<string, number>();
  private readonly byKey = new Map<number, string[]>();
  private readonly pairCounts = new Map<number, number>();
  private readonly pairs = new Uint8Array(65536);
  /**
   * The last large JSON text masked, and what it gave: the instance list is served as the same text for a second
   * (log lines, being short, do not take its place).
   */
  private lastJson: { text: string; masked: string } | undefined;

  /** Replaces the secrets of a source (an empty list forgets it). */
  set(source: string, values: Iterable<string>): void {
    const kept = [...new Set([...values].filter((v) => v.length >= MIN_SECRET_LENGTH))].sort();
    const before = this.sources.get(source) ?? [];
    if (before.length === kept.length && before.every((v, i) => v === kept[i])) return;
    for (const value of kept) for (const form of formsOf(value)) this.hold(form);
    for (const value of before) for (const form of formsOf(value)) this.release(form);
    if (kept.length === 0) this.sources.delete(source);
    else this.sources.set(source, kept);
    this.lastJson = undefined;
  }

  forget(source: string): void {
    this.set(source, []);
  }

  private hold(form: string): void {
    const count = this.held.get(form) ?? 0;
    this.held.set(form, count + 1);
    if (count > 0) return;
    const key = keyAt(form, 0);
    const list = this.byKey.get(key);
    if (!list) this.byKey.set(key, [form]);
    else list.splice(longestFirst(list, form.length), 0, form);
    const pair = pairAt(form, 0);
    this.pairCounts.set(pair, (this.pairCounts.get(pair) ?? 0) + 1);
    this.pairs[pair] = 1;
  }

  private release(form: string): void {
    const count = this.held.get(form)!;
    if (count > 1) {
      this.held.set(form, count - 1);
      return;
    }
    this.held.delete(form);
    const key = keyAt(form, 0);
    const list = this.byKey.get(key)!;
    list.splice(list.indexOf(form), 1);
    if (list.length === 0) this.byKey.delete(key);
    const pair = pairAt(form, 0);
    const left = this.pairCounts.get(pair)! - 1;
    if (left > 0) this.pairCounts.set(pair, left);
    else {
      this.pairCounts.delete(pair);
      this.pairs[pair] = 0;
    }
  }

  /** The text with every known secret (also as it reads inside a JSON string) replaced by `***`. */
  readonly redact = (text: string): string => {
    if (this.held.size === 0 || text.length < MIN_SECRET_LENGTH) return text;
    const { byKey, pairs } = this;
    let out = '';
    let from = 0;
    for (let at = 0; at <= text.length - MIN_SECRET_LENGTH; at++) {
      if (pairs[pairAt(text, at)] === 0) continue;
      const candidates = byKey.get(keyAt(text, at));
      if (candidates === undefined) continue;
      const hit = candidates.find((secret) => text.startsWith(secret, at));
      if (hit === undefined) continue;
      out += text.slice(from, at) + REDACTED;
      from = at + hit.length;
      at = from - 1;
    }
    return from === 0 ? text : out + text.slice(from);
  };

  /**
   * JSON text (a log entry, a reply) with known secrets masked inside its strings only, so it stays valid JSON: a
   * short secret such as "true" must not turn `"running":true` into `"running":***`.
   */
  readonly redactJson = (text: string): string => {
    if (this.lastJson?.text === text) return this.lastJson.masked;
    const masked = this.maskJson(text);
    if (text.length >= REMEMBERED_JSON) this.lastJson = { text, masked };
    return masked;
  };

  private maskJson(text: string): string {
    if (this.redact(text) === text) return text;
    try {
      const redacted = JSON.stringify(this.redactValue(JSON.parse(text)));
      return text.endsWith('\n') ? `${redacted}\n` : redacted;
    } catch {
      return this.redact(text);
    }
  }

  /** A JSON-like value with every string in it redacted; the value itself when nothing was. */
  readonly redactValue = <T>(value: T): T => {
    if (this.sources.size === 0) return value;
    if (typeof value === 'string') return this.redact(value) as T;
    if (Array.isArray(value)) {
      const items = value.map((item: unknown) => this.redactValue(item));
      return items.some((item, i) => item !== value[i]) ? (items as T) : value;
    }
    if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value;
    let copy: Record<string, unknown> | undefined;
    for (const [key, item] of Object.entries(value)) {
      const redacted = this.redactValue(item);
      if (redacted !== item) (copy ??= { ...(value as Record<string, unknown>) })[key] = redacted;
    }
    return (copy ?? value) as T;
  };
}
