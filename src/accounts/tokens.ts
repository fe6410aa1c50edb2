import { createHash, randomBytes, randomUUID } from 'node:crypto';

/** A login token: 32 random bytes, URL-safe. Only its hash is ever stored. */
export const newToken = (): string => randomBytes(32).toString('base64url');

/** Tokens are long random values, so one unsalted SHA-256 is enough to keep a stolen database useless. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

export const newSessionId = (): string => randomUUID();

/** A random password that meets every password rule, for the first superuser. */
export function newInitialPassword(): string {
  const body = randomBytes(18).toString('base64url');
  return `${body}Aa1!`;
}
