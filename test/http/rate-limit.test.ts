import test from 'ava';
import { ADMIN, dispose, startDaemon } from '../helpers/daemon.js';

test.serial('5 logins per minute per IP, then 429 with Retry-After until the window ends', async (t) => {
  // TUNNELWARD_RATE_WINDOW_MS shortens the minute to 5 s so recovery can be seen.
  const daemon = await startDaemon({ env: { TUNNELWARD_RATE_WINDOW_MS: '5000' } });
  t.teardown(() => dispose(daemon));
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push((await daemon.post('/login', ADMIN)).status);
  t.deepEqual(statuses, [200, 200, 200, 200, 200]);
  const blocked = await daemon.post('/login', ADMIN);
  t.is(blocked.status, 429);
  t.false(blocked.body.success);
  t.regex(blocked.body.message, /too many login attempts/);
  const retry = Number(blocked.headers.get('Retry-After'));
  t.true(retry >= 1 && retry <= 5, `Retry-After ${retry}`);
  t.is((await daemon.post('/login', { username: 'x', passwd: 'y' })).status, 429, 'still blocked');
  await new Promise((r) => setTimeout(r, retry * 1000 + 200));
  t.is((await daemon.post('/login', ADMIN)).status, 200, 'recovered');
});

test.serial('100 requests per minute per token, then 429; other tokens are unaffected', async (t) => {
  const daemon = await startDaemon({ env: { TUNNELWARD_RATE_WINDOW_MS: '4000' } });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const other = await daemon.login();
  const results = await Promise.all(Array.from({ length: 105 }, () => daemon.get('/sessionMgr/list', { token })));
  const ok = results.filter((r) => r.status === 200).length;
  const limited = results.filter((r) => r.status === 429);
  t.is(ok, 100);
  t.is(limited.length, 5);
  t.truthy(limited[0]!.headers.get('Retry-After'));
  t.regex(limited[0]!.body.message, /too many requests for this token/);
  t.is((await daemon.get('/sessionMgr/list', { token: other })).status, 200);
  await new Promise((r) => setTimeout(r, Number(limited[0]!.headers.get('Retry-After')) * 1000 + 200));
  t.is((await daemon.get('/sessionMgr/list', { token })).status, 200, 'recovered');
});

test.serial('the limits are settings', async (t) => {
  const daemon = await startDaemon({ settingsToml: '[RateLimit]\nLogin = 2\n' });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  t.is((await daemon.post('/login', ADMIN)).status, 200);
  t.is((await daemon.post('/login', ADMIN)).status, 429);
  const set = await daemon.post('/settings/set', { 'RateLimit.Login': 10 }, { token });
  t.true(set.body.success);
  t.is((await daemon.post('/login', ADMIN)).status, 200, 'applies at once');
});

test.serial('a flood of logins is bounded: excess attempts get 429 and other requests still answer', async (t) => {
  const daemon = await startDaemon({ settingsToml: '[RateLimit]\nLogin = 100000\n' });
  t.teardown(() => dispose(daemon));
  const flood = Array.from({ length: 80 }, () => daemon.post('/login', { username: 'admin', passwd: 'Wrong123!x' }));
  const status = await daemon.get('/system/getStatus');
  t.is(status.status, 200, 'the event loop is not starved while argon2 works');
  const results = await Promise.all(flood);
  const busy = results.filter((r) => r.status === 429);
  const rejected = results.filter((r) => r.status === 401);
  // 2 running + 32 queued at most: the rest are refused at once instead of piling up.
  t.true(busy.length >= 80 - 34, `${busy.length} got 429`);
  t.is(busy.length + rejected.length, 80);
  t.regex(busy[0]!.body.message, /too many password checks/);
});
