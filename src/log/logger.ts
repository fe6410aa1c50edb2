import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

/** Field paths that may hold a secret; pino replaces their values before anything is written. */
const REDACT = [
  'passwd',
  'password',
  'token',
  'auth.token',
  '"auth.token"',
  '*.passwd',
  '*.password',
  '*.token',
  '*["auth.token"]',
  'headers',
  '*.headers',
];

export interface LoggerOptions {
  debug: boolean;
  /** Receives every serialized entry (one JSON line) after it is written to stdout. */
  onEntry?: (line: string) => void;
  /** Where entries go; standard output when left out. */
  fd?: number;
}

/** The root logger: JSON lines on standard output, secrets redacted, DEBUG only while `Debug` is on. */
export function createLogger({ debug, onEntry, fd = 1 }: LoggerOptions): Logger {
  const out = pino.destination({ dest: fd, sync: false });
  const destination = onEntry
    ? {
        write(line: string) {
          out.write(line);
          onEntry(line);
        },
        flushSync: () => out.flushSync(),
      }
    : out;
  return pino(
    {
      base: { pid: process.pid },
      level: debug ? 'debug' : 'info',
      redact: { paths: REDACT, censor: '[redacted]' },
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
