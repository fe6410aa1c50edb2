// Expiries: an instance stopped, a proxy disabled, at a time an operator set; acted on once, also after a restart.
import { readFile } from 'node:fs/promises';
import test from 'ava';
import { parse } from 'smol-toml';
import { dispose, startDaemon, tempDir, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf, tcpProxy, tunnelPids, waitFor } from '../../helpers/instances.js';
import { startReceiver } from '../../helpers/receiver.js';
import { quietFor, until } from '../../helpers/until.js';

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** A daemon on the fixture frpc (its tunnels stopped with it), sending every webhook to `receiver` when given. */
async function daemonOn(
  t: { teardown(fn: () => Promise<void>): void },
  dataDir: string,
  receiver?: Receiver,
): Promise<{ daemon: Daemon; root: string }> {
  const webhook: Record<string, string | number> = receiver
    ? { 'Notification.Enabled': 'on', 'Webhook.URL': receiver.url, 'Webhook.TimeoutSecs': 5 }
    : {};
  const settingsToml = instanceSettings(webhook).replace(
    '"Notification.Enabled" = "on"',
    '"Notification.Enabled" = true',
  );
  const daemon = await startDaemon({ dataDir, settingsToml });
  const root = await daemon.login();
  t.teardown(async () => {
    if (daemon.proc.exitCode === null && daemon.proc.signalCode === null)
      await daemon.post('/tunnelAct/instanceMgr/stop', { all: true }, { token: root }).catch(() => undefined);
    await daemon.stop('SIGKILL');
  });
  return { daemon, root };
}

/** The proxies of a config file as frpc reads them, by name. */
async function proxiesIn(configPath: string): Promise<Record<string, { enabled?: boolean }>> {
  const { proxies = [] } = parse(await readFile(configPath, 'utf8')) as {
    proxies?: Array<{ name: string; enabled?: boolean }>;
  };
  return Object.fromEntries(proxies.map((p) => [p.name, p]));
}

const modify = (daemon: Daemon, root: string, id: string, modifiedData: Record<string, unknown>) =>
  daemon.post('/tunnelAct/instanceMgr/modify', { instanceID: id, type: 'systemConfig', modifiedData }, { token: root });

test('an instance with a 2 s expiry is stopped at expiry, announced (webhook too), taken off boot, and stays stopped', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const dataDir = await tempDir('expiry-stop-', t);
  const { daemon, root } = await daemonOn(t, dataDir, receiver);
  const created = await daemon.post(
    '/tunnelAct/instanceMgr/create',
    {
      instanceInfo: { name: 'ex_ssh', serverAddr: '127.0.0.1', serverPort: '21901', auth_method: 'token' },
      bootAtStart: true,
      expires: '1h',
    },
    { token: root },
  );
  t.true(created.body.success, created.body.message);
  const id = String(created.body.data.instanceID);
  const made = Date.parse((await statusOf(daemon, root, id)).expiresAt);
  t.true(Math.abs(made - (Date.now() + 3_600_000)) < 60_000, 'an hour from the create');
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root })).body.success);
  t.is((await statusOf(daemon, root, id)).state, 'running');
  // Set once it runs: a start slower than the expiry (a loaded machine) would meet the expiry in the queue.
  const asked = Date.now();
  const set = await modify(daemon, root, id, { expires: '2s' });
  t.true(set.body.success, set.body.message);
  t.is(set.body.data.expiresAt, (await statusOf(daemon, root, id)).expiresAt);
  const running = await statusOf(daemon, root, id);
  const expiresAt = Date.parse(running.expiresAt);
  t.true(expiresAt >= asked + 2000 && expiresAt <= Date.now() + 2000, running.expiresAt);
  const listed = (await daemon.get('/tunnelAct/instanceMgr/list', { token: root })).body.data;
  t.is(listed.find((i: { instanceID: number }) => String(i.instanceID) === id).expiresAt, running.expiresAt);

  // Cleared once acted on: stopped, taken off boot, then the expiry cleared.
  await waitFor(
    () => statusOf(daemon, root, id),
    (s) => s.state === 'stopped' && s.expiresAt === undefined,
  );
  t.true(Date.now() >= expiresAt, 'not before its time');
  const [hook] = (await receiver.waitFor((r) => r.some((e) => e.body?.event === 'instance.expired'))).filter(
    (e) => e.body.event === 'instance.expired',
  );
  t.like(hook!.body, { instanceID: Number(id), name: 'ex_ssh' });
  t.regex(
    hook!.body.message,
    /^expired at \S+: stopped, and no longer started at boot; it stays stopped until an operator starts it$/,
  );
  t.true(receiver.received.some((e) => e.body?.event === 'instance.stopped' && e.body.instanceID === Number(id)));
  const info = (await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root })).body.data;
  t.is(info.bootAtStart, false);
  const history = (await daemon.get(`/tunnelAct/instanceMgr/history?instanceID=${id}`, { token: root })).body.data;
  t.like(history.revisions[0], { by: 'tunnelward', kind: 'system', request: { bootAtStart: false } });

  // Not restarted by the watchdog, nor by a restart of tunnelward.
  await quietFor(1500, 'a restart by the watchdog');
  t.like(await statusOf(daemon, root, id), { state: 'stopped', restarts: 0 });
  await daemon.stop('SIGTERM');
  const again = await daemonOn(t, dataDir);
  await quietFor(1000, 'a start at start-up');
  t.like(await statusOf(again.daemon, again.root, id), { state: 'stopped', pid: null });
  await dispose(again.daemon);
});

test('a proxy with an expiry is disabled (the file says so) and the tunnel runs on; a rename keeps it, a delete drops it', async (t) => {
  const { daemon, root } = await daemonOn(t, await tempDir('expiry-proxy-', t));
  const { id, configPath } = await createInstance(daemon, root, 'ex_proxies');
  for (const proxy of [tcpProxy('ssh', 27101), tcpProxy('web', 27102), tcpProxy('db', 27103)])
    t.true(
      (await daemon.post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: proxy }, { token: root })).body
        .success,
    );
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root })).body.success);
  const { pid } = await statusOf(daemon, root, id);
  const setExpiry = (proxyName: string, expires: string | null) =>
    daemon.post('/tunnelAct/proxyMgr/setExpiry', { instanceID: id, proxyName, expires }, { token: root });

  // A rename carries an expiry, a delete drops it.
  t.true((await setExpiry('web', '1h')).body.success);
  t.true((await setExpiry('db', '1h')).body.success);
  const renamed = await daemon.post(
    '/tunnelAct/proxyMgr/modify',
    { instanceID: id, oldName: 'web', newName: 'www', proxyInfo: {} },
    { token: root },
  );
  t.true(renamed.body.success, renamed.body.message);
  t.true(
    (await daemon.post('/tunnelAct/proxyMgr/delete', { instanceID: id, proxyName: 'db' }, { token: root })).body
      .success,
  );
  const status = await statusOf(daemon, root, id);
  t.deepEqual(Object.keys(status.proxyExpiries), ['www']);

  const set = await setExpiry('ssh', '2s');
  t.true(set.body.success, set.body.message);
  t.regex(set.body.message, /^proxy ssh of instance ex_proxies expires at \S+Z$/);
  const listed = (await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token: root })).body.data.proxies;
  t.is(listed.find((p: { name: string }) => p.name === 'ssh').expiresAt, set.body.data.expiresAt);

  await until(
    () => proxiesIn(configPath),
    (proxies) => proxies.ssh?.enabled === false,
    { timeoutMs: 10_000, what: 'proxy ssh disabled in the file' },
  );
  t.is((await proxiesIn(configPath)).www?.enabled, undefined, 'the other proxy runs on');
  // Cleared once the disable is committed.
  const after = await waitFor(
    () => statusOf(daemon, root, id),
    (s) => Object.keys(s.proxyExpiries ?? {}).join() === 'www',
  );
  t.like(after, { state: 'running', pid }, 'the tunnel keeps running (a reload, not a restart)');
  const line = await daemon.waitForOutput(/proxy ssh expired at \S+: disabled/);
  t.truthy(line);
  const history = (await daemon.get(`/tunnelAct/instanceMgr/history?instanceID=${id}`, { token: root })).body.data;
  t.like(history.revisions[0], { by: 'tunnelward', kind: 'proxy.disable', request: { proxy: 'ssh' } });
  t.true((await setExpiry('www', null)).body.success);
  t.is((await statusOf(daemon, root, id)).proxyExpiries, undefined);
});

test('an expiry that passed while tunnelward was stopped is acted on at start-up, once; the tunnel is not started', async (t) => {
  const dataDir = await tempDir('expiry-away-', t);
  const first = await daemonOn(t, dataDir);
  const { id, configPath } = await createInstance(first.daemon, first.root, 'ex_away');
  const other = await createInstance(first.daemon, first.root, 'ex_away_stays');
  for (const target of [id, other.id])
    t.true(
      (await first.daemon.post('/tunnelAct/instanceMgr/start', { instanceID: target }, { token: first.root })).body
        .success,
    );
  const set = await modify(first.daemon, first.root, id, { expires: '3s' });
  t.true(set.body.success, set.body.message);
  t.regex(set.body.message, /; it expires at \S+Z$/);
  const expiresAt = Date.parse((await statusOf(first.daemon, first.root, id)).expiresAt);
  await first.daemon.stop('SIGTERM');
  t.is((await tunnelPids(configPath)).length, 1, 'the tunnel outlives tunnelward');
  await until(
    () => Date.now(),
    (now) => now > expiresAt,
    { timeoutMs: 10_000, what: 'the expiry to pass' },
  );

  const second = await daemonOn(t, dataDir);
  const stopped = await waitFor(
    () => statusOf(second.daemon, second.root, id),
    (s) => s.state === 'stopped',
  );
  t.is(stopped.expiresAt, undefined);
  t.deepEqual(await tunnelPids(configPath), []);
  t.like(await statusOf(second.daemon, second.root, other.id), { state: 'running' });
  await quietFor(500, 'a second acting');
  t.is(second.daemon.output.filter((l) => /expired at \S+: stopped/.test(l)).length, 1);

  // And after another restart, nothing is acted on again and nothing starts it.
  await second.daemon.stop('SIGTERM');
  const third = await daemonOn(t, dataDir);
  await quietFor(1000, 'a start at start-up');
  t.like(await statusOf(third.daemon, third.root, id), { state: 'stopped' });
  t.false(third.daemon.output.some((l) => /expired at/.test(l)));
  await third.daemon.post('/tunnelAct/instanceMgr/stop', { all: true }, { token: third.root });
  await dispose(third.daemon);
});

test('bad expiries are refused with a 400 that says why, and nothing changes', async (t) => {
  const { daemon, root } = await daemonOn(t, await tempDir('expiry-bad-', t));
  const { id } = await createInstance(daemon, root, 'ex_bad');
  t.true(
    (
      await daemon.post(
        '/tunnelAct/proxyMgr/create',
        { instanceID: id, proxyInfo: tcpProxy('ssh', 27201) },
        { token: root },
      )
    ).body.success,
  );
  const before = await statusOf(daemon, root, id);
  const past = new Date(Date.now() - 60_000).toISOString();

  for (const [expires, message] of [
    [past, /^expires \S+ is in the past \(it is \S+ now\): give a later time, or a duration such as 2h$/],
    ['soon', /^expires must be a duration from now \(30m, 2h, 7d, 1h30m\), an ISO 8601 time .* or never, not "soon"$/],
    ['0s', /^expires must be a duration/],
    ['2 hours', /^expires must be a duration/],
  ] as const) {
    // With a rename in the same request: the rename does not happen either.
    const refused = await modify(daemon, root, id, { name: 'ex_renamed', expires });
    t.is(refused.status, 400, expires);
    t.regex(refused.body.message, message);
    const proxy = await daemon.post(
      '/tunnelAct/proxyMgr/setExpiry',
      { instanceID: id, proxyName: 'ssh', expires },
      { token: root },
    );
    t.is(proxy.status, 400, expires);
    t.regex(proxy.body.message, message);
  }
  const missing = await daemon.post(
    '/tunnelAct/proxyMgr/setExpiry',
    { instanceID: id, proxyName: 'nope', expires: '1h' },
    { token: root },
  );
  t.is(missing.status, 404);
  t.is(missing.body.message, 'instance ex_bad has no proxy named nope');
  const after = await statusOf(daemon, root, id);
  t.is(after.name, 'ex_bad');
  t.is(after.expiresAt, undefined);
  t.is(after.proxyExpiries, undefined);
  t.is(after.revision, before.revision, 'no revision recorded');

  const create = await daemon.post(
    '/tunnelAct/instanceMgr/create',
    {
      instanceInfo: { name: 'ex_never_made', serverAddr: '127.0.0.1', serverPort: '21902', auth_method: 'token' },
      expires: past,
    },
    { token: root },
  );
  t.is(create.status, 400);
  t.regex(create.body.message, /is in the past/);
  const names = (await daemon.get('/tunnelAct/instanceMgr/list', { token: root })).body.data.map(
    (i: { name: string }) => i.name,
  );
  t.false(names.includes('ex_never_made'));
  t.true((await modify(daemon, root, id, { expires: 'never' })).body.success);
  await dispose(daemon);
});
