// /system/events: every change as it happens, numbered like the webhook's, resumable after a reconnect.
import test from 'ava';
import { disposeWithTunnels, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, waitFor } from '../../helpers/instances.js';
import { startReceiver } from '../../helpers/receiver.js';
import { openStream, wsUrl, type Stream } from '../../helpers/streams.js';

let daemon: Daemon;
let root: string;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
test.before(async () => {
  receiver = await startReceiver();
  const settings = instanceSettings({
    'Notification.Enabled': 'on',
    'Webhook.URL': receiver.url,
    'Webhook.TimeoutSecs': 5,
  });
  ({ daemon, root } = await startWithRoot({
    settingsToml: settings.replace('"Notification.Enabled" = "on"', '"Notification.Enabled" = true'),
  }));
});
test.after.always(async () => {
  await disposeWithTunnels(daemon, root);
  await receiver.close();
});

const events = (path = '', token = root) => openStream(wsUrl(daemon.url, `/system/events?token=${token}${path}`));
const post = (path: string, body: unknown) => daemon.post(path, body, { token: root });
/** The events after the first message (`events.start`) that concern one instance. */
const about = (stream: Stream, id: string) => stream.messages.slice(1).filter((e) => e.instanceID === Number(id));

test('refusals before the upgrade: no token, a bad token, a bad since', async (t) => {
  for (const [query, status, message] of [
    ['', 401, 'Token is required'],
    ['?token=nope', 401, /^Invalid token/],
    [`?token=${root}&since=-1`, 400, 'since must be an event seq (an integer)'],
  ] as const) {
    const refused = await openStream(wsUrl(daemon.url, `/system/events${query}`)).then(
      () => undefined,
      (err: { status: number; body: { message: string } }) => err,
    );
    t.is(refused?.status, status, query);
    if (typeof message === 'string') t.is(refused?.body.message, message);
    else t.regex(refused!.body.message, message);
  }
});

test('creates, state changes, edits and deletes arrive in order, numbered without gaps, with the webhook numbers', async (t) => {
  const visitor = await daemon.userWithToken(root, 'ev_visitor', 'visitor');
  const stream = await events('', visitor.token);
  const start = stream.messages[0] ?? (await stream.waitFor((m) => m.length > 0))[0];
  t.like(start, { event: 'events.start' });
  t.true(Number.isInteger(start.lastSeq));

  const { id } = await createInstance(daemon, root, 'ev_one');
  t.true((await post('/tunnelAct/instanceMgr/start', { instanceID: id })).body.success);
  t.true(
    (await post('/tunnelAct/instanceMgr/modify', { instanceID: id, type: 'configFile', modifiedData: { user: 'ops' } }))
      .body.success,
  );
  const proxy = { name: 'ssh', type: 'tcp', localIP: '127.0.0.1', localPort: '22', remotePort: '6022' };
  t.true((await post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: proxy })).body.success);
  t.true((await post('/tunnelAct/instanceMgr/stop', { instanceID: id })).body.success);
  // The live status ends with the run, told a moment later (one status event per instance per moment); a delete
  // within that moment says enough by itself, so the test waits for it before deleting.
  const lastStatus = () => about(stream, id).findLast((e) => e.event === 'instance.status');
  await stream.waitFor(() => lastStatus()?.connected === null);
  t.like(lastStatus(), { connected: null, proxyStatus: {} }, 'the live status ends with the run');
  t.true((await post('/tunnelAct/instanceMgr/delete', { instanceID: id })).body.success);
  await stream.waitFor(() => about(stream, id).some((e) => e.event === 'instance.deleted'));

  const mine = about(stream, id);
  // What frpc reports arrives when it reports it (instance.status): in order among the rest, but not at a fixed place.
  const lifecycle = mine.filter((e) => e.event !== 'instance.status');
  t.deepEqual(
    lifecycle.map((e) => (e.event === 'instance.state' ? `${e.from}->${e.to}` : e.event)),
    [
      'instance.created',
      'stopped->starting',
      'starting->running',
      'instance.started',
      // A top-level change is applied by a restart, and announced once it is (committed); the proxy that follows
      // by frpc's reload.
      'running->stopping',
      'stopping->starting',
      'starting->running',
      'instance.started',
      'instance.modified',
      'instance.modified',
      'running->stopping',
      'stopping->stopped',
      'instance.stopped',
      'instance.deleted',
    ],
  );
  t.deepEqual(
    mine.filter((e) => e.event === 'instance.modified').map((e) => e.message),
    ['config file', 'proxies'],
  );
  for (const e of mine) t.like(e, { name: 'ev_one' });
  // Every event reaches the stream: the numbers follow each other.
  const seqs = stream.messages.slice(1).map((e) => e.seq);
  t.deepEqual(
    seqs,
    seqs.map((_, i) => seqs[0] + i),
  );
  t.is(seqs[0], start.lastSeq + 1);
  // Webhooks get what the life of an instance means, under the same numbers.
  const started = mine.find((e) => e.event === 'instance.started');
  const hooked = await waitFor(
    async () => receiver.received.find((r) => r.body.event === 'instance.started' && r.body.instanceID === Number(id)),
    (r) => r !== undefined,
  );
  t.is(hooked!.body.seq, started.seq);
  t.false(receiver.received.some((r) => ['instance.state', 'instance.created'].includes(r.body.event)));
  stream.ws.close();
});

test('a client that reconnects with since gets exactly what it missed, then the live events', async (t) => {
  const first = await events();
  const { lastSeq } = first.messages[0] ?? (await first.waitFor((m) => m.length > 0))[0];
  first.ws.close();
  await first.closed;

  const { id } = await createInstance(daemon, root, 'ev_missed');
  t.true((await post('/tunnelAct/instanceMgr/start', { instanceID: id })).body.success);

  const again = await events(`&since=${lastSeq}`);
  const [hello] = await again.waitFor((m) => m.length > 0);
  t.like(hello, { event: 'events.start' });
  t.true(hello.replayed >= 4, `replayed ${hello.replayed}`);
  await again.waitFor((m) => m.length >= 1 + hello.replayed);
  const replayed = again.messages.slice(1, 1 + hello.replayed);
  t.is(replayed[0].seq, lastSeq + 1, 'from the first one missed');
  t.deepEqual(
    replayed.map((e) => e.seq),
    replayed.map((_, i) => lastSeq + 1 + i),
  );
  t.true(replayed.some((e) => e.event === 'instance.created' && e.instanceID === Number(id)));
  t.true(replayed.some((e) => e.event === 'instance.started' && e.instanceID === Number(id)));
  t.is(hello.lastSeq, replayed.at(-1).seq);

  t.true((await post('/tunnelAct/instanceMgr/stop', { instanceID: id })).body.success);
  await again.waitFor(() => about(again, id).some((e) => e.event === 'instance.stopped'));
  const live = again.messages.slice(1 + hello.replayed);
  t.is(live[0].seq, hello.lastSeq + 1, 'the live events follow without a gap');

  // A number the daemon never handed out (a backup restored, another daemon): it says it cannot replay.
  const future = await events(`&since=${hello.lastSeq + 100_000}`);
  const [lost] = await future.waitFor((m) => m.length > 0);
  t.like(lost, { event: 'events.start', lost: true });
  t.regex(lost.message, /read the list again/);
  future.ws.close();
  again.ws.close();
});

test('logging out closes the event stream', async (t) => {
  const token = await daemon.login();
  const stream = await events('', token);
  await daemon.get('/logout', { token });
  const closed = await stream.closed;
  t.is(closed.code, 4401);
});

test('instance.status says at once when frpc first reports a tunnel logged in and its proxies running', async (t) => {
  const stream = await events();
  const { id } = await createInstance(daemon, root, 'ev_live');
  const proxy = { name: 'web1', type: 'tcp', localIP: '127.0.0.1', localPort: '80', remotePort: '6080' };
  t.true((await post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: proxy })).body.success);
  t.true((await post('/tunnelAct/instanceMgr/start', { instanceID: id })).body.success);
  // A proxy's first sight is no alert (proxy.up is for changes); a UI still hears of it. The start's login is.
  await stream.waitFor(() =>
    about(stream, id).some((e) => e.event === 'instance.status' && e.connected === true && e.proxyStatus.running === 1),
  );
  const live = about(stream, id).filter((e) => e.event === 'instance.status');
  t.true(live.every((e) => e.name === 'ev_live'));
  t.false(
    about(stream, id).some((e) => e.event === 'proxy.up'),
    'no alert for a first sight',
  );
  await stream.waitFor(() => about(stream, id).some((e) => e.event === 'instance.connected'));
  t.true((await post('/tunnelAct/instanceMgr/stop', { instanceID: id })).body.success);
});
