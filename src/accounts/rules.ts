import { z } from 'zod';
export const USER_TYPES = ['superuser', 'admin', 'visitor'] as const;
export type UserType = (typeof USER_TYPES)[number];

const RANK: Record<UserType, number> = { visitor: 0, admin: 1, superuser: 2 };

export const isUserType = (v: unknown): v is UserType =>
  typeof v === 'string' && (USER_TYPES as readonly string[]).includes(v);

/** True when `type` has at least the rights of `minimum` (superuser > admin > visitor). */
export const hasRole = (type: UserType, minimum: UserType): boolean => RANK[type] >= RANK[minimum];

/** A username: the rule the accounts keep and the API declares. */
export const usernameSchema = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{3,32}$/, "must be 3 to 32 characters, each a letter, a digit, '_', '.' or '-'");

export const PASSWORD_SPECIALS = '!@#$%^&*()_+-=[]{}|;:,.<>?';
/** Long enough for any passphrase, short enough that hashing one is cheap. */
export const PASSWORD_MAX_LENGTH = 256;

/** A new password; the rules in the order they are reported. */
export const passwordSchema = z
  .string()
  .min(8, 'must be at least 8 characters long')
  .max(PASSWORD_MAX_LENGTH, `must be at most ${PASSWORD_MAX_LENGTH} characters long`)
  .regex(/[A-Z]/, 'must contain an uppercase letter (A-Z)')
  .regex(/[a-z]/, 'must contain a lowercase letter (a-z)')
  .regex(/[0-9]/, 'must contain a digit (0-9)')
  .regex(
    new RegExp(`[${PASSWORD_SPECIALS.replace(/[\]\\^-]/g, '\\$&')}]`),
    `must contain a special character from ${PASSWORD_SPECIALS}`,
  );

/** The first rule `value` breaks, as a sentence about `field`; undefined when it keeps them all. */
function firstProblem(schema: z.ZodType, field: string, value: string): string | undefined {
  const result = schema.safeParse(value);
  return result.success ? undefined : `${field} ${result.error.issues[0]!.message}`;
}

export const checkUsername = (username: string) => firstProblem(usernameSchema, 'username', username);

/** Returns the first password rule that `passwd` breaks. */
export const checkPassword = (passwd: string) => firstProblem(passwordSchema, 'passwd', passwd);

/** The lower of two roles: what a key scoped to one acts with when its owner holds the other. */
export const lowerRole = (a: UserType, b: UserType): UserType => (RANK[a] <= RANK[b] ? a : b);

export const apiKeyNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,64}$/, "must be 1 to 64 characters, each a letter, a digit, '_', '.' or '-'");

export const checkApiKeyName = (name: string) => firstProblem(apiKeyNameSchema, 'name', name);

/**
 * What an API key may be used for: `all` is every route its role allows (as a login would); `metrics` is
 * `GET /metrics` alone, and without `X-Timestamp` (a scraper such as Prometheus sends only fixed headers).
 */
export const API_KEY_SCOPES = ['all', 'metrics'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/** The role /metrics needs: a metrics key must act with it, or it could read nothing. */
export const METRICS_ROLE: UserType = 'admin';

/** What a key of each scope may do, in words: what the CLI, the OpenAPI document and the 403s say. */
export const API_KEY_SCOPE_RULES: Readonly<Record<ApiKeyScope, string>> = {
  all: 'every route its role allows, with X-Timestamp like any request',
  metrics: `GET /metrics only, with or without X-Timestamp (it needs the ${METRICS_ROLE} role or higher)`,
};
