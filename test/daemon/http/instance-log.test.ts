import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from 'node:net';
import test from 'ava';
import { dispose, disposeWithTunnels, startDaemon, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, waitFor } from '../../helpers/instances.js';
import { openStream, wsUrl, type Stream } from '../../helpers/streams.js';
import { quietFor, until } from '../../helpers/until.js';

let daemon: Daemon;
let root: string;
test.before(
  async () =>
    ({ daemon, root } = await startWithRoot({
      settingsToml: instanceSettings({ 'Log.MaxBytes': 4096, 'Log.Files': 2 }),
    })),
);
test.after.always(() => disposeWithTunnels(daemon, root));

const streamUrl = (query: string) => wsUrl(daemon.url, `/tunnelAct/instanceMgr/logs${query}`);
const refusal = (query: string) =>
  openStream(streamUrl(query)).then(
    () => ({ status: 101, body: {} as any }),
    (e) => e,
  );

test('every pre-upgrade check answers with the contract status and message', async (t) => {
  const { id } = await createInstance(daemon, root, 'il_checks');
  const admin = await daemon.userWithToken(root, 'il_admin', 'admin');
  const cases: Array<[string, number, string | RegExp]> = [
    [`?token=${root}`, 400, 'instanceID is required'],
    [`?instanceID=abc&token=${root}`, 400, 'invalid instanceID format'],
    [`?instanceID=1.5&token=${root}`, 400, 'invalid instanceID format'],
    [`?instanceID=${id}`, 401, 'Token is required'],
    [`?instanceID=${id}&token=bogus`, 401, /^Invalid token: /],
    [`?instanceID=99999&token=${root}`, 404, 'Instance not found'],
    [`?instanceID=${id}&token=${admin.token}`, 403, "You don't have access to this instance"],
  ];
  for (const [query, status, message] of cases) {
    const res = await refusal(query);
    t.is(res.status, status, query);
    t.false(res.body.success);
    if (typeof message === 'string') t.is(res.body.message, message, query);
    else t.regex(res.body.message, message, query);
  }
  // A user whose account was removed: the token no longer resolves.
  const gone = await daemon.userWithToken(root, 'il_gone', 'admin');
  await daemon.post('/userMgr/remove', { targetUserID: gone.userID }, { token: root });
  const removed = await refusal(`?instanceID=${id}&token=${gone.token}`);
  t.is(removed.status, 401);
});

test('the owner streams parsed entries: the last lines first, then new ones, across restarts', async (t) => {
  const owner = await daemon.userWithToken(root, 'il_owner', 'admin');
  const { id } = await createInstance(daemon, owner.token, 'il_follow', {
    metadatas: { 'fixture.logEveryMs': '50', 'fixture.logLevelCycle': 'true' },
    'log.level': 'debug',
  });
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: owner.token });
  // Lines written before the stream opens.
  await until(
    () => readFile(join(daemon.dataDir, 'logs', `tunnel_${id}.log`), 'utf8').catch(() => ''),
    (log) => log.split('\n').length > 5,
    { what: 'the tunnel to log a few lines' },
  );
  // Every earlier line, however late the stream opens (a tick each 50 ms outgrows the default 100 within seconds).
  const stream = await openStream(streamUrl(`?instanceID=${id}&token=${owner.token}&lines=1000`));
  const replayed = await stream.waitFor((m) => m.some((e) => e.content.includes('start frpc service')));
  const start = replayed.find((e) => e.content.includes('start frpc service'));
  t.is(start.level, 'INFO');
  t.regex(start.timestamp, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/);
  t.regex(start.content, /^start frpc service for config file \[/);
  await stream.waitFor((m) => new Set(m.map((e) => e.level)).size === 4);
  t.deepEqual([...new Set(stream.messages.map((e) => e.level))].sort(), ['DEBUG', 'ERROR', 'INFO', 'WARN']);
  t.false(
    stream.messages.some((e) => e.content.includes('\x1b')),
    'no colour codes',
  );
  const ticks = () => stream.messages.filter((e) => /fixture: tick \d+/.test(e.content)).length;
  const before = ticks();
  await stream.waitFor(() => ticks() > before + 3);
  await daemon.post('/tunnelAct/instanceMgr/restart', { instanceID: id }, { token: owner.token });
  const restarts = () => stream.messages.filter((e) => e.content.includes('start frpc service')).length;
  await stream.waitFor(() => restarts() >= 2, 10_000);
  t.true(restarts() >= 2, 'the stream goes on across a restart of the tunnel');
  // The superuser may follow any instance.
  const su = await openStream(streamUrl(`?instanceID=${id}&token=${root}`));
  await su.waitFor((m) => m.length > 0);
  su.ws.close();
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token: owner.token });
  stream.ws.close();
});

test('the stream closes on logout, session removal, user removal and instance deletion', async (t) => {
  const { id } = await createInstance(daemon, root, 'il_close');
  // Superusers may follow any instance: one per case, so each session is easy to find.
  const users = await Promise.all(
    ['il_su_a', 'il_su_b', 'il_su_c', 'il_su_d'].map((n) => daemon.userWithToken(root, n, 'superuser')),
  );
  const [a, b, c, d] = await Promise.all(users.map((u) => openStream(streamUrl(`?instanceID=${id}&token=${u.token}`))));

  await daemon.get('/logout', { token: users[0]!.token });
  t.like(await a!.closed, { code: 4401, reason: 'logged out' });

  const sessions = (await daemon.get('/sessionMgr/list', { token: root })).body.data;
  const sessionB = sessions.find((s: any) => s.Username === 'il_su_b').ID;
  await daemon.post('/sessionMgr/remove', { sessionID: sessionB }, { token: root });
  t.like(await b!.closed, { code: 4401, reason: 'session removed' });

  await daemon.post('/userMgr/remove', { targetUserID: users[2]!.userID }, { token: root });
  t.like(await c!.closed, { code: 4401, reason: 'user removed' });

  await daemon.post('/tunnelAct/instanceMgr/delete', { instanceID: id }, { token: root });
  t.like(await d!.closed, { code: 4404, reason: 'instance deleted' });
});

test('a stream closes when its token expires', async (t) => {
  const short = await startDaemon({ settingsToml: instanceSettings(), env: { TUNNELWARD_TOKEN_TTL_MS: '1500' } });
  t.teardown(() => dispose(short));
  const token = await short.login();
  const { id } = await createInstance(short, token, 'il_expiry');
  const stream = await openStream(wsUrl(short.url, `/tunnelAct/instanceMgr/logs?instanceID=${id}&token=${token}`));
  t.like(await stream.closed, { code: 4401, reason: 'token expired' });
});

test('rotation by rename at the size limit loses and repeats no line', async (t) => {
  const { id } = await createInstance(daemon, root, 'il_rotate', { metadatas: { 'fixture.logEveryMs': '2' } });
  const stream = await openStream(streamUrl(`?instanceID=${id}&token=${root}`));
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
  const ticks = () =>
    stream.messages.flatMap((e) => {
      const m = /fixture: tick (\d+)$/.exec(e.content);
      return m ? [Number(m[1])] : [];
    });
  await stream.waitFor(() => ticks().length >= 400, 20_000);
  // The file follows the stream closely but not in step: lines reach followers before the disk.
  const files = await waitFor(
    async () => (await readdir(`${daemon.dataDir}/logs`)).filter((f) => f.startsWith(`tunnel_${id}.log`)).sort(),
    (names) => names.length === 3,
  );
  t.deepEqual(files, [`tunnel_${id}.log`, `tunnel_${id}.log.1`, `tunnel_${id}.log.2`], 'rotated, 2 kept');
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token: root });
  const seen = ticks();
  t.deepEqual(
    seen,
    Array.from({ length: seen.length }, (_, i) => i + 1),
    'every tick once, in order',
  );
  // The files kept hold the latest ticks, oldest file first, each once and in order, up to the last one sent.
  const last = seen[seen.length - 1]!;
  const readKept = async () => {
    let text = '';
    for (const f of [...files].reverse()) {
      const part = await readFile(`${daemon.dataDir}/logs/${f}`, 'utf8').catch(() => undefined);
      if (part === undefined) return [];
      text += part;
    }
    return [...text.matchAll(/fixture: tick (\d+)\n/g)].map((m) => Number(m[1]));
  };
  const kept = await waitFor(
    async () => {
      // The writer may still be catching up, and a rotation between the reads of two files would show a gap that
      // is not on disk: the files count once two reads in a row agree and reach the last tick sent.
      const first = await readKept();
      const second = await readKept();
      return first.length === second.length && first.every((n, i) => n === second[i]) ? second : [];
    },
    (ticks) => ticks[ticks.length - 1] === last,
  );
  t.deepEqual(
    kept,
    Array.from({ length: kept.length }, (_, i) => last - kept.length + 1 + i),
    'the files: each tick once, in order',
  );
  stream.ws.close();
});

/** A client that completes the WebSocket handshake and then never reads. */
function stuckClient(url: string): Promise<() => void> {
  const { hostname, port, pathname, search } = new URL(url.replace(/^ws/, 'http'));
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        `GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      );
    });
    socket.once('data', (chunk) => {
      if (!chunk.toString().startsWith('HTTP/1.1 101')) reject(new Error(chunk.toString()));
      socket.pause();
      resolve(() => socket.destroy());
    });
    socket.on('error', reject);
  });
}

test('a stuck client is closed as too slow while a fast one receives every line', async (t) => {
  const lines = 60_000;
  // A burst, then a steady trickle: the stuck client stays behind past the grace period and is cut off.
  const { id } = await createInstance(daemon, root, 'il_slow', {
    metadatas: { 'fixture.logBurst': String(lines), 'fixture.logEveryMs': '100' },
  });
  const fast = await openStream(streamUrl(`?instanceID=${id}&token=${root}`));
  const destroyStuck = await stuckClient(streamUrl(`?instanceID=${id}&token=${root}`));
  t.teardown(destroyStuck);
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
  const bursts = () => fast.messages.filter((e) => e.content.includes('burst line')).length;
  await fast.waitFor(() => bursts() >= lines, 60_000);
  t.is(bursts(), lines);
  const closed = await daemon.waitForOutput(
    new RegExp(`"instanceID":${id},.*closed a log stream client that is too slow`),
    20_000,
  );
  t.is(fast.ws.readyState, fast.ws.OPEN, 'the fast client is still there');
  t.truthy(closed);
  fast.ws.close();
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token: root });
});

test("a change of role closes the streams the new role may not hold, and keeps the owner's own", async (t) => {
  const owner = await daemon.userWithToken(root, 'il_role_owner', 'admin');
  const { id } = await createInstance(daemon, owner.token, 'il_role');
  const su = await daemon.userWithToken(root, 'il_role_su', 'superuser');
  const other = await openStream(streamUrl(`?instanceID=${id}&token=${su.token}`));
  const own = await openStream(streamUrl(`?instanceID=${id}&token=${owner.token}`));

  t.true(
    (await daemon.post('/userMgr/modifyType', { userID: su.userID, newType: 'visitor' }, { token: root })).body.success,
  );
  t.like(await other.closed, { code: 4403, reason: 'your role no longer gives access to this instance' });
  const refused = await refusal(`?instanceID=${id}&token=${su.token}`);
  t.is(refused.status, 403, 'and it cannot open it again');

  t.true(
    (await daemon.post('/userMgr/modifyType', { userID: owner.userID, newType: 'visitor' }, { token: root })).body
      .success,
  );
  await quietFor(200, "the owner's stream closed");
  t.is(own.ws.readyState, own.ws.OPEN, 'an owner keeps the stream of their own instance');
  own.ws.close();
});

test('anonymous system-log streams are capped apart: an owner still gets a stream when they are all taken', async (t) => {
  const sys = wsUrl(daemon.url, '/system/getLogs');
  const anonymous: Stream[] = [];
  for (let i = 0; i < 50; i++) anonymous.push(await openStream(sys));
  t.teardown(() => anonymous.forEach((s) => s.ws.close()));
  const extra = await openStream(sys).then(
    () => ({ status: 101, body: {} as any }),
    (e) => e,
  );
  t.is(extra.status, 503);
  t.is(extra.body.message, 'too many log streams open without a token, try again later');

  const { id } = await createInstance(daemon, root, 'il_slots');
  const owner = await openStream(streamUrl(`?instanceID=${id}&token=${root}`));
  t.is(owner.ws.readyState, owner.ws.OPEN);
  const withToken = await openStream(`${sys}?token=${root}`);
  t.is(withToken.ws.readyState, withToken.ws.OPEN, 'a system stream with a token is not counted as anonymous');
  owner.ws.close();
  withToken.ws.close();

  // A slot that is given back can be taken again.
  anonymous.pop()!.ws.close();
  const again = await waitFor(
    () =>
      openStream(sys).then(
        (s) => s,
        () => undefined,
      ),
    (s) => s !== undefined,
  );
  t.is(again!.ws.readyState, again!.ws.OPEN);
  again!.ws.close();
});
