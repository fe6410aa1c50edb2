import test from 'ava';
import { disposeWithTunnels, startWithRoot, type Daemon } from '../../helpers/daemon.js';

let daemon: Daemon;
let root: string;
test.before(
  async () =>
    ({ daemon, root } = await startWithRoot({ settingsToml: '[RateLimit]\nLogin = 1000\nPerToken = 100000\n' })),
);
test.after.always(() => disposeWithTunnels(daemon, root));

test('only a superuser manages users', async (t) => {
  const admin = await daemon.userWithToken(root, 'um_admin', 'admin');
  const visitor = await daemon.userWithToken(root, 'um_visitor', 'visitor');
  for (const token of [admin.token, visitor.token]) {
    for (const [method, path, body] of [
      ['POST', '/userMgr/create', { username: 'um_x', passwd: 'Passw0rd!x' }],
      ['POST', '/userMgr/remove', { targetUserID: 1 }],
      ['POST', '/userMgr/modifyType', { userID: 1, newType: 'visitor' }],
      ['GET', '/userMgr/list', undefined],
    ] as const) {
      const res = await daemon.request(method, path, { token, body });
      t.is(res.status, 403, `${method} ${path}`);
      t.regex(res.body.message, /superuser/);
    }
  }
});

test('create: defaults to visitor, validates, refuses duplicates', async (t) => {
  const res = await daemon.post('/userMgr/create', { username: 'um_default', passwd: 'Passw0rd!x' }, { token: root });
  t.like(res.body, { success: true, data: { username: 'um_default', type: 'visitor' } });
  const admin = await daemon.post(
    '/userMgr/create',
    { username: 'um_adm2', passwd: 'Passw0rd!x', type: 'admin' },
    { token: root },
  );
  t.is(admin.body.data.type, 'admin');
  const dup = await daemon.post('/userMgr/create', { username: 'UM_DEFAULT', passwd: 'Passw0rd!x' }, { token: root });
  t.is(dup.status, 409);
  const weak = await daemon.post('/userMgr/create', { username: 'um_weak', passwd: 'password' }, { token: root });
  t.is(weak.status, 400);
  const badType = await daemon.post(
    '/userMgr/create',
    { username: 'um_bt', passwd: 'Passw0rd!x', type: 'god' },
    { token: root },
  );
  t.is(badType.status, 400);
});

test('list shows every user with an empty Passwd and CreatedAt as YYYY-MM-DD HH:MM:SS', async (t) => {
  await daemon.userWithToken(root, 'um_listed', 'admin');
  const res = await daemon.get('/userMgr/list', { token: root });
  t.true(res.body.success);
  const listed = res.body.data.find((u: any) => u.Username === 'um_listed');
  t.like(listed, { Passwd: '', Type: 'admin' });
  t.true(Number.isInteger(listed.UserID));
  t.regex(listed.CreatedAt, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  for (const u of res.body.data) t.is(u.Passwd, '');
  t.false(JSON.stringify(res.body).includes('argon2'));
});

test('removing a user ends their sessions at once', async (t) => {
  const victim = await daemon.userWithToken(root, 'um_removed', 'admin');
  t.is((await daemon.get('/sessionMgr/list', { token: victim.token })).status, 200);
  const res = await daemon.post('/userMgr/remove', { targetUserID: victim.userID }, { token: root });
  t.deepEqual(res.body, { success: true, message: 'user um_removed removed' });
  const after = await daemon.get('/sessionMgr/list', { token: victim.token });
  t.is(after.status, 401);
  const gone = await daemon.post('/userMgr/remove', { targetUserID: victim.userID }, { token: root });
  t.is(gone.status, 404);
  const bad = await daemon.post('/userMgr/remove', { targetUserID: 'abc' }, { token: root });
  t.is(bad.status, 400);
  const sessions = await daemon.get('/sessionMgr/list', { token: root });
  t.false(sessions.body.data.some((s: any) => s.Username === 'um_removed'));
});

test('the last superuser can be neither removed nor demoted', async (t) => {
  const list = await daemon.get('/userMgr/list', { token: root });
  const supers = list.body.data.filter((u: any) => u.Type === 'superuser');
  t.is(supers.length, 1);
  const remove = await daemon.post('/userMgr/remove', { targetUserID: supers[0].UserID }, { token: root });
  t.is(remove.status, 409);
  const demote = await daemon.post(
    '/userMgr/modifyType',
    { userID: supers[0].UserID, newType: 'admin' },
    { token: root },
  );
  t.is(demote.status, 409);
});

test('modifyType changes the role, which applies to the live token', async (t) => {
  const user = await daemon.userWithToken(root, 'um_promoted', 'visitor');
  t.is((await daemon.get('/sessionMgr/list', { token: user.token })).status, 403);
  const res = await daemon.post('/userMgr/modifyType', { userID: user.userID, newType: 'admin' }, { token: root });
  t.deepEqual(res.body, { success: true, message: 'user um_promoted is now admin' });
  t.is((await daemon.get('/sessionMgr/list', { token: user.token })).status, 200);
  const bad = await daemon.post('/userMgr/modifyType', { userID: user.userID, newType: 'owner' }, { token: root });
  t.is(bad.status, 400);
  const missing = await daemon.post('/userMgr/modifyType', { userID: 99999, newType: 'admin' }, { token: root });
  t.is(missing.status, 404);
});

test('modify: users change themselves only; a password change ends their other sessions', async (t) => {
  const user = await daemon.userWithToken(root, 'um_self', 'visitor');
  const other = await daemon.userWithToken(root, 'um_other', 'visitor');
  const second = await daemon.login('um_self', user.passwd);
  const foreign = await daemon.post(
    '/userMgr/modify',
    { userID: other.userID, passwd: 'Changed1!x' },
    { token: user.token },
  );
  t.is(foreign.status, 403);
  const weak = await daemon.post('/userMgr/modify', { userID: user.userID, passwd: 'short' }, { token: user.token });
  t.is(weak.status, 400);
  const nothing = await daemon.post('/userMgr/modify', { userID: user.userID }, { token: user.token });
  t.is(nothing.status, 400);
  const res = await daemon.post(
    '/userMgr/modify',
    { userID: user.userID, passwd: 'Changed1!x' },
    { token: user.token },
  );
  t.true(res.body.success);
  t.is((await daemon.get('/logout', { token: second })).status, 401, 'the other session ended');
  t.is(await daemon.login('um_self', 'Changed1!x').then(() => 'ok'), 'ok');
  const rename = await daemon.post(
    '/userMgr/modify',
    { userID: user.userID, username: 'um_self2' },
    { token: user.token },
  );
  t.true(rename.body.success);
  const taken = await daemon.post(
    '/userMgr/modify',
    { userID: user.userID, username: 'um_other' },
    { token: user.token },
  );
  t.is(taken.status, 409);
  const byRoot = await daemon.post('/userMgr/modify', { userID: other.userID, passwd: 'ByRoot12!x' }, { token: root });
  t.true(byRoot.body.success);
  t.is((await daemon.get('/logout', { token: other.token })).status, 401, "the user's session ended");
});
