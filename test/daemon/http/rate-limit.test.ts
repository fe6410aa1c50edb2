import test from 'ava';
import { ADMIN, dispose, startWithRoot } from '../../helpers/daemon.js';
import { inProcessApp } from '../../helpers/app.js';
import { openStream, wsUrl } from '../../helpers/streams.js';
import { responseDrift } from '../../helpers/response-schema.js';

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
  const results = await Promise.all(
    Array.from({ length: 105 }, () => app.request('GET', '/sessionMgr/list', { token })),
  );
  t.is(results.filter((r) => r.status === 200).length, 100);
  const limited = results.filter((r) => r.status === 429);
  t.is(limited.length, 5);
  t.is(limited[0]!.headers.get('Retry-After'), '60');
  t.regex(limited[0]!.body.message, /too many requests for this token/);
  t.is((await app.request('GET', '/sessionMgr/list', { token: other })).status, 200);
  app.clock.advance(MINUTE);
  t.is((await app.request('GET', '/sessionMgr/list', { token })).status, 200, 'recovered');
});

test('stream upgrades count against the token limit, and past it are refused before the upgrade with 429', async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: '[RateLimit]\nPerToken = 4\n' });
  t.teardown(() => dispose(daemon));
  const upgrade = (path: string) =>
    openStream(wsUrl(daemon.url, `${path}${path.includes('?') ? '&' : '?'}token=${root}`)).then(
      (stream) => (stream.ws.close(), { status: 101, headers: {} as Record<string, string>, body: undefined }),
      (refusal: { status: number; headers: Record<string, string>; body: { success: boolean; message: string } }) =>
        refusal,
    );
  // Two requests and two upgrades: the token's four for this minute.
  t.is((await daemon.get('/sessionMgr/list', { token: root })).status, 200);
  t.is((await upgrade('/system/getLogs')).status, 101);
  t.is((await upgrade('/system/events')).status, 101);
  t.is((await daemon.get('/sessionMgr/list', { token: root })).status, 200);

  for (const path of ['/system/getLogs', '/system/events', '/tunnelAct/instanceMgr/logs?instanceID=1']) {
    const refused = await upgrade(path);
    t.is(refused.status, 429, path);
    t.deepEqual(refused.body, { success: false, message: 'too many requests for this token, slow down' }, path);
    t.regex(refused.headers['retry-after'] ?? '', /^\d+$/, path);
    // As the document says it: a 429 of the stream's, in the envelope.
    t.is(responseDrift('GET', path, refused.status, refused.body), undefined, path);
  }
  const after = await daemon.get('/sessionMgr/list', { token: root });
  t.is(after.status, 429, 'the upgrades were counted with the requests');
  t.truthy(after.headers.get('Retry-After'));
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

test('registration has a limit of its own: ten users from one address within a minute, beside the login limit', async (t) => {
  const app = await inProcessApp({ settingsToml: '[RateLimit]\nRegister = 11\n' });
  t.teardown(() => app.close());
  const register = (i: number) =>
    app.request('POST', '/register', { body: { username: `onboard_${i}`, passwd: 'Passw0rd!x' } });
  for (let i = 0; i < 10; i++) t.true((await register(i)).body.success, `registration ${i}`);
  // The login limit (5) is untouched by the registrations, and the other way round.
  for (let i = 0; i < 5; i++) t.is((await app.request('POST', '/login', { body: ADMIN })).status, 200);
  t.is((await app.request('POST', '/login', { body: ADMIN })).status, 429);
  t.true((await register(10)).body.success);
  const over = await register(11);
  t.is(over.status, 429);
  t.regex(over.body.message, /too many registration attempts/);
  app.clock.advance(MINUTE);
  t.true((await register(11)).body.success, 'a new minute');
});

test('self-registration can be closed, and opened again, without a restart', async (t) => {
  const app = await inProcessApp();
  t.teardown(() => app.close());
  const token = await app.login();
  t.true((await app.request('POST', '/settings/set', { token, body: { 'Register.Enabled': false } })).body.success);
  const closed = await app.request('POST', '/register', { body: { username: 'closed_door', passwd: 'Passw0rd!x' } });
  t.is(closed.status, 403);
  t.is(closed.body.message, 'self-registration is closed on this server (Register.Enabled)');
  const users = await app.request('GET', '/userMgr/list', { token });
  t.false(
    users.body.data.some((u: any) => u.Username === 'closed_door'),
    'nothing was created',
  );
  t.true((await app.request('POST', '/settings/set', { token, body: { 'Register.Enabled': true } })).body.success);
  t.true(
    (await app.request('POST', '/register', { body: { username: 'open_door', passwd: 'Passw0rd!x' } })).body.success,
  );
});
