const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** `YYYY-MM-DD HH:MM:SS` in local time, as the contract shows `CreatedAt`. */
export function formatDateTime(ms: number): string {
  const d = new Date(ms);
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

/** `YYYY-MM-DD HH:MM:SS.mmm` in local time, the timestamp of every log entry. */
export function formatLogTimestamp(ms: number): string {
  return `${formatDateTime(ms)}.${pad(new Date(ms).getMilliseconds(), 3)}`;
}

/** ISO 8601 with the UTC offset, e.g. `2026-11-21T20:52:35.000Z`. */
export function formatIso(ms: number): string {
  return new Date(ms).toISOString();
}
