import pino, { type Logger } from 'pino';
import { escapeControlsInJson } from '../util/terminal-text.js';
import { prettyLine, type LogFormat } from './pretty-line.js';

export type { Logger } from 'pino';

/** Keys whose value is a secret, at the top of an entry or one level down (`{ user: { passwd } }`). */
const SECRET_KEYS = ['passwd', 'password', 'token', 'auth.token', 'headers'].map((key) => `["${key}"]`);
const REDACT = { paths: [...SECRET_KEYS, ...SECRET_KEYS.map((key) => `*${key}`)], censor: '[redacted]' };

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
      // A child logger's bindings name a component or an instance, never a secret.
      redact: REDACT,
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
