import type { StreamEnd } from './api.js';
import type { Context } from './command.js';
import { EXIT, type ExitCode } from './errors.js';

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
