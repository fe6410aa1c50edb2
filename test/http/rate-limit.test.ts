import test from 'ava';
import { ADMIN } from '../helpers/daemon.js';
import { inProcessApp } from '../helpers/app.js';

const MINUTE = 60_000;

test('5 logins per minute per IP, then 429 with Retry-After until the window ends', async (t) => {
  const app = await inProcessApp();
  t.teardown(() => app.close());
  const login = () => app.request('POST', '/login', { body: ADMIN });
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push((await login()).status);
  t.deepEqual(statuses, [200, 200, 200, 200, 200]);
  app.clock.advance(20_000);
  const blocked = await login();
  t.is(blocked.status, 429);
  t.false(blocked.body.success);
  t.regex(blocked.body.message, /too many login attempts/);
  t.is(blocked.headers.get('Retry-After'), '40', 'the rest of the window, in seconds');
  t.is((await app.request('POST', '/login', { body: { username: 'x', passwd: 'y' } })).status, 429, 'still blocked');
  app.clock.advance(40_000 - 1);
  t.is((await login()).status, 429, 'blocked to the last millisecond of the window');
  app.clock.advance(1);
  t.is((await login()).status, 200, 'a new window');
});

test('100 requests per minute per token, then 429; other tokens are unaffected; a new minute starts afresh', async (t) => {
  const app = await inProcessApp();
  t.teardown(() => app.close());
  const token = await app.login();
  const other = await app.login();
  const results = await Promise.all(Array.from({ length: 105 }, () => app.request('GET', '/sessionMgr/list', { token })));
  t.is(results.filter((r) => r.status === 200).length, 100);
  const limited = results.filter((r) => r.status === 429);
  t.is(limited.length, 5);
  t.is(limited[0]!.headers.get('Retry-After'), '60');
  t.regex(limited[0]!.body.message, /too many requests for this token/);
  t.is((await app.request('GET', '/sessionMgr/list', { token: other })).status, 200);
  app.clock.advance(MINUTE);
  t.is((await app.request('GET', '/sessionMgr/list', { token })).status, 200, 'recovered');
});

test('the limits are settings, applied at once', async (t) => {
  const app = await inProcessApp({ settingsToml: '[RateLimit]\nLogin = 2\n' });
  t.teardown(() => app.close());
  const token = await app.login();
  t.is((await app.request('POST', '/login', { body: ADMIN })).status, 200);
  t.is((await app.request('POST', '/login', { body: ADMIN })).status, 429);
  t.true((await app.request('POST', '/settings/set', { token, body: { 'RateLimit.Login': 10 } })).body.success);
  t.is((await app.request('POST', '/login', { body: ADMIN })).status, 200);
});

test('X-Timestamp: inside the window on either side, refused outside it and told by how much', async (t) => {
  const app = await inProcessApp();
  t.teardown(() => app.close());
  const token = await app.login();
  const now = app.clock.now();
  for (const skew of [-3000, 0, 3000]) {
    t.is((await app.request('GET', '/userMgr/list', { token, timestamp: now + skew })).status, 200, `skew ${skew}`);
  }
  const late = await app.request('GET', '/userMgr/list', { token, timestamp: now - 3001 });
  t.is(late.status, 401);
  t.is(late.body.message, 'X-Timestamp is outside the allowed window of 3000 ms (3001 ms behind the server clock)');
  const early = await app.request('GET', '/userMgr/list', { token, timestamp: now + 5000 });
  t.is(early.body.message, 'X-Timestamp is outside the allowed window of 3000 ms (5000 ms ahead of the server clock)');
});
