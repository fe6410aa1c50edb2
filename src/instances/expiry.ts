import { badRequest } from '../errors.js';
import { durationMs } from '../util/duration.js';
import { formatIso } from '../util/time.js';
import type { InstanceRecord } from './instance-store.js';

/**
 * Expiries: when an instance is stopped by itself, or one of its proxies disabled ("open SSH to this box for two
 * hours"). The rules, pure: what an operator may write, and which expiry comes next. The acting is
 * actors/instance-expiry.ts.
 */

/** What an expiry may be given as, in the words every refusal and the document use. */
export const EXPIRY_FORMS =
  "a duration from now (30m, 2h, 7d, 1h30m), an ISO 8601 time (2030-06-01T18:00:00Z; without an offset, the host's local time) or never";

/** An ISO 8601 date and time, seconds and offset optional. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})?$/;

/**
 * When an expiry given as text falls (ms since the epoch), or null for `never`. A duration counts from `now`; a time
 * already past is refused (acting on it at once would be a surprise, and most likely a typo), as is anything else.
 */
export function expiryAt(text: string, now: number, field = 'expires'): number | null {
  const raw = text.trim();
  if (raw === 'never') return null;
  const ms = durationMs(raw);
  if (ms !== undefined) return now + ms;
  const at = ISO_TIME.test(raw) ? Date.parse(raw) : NaN;
  if (Number.isNaN(at)) throw badRequest(`${field} must be ${EXPIRY_FORMS}, not ${JSON.stringify(text)}`);
  if (at <= now)
    throw badRequest(
      `${field} ${raw} is in the past (it is ${formatIso(now)} now): give a later time, or a duration such as 2h`,
    );
  return at;
}

/** One expiry: of the instance itself (proxy null), or of one of its proxies. */
export interface Expiry {
  instanceID: number;
  proxy: string | null;
  at: number;
}

/** What an expiry is known by while it is acted on. */
export const expiryKey = (e: { instanceID: number; proxy: string | null }) =>
  e.proxy === null ? `${e.instanceID}` : `${e.instanceID}/${e.proxy}`;

type WithExpiries = Pick<InstanceRecord, 'id' | 'expiresAt' | 'proxyExpiries'>;

/** Every expiry of these instances. */
export function expiriesOf(records: Iterable<WithExpiries>): Expiry[] {
  const all: Expiry[] = [];
  for (const r of records) {
    if (r.expiresAt !== null) all.push({ instanceID: r.id, proxy: null, at: r.expiresAt });
    for (const [proxy, at] of Object.entries(r.proxyExpiries)) all.push({ instanceID: r.id, proxy, at });
  }
  return all;
}

/** The expiry that comes first (of two at once, the instance's, then the lower id: any fixed order would do). */
export function nextExpiry(expiries: readonly Expiry[]): Expiry | undefined {
  let next: Expiry | undefined;
  for (const e of expiries) if (!next || before(e, next)) next = e;
  return next;
}

const before = (a: Expiry, b: Expiry) =>
  a.at !== b.at
    ? a.at < b.at
    : a.instanceID !== b.instanceID
      ? a.instanceID < b.instanceID
      : (a.proxy ?? '') < (b.proxy ?? '');

/** The expiries due at `now`, first first. */
export function dueExpiries(expiries: readonly Expiry[], now: number): Expiry[] {
  return expiries.filter((e) => e.at <= now).sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
}

/** The longest delay a timer takes (a longer one fires at once): a far expiry is armed for again at this distance. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** How long the one timer waits for an expiry at `at`. */
export const timerDelay = (at: number, now: number) => Math.min(Math.max(0, at - now), MAX_TIMER_MS);

/** Whether the instance's own expiry has passed (a start-up leaves such an instance stopped). */
export const hasExpired = (record: Pick<InstanceRecord, 'expiresAt'>, now: number) =>
  record.expiresAt !== null && record.expiresAt <= now;

/** What every view of an instance shows of its expiries: only those set. */
export function expiryFields(record: Pick<InstanceRecord, 'expiresAt' | 'proxyExpiries'>): {
  expiresAt?: string;
  proxyExpiries?: Record<string, string>;
} {
  const proxies = Object.entries(record.proxyExpiries);
  return {
    ...(record.expiresAt !== null ? { expiresAt: formatIso(record.expiresAt) } : {}),
    ...(proxies.length > 0
      ? { proxyExpiries: Object.fromEntries(proxies.map(([name, at]) => [name, formatIso(at)])) }
      : {}),
  };
}

/**
 * A proxy's expiry after a change of the file: a renamed proxy keeps its own under its new name; one whose proxy is
 * gone is dropped (a proxy added later under the same name starts without one).
 */
export function followProxies(
  expiries: Readonly<Record<string, number>>,
  names: readonly string[],
  renamed?: { from: string; to: string },
): Record<string, number> {
  const present = new Set(names);
  const next: Record<string, number> = {};
  for (const [name, at] of Object.entries(expiries)) {
    const now = renamed && renamed.from === name ? renamed.to : name;
    if (present.has(now)) next[now] = at;
  }
  return next;
}
