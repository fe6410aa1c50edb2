import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient, StreamEnd } from './api.js';
import type { Context } from './command.js';
import { CliError, EXIT, type ExitCode } from './errors.js';

/** Ctrl-C ends a followed stream cleanly. */
export function stopOnSignal(stop: () => void): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, stop);
}

/** The exit code of a stream's end, said on stderr when it was not the user's (`what` names the stream). */
export function endOfStream(ctx: Context, end: StreamEnd, follow: boolean, what = 'stream'): ExitCode {
  if (end.code === 1000 || end.code === 1005 || !follow) return EXIT.ok;
  ctx.io.err(`${what} ended: ${end.reason || `code ${end.code}`}\n`);
  return end.code === 4401 || end.code === 4403 ? EXIT.unauthorised : EXIT.failed;
}

/** Closes that end a followed stream for good: the session or key ended, access withdrawn, the instance deleted. */
const FINAL_CLOSES = new Set([1000, 1005, 4401, 4403, 4404]);
/** The wait before the first try to reconnect, doubled at each failed try up to `RECONNECT_MAX_MS`. */
export const RECONNECT_FIRST_MS = 200;
export const RECONNECT_MAX_MS = 5000;

/** What a refusal on reconnecting means: worth another try (the daemon not back yet, busy), or the end. */
const retryable = (err: CliError) =>
  err.exitCode === EXIT.unreachable || err.status === 429 || err.status === 503 || (err.status ?? 0) >= 500;

export interface Resuming {
  /** How the stream's end is said (`stream`, `log of web`). */
  what: string;
  /** What each note on stderr starts with when several streams are followed (an instance's name). */
  name?: string;
  /** The seq already seen when the stream is first opened (`events --since N`). */
  start?: number;
  follow: boolean;
  /**
   * The query of each connection: `last` is the seq of the last message shown (undefined: none yet); `stopped`, that
   * the daemon was seen going away since (a stop, or no answer), which a stream without seqs goes by.
   */
  query(last: number | undefined, stopped: boolean): Record<string, string | number>;
  /** Shows one message (one whose seq was already shown never reaches it). */
  show(message: Record<string, unknown>): void;
  /** Where a message without a seq of its own puts the stream (the first message of the events stream). */
  position?(message: Record<string, unknown>, last: number | undefined): number | undefined;
  /** Said before a message whose seq shows a gap since `last`, or a restart of the daemon; nothing if neither. */
  gap?(last: number, seq: number): string | undefined;
  /** Cut short by Ctrl-C. */
  halt: AbortSignal;
}

/**
 * Follows a stream, and while following (`follow`), reconnects whenever it drops once it was open: a daemon that
 * restarts, a network that comes back. Each try waits 0.2 s, doubled up to 5 s (or what a 429 says), for as long as
 * the user waits; "reconnecting..." is said once per drop, "reconnected" when back. The stream resumes after the last
 * seq shown, so a message the daemon still has is shown once. A refusal that no wait changes (a token expired or
 * revoked, access withdrawn) ends it with its message and exit code.
 */
export async function followResuming(ctx: Context, client: ApiClient, path: string, r: Resuming): Promise<ExitCode> {
  let last = r.start;
  let opened = false;
  let stopped = false;
  let dropped = false;
  let delay = RECONNECT_FIRST_MS;
  const prefix = r.name === undefined ? '' : `${r.name}: `;
  const onMessage = (data: unknown) => {
    const message = data as Record<string, unknown>;
    const seq = typeof message.seq === 'number' ? message.seq : undefined;
    if (seq === undefined) {
      last = r.position?.(message, last) ?? last;
      return r.show(message);
    }
    if (last !== undefined) {
      const said = r.gap?.(last, seq);
      if (said === undefined && seq <= last) return;
      if (said) ctx.io.err(`${prefix}${said}\n`);
    }
    last = seq;
    r.show(message);
  };
  const onOpen = () => {
    opened = true;
    stopped = false;
    delay = RECONNECT_FIRST_MS;
    if (!dropped) return;
    dropped = false;
    ctx.io.err(`${prefix}reconnected\n`);
  };
  for (;;) {
    const stream = client.stream(path, r.query(last, stopped), onMessage, onOpen);
    const stop = () => stream.stop();
    r.halt.addEventListener('abort', stop);
    let wait = delay;
    try {
      const end = await stream.ended;
      if (!r.follow || r.halt.aborted || FINAL_CLOSES.has(end.code)) return endOfStream(ctx, end, r.follow, r.what);
      // 1001: the daemon is stopping; anything else (1006: the connection cut, 4429: too slow) is tried again.
      if (end.code === 1001) stopped = true;
    } catch (err) {
      if (!(err instanceof CliError) || !r.follow || r.halt.aborted || !retryable(err)) throw err;
      // Before the stream ever opened, only a rate limit is waited out: a daemon not there is said at once.
      if (!opened && err.status !== 429) throw err;
      if (err.exitCode === EXIT.unreachable) stopped = true;
      if (err.status === 429) {
        wait = (err.retryAfterSecs ?? 5) * 1000;
        ctx.io.err(`${prefix}${err.message}; following it in ${wait / 1000} s\n`);
      }
    } finally {
      r.halt.removeEventListener('abort', stop);
    }
    if (opened && !dropped) {
      dropped = true;
      ctx.io.err(`${prefix}reconnecting...\n`);
    }
    if (!(await sleep(wait, true, { signal: r.halt }).catch(() => false))) return EXIT.ok;
    delay = Math.min(delay * 2, RECONNECT_MAX_MS);
  }
}

/** A signal that Ctrl-C (or SIGTERM) aborts. */
export function haltOnSignal(): AbortSignal {
  const halt = new AbortController();
  stopOnSignal(() => halt.abort());
  return halt.signal;
}
