/** Exit codes of the command-line client, for scripts to rely on. */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  unreachable: 3,
  unauthorised: 4,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A failure the client reports in one line and ends with its exit code. */
export class CliError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    /** The HTTP status of a refusal by the server, when it was one. */
    readonly status?: number,
    /** For a 429, the seconds the server says to wait. */
    readonly retryAfterSecs?: number,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usageError = (message: string) => new CliError(EXIT.usage, message);
