// A proxy's expiry with the real frpc and frps: bytes flow through it until it expires, then no longer do, while
// the tunnel's other proxy carries on.
import test from 'ava';
import { echoServer, EchoConnection, freePort, roundTrip } from '../../helpers/frp.js';
import { statusOf } from '../../helpers/instances.js';
import { addProxy, createTunnel, frpsFor, realFrpDaemon, start, statusUntil, tcpTo } from '../../helpers/real-frp.js';
import { until } from '../../helpers/until.js';

/** Whether a new connection to the proxy's remote port carries bytes now. */
const carries = (port: number) =>
  roundTrip(port, 'through an expiring proxy', 2000).then(
    () => true,
    () => false,
  );

test('a proxy expires: bytes flow through it, then no longer do; the other proxy still carries, the tunnel runs on', async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await realFrpDaemon(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const [sshPort, webPort] = [await freePort(), await freePort()];
  const { id } = await createTunnel(daemon, root, frps, 'rf_expiry');
  await addProxy(daemon, root, id, tcpTo('ssh', echo.port, sshPort));
  await addProxy(daemon, root, id, tcpTo('web', echo.port, webPort));
  await start(daemon, root, id);
  await statusUntil(daemon, root, id, (s) => s.connected === true && s.proxyStatus.running === 2, 10_000);
  const { pid } = await statusOf(daemon, root, id);

  // A connection held open across the expiry, on the proxy that stays.
  const held = await EchoConnection.open(webPort);
  t.teardown(() => held.close());
  await held.exchange('before');
  await roundTrip(sshPort, 'bytes through ssh before its expiry');

  const set = await daemon.post(
    '/tunnelAct/proxyMgr/setExpiry',
    { instanceID: id, proxyName: 'ssh', expires: '2s' },
    { token: root },
  );
  t.true(set.body.success, set.body.message);
  const expiresAt = Date.parse(set.body.data.expiresAt);

  const closedAt = await until(
    async () => ((await carries(sshPort)) ? undefined : Date.now()),
    (at) => at !== undefined,
    { timeoutMs: 15_000, everyMs: 100, what: 'proxy ssh to stop carrying bytes' },
  );
  t.true(closedAt! >= expiresAt, 'not before its time');
  t.log(`ssh stopped carrying ${closedAt! - expiresAt} ms after its expiry`);
  t.false(await carries(sshPort), 'and stays closed');

  await held.exchange('after: the connection held open on the other proxy still carries');
  await roundTrip(webPort, 'a new connection through web');
  const status = await statusUntil(daemon, root, id, (s) => s.proxyExpiries === undefined, 5000);
  t.like(status, { state: 'running', pid, connected: true });
  const { proxies } = (await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token: root })).body.data;
  t.like(proxies, [
    { name: 'ssh', enabled: false },
    { name: 'web', enabled: true, status: 'running' },
  ]);
});
