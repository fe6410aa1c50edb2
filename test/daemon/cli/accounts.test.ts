// Accounts from the command line: passwd (which says first what a new password ends), and a superuser's user
// add / ls / type / rm. Passwords never on the command line.
import test from 'ava';
import { cli, loggedIn } from '../../helpers/cli.js';
import { dispose, startDaemon, type Daemon } from '../../helpers/daemon.js';

let daemon: Daemon;
let root: string;
test.before(async () => {
  daemon = await startDaemon({ settingsToml: '[RateLimit]\nLogin = 1000\n' });
  root = await daemon.login();
});
test.after.always(() => dispose(daemon));

test('user add, ls, type and rm: a superuser manages the users; the password comes from the environment or standard input', async (t) => {
  const env = await loggedIn(daemon, t);
  const added = await cli(['user', 'add', 'cl_alice', '--type', 'admin'], env, 'Alice123!x\n');
  t.is(added.code, 0, added.stderr);
  t.regex(added.stdout, /^ok\s+user cl_alice created$/m);
  t.true((await daemon.post('/login', { username: 'cl_alice', passwd: 'Alice123!x' })).body.success);
  const listed = await cli(['user', 'ls'], env);
  t.regex(listed.stdout, /^\d+\s+cl_alice\s+admin\s+/m);
  const typed = await cli(['user', 'type', 'cl_alice', 'visitor'], env);
  t.regex(typed.stdout, /user cl_alice is now visitor/);
  const weak = await cli(['user', 'add', 'cl_bob'], { ...env, TUNNELWARD_PASSWORD: 'short' });
  t.is(weak.code, 1);
  t.regex(weak.stderr, /passwd must be at least 8 characters/);
  t.is((await cli(['user', 'add', 'cl_bob', 'Secret123!x'], env)).code, 2, 'never a password as an argument');
  const removed = await cli(['user', 'rm', 'cl_alice'], env);
  t.regex(removed.stdout, /^ok\s+user cl_alice removed: its sessions ended and its API keys were revoked$/m);
  t.false((await daemon.post('/login', { username: 'cl_alice', passwd: 'Alice123!x' })).body.success);
  t.regex((await cli(['user', 'rm', 'cl_nobody'], env)).stderr, /no user cl_nobody/);
});

test('passwd says first that a new password ends the other sessions and revokes the API keys, and the reply says it happened', async (t) => {
  await daemon.userWithToken(root, 'cl_carol', 'admin', 'Carol123!x');
  const env = await loggedIn(daemon, t, 'cl_carol', 'Carol123!x');
  const other = await daemon.login('cl_carol', 'Carol123!x');
  const key = await daemon.post('/apiKeyMgr/create', { name: 'ci' }, { token: other });
  t.true(key.body.success, key.body.message);
  const changed = await cli(['passwd'], { ...env, TUNNELWARD_PASSWORD: 'Carol456!x' });
  t.is(changed.code, 0, changed.stderr);
  t.regex(changed.stderr, /^a new password ends cl_carol's other sessions and revokes cl_carol's 1 API key$/m);
  t.regex(
    changed.stdout,
    /user cl_carol modified; the new password ended cl_carol's other sessions and revoked its 1 API key/,
  );
  const byKey = await daemon.get('/whoami', { headers: { Authorization: `Bearer ${key.body.data.key}` } });
  t.is(byKey.status, 401, 'the key is revoked');
  t.is((await daemon.get('/whoami', { token: other })).status, 401, 'the other session ended');
  t.true((await daemon.post('/login', { username: 'cl_carol', passwd: 'Carol456!x' })).body.success);
  // A superuser sets another's password.
  const envRoot = await loggedIn(daemon, t);
  const set = await cli(['passwd', 'cl_carol'], { ...envRoot, TUNNELWARD_PASSWORD: 'Carol789!x' });
  t.is(set.code, 0, set.stderr);
  t.regex(set.stdout, /revoked its 0 API keys/);
});
