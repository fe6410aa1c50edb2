/** Seconds as "3d 4h", "2h 5m", "4m 10s", "12s". */
export function duration(totalSecs: number): string {
  const s = Math.max(0, Math.floor(totalSecs));
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${sec}s`;
  return `${sec}s`;
}

/** An ISO 8601 time in the browser's time zone, to the second. */
export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`
  );
}

/** frpc's proxy statuses counted: "2 running, 1 start error". */
export function proxyCounts(status: Record<string, number> | undefined): string {
  const entries = Object.entries(status ?? {}).filter(([, n]) => n > 0);
  if (entries.length === 0) return '—';
  return entries.map(([name, n]) => `${n} ${name}`).join(', ');
}

/** Plural: "1 instance", "3 instances". */
export const count = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
