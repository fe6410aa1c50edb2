import test from 'ava';
import { dispose, startDaemon } from '../helpers/daemon.js';

test('a token expires after its lifetime', async (t) => {
  // TUNNELWARD_TOKEN_TTL_MS shortens the hour to 1.5 s.
  const daemon = await startDaemon({ env: { TUNNELWARD_TOKEN_TTL_MS: '1500' } });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  t.is((await daemon.get('/userMgr/list', { token })).status, 200);
  const sessions = await daemon.get('/sessionMgr/list', { token });
  const expireAt = Date.parse(sessions.body.data[0].ExpireAt);
  t.true(Math.abs(expireAt - (Date.now() + 1500)) < 1500);
  await new Promise((r) => setTimeout(r, 1700));
  const expired = await daemon.get('/userMgr/list', { token });
  t.is(expired.status, 401);
  t.regex(expired.body.message, /Invalid token: expired/);
});
