import type { ApiClient } from './api.js';
import type { FlagSpec, Parsed } from './args.js';
import type { Credentials } from './credentials.js';
import type { ExitCode } from './errors.js';
import { paint } from './render.js';

/** Where a command writes, so tests and scripts see exactly what a user would. */
export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  env: NodeJS.ProcessEnv;
  colour: boolean;
  /** Someone at a terminal (standard input and output are one): what an edit loop may reopen a file for. */
  terminal: boolean;
}

export interface Context {
  args: Parsed;
  io: Io;
  json: boolean;
  credentials: Credentials;
  /** The server (empty for a command that talks to none, or to every context). */
  url: string;
  /**
   * A client with the chosen context's own API key, else TUNNELWARD_API_KEY, else the stored login of `url`; fails
   * with exit 4 when there is none.
   */
  client: () => Promise<ApiClient>;
}

export interface Command {
  usage: string;
  summary: string;
  flags?: FlagSpec[];
  /** False for a command of no one server (`context`, `fleet`): --url and --context are its own to read or refuse. */
  oneServer?: false;
  run: (ctx: Context) => Promise<ExitCode | void>;
}

export const print = (ctx: Context, value: unknown) => ctx.io.out(`${JSON.stringify(value, null, 2)}\n`);

/** One line of a per-instance outcome: `ok  name (3): what happened`, or `failed  ...`. */
export function outcomeLine(ctx: Context, ok: boolean, line: string): void {
  ctx.io.out(`${paint(ok ? 'ok' : 'failed', ok ? 'green' : 'red', ctx.io.colour)}  ${line}\n`);
}
