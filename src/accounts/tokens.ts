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

/**
 * An API key: `twk_<id>_<secret>`. The id (8 random bytes, hex) is public and finds the key in one lookup; the
 * secret (32 random bytes) is what proves it. Only `hashToken(key)` is stored: 256 random bits need no salt and no
 * slow hash (argon2 is for guessable passwords, and would cost 64 MiB and ~100 ms on every request).
 */
export function newApiKey(): { id: string; key: string } {
  const id = randomBytes(8).toString('hex');
  return { id, key: `twk_${id}_${randomBytes(32).toString('base64url')}` };
}

const API_KEY = /^twk_([0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;

/** The public id of a well-formed API key; undefined for anything else. */
export function apiKeyId(key: string): string | undefined {
  return API_KEY.exec(key)?.[1];
}

/** Whether a credential is an API key (a login token never has this shape): it travels as `Authorization: Bearer`. */
export const isApiKey = (credential: string): boolean => API_KEY.test(credential);
