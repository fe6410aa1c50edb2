import test from 'ava';
import { AppError } from '../../../src/errors.js';
import {
  dueExpiries,
  expiriesOf,
  expiryAt,
  followProxies,
  MAX_TIMER_MS,
  nextExpiry,
  timerDelay,
} from '../../../src/instances/expiry.js';
import { durationMs } from '../../../src/util/duration.js';

/** A simulated clock: every rule takes `now` from it, none reads the real one. */
const NOW = Date.parse('2030-06-01T12:00:00Z');
const HOUR = 3_600_000;

const refused = (t: import('ava').ExecutionContext, text: string, message: RegExp) => {
  const err = t.throws(() => expiryAt(text, NOW), { instanceOf: AppError });
  t.is(err?.status, 400);
  t.regex(err!.message, message);
};

test('durations: a number and a unit, or several in a row; nothing else, and never no time at all', (t) => {
  t.is(durationMs('90s'), 90_000);
  t.is(durationMs('30m'), 30 * 60_000);
  t.is(durationMs('2h'), 2 * HOUR);
  t.is(durationMs('7d'), 7 * 24 * HOUR);
  t.is(durationMs('2w'), 14 * 24 * HOUR);
  t.is(durationMs('1h30m'), 1.5 * HOUR);
  for (const bad of ['', '0s', '0h0m', '2', 'h', '2 h', '-2h', '2H', '1.5h', '2hours', '1234567s'])
    t.is(durationMs(bad), undefined, bad);
});

test('an expiry is a duration from now, an ISO time ahead, or never', (t) => {
  t.is(expiryAt('2h', NOW), NOW + 2 * HOUR);
  t.is(expiryAt(' 30m ', NOW), NOW + 30 * 60_000);
  t.is(expiryAt('never', NOW), null);
  t.is(expiryAt('2030-06-01T14:00:00Z', NOW), NOW + 2 * HOUR);
  t.is(expiryAt('2030-06-01T16:00+02:00', NOW), NOW + 2 * HOUR);
  t.is(expiryAt('2030-06-01T12:00:00.250Z', NOW), NOW + 250);
  // Without an offset: the host's local time, as Date reads it.
  t.is(expiryAt('2030-06-02T12:00', NOW), new Date(2030, 5, 2, 12, 0).getTime());
});

test('a time past, or now, is refused with the time it is; nonsense is refused with the forms it may take', (t) => {
  refused(
    t,
    '2030-06-01T11:59:59Z',
    /^expires 2030-06-01T11:59:59Z is in the past \(it is 2030-06-01T12:00:00\.000Z now\)/,
  );
  refused(t, '2030-06-01T12:00:00Z', /is in the past/);
  refused(
    t,
    'soon',
    /^expires must be a duration from now \(30m, 2h, 7d, 1h30m\), an ISO 8601 time .* or never, not "soon"$/,
  );
  refused(t, '0s', /must be a duration/);
  refused(t, '2030-06-01', /must be a duration/);
  refused(t, '2030-13-01T00:00Z', /must be a duration/);
  refused(t, '1717243200000', /must be a duration/);
  refused(t, 'Never', /must be a duration/);
});

const record = (id: number, expiresAt: number | null, proxyExpiries: Record<string, number> = {}) => ({
  id,
  expiresAt,
  proxyExpiries,
});

test('the next expiry is the earliest of every instance and proxy; ties go to the instance, then the lower id', (t) => {
  const records = [
    record(1, NOW + 3 * HOUR, { web: NOW + HOUR, ssh: NOW + 2 * HOUR }),
    record(2, null, { db: NOW + HOUR / 2 }),
    record(3, null),
  ];
  const all = expiriesOf(records);
  t.is(all.length, 4);
  t.deepEqual(nextExpiry(all), { instanceID: 2, proxy: 'db', at: NOW + HOUR / 2 });
  t.is(nextExpiry(expiriesOf([record(3, null)])), undefined);
  const tied = expiriesOf([record(5, NOW, { a: NOW }), record(4, null, { z: NOW })]);
  t.deepEqual(nextExpiry(tied), { instanceID: 4, proxy: 'z', at: NOW });
  t.deepEqual(
    dueExpiries(tied, NOW).map((e) => `${e.instanceID}/${e.proxy ?? ''}`),
    ['4/z', '5/', '5/a'],
  );
});

test('the expiries due at a time are those at or before it, first first; the clock moving on makes more due', (t) => {
  const all = expiriesOf([record(1, NOW + 3 * HOUR, { web: NOW + HOUR, ssh: NOW + 2 * HOUR }), record(2, NOW - 1)]);
  const keys = (now: number) => dueExpiries(all, now).map((e) => `${e.instanceID}/${e.proxy ?? ''}`);
  t.deepEqual(keys(NOW), ['2/']);
  t.deepEqual(keys(NOW + HOUR), ['2/', '1/web']);
  t.deepEqual(keys(NOW + 3 * HOUR), ['2/', '1/web', '1/ssh', '1/']);
});

test('the one timer waits until the next expiry, at once for one past, and at most what a timer can wait', (t) => {
  t.is(timerDelay(NOW + 1500, NOW), 1500);
  t.is(timerDelay(NOW - 5000, NOW), 0);
  t.is(timerDelay(NOW + 60 * 24 * HOUR, NOW), MAX_TIMER_MS);
});

test("a proxy's expiry follows its rename and goes with its delete", (t) => {
  const expiries = { web: 1, ssh: 2 };
  t.deepEqual(followProxies(expiries, ['web', 'ssh']), expiries);
  t.deepEqual(followProxies(expiries, ['www', 'ssh'], { from: 'web', to: 'www' }), { www: 1, ssh: 2 });
  t.deepEqual(followProxies(expiries, ['ssh']), { ssh: 2 });
  t.deepEqual(followProxies(expiries, ['web', 'ssh2'], { from: 'ssh', to: 'ssh2' }), { web: 1, ssh2: 2 });
});
