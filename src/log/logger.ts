import pino, { type Logger } from 'pino';
import { escapeControlsInJson } from '../util/terminal-text.js';
import { prettyLine, type LogFormat } from './pretty-line.js';

export type { Logger } from 'pino';

/** Keys whose value is a secret, at the top of an entry or one level down (`{ user: { passwd } }`). */
const SECRET_KEYS = new Set(['passwd', 'password', 'token', 'auth.token', 'headers']);
const CENSOR = '[redacted]';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The same fields with every secret's value replaced; the fields themselves (no copy) when there is none. */
function withoutSecrets(fields: Record<string, unknown>, depth = 0): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key in fields) {
    const value = fields[key];
    let replaced: unknown = value;
    if (SECRET_KEYS.has(key)) replaced = CENSOR;
    else if (depth === 0 && isRecord(value)) replaced = withoutSecrets(value, 1);
    if (replaced !== value) {
      copy ??= { ...fields };
      copy[key] = replaced;
    }
  }
  return copy ?? fields;
}

export interface LoggerOptions {
  debug: boolean;
  /** Receives every serialized entry (one JSON line) after it is written to stdout. */
  onEntry?: (line: string) => void;
  /** Where entries go; standard output when left out. */
  fd?: number;
  /** Masks known secrets in each serialized entry (a JSON line) before it goes anywhere. */
  redact?: (line: string) => string;
  /** What is written there: JSON lines (the default) or lines for a person; `onEntry` always gets the JSON. */
  format?: LogFormat;
  /** Colours in pretty lines. */
  colour?: boolean;
}

/** The root logger: JSON or pretty lines on standard output, secrets redacted, DEBUG only while `Debug` is on. */
export function createLogger({
  debug,
  onEntry,
  fd = 1,
  redact,
  format = 'json',
  colour = false,
}: LoggerOptions): Logger {
  // Lines are handed over as bytes: buffered as text, each line would copy all that waits before it.
  const out = pino.destination({ dest: fd, sync: false, contentMode: 'buffer' });
  const destination = {
    write(serialized: string) {
      // pino escapes what JSON must (C0), not DEL or C1 (a one-byte CSI among them): journals are read on terminals.
      const escaped = escapeControlsInJson(serialized);
      const line = redact ? redact(escaped) : escaped;
      const shown = format === 'pretty' ? prettyLine(line, colour) : line;
      out.write(Buffer.from(shown) as unknown as string);
      onEntry?.(line);
    },
    flush: (cb: (err?: Error) => void) => out.flush(cb),
    flushSync: () => out.flushSync(),
  };
  return pino(
    {
      base: { pid: process.pid },
      level: debug ? 'debug' : 'info',
      // Checked here rather than by pino's path redaction, which copies every entry: an entry is copied only
      // when it holds a secret. (A child logger's bindings name a component or an instance, never a secret.)
      formatters: { log: withoutSecrets },
    },
    destination,
  );
}

/** Writes out what is buffered; called before the process exits. */
export function flushLogger(log: Logger): void {
  try {
    log.flush();
  } catch {
    // nothing more we can do at exit
  }
}
