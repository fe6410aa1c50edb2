import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { hashToken } from '../../../src/accounts/tokens.js';
import { inProcessApp, type InProcessApp } from '../../helpers/app.js';
import { openAsLeft } from '../../helpers/database.js';
import { dispose, startWithRoot } from '../../helpers/daemon.js';
import { openStream, wsUrl } from '../../helpers/streams.js';

const MINUTE = 60_000;
const KEY = /^twk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

const bearer = (key: string) => ({ headers: { Authorization: `Bearer ${key}` } });

/** A user of the in-process app, with a logged-in token. */
async function user(app: InProcessApp, root: string, username: string, type: string, passwd = 'Passw0rd!x') {
  const res = await app.request('POST', '/userMgr/create', { token: root, body: { username, passwd, type } });
  if (!res.body.success) throw new Error(res.body.message);
  return { userID: res.body.data.userID as number, token: await app.login(username, passwd), passwd };
}

async function newKey(app: InProcessApp, token: string, body: Record<string, unknown>): Promise<any> {
  const res = await app.request('POST', '/apiKeyMgr/create', { token, body });
  if (!res.body.success) throw new Error(`${res.status} ${res.body.message}`);
  return res.body.data;
}

test('a key is shown once, listed without its secret, and acts as its owner with X-Timestamp like any request', async (t) => {
  const app = await inProcessApp();
  t.teardown(() => app.close());
  const root = await app.login();
  const created = await app.request('POST', '/apiKeyMgr/create', { token: root, body: { name: 'ci' } });
  t.is(created.status, 200, created.body.message);
  const { key, keyID } = created.body.data;
  t.regex(key, KEY);
  t.is(KEY.exec(key)![1], keyID, 'the public id is the middle of the key');
  t.like(created.body.data, { name: 'ci', username: 'admin', role: 'superuser', ratePerMinute: 100, expiresAt: null });
  t.false(created.body.message.includes(key), 'the message (which the audit trail keeps) never holds the key');

  const listed = await app.request('GET', '/apiKeyMgr/list', { token: root });
  t.is(listed.body.data.length, 1);
  t.like(listed.body.data[0], { keyID, name: 'ci', role: 'superuser', createdBy: 'admin', lastUsedAt: null });
  // The secret is all after `twk_<id>_` (it may hold `_` itself).
  const secret = key.slice(`twk_${keyID}_`.length);
  t.true(secret.length >= 40);
  t.false(JSON.stringify(listed.body).includes(secret), 'no secret in a listing');

  const who = await app.request('GET', '/whoami', bearer(key));
  t.is(who.status, 200, who.body.message);
  t.like(who.body.data, { username: 'admin', type: 'superuser', keyID, keyName: 'ci', expireAt: null });
  t.is((await app.request('GET', '/userMgr/list', bearer(key))).status, 200);
  const used = (await app.request('GET', '/apiKeyMgr/list', { token: root })).body.data[0];
  t.is(used.lastUsedAt, new Date(app.clock.now()).toISOString(), 'the last use is shown');

  // The contract's timestamp rule holds for keys too.
  const stale = await app.request('GET', '/whoami', { ...bearer(key), timestamp: app.clock.now() - 10_000 });
  t.is(stale.status, 401);
  t.regex(stale.body.message, /X-Timestamp is outside/);
  t.is((await app.request('GET', '/whoami', { ...bearer(key), timestamp: null })).status, 401);

  // Tokens keep working exactly as before; the two credentials are never mixed.
  t.is((await app.request('GET', '/whoami', { token: root })).body.data.sessionID !== undefined, true);
  const both = await app.request('GET', '/whoami', { token: root, ...bearer(key) });
  t.is(both.status, 401);
  t.regex(both.body.message, /not both/);
  const wrong = await app.request('GET', '/whoami', bearer(`${key.slice(0, -4)}AAAA`));
  t.is(wrong.status, 401);
  t.regex(wrong.body.message, /^Invalid API key: unknown or revoked/);
  t.regex((await app.request('GET', '/whoami', bearer('nonsense'))).body.message, /^Invalid API key: not a/);
  // Another scheme belongs to a proxy in front (its Basic auth passed on): the token alone decides.
  const proxyAuth = { Authorization: 'Basic YWRtaW46eA==' };
  t.is((await app.request('GET', '/whoami', { token: root, headers: proxyAuth })).status, 200);
  t.regex((await app.request('GET', '/whoami', { headers: proxyAuth })).body.message, /^X-Token is required/);
  t.regex(
    (await app.request('GET', '/whoami', { headers: { Authorization: 'Bearer' } })).body.message,
    /^Invalid API key: not a/,
  );
});

test('scope: no key above its creator or its owner; a visitor key of an admin does no admin things', async (t) => {
  const app = await inProcessApp();
  t.teardown(() => app.close());
  const root = await app.login();
  const admin = await user(app, root, 'ops', 'admin');
  const visitor = await user(app, root, 'guest', 'visitor');

  const above = await app.request('POST', '/apiKeyMgr/create', {
    token: admin.token,
    body: { name: 'x', role: 'superuser' },
  });
  t.is(above.status, 403);
  t.regex(above.body.message, /role superuser is above your own \(admin\)/);

  const { key: readOnly } = await newKey(app, admin.token, { name: 'read-only', role: 'visitor' });
  t.is((await app.request('GET', '/tunnelAct/instanceMgr/list', bearer(readOnly))).status !== 403, true);
  const denied = await app.request('GET', '/sessionMgr/list', bearer(readOnly));
  t.is(denied.status, 403, 'listing sessions needs an admin');
  t.is((await app.request('GET', '/settings/get', bearer(readOnly))).status, 403);
  t.is((await app.request('GET', '/sessionMgr/list', { token: admin.token })).status, 200, 'its owner can');
  t.is((await app.request('GET', '/whoami', bearer(readOnly))).body.data.type, 'visitor');

  // The default scope is the creator's role.
  t.is((await newKey(app, admin.token, { name: 'full' })).role, 'admin');

  // A superuser creates keys for anyone, up to that user's role.
  const tooHigh = await app.request('POST', '/apiKeyMgr/create', {
    token: root,
    body: { name: 'deploy', userID: visitor.userID, role: 'admin' },
  });
  // What the owner may not hold is refused as a permission (403), not as a malformed request.
  t.is(tooHigh.status, 403);
  t.regex(tooHigh.body.message, /above the role of guest \(visitor\)/);
  const forGuest = await newKey(app, root, { name: 'deploy', userID: visitor.userID });
  t.like(forGuest, { userID: visitor.userID, username: 'guest', role: 'visitor', createdBy: 'admin' });
  t.is((await app.request('GET', '/whoami', bearer(forGuest.key))).body.data.username, 'guest');
  const guestKeys = await app.request('GET', '/apiKeyMgr/list', { token: visitor.token });
  t.deepEqual(
    guestKeys.body.data.map((k: any) => k.name),
    ['deploy'],
    'the owner sees the key made for them',
  );
  t.is((await app.request('GET', `/apiKeyMgr/list?userID=${visitor.userID}`, { token: root })).body.data.length, 1);

  // Nobody else does that for others.
  const forOther = await app.request('POST', '/apiKeyMgr/create', {
    token: admin.token,
    body: { name: 'x', userID: visitor.userID },
  });
  t.is(forOther.status, 403);
  t.is((await app.request('GET', `/apiKeyMgr/list?userID=${admin.userID}`, { token: visitor.token })).status, 403);

  // Names are unique per user (ignoring case), and only per user.
  t.is((await app.request('POST', '/apiKeyMgr/create', { token: admin.token, body: { name: 'FULL' } })).status, 409);
  t.is((await newKey(app, root, { name: 'full' })).name, 'full');
  // Strict fields: a misspelt expiry must not make a key that never expires.
  const misspelt = await app.request('POST', '/apiKeyMgr/create', {
    token: admin.token,
    body: { name: 'y', expires: 60 },
  });
  t.is(misspelt.status, 400);
  t.regex(misspelt.body.message, /unknown field expires/);
  t.is(
    (await app.request('POST', '/apiKeyMgr/create', { token: admin.token, body: { name: 'bad name!' } })).status,
    400,
  );
});

test('what a key may not do: make keys, change its owner’s password or name, log out', async (t) => {
  const app = await inProcessApp();
  t.teardown(() => app.close());
  const root = await app.login();
  const { key } = await newKey(app, root, { name: 'all-powerful' });
  const mint = await app.request('POST', '/apiKeyMgr/create', { ...bearer(key), body: { name: 'child' } });
  t.is(mint.status, 403);
  t.regex(mint.body.message, /needs a password login/);
  const takeOver = await app.request('POST', '/userMgr/modify', {
    ...bearer(key),
    body: { userID: 1, passwd: 'Other123!x' },
  });
  t.is(takeOver.status, 403);
  t.is((await app.request('GET', '/logout', bearer(key))).status, 400);
  t.is((await app.request('GET', '/whoami', bearer(key))).status, 200, 'the key itself still works');
});

test('revocation takes effect at once; by its owner or a superuser only', async (t) => {
  const app = await inProcessApp();
  t.teardown(() => app.close());
  const root = await app.login();
  const admin = await user(app, root, 'ops', 'admin');
  const a = await newKey(app, admin.token, { name: 'a' });
  const b = await newKey(app, admin.token, { name: 'b' });
  const c = await newKey(app, admin.token, { name: 'c' });
  const visitor = await user(app, root, 'guest', 'visitor');

  const probe = await app.request('POST', '/apiKeyMgr/revoke', { token: visitor.token, body: { keyID: a.keyID } });
  t.is(probe.status, 404, "another user's key id is as unknown as a made-up one");
  const byName = await app.request('POST', '/apiKeyMgr/revoke', {
    token: visitor.token,
    body: { name: 'a', userID: admin.userID },
  });
  t.is(byName.status, 403);

  const revoked = await app.request('POST', '/apiKeyMgr/revoke', { token: admin.token, body: { name: 'a' } });
  t.is(revoked.status, 200, revoked.body.message);
  t.like(revoked.body.data, { keyID: a.keyID, name: 'a', userID: admin.userID });
  const after = await app.request('GET', '/whoami', bearer(a.key));
  t.is(after.status, 401);
  t.regex(after.body.message, /unknown or revoked/);

  t.is((await app.request('POST', '/apiKeyMgr/revoke', { token: root, body: { keyID: b.keyID } })).status, 200);
  t.is((await app.request('GET', '/whoami', bearer(b.key))).status, 401, 'a superuser revoked it');
  // A key may revoke itself (rotation).
  t.is((await app.request('POST', '/apiKeyMgr/revoke', { ...bearer(c.key), body: { name: 'c' } })).status, 200);
  t.is((await app.request('GET', '/whoami', bearer(c.key))).status, 401);
  t.deepEqual((await app.request('GET', '/apiKeyMgr/list', { token: admin.token })).body.data, []);
  t.is((await app.request('POST', '/apiKeyMgr/revoke', { token: admin.token, body: { name: 'a' } })).status, 404);
});

test('the owner: a lower role caps the keys, a new password or removal revokes them', async (t) => {
  const app = await inProcessApp();
  t.teardown(() => app.close());
  const root = await app.login();
  const admin = await user(app, root, 'ops', 'admin');
  const { key } = await newKey(app, admin.token, { name: 'full', role: 'admin' });
  t.is((await app.request('GET', '/sessionMgr/list', bearer(key))).status, 200);

  const demote = (newType: string) =>
    app.request('POST', '/userMgr/modifyType', { token: root, body: { userID: admin.userID, newType } });
  t.true((await demote('visitor')).body.success);
  t.is((await app.request('GET', '/sessionMgr/list', bearer(key))).status, 403, 'capped by the owner’s new role');
  t.is((await app.request('GET', '/whoami', bearer(key))).body.data.type, 'visitor');
  t.true((await demote('superuser')).body.success);
  t.is((await app.request('GET', '/whoami', bearer(key))).body.data.type, 'admin', 'never above its own scope');

  const password = await app.request('POST', '/userMgr/modify', {
    token: admin.token,
    body: { userID: admin.userID, passwd: 'N3w!Passw0rd' },
  });
  t.true(password.body.success, password.body.message);
  t.is((await app.request('GET', '/whoami', bearer(key))).status, 401, 'a new password revokes the keys');
  t.deepEqual((await app.request('GET', '/apiKeyMgr/list', { token: admin.token })).body.data, []);

  const { key: second } = await newKey(app, admin.token, { name: 'again' });
  t.true(
    (await app.request('POST', '/userMgr/remove', { token: root, body: { targetUserID: admin.userID } })).body.success,
  );
  t.is((await app.request('GET', '/whoami', bearer(second))).status, 401, 'removing the owner removes the keys');
});

test('a key expires at its time, to the millisecond', async (t) => {
  const app = await inProcessApp();
  t.teardown(() => app.close());
  const root = await app.login();
  const created = await newKey(app, root, { name: 'short', expiresIn: 90 });
  t.is(created.expiresAt, new Date(app.clock.now() + 90_000).toISOString());
  app.clock.advance(90_000 - 1);
  t.is((await app.request('GET', '/whoami', bearer(created.key))).status, 200);
  app.clock.advance(1);
  const expired = await app.request('GET', '/whoami', bearer(created.key));
  t.is(expired.status, 401);
  t.regex(expired.body.message, /Invalid API key: expired/);
  t.is(
    (await app.request('POST', '/apiKeyMgr/create', { token: root, body: { name: 'x', expiresIn: 0 } })).status,
    400,
  );
  t.is(
    (await app.request('POST', '/apiKeyMgr/create', { token: root, body: { name: 'x', expiresIn: 1.5 } })).status,
    400,
  );
});

test('each key has its own rate limit; the default is the per-token limit; only a superuser sets one above it', async (t) => {
  const app = await inProcessApp({ settingsToml: '[RateLimit]\nPerToken = 5\n' });
  t.teardown(() => app.close());
  const root = await app.login();
  const slow = await newKey(app, root, { name: 'slow', ratePerMinute: 3 });
  const plain = await newKey(app, root, { name: 'plain' });
  t.is(plain.ratePerMinute, 5, 'the per-token limit');
  const statuses = [];
  for (let i = 0; i < 4; i++) statuses.push((await app.request('GET', '/whoami', bearer(slow.key))).status);
  t.deepEqual(statuses, [200, 200, 200, 429]);
  const limited = await app.request('GET', '/whoami', bearer(slow.key));
  t.regex(limited.body.message, /too many requests for this API key/);
  t.is(limited.headers.get('Retry-After'), '60');
  t.is((await app.request('GET', '/whoami', bearer(plain.key))).status, 200, 'another key is unaffected');
  app.clock.advance(MINUTE);
  t.is((await app.request('GET', '/whoami', bearer(slow.key))).status, 200, 'a new minute');

  const fast = await newKey(app, root, { name: 'fast', ratePerMinute: 8 });
  const burst = [];
  for (let i = 0; i < 8; i++) burst.push((await app.request('GET', '/whoami', bearer(fast.key))).status);
  t.true(
    burst.every((s) => s === 200),
    'a superuser may allow more than the per-token limit',
  );

  const ops = await user(app, root, 'ops', 'admin');
  const refused = await app.request('POST', '/apiKeyMgr/create', {
    token: ops.token,
    body: { name: 'fast', ratePerMinute: 6 },
  });
  t.is(refused.status, 403);
  t.regex(refused.body.message, /above the per-token limit \(5\) needs a superuser/);
});

test('at rest only a hash; never in the log or the audit trail; a stream on a key closes when it is revoked', async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: 'Debug = true\n' });
  t.teardown(() => dispose(daemon));
  const created = await daemon.post('/apiKeyMgr/create', { name: 'robot', role: 'admin' }, { token: root });
  t.true(created.body.success, created.body.message);
  const { key, keyID } = created.body.data;
  const secret = KEY.exec(key)![2]!;

  // The reply came after the save: the files on disk hold the key's hash, and neither the key nor its secret.
  const dbPath = join(daemon.dataDir, 'tunnelward.db');
  for (const file of [dbPath, `${dbPath}.journal`]) {
    const bytes = await readFile(file);
    t.false(bytes.includes(secret), `the secret is not in ${file}`);
    t.false(bytes.includes(key));
  }
  const db = await openAsLeft(dbPath, t);
  t.deepEqual(db.all('SELECT id, key_hash, role FROM api_keys'), [
    { id: keyID, key_hash: hashToken(key), role: 'admin' },
  ]);

  // Used for requests (one refused), and for a stream.
  const auth = { headers: { Authorization: `Bearer ${key}` } };
  t.is((await daemon.get('/sessionMgr/list', auth)).status, 200);
  t.is((await daemon.get('/userMgr/list', auth)).status, 403, 'admin scope');
  t.true((await daemon.post('/settings/set', { Debug: true }, auth)).body.success);
  t.is((await daemon.get('/whoami', { headers: { Authorization: `Bearer ${key}x` } })).status, 401);
  const stream = await openStream(wsUrl(daemon.url, '/system/events'), auth.headers);
  await stream.waitFor((m) => m.some((e) => e.event === 'events.start'));
  const inQuery = await openStream(wsUrl(daemon.url, `/system/events?token=${key}`)).catch((refusal) => refusal);
  t.is(inQuery.status, 401, 'a key is not taken from the query string, where logs would keep it');

  const revoked = await daemon.post('/apiKeyMgr/revoke', { keyID }, { token: root });
  t.true(revoked.body.success, revoked.body.message);
  t.deepEqual(await stream.closed, { code: 4401, reason: 'API key revoked' });

  const trail = await daemon.get('/system/audit', { token: root });
  const entries = trail.body.data.entries as any[];
  const create = entries.find((e) => e.action === 'apiKey.create');
  t.like(create, { targetType: 'apiKey', targetID: keyID, targetName: 'robot', outcome: 'ok' });
  t.like(create.detail, { role: 'admin' });
  t.like(
    entries.find((e) => e.action === 'settings.set').detail,
    { apiKey: keyID },
    'a change made with a key names it',
  );
  t.like(
    entries.find((e) => e.action === 'apiKey.revoke'),
    { targetID: keyID, outcome: 'ok' },
  );
  t.false(JSON.stringify(trail.body).includes(secret), 'no secret in the audit trail');
  await daemon.waitForOutput(/"path":"\/whoami"/);
  t.true(
    daemon.output.some((line) => line.includes('"path":"/sessionMgr/list"')),
    'requests with the key were logged',
  );
  t.false(
    daemon.output.some((line) => line.includes(secret)),
    'no secret in the log',
  );
});

test('a superuser key cannot mint a credential that outlives it: no user created, no role raised; a password login can', async (t) => {
  const app = await inProcessApp();
  t.teardown(() => app.close());
  const root = await app.login();
  const { key } = await newKey(app, root, { name: 'leaky' });
  const made = await app.request('POST', '/userMgr/create', {
    ...bearer(key),
    body: { username: 'planted', passwd: 'Passw0rd!x', type: 'superuser' },
  });
  t.is(made.status, 403);
  t.regex(made.body.message, /creating a user needs a password login, not an API key/);
  // A self-registered visitor is not raised by the key either.
  const visitor = await user(app, root, 'selfmade', 'visitor');
  const raised = await app.request('POST', '/userMgr/modifyType', {
    ...bearer(key),
    body: { userID: visitor.userID, newType: 'superuser' },
  });
  t.is(raised.status, 403);
  t.regex(raised.body.message, /changing a user's type needs a password login/);
  const users = (await app.request('GET', '/userMgr/list', { token: root })).body.data;
  t.false(users.some((u: { Username: string }) => u.Username === 'planted'));
  t.is(users.find((u: { Username: string }) => u.Username === 'selfmade').Type, 'visitor');
  // The same with a password login works.
  t.is(
    (
      await app.request('POST', '/userMgr/modifyType', {
        token: root,
        body: { userID: visitor.userID, newType: 'admin' },
      })
    ).status,
    200,
  );
});
