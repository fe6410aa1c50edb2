export const USER_TYPES = ['superuser', 'admin', 'visitor'] as const;
export type UserType = (typeof USER_TYPES)[number];

const RANK: Record<UserType, number> = { visitor: 0, admin: 1, superuser: 2 };

export const isUserType = (v: unknown): v is UserType =>
  typeof v === 'string' && (USER_TYPES as readonly string[]).includes(v);

/** True when `type` has at least the rights of `minimum` (superuser > admin > visitor). */
export const hasRole = (type: UserType, minimum: UserType): boolean => RANK[type] >= RANK[minimum];

const USERNAME = /^[A-Za-z0-9_.-]{3,32}$/;

export function checkUsername(username: string): string | undefined {
  return USERNAME.test(username)
    ? undefined
    : "username must be 3 to 32 characters, each a letter, a digit, '_', '.' or '-'";
}

export const PASSWORD_SPECIALS = '!@#$%^&*()_+-=[]{}|;:,.<>?';
/** Long enough for any passphrase, short enough that hashing one is cheap. */
export const PASSWORD_MAX_LENGTH = 256;

/** Returns the first password rule that `passwd` breaks. */
export function checkPassword(passwd: string): string | undefined {
  if (passwd.length < 8) return 'passwd must be at least 8 characters long';
  if (passwd.length > PASSWORD_MAX_LENGTH) return `passwd must be at most ${PASSWORD_MAX_LENGTH} characters long`;
  if (!/[A-Z]/.test(passwd)) return 'passwd must contain an uppercase letter (A-Z)';
  if (!/[a-z]/.test(passwd)) return 'passwd must contain a lowercase letter (a-z)';
  if (!/[0-9]/.test(passwd)) return 'passwd must contain a digit (0-9)';
  if (![...passwd].some((c) => PASSWORD_SPECIALS.includes(c))) {
    return `passwd must contain a special character from ${PASSWORD_SPECIALS}`;
  }
  return undefined;
}

/** The lower of two roles: what a key scoped to one acts with when its owner holds the other. */
export const lowerRole = (a: UserType, b: UserType): UserType => (RANK[a] <= RANK[b] ? a : b);

const API_KEY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

export function checkApiKeyName(name: string): string | undefined {
  return API_KEY_NAME.test(name)
    ? undefined
    : "name must be 1 to 64 characters, each a letter, a digit, '_', '.' or '-'";
}
