import test from 'ava';
import { request as httpRequest } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { ADMIN, dispose, startDaemon, type Daemon } from '../../helpers/daemon.js';

let daemon: Daemon;
// Many logins from one address: lift the per-IP login limit for this file (rate-limit.test.ts covers it).
test.before(async () => {
  daemon = await startDaemon({ settingsToml: '[RateLimit]\nLogin = 1000\n' });
});
test.after.always(() => dispose(daemon));

test('public endpoints need no token and no timestamp', async (t) => {
  const status = await daemon.get('/system/getStatus', { timestamp: null });
  t.is(status.status, 200);
  t.deepEqual(status.body, { success: true, message: 'status', data: { Status: 'Online' } });
  const info = await daemon.get('/system/getSoftwareInfo', { timestamp: null });
  t.is(info.body.data.Name, 'tunnelward');
  t.regex(info.body.data.Version, /^\d+\.\d+\.\d+/);
  t.true(
    Number.isInteger(info.body.data.BuildVer) && info.body.data.BuildVer >= -32768 && info.body.data.BuildVer <= 32767,
  );
  t.true(['debug', 'release'].includes(info.body.data.BuildType));
  for (const key of ['Developer', 'Description']) t.is(typeof info.body.data[key], 'string');
});

test('register creates a visitor, even when a privileged type is asked for', async (t) => {
  const plain = await daemon.post('/register', { username: 'reg_plain', passwd: 'Passw0rd!x' });
  t.is(plain.status, 200);
  t.like(plain.body, { success: true, data: { username: 'reg_plain', type: 'visitor' } });
  t.true(Number.isInteger(plain.body.data.userID));
  const sneaky = await daemon.post('/register', { username: 'reg_sneaky', passwd: 'Passw0rd!x', type: 'superuser' });
  t.is(sneaky.body.data.type, 'visitor');
  t.regex(sneaky.body.message, /only visitors/);
  const token = await daemon.login('reg_sneaky', 'Passw0rd!x');
  const denied = await daemon.get('/userMgr/list', { token });
  t.is(denied.status, 403);
});

test('register validates username, password rules and type', async (t) => {
  const cases: Array<[object, number, RegExp]> = [
    [{ passwd: 'Passw0rd!x' }, 400, /username is required/],
    [{ username: 'reg_nopass' }, 400, /passwd is required/],
    [{ username: 'ab', passwd: 'Passw0rd!x' }, 400, /username must be 3 to 32/],
    [{ username: 'bad name', passwd: 'Passw0rd!x' }, 400, /username must be/],
    [{ username: 'x'.repeat(33), passwd: 'Passw0rd!x' }, 400, /username must be/],
    [{ username: 'reg_rule1', passwd: 'Pa0!' }, 400, /at least 8 characters/],
    [{ username: 'reg_rule2', passwd: 'passw0rd!x' }, 400, /uppercase letter/],
    [{ username: 'reg_rule3', passwd: 'PASSW0RD!X' }, 400, /lowercase letter/],
    [{ username: 'reg_rule4', passwd: 'Password!x' }, 400, /digit/],
    [{ username: 'reg_rule5', passwd: 'Passw0rdxx' }, 400, /special character/],
    [{ username: 'reg_type', passwd: 'Passw0rd!x', type: 'root' }, 400, /type must be/],
    [{ username: 5, passwd: 'Passw0rd!x' }, 400, /username must be a string/],
  ];
  for (const [body, status, message] of cases) {
    const res = await daemon.post('/register', body);
    t.is(res.status, status, JSON.stringify(body));
    t.false(res.body.success);
    t.regex(res.body.message, message, JSON.stringify(body));
  }
});

test('duplicate usernames are refused, ignoring case', async (t) => {
  t.true((await daemon.post('/register', { username: 'reg_dup', passwd: 'Passw0rd!x' })).body.success);
  const again = await daemon.post('/register', { username: 'REG_dup', passwd: 'Passw0rd!x' });
  t.is(again.status, 409);
  t.regex(again.body.message, /already taken/);
});

test('bad bodies get a clear 4xx in the envelope', async (t) => {
  const notJson = await daemon.request('POST', '/register', {
    body: '{"username": ',
    headers: { 'Content-Type': 'application/json' },
  });
  t.is(notJson.status, 400);
  t.deepEqual(notJson.body, { success: false, message: 'request body is not valid JSON' });
  const form = await daemon.request('POST', '/register', {
    body: 'username=x',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
  });
  t.is(form.status, 415);
  // The same in chunks, with no Content-Length.
  const chunked = await new Promise<{ status: number; body: { message: string } }>((resolve, reject) => {
    const req = httpRequest(`${daemon.url}/register`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain', 'X-Timestamp': String(Date.now()) },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.write('username=');
    req.end('x');
  });
  t.deepEqual(chunked, {
    status: 415,
    body: { success: false, message: 'request body must be JSON (Content-Type: application/json)' },
  });
  const array = await daemon.request('POST', '/register', { body: '[1,2]' });
  t.is(array.status, 400);
  t.regex(array.body.message, /JSON object/);
  const unknown = await daemon.get('/no/such/thing');
  t.is(unknown.status, 404);
  t.false(unknown.body.success);
});

test('compressed bodies: read as their Content-Encoding says; data that is not what it says, or another encoding, refused', async (t) => {
  const login = { username: ADMIN.username, passwd: ADMIN.passwd };
  const send = (encoding: string, body: Buffer | string) =>
    daemon.request('POST', '/login', {
      body,
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': encoding },
    });
  const json = Buffer.from(JSON.stringify(login));
  for (const [encoding, packed] of [
    ['gzip', gzipSync(json)],
    ['deflate', deflateSync(json)],
    ['br', brotliCompressSync(json)],
  ] as const) {
    const ok = await send(encoding, packed);
    t.is(ok.status, 200, `${encoding}: ${ok.body.message}`);
    t.truthy(ok.body.data.token);
    const junk = await send(encoding, 'not compressed at all');
    t.is(junk.status, 400);
    t.deepEqual(junk.body, { success: false, message: `request body is not valid ${encoding} data` });
  }
  // Content codings are case-insensitive.
  for (const encoding of ['GZIP', 'Gzip']) {
    const upper = await send(encoding, gzipSync(json));
    t.is(upper.status, 200, `${encoding}: ${upper.body.message}`);
  }
  const cut = await send('gzip', gzipSync(json).subarray(0, 20));
  t.deepEqual([cut.status, cut.body.message], [400, 'request body is not valid gzip data']);
  const other = await send('compress', json);
  t.is(other.status, 415);
  t.is(other.body.message, 'Content-Encoding compress is not supported (gzip, deflate, br or none)');
  // The limit is on the body as read: 50 MB of zeros in 50 KB of gzip is too large, not 50 MB of memory.
  const bomb = await send('gzip', gzipSync(Buffer.alloc(50_000_000)));
  t.deepEqual([bomb.status, bomb.body.message], [413, 'request body is too large']);
  t.false(
    daemon.output.some((line) => /"level":50/.test(line)),
    'nothing logged as a failure of the daemon',
  );
});

test('login returns a token; wrong password and unknown user fail alike', async (t) => {
  const ok = await daemon.post('/login', ADMIN);
  t.is(ok.status, 200);
  t.like(ok.body, { success: true, data: { username: 'admin', type: 'superuser', userID: 1 } });
  t.true(ok.body.data.token.length >= 43);
  // When it expires, so that a client need not ask: an hour from now.
  const expiresIn = Date.parse(ok.body.data.expireAt) - Date.now();
  t.true(expiresIn > 59 * 60_000 && expiresIn <= 60 * 60_000, ok.body.data.expireAt);
  const wrong = await daemon.post('/login', { username: 'admin', passwd: 'Wrong123!x' });
  const nobody = await daemon.post('/login', { username: 'nobody_here', passwd: 'Wrong123!x' });
  t.is(wrong.status, 401);
  t.is(nobody.status, 401);
  t.deepEqual(wrong.body, nobody.body);
  const missing = await daemon.post('/login', { username: 'admin' });
  t.is(missing.status, 400);
});

test('a login failure takes as long for an unknown user as for a wrong password', async (t) => {
  const time = async (username: string) => {
    const start = process.hrtime.bigint();
    await daemon.post('/login', { username, passwd: 'Wrong123!x' });
    return Number(process.hrtime.bigint() - start) / 1e6;
  };
  const known: number[] = [];
  const unknown: number[] = [];
  // Interleaved, so that load from other tests falls on both alike.
  for (let i = 0; i < 7; i++) {
    known.push(await time('admin'));
    unknown.push(await time('no_such_user'));
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[3]!;
  const [k, u] = [median(known), median(unknown)];
  // Both pay one argon2 verification; without the decoy an unknown user would answer about 100 times faster,
  // so loose bounds still tell the two apart on a loaded machine.
  t.true(u > k / 4 && u < k * 4, `known ${k} ms, unknown ${u} ms`);
});

test('X-Timestamp is required and must be within 3000 ms', async (t) => {
  const token = await daemon.login();
  const cases: Array<[number | string | null, RegExp]> = [
    [null, /X-Timestamp is required/],
    ['yesterday', /integer/],
    [Date.now() - 10_000, /outside the allowed window of 3000 ms/],
    [Date.now() + 10_000, /outside the allowed window of 3000 ms/],
  ];
  for (const [timestamp, message] of cases) {
    const res = await daemon.get('/userMgr/list', { token, timestamp });
    t.is(res.status, 401);
    t.regex(res.body.message, message);
    const login = await daemon.post('/login', ADMIN, { timestamp });
    t.is(login.status, 401);
  }
  t.is((await daemon.get('/userMgr/list', { token, timestamp: Date.now() - 2000 })).status, 200);
});

test('X-Token is required and must name a live session', async (t) => {
  const missing = await daemon.get('/userMgr/list');
  t.is(missing.status, 401);
  t.regex(missing.body.message, /X-Token is required/);
  const unknown = await daemon.get('/userMgr/list', { token: 'x'.repeat(43) });
  t.is(unknown.status, 401);
  t.regex(unknown.body.message, /^Invalid token: /);
});

test('logout invalidates the token at once', async (t) => {
  const token = await daemon.login();
  t.is((await daemon.get('/userMgr/list', { token })).status, 200);
  const out = await daemon.get('/logout', { token });
  t.deepEqual(out.body, { success: true, message: 'logged out' });
  const after = await daemon.get('/userMgr/list', { token });
  t.is(after.status, 401);
  t.regex(after.body.message, /revoked|logged out/);
});
