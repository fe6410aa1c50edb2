import test from 'ava';
import { inProcessApp } from '../../helpers/app.js';

const HOUR = 60 * 60 * 1000;

test('a token is valid for an hour, to the millisecond, then refused as expired', async (t) => {
  const app = await inProcessApp({ settingsToml: '[RateLimit]\nPerToken = 100000\n' });
  t.teardown(() => app.close());
  const token = await app.login();
  const loggedInAt = app.clock.now();
  t.is((await app.request('GET', '/userMgr/list', { token })).status, 200);
  const sessions = await app.request('GET', '/sessionMgr/list', { token });
  t.is(Date.parse(sessions.body.data[0].ExpireAt), loggedInAt + HOUR);
  app.clock.advance(HOUR - 1);
  t.is((await app.request('GET', '/userMgr/list', { token })).status, 200, 'still valid a millisecond before');
  app.clock.advance(1);
  const expired = await app.request('GET', '/userMgr/list', { token });
  t.is(expired.status, 401);
  t.regex(expired.body.message, /Invalid token: expired/);
});
