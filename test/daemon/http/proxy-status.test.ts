// Is the tunnel up? What frpc's admin API says of each proxy and of the server connection, fresh within 2 s of a
// change, and the alerts, debounced.
import test from 'ava';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { disposeWithTunnels, startWithRoot, tempDir } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf, waitFor, tcpProxy } from '../../helpers/instances.js';
import { openStream, wsUrl } from '../../helpers/streams.js';
import { quietFor } from '../../helpers/until.js';

const tcp = tcpProxy;

test('proxy status and the connection follow the server: port taken, freed, server lost, back; alerts debounced', async (t) => {
  // Status.PollSecs long: what is seen within 2 s comes from the tunnel's log, not from polling.
  const { daemon, root } = await startWithRoot({
    settingsToml: instanceSettings({ 'Alerts.DebounceSecs': 0.4, 'Status.PollSecs': 600 }),
  });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const control = join(await tempDir(undefined, t), 'control.json');
  const setServer = (state: object) => writeFile(control, JSON.stringify(state));
  await setServer({ server: 'up', portsTaken: [6301] });
  // frpc's second 50 ms long: its start-error retry (30 s) and login backoff (2 s on) fit the 2 s this test allows.
  const { id } = await createInstance(daemon, root, 'ps_one', {
    metadatas: { 'fixture.control': control, 'fixture.secondMs': '50' },
    loginFailExit: false,
  });
  for (const proxy of [tcp('ssh', 6300), tcp('web', 6301)])
    await daemon.post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: proxy }, { token: root });
  const events = await openStream(wsUrl(daemon.url, `/system/events?token=${root}`));
  const alerts = () =>
    events.messages.filter(
      (e) => e.instanceID === Number(id) && /^(proxy|instance)\.(up|down|connected|disconnected)$/.test(e.event),
    );
  const proxies = async () =>
    (await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token: root })).body.data.proxies as Array<{
      name: string;
      status: string | null;
      err: string;
      remoteAddr: string;
      statusSince: string | null;
    }>;
  const fresh = <T>(probe: () => Promise<T>, until: (v: T) => boolean) => waitFor(probe, until, 2000);

  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root })).body.success);
  const [ssh, web] = await fresh(proxies, (p) => p.every((x) => x.status !== null));
  t.like(ssh, { name: 'ssh', status: 'running', err: '', remoteAddr: '127.0.0.1:6300' });
  t.like(web, { name: 'web', status: 'start error', err: 'port already used', remoteAddr: '' });
  t.true(Date.parse(ssh!.statusSince!) > 0);
  t.like(await statusOf(daemon, root, id), { connected: true, proxyStatus: { running: 1, 'start error': 1 } });
  const down = await events.waitFor(() => alerts().some((e) => e.event === 'proxy.down'));
  t.like(
    down.find((e) => e.event === 'proxy.down'),
    { proxy: 'web', to: 'start error', err: 'port already used', name: 'ps_one' },
  );
  // A start's login is news (a deploy waits for it); its proxies' first sight is not.
  const connected = await events.waitFor(() => alerts().some((e) => e.event === 'instance.connected'));
  t.like(
    connected.find((e) => e.event === 'instance.connected'),
    { from: null, to: 'connected', name: 'ps_one' },
  );
  t.false(
    alerts().some((e) => e.event === 'proxy.up'),
    "a proxy's first sight after a start is not news",
  );

  // The port given back: up within 2 s, and announced.
  await setServer({ server: 'up', portsTaken: [] });
  await fresh(proxies, (p) => p[1]!.status === 'running');
  await events.waitFor(() => alerts().some((e) => e.event === 'proxy.up' && e.proxy === 'web'));

  // The server lost: disconnected within 2 s, no proxy status while away, announced once; then back.
  await setServer({ server: 'down' });
  await fresh(
    () => statusOf(daemon, root, id),
    (s) => s.connected === false,
  );
  t.deepEqual((await statusOf(daemon, root, id)).proxyStatus, {});
  t.true((await proxies()).every((p) => p.status === null));
  await events.waitFor(() => alerts().some((e) => e.event === 'instance.disconnected'));
  await setServer({ server: 'up' });
  await fresh(
    () => statusOf(daemon, root, id),
    (s) => s.connected === true && s.proxyStatus.running === 2,
  );
  await events.waitFor(() => alerts().filter((e) => e.event === 'instance.connected').length === 2);
  // Each proxy that was up went down with the server, and came back up with it.
  await events.waitFor(() => alerts().filter((e) => e.event === 'proxy.up' && e.proxy === 'ssh').length === 1);
  t.like(
    alerts().find((e) => e.event === 'proxy.down' && e.proxy === 'ssh'),
    { from: 'running', to: 'disconnected' },
  );
  // With the reason its connection went: the tunnel's own (frpc's words), or 'server lost' until it says more.
  t.regex(
    alerts().find((e) => e.event === 'proxy.down' && e.proxy === 'ssh')!.err,
    /^(server lost|server unreachable|login refused)/,
  );

  // A flap shorter than the debounce says nothing. (A debounce of its own, long enough for a loaded machine to see the
  // flap within it: what is asserted is the debounce, not how fast the server's loss is seen.)
  const debounce = await daemon.post('/settings/set', { 'Alerts.DebounceSecs': 3 }, { token: root });
  t.true(debounce.body.success, debounce.body.message);
  const before = alerts().length;
  const lost = Date.now();
  await setServer({ server: 'down' });
  await fresh(
    () => statusOf(daemon, root, id),
    (s) => s.connected === false,
  );
  await setServer({ server: 'up' });
  await fresh(
    () => statusOf(daemon, root, id),
    (s) => s.connected === true,
  );
  // Past the debounce from the loss: an alert that was to come would have come.
  await new Promise((r) => setTimeout(r, Math.max(0, lost + 3400 - Date.now())));
  t.is(alerts().length, before, 'no alert for a flap');

  // Stopped: nothing known any more.
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token: root });
  t.like(await statusOf(daemon, root, id), { connected: null, proxyStatus: {} });
  events.ws.close();
});

test('what the log does not tell is read by the poll, every Status.PollSecs', async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings({ 'Status.PollSecs': 1 }) });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const control = join(await tempDir(undefined, t), 'control.json');
  // The admin API refuses connections at first: the start's hints find nothing to read.
  await writeFile(control, JSON.stringify({ server: 'up', admin: 'down' }));
  const { id } = await createInstance(daemon, root, 'ps_poll', {
    metadatas: { 'fixture.control': control },
    loginFailExit: false,
  });
  const added = await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: tcp('ssh', 6310) },
    { token: root },
  );
  t.true(added.body.success);
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root })).body.success);
  const proxies = async () =>
    (await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token: root })).body.data.proxies as Array<{
      status: string | null;
    }>;
  await quietFor(500, 'a status read while the admin API is down');
  t.is((await proxies())[0]!.status, null, 'nothing read while the admin API is down');
  // Back without a line in the log that hints at it: only a poll sees it.
  await writeFile(control, JSON.stringify({ server: 'up' }));
  const [ssh] = await waitFor(proxies, (p) => p[0]!.status === 'running', 3000);
  t.is(ssh!.status, 'running');
});
