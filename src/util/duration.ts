const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** A duration as operators write one: a number and a unit (s, m, h, d, w), or several in a row (`1h30m`). */
export const DURATION = /^(?:\d{1,6}[smhdw])+$/;

/** `90s`, `45m`, `2h`, `7d`, `2w`, `1h30m` in milliseconds; undefined for anything else, or for no time at all. */
export function durationMs(raw: string): number | undefined {
  if (!DURATION.test(raw)) return undefined;
  let ms = 0;
  for (const [, n, unit] of raw.matchAll(/(\d+)([smhdw])/g)) ms += Number(n) * UNIT_MS[unit!]!;
  return ms > 0 ? ms : undefined;
}
