import pino, { type Logger } from 'pino';
import { AppError } from '../errors.js';
import { escapeControlsInJson } from '../util/terminal-text.js';
import { prettyLine, type LogFormat } from './pretty-line.js';

export type { Logger } from 'pino';

/** Keys whose value is a secret, at the top of an entry or one level down (`{ user: { passwd } }`). */
const SECRET_KEYS: readonly string[] = ['passwd', 'password', 'token', 'auth.token', 'headers'];
const CENSORED = '[redacted]';

const hasSecretKey = (value: object) => SECRET_KEYS.some((key) => Object.hasOwn(value, key));

/** A copy of `value` with its secret keys censored: a plain object stays plain, an error stays an error. */
function censored<T extends object>(value: T): T {
  const copy = Object.assign(Object.create(Object.getPrototypeOf(value) as object) as T, value);
  if (value instanceof Error) Object.assign(copy, { message: value.message, stack: value.stack });
  for (const key of SECRET_KEYS) if (Object.hasOwn(value, key)) (copy as Record<string, unknown>)[key] = CENSORED;
  return copy;
}

/**
 * An entry's fields with every secret key censored, at the top and one level down; the caller's objects are never
 * changed, and an entry with no secret key (nearly all) is passed on as it is, without a copy.
 */
export function censorSecrets(fields: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const key in fields) {
    const value = fields[key];
    const secret = SECRET_KEYS.includes(key);
    if (!secret && (value === null || typeof value !== 'object' || Array.isArray(value) || !hasSecretKey(value)))
      continue;
    out ??= { ...fields };
    out[key] = secret ? CENSORED : censored(value as object);
  }
  return out ?? fields;
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
      // A child logger's bindings name a component or an instance, never a secret.
      formatters: { log: censorSecrets },
      serializers: { err: serializeError },
    },
    destination,
  );
}

/**
 * An error as the log keeps it: a refusal (an AppError: a failed start, a bad request) by its message and status
 * only, for it says all there is to say; anything else, a failure nobody meant, with its stack, for whoever debugs it.
 */
export function serializeError(err: unknown): unknown {
  if (err instanceof AppError) return { type: 'AppError', status: err.status, message: err.message };
  return pino.stdSerializers.err(err as Error);
}

/** Writes out what is buffered; called before the process exits. */
export function flushLogger(log: Logger): void {
  try {
    log.flush();
  } catch {
    // nothing more we can do at exit
  }
}
