import test from 'ava';
import { disposeWithTunnels, startWithRoot, type Daemon } from '../../helpers/daemon.js';

let daemon: Daemon;
let root: string;
test.before(async () => ({ daemon, root } = await startWithRoot({ settingsToml: '[RateLimit]\nLogin = 1000\n' })));
test.after.always(() => disposeWithTunnels(daemon, root));

test('list: superuser and admin see sessions with an ISO 8601 ExpireAt; visitors may not', async (t) => {
  const admin = await daemon.userWithToken(root, 'sm_admin', 'admin');
  const visitor = await daemon.userWithToken(root, 'sm_visitor', 'visitor');
  const res = await daemon.get('/sessionMgr/list', { token: admin.token });
  t.is(res.status, 200);
  const mine = res.body.data.find((s: any) => s.Username === 'sm_admin');
  t.is(mine.UserID, admin.userID);
  t.is(typeof mine.ID, 'string');
  t.regex(mine.ExpireAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
  const hour = Date.parse(mine.ExpireAt) - Date.now();
  t.true(hour > 3590_000 && hour <= 3600_000);
  t.false(JSON.stringify(res.body).includes(admin.token), 'tokens are never listed');
  t.is((await daemon.get('/sessionMgr/list', { token: visitor.token })).status, 403);
});

test('remove: superuser only; the token stops working at once', async (t) => {
  const user = await daemon.userWithToken(root, 'sm_victim', 'admin');
  const list = await daemon.get('/sessionMgr/list', { token: root });
  const session = list.body.data.find((s: any) => s.Username === 'sm_victim');
  const byAdmin = await daemon.post('/sessionMgr/remove', { sessionID: session.ID }, { token: user.token });
  t.is(byAdmin.status, 403);
  const res = await daemon.post('/sessionMgr/remove', { sessionID: session.ID }, { token: root });
  t.true(res.body.success);
  t.is(res.body.data, undefined);
  const after = await daemon.get('/sessionMgr/list', { token: user.token });
  t.is(after.status, 401);
  const again = await daemon.post('/sessionMgr/remove', { sessionID: session.ID }, { token: root });
  t.is(again.status, 404);
  const missing = await daemon.post('/sessionMgr/remove', {}, { token: root });
  t.is(missing.status, 400);
  t.regex(missing.body.message, /sessionID is required/);
});
