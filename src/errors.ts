/**
 * An error whose message is safe to show to a client, with the HTTP status it means.
 * Anything thrown that is not an AppError becomes a 500 with a generic message.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Extra response headers, e.g. Retry-After on a 429. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const badRequest = (message: string) => new AppError(400, message);
export const unauthorized = (message: string) => new AppError(401, message);
export const forbidden = (message: string) => new AppError(403, message);
export const notFound = (message: string) => new AppError(404, message);
export const conflict = (message: string) => new AppError(409, message);
export const tooManyRequests = (message: string, retryAfterSeconds: number) =>
  new AppError(429, message, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
export const internal = (message: string) => new AppError(500, message);
