/**
 * Names every plain object already has (`__proto__`, `constructor`, `toString`, `hasOwnProperty`, ...). No setting,
 * proxy field, variable or header of ours is called that, and a key named so reaches an object's prototype instead
 * of an entry of its own: refused wherever keys come in (request bodies, imported and config files).
 */
const RESERVED = new Set(Object.getOwnPropertyNames(Object.prototype));

export const isReservedKey = (key: string): boolean => RESERVED.has(key);

/** The document's way of saying it: a name that is none of them (JSON Schema, for an object's property names). */
export const NOT_RESERVED = { not: { enum: [...RESERVED] } } as const;

/** `request body has the reserved key "toString" inside proxyInfo: ...`; `where` is said as it reads after the key. */
export const reservedKeyMessage = (what: string, key: string, where: string): string =>
  `${what} has the reserved key ${JSON.stringify(key)} ${where}: no setting, field or name may be called that`;
