// tunnelward with the real frpc and a real frps on loopback (test/setup/build-frp.sh builds them), tunnels run by
// tunnelward itself (InitSystem "process"): bytes through real tunnels, the status and alerts the real program
// gives rise to, hot reloads, start errors, exit codes, and tunnels that outlive the daemon.
import test from 'ava';
import { spawn } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { parsePortRange } from '../../../src/system/loopback-ports.js';
import { join } from 'node:path';
import { dispose, disposeWithTunnels, startDaemon, startWithRoot, tempDir, type Daemon } from '../../helpers/daemon.js';
import {
  echoServer,
  EchoConnection,
  freePort,
  frpVersion,
  httpGet,
  httpServer,
  REAL_FRPC,
  roundTrip,
} from '../../helpers/frp.js';
import { killTunnelsUnder, statusOf, waitFor } from '../../helpers/instances.js';
import {
  addProxy,
  adminEndpointOf,
  alertsOf,
  createTunnel,
  frpcPids,
  frpsFor,
  httpTo,
  realFrpSettings,
  start,
  statusUntil,
  tcpTo,
} from '../../helpers/real-frp.js';

const BOOT = { TUNNELWARD_BOOT_ID: 'real-frp-boot' };

async function daemonFor(t: import('ava').ExecutionContext, settings: Record<string, string | number> = {}) {
  const { daemon, root } = await startWithRoot({ settingsToml: realFrpSettings(settings), env: BOOT });
  t.teardown(() => disposeWithTunnels(daemon, root));
  return { daemon, root };
}

const instanceLog = async (daemon: Daemon, id: string) =>
  readFile(join(daemon.dataDir, 'logs', `tunnel_${id}.log`), 'utf8');

test('the real frpc is the one built for the tests', async (t) => {
  t.regex(await frpVersion(), /^0\.7\d\.\d+$/);
  t.true(REAL_FRPC.includes('.cache/frp/'));
});

test('a real tunnel: bytes through tcp, http by Host through frps; running and connected within 2 s of the start', async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const echo = await echoServer();
  const site = await httpServer('site-a');
  t.teardown(() => Promise.all([echo.close(), site.close()]));
  const remote = await freePort();
  const { id } = await createTunnel(daemon, root, frps, 'rf_basic');
  await addProxy(daemon, root, id, tcpTo('echo', echo.port, remote));
  await addProxy(daemon, root, id, httpTo('web', site.port, 'a.tunnel.test'));

  const began = Date.now();
  await start(daemon, root, id);
  const status = await statusUntil(daemon, root, id, (s) => s.connected === true && s.proxyStatus.running === 2, 2000);
  t.log(`running and connected, both proxies running, ${Date.now() - began} ms after the start was asked`);
  t.like(status, { state: 'running', isRunning: true, connected: true, proxyStatus: { running: 2 } });

  await roundTrip(remote, 'bytes through a real tunnel');
  const page = await httpGet(frps.vhostHTTPPort, 'a.tunnel.test', '/some/path');
  t.deepEqual(page, { status: 200, body: 'site-a a.tunnel.test /some/path' });
  const other = await httpGet(frps.vhostHTTPPort, 'b.tunnel.test');
  t.is(other.status, 404, 'a Host no proxy serves is not routed');

  const { proxies } = (await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token: root })).body.data;
  t.like(proxies, [
    { name: 'echo', status: 'running', err: '', remoteAddr: `127.0.0.1:${remote}` },
    { name: 'web', status: 'running', err: '', remoteAddr: `a.tunnel.test:${frps.vhostHTTPPort}` },
  ]);
  // The tunnel's log is frpc's own, without the lines tunnelward's status reads cause.
  const log = await instanceLog(daemon, id);
  t.regex(log, /login to server success, get run id/);
  t.regex(log, /\[echo\] start proxy success/);
  t.notRegex(log, /\/api\/status/);
});

test('frps stopped: disconnected and proxy.down after the debounce, frpc still running; frps back: connected and proxy.up', async (t) => {
  t.timeout(90_000);
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const remote = await freePort();
  const { id, configPath } = await createTunnel(daemon, root, frps, 'rf_lost');
  await addProxy(daemon, root, id, tcpTo('echo', echo.port, remote));
  const { alerts, next } = await alertsOf(t, daemon, root);
  await start(daemon, root, id);
  await statusUntil(daemon, root, id, (s) => s.connected === true && s.proxyStatus.running === 1, 2000);
  const [pid] = frpcPids(configPath);

  // frpc can see its server go before frps has finished exiting.
  const lost = Date.now();
  await frps.down();
  // What the real frpc logs of a lost server is read at once; the alerts wait for the debounce.
  await statusUntil(daemon, root, id, (s) => s.connected === false, 2000);
  t.like(await statusOf(daemon, root, id), { state: 'running', proxyStatus: {} });
  const disconnected = await next(id, 'instance.disconnected');
  t.true(Date.now() - lost >= 1000, 'not before the debounce');
  t.like(disconnected, { from: 'connected', to: 'disconnected', name: 'rf_lost' });
  t.like(await next(id, 'proxy.down', 'echo'), { from: 'running', to: 'disconnected' });
  t.deepEqual(frpcPids(configPath), [pid!], 'frpc runs on, trying to reconnect');
  const log = await instanceLog(daemon, id);
  t.regex(log, /try to connect to server\.\.\./);
  // The first attempt meets the server going away ("session shutdown", or its socket reset as it closes), later
  // ones a refused connection.
  t.regex(
    log,
    /connect to server error: (session shutdown|read tcp [\d.:]+->[\d.:]+: read: connection reset by peer|dial tcp 127\.0\.0\.1:\d+: connect: connection refused)/,
  );

  const before = alerts(id).length;
  await frps.up();
  // frpc tries again after its own backoff (up to 20 s): then connected at once, announced after the debounce.
  await statusUntil(daemon, root, id, (s) => s.connected === true && s.proxyStatus.running === 1, 30_000);
  t.like(await next(id, 'instance.connected', undefined, before), { from: 'disconnected', to: 'connected' });
  t.like(await next(id, 'proxy.up', 'echo', before), { to: 'running' });
  await roundTrip(remote, 'through the same frpc again');
  t.deepEqual(frpcPids(configPath), [pid!]);
});

test('hot reload: a proxy added while a connection through another carries bytes; a reload frpc refuses is rolled back', async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const [first, second] = [await freePort(), await freePort()];
  // Proxies of an included file: tunnelward does not read them, frpc does (and refuses a name twice).
  const included = await tempDir('tunnelward-includes-');
  t.teardown(() => rm(included, { recursive: true, force: true }));
  await writeFile(
    join(included, 'extra.toml'),
    `[[proxies]]\nname = "extra"\ntype = "tcp"\nlocalIP = "127.0.0.1"\nlocalPort = ${echo.port}\nremotePort = ${await freePort()}\n`,
  );
  const { id, configPath } = await createTunnel(daemon, root, frps, 'rf_reload', {
    includes: [join(included, '*.toml')],
  });
  await addProxy(daemon, root, id, tcpTo('first', echo.port, first));
  await start(daemon, root, id);
  await statusUntil(daemon, root, id, (s) => s.proxyStatus.running === 2, 2000);
  const [pid] = frpcPids(configPath);
  const conn = await EchoConnection.open(first);
  t.teardown(() => conn.close());
  await conn.exchange('before the reload');

  // Bytes flow on that connection all through the reload.
  let flowing = true;
  let exchanges = 0;
  const traffic = (async () => {
    while (flowing) {
      await conn.exchange(`chunk ${exchanges}`.padEnd(4096, '.'));
      exchanges++;
    }
  })();
  const added = await addProxy(daemon, root, id, tcpTo('second', echo.port, second));
  t.is(added.applied, 'reload');
  await statusUntil(daemon, root, id, (s) => s.proxyStatus.running === 3, 2000);
  await roundTrip(second, 'through the proxy just added');
  const during = exchanges;
  await waitFor(
    async () => exchanges,
    (n) => n > during + 10,
  );
  flowing = false;
  await traffic;
  t.false(conn.closed, 'the connection through the unchanged proxy stayed open');
  await conn.exchange('after the reload');
  t.deepEqual(frpcPids(configPath), [pid!], 'reloaded, not restarted');

  // A name frpc already has from the included file: tunnelward cannot know, frpc refuses; nothing changes.
  const fileBefore = await readFile(configPath, 'utf8');
  const refused = await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: tcpTo('extra', echo.port, await freePort()) },
    { token: root },
  );
  t.is(refused.status, 400);
  // The real frpc verify reads the new file, includes and all, before anything is written.
  t.regex(refused.body.message, /^frpc verify refuses the new file: proxy name \[extra\] is duplicated/);
  t.is(await readFile(configPath, 'utf8'), fileBefore, 'the file as it was');
  t.deepEqual(frpcPids(configPath), [pid!], 'the tunnel untouched');
  await conn.exchange('after the refusal');
  t.like(await statusOf(daemon, root, id), { state: 'running', proxyStatus: { running: 3 } });
});

test("a remote port already taken: that proxy's start error with frps's own message, the others run", async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  // One port held by a process of the host, one by a client of the same frps that tunnelward does not manage.
  const held = createServer();
  const heldPort = await new Promise<number>((resolve) =>
    held.listen(0, '127.0.0.1', () => resolve((held.address() as { port: number }).port)),
  );
  t.teardown(() => new Promise<void>((resolve) => held.close(() => resolve())));
  const [shared, free] = [await freePort(), await freePort()];
  const dir = await tempDir('tunnelward-other-client-');
  const otherConfig = join(dir, 'frpc.toml');
  await writeFile(
    otherConfig,
    [
      'serverAddr = "127.0.0.1"',
      `serverPort = ${frps.bindPort}`,
      `auth.token = "${frps.token}"`,
      '[[proxies]]',
      'name = "owner"',
      'type = "tcp"',
      `localPort = ${echo.port}`,
      `remotePort = ${shared}`,
    ].join('\n'),
  );
  const otherClient = spawn(REAL_FRPC, ['-c', otherConfig], { stdio: 'ignore' });
  t.teardown(async () => {
    otherClient.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });
  await waitFor(
    () =>
      roundTrip(shared, 'the other client holds its port').then(
        () => true,
        () => false,
      ),
    (ok) => ok,
  );

  const { id } = await createTunnel(daemon, root, frps, 'rf_taken');
  await addProxy(daemon, root, id, tcpTo('held', echo.port, heldPort));
  await addProxy(daemon, root, id, tcpTo('shared', echo.port, shared));
  await addProxy(daemon, root, id, tcpTo('free', echo.port, free));
  const { next } = await alertsOf(t, daemon, root);
  await start(daemon, root, id);
  await statusUntil(daemon, root, id, (s) => s.proxyStatus['start error'] === 2 && s.proxyStatus.running === 1, 2000);
  const { proxies } = (await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token: root })).body.data;
  t.like(proxies, [
    { name: 'held', status: 'start error', err: 'port unavailable', remoteAddr: '' },
    { name: 'shared', status: 'start error', err: 'port already used', remoteAddr: '' },
    { name: 'free', status: 'running', err: '', remoteAddr: `127.0.0.1:${free}` },
  ]);
  t.like(await next(id, 'proxy.down', 'shared'), { to: 'start error', err: 'port already used' });
  await roundTrip(free, 'the proxy whose port was free works');
});

test("an admin port another program took while the tunnel was stopped: a new one at the start; a running tunnel's restart keeps its own", async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const { id, configPath } = await createTunnel(daemon, root, frps, 'rf_admin_port');
  const { port } = await adminEndpointOf(configPath);
  const ephemeral = parsePortRange(await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8'))!;
  t.true(port < ephemeral.low, `${port}: not from the range outgoing connections draw from`);
  // Another program takes the port while the tunnel is stopped (frpc could not start on it: "bind: address already in use").
  const squatter = createServer();
  await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => squatter.close(() => resolve())));

  await start(daemon, root, id);
  await statusUntil(daemon, root, id, (s) => s.state === 'running' && s.connected === true, 5000);
  const moved = (await adminEndpointOf(configPath)).port;
  t.not(moved, port);
  t.true(moved < ephemeral.low);
  await daemon.waitForOutput(
    new RegExp(`"port":${port},"newPort":${moved}.*another program holds the tunnel's admin port`),
  );
  const status = await statusUntil(daemon, root, id, (s) => s.proxyStatus !== undefined);
  t.like(status, { connected: true }, 'status is read from the new port');

  const [pid] = frpcPids(configPath);
  const restarted = await daemon.post('/tunnelAct/instanceMgr/restart', { instanceID: id }, { token: root });
  t.true(restarted.body.success, restarted.body.message);
  await statusUntil(daemon, root, id, (s) => s.state === 'running' && s.connected === true, 5000);
  t.not(frpcPids(configPath)[0], pid);
  t.is((await adminEndpointOf(configPath)).port, moved, 'its own frpc held the port: not moved');
});

test('exit codes as the real frpc gives them: a config error, a failed first login, /api/stop, SIGTERM', async (t) => {
  t.timeout(90_000);
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const { events } = await alertsOf(t, daemon, root);
  const stateEvents = (id: string) => events.messages.filter((e) => e.instanceID === Number(id));

  // A config file frpc refuses (edited by hand behind tunnelward's back): exit 1, the start fails with frpc's words.
  const bad = await createTunnel(daemon, root, frps, 'rf_config_error');
  await writeFile(bad.configPath, (await readFile(bad.configPath, 'utf8')) + 'serverAdr = "typo"\n');
  const refused = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: bad.id }, { token: root });
  t.false(refused.body.success);
  t.is(refused.status, 502);
  t.regex(
    refused.body.message,
    /exited with code 1 before it was up .*; failed: exit code 1 says retrying will not help .*; last log lines:\n.*json: unknown field "serverAdr"/s,
  );
  t.like(await statusOf(daemon, root, bad.id), { state: 'failed', lastExit: { code: 1, signal: null } });

  // A server that cannot be reached at the first login. New files say loginFailExit = false: frpc runs on, retrying.
  await frps.down();
  const patient = await createTunnel(daemon, root, frps, 'rf_patient');
  await start(daemon, root, patient.id);
  await statusUntil(daemon, root, patient.id, (s) => s.state === 'running' && s.connected === false, 3000);
  // With loginFailExit = true (frpc's default) frpc exits 1, which is not a config error: the start is answered
  // saying why (502: the tunnel failed, not tunnelward), and the exit is supervised as any other: retried at the
  // backoff's pace, without a start limit, until the server answers; then it runs, with no operator's help.
  const strict = await createTunnel(daemon, root, frps, 'rf_strict', { loginFailExit: true });
  const failed = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: strict.id }, { token: root });
  t.is(failed.status, 502);
  t.regex(
    failed.body.message,
    /exited with code 1 before it was up .*; it is tried again at the backoff's pace until its server answers; last log lines:.*login to the server failed: dial tcp.*connection refused/s,
  );
  await waitFor(
    () => statusOf(daemon, root, strict.id),
    (s) => s.restarts > 4,
    20_000,
  );
  t.not((await statusOf(daemon, root, strict.id)).state, 'failed', 'past the start limit (3): never failed');
  await frps.up();
  await statusUntil(daemon, root, patient.id, (s) => s.connected === true, 30_000);
  await statusUntil(daemon, root, strict.id, (s) => s.state === 'running' && s.connected === true, 30_000);
  // An operator's restart begins a new count of crashes and restarts (those of the wait above are a crash loop).
  const restarted = await daemon.post('/tunnelAct/instanceMgr/restart', { instanceID: strict.id }, { token: root });
  // frps 0.71 refuses a login whose clientID is still online: when it has not yet seen the old tunnel's connection
  // close (a loaded host), the new one's first login is refused and, with loginFailExit, it exits: retried like
  // any failed first login, and up once frps lets the old one go.
  if (!restarted.body.success)
    t.regex(
      restarted.body.message,
      /tried again at the backoff's pace until its server answers; last log lines:.*is already online/s,
    );
  await statusUntil(daemon, root, strict.id, (s) => s.state === 'running' && s.connected === true, 30_000);
  const [strictPid] = frpcPids(strict.configPath);
  await frps.down();
  process.kill(strictPid!, 'SIGKILL');
  // Restarted, exits 1 at its first login, again and again: more than Watchdog.StartLimit (3) times, never failed.
  await waitFor(
    () => statusOf(daemon, root, strict.id),
    (s) => s.restarts > 4,
    20_000,
  );
  t.not((await statusOf(daemon, root, strict.id)).state, 'failed');
  await frps.up();
  await statusUntil(daemon, root, strict.id, (s) => s.state === 'running' && s.connected === true, 30_000);

  // frpc's own POST /api/stop: a graceful exit with code 0, a stop that nobody restarts.
  const admin = await adminEndpointOf(patient.configPath);
  const stopped = await fetch(`http://${admin.host}:${admin.port}/api/stop`, {
    method: 'POST',
    headers: { Authorization: `Basic ${Buffer.from(`${admin.user}:${admin.password}`).toString('base64')}` },
  });
  t.is(stopped.status, 200);
  await statusUntil(daemon, root, patient.id, (s) => s.state === 'stopped');
  t.like(await statusOf(daemon, root, patient.id), { lastExit: { code: 0, signal: null }, restarts: 0 });
  await events.waitFor(() => stateEvents(patient.id).some((e) => e.event === 'instance.stopped'));
  t.false(
    stateEvents(patient.id).some((e) => e.event === 'instance.crashed'),
    'a clean exit is no crash',
  );
  t.deepEqual(frpcPids(patient.configPath), []);

  // SIGTERM over tcp: frpc dies of the signal, which is the stop that was asked for.
  const stop = await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: strict.id }, { token: root });
  t.true(stop.body.success, stop.body.message);
  t.like(await statusOf(daemon, root, strict.id), { state: 'stopped', lastExit: { signal: 'SIGTERM' } });
  await events.waitFor(() =>
    stateEvents(strict.id).some((e) => e.event === 'instance.stopped' && e.from === 'stopping'),
  );
});

test('kill -9 of the daemon while tunnels carry bytes: they carry on, and the next daemon takes them over, no duplicate', async (t) => {
  t.timeout(90_000);
  const frps = await frpsFor(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const first = await startDaemon({ settingsToml: realFrpSettings(), env: BOOT });
  const next: { daemon?: Daemon } = {};
  t.teardown(async () => {
    await first.stop('SIGKILL');
    await next.daemon?.stop('SIGKILL');
    await killTunnelsUnder(first.dataDir);
    await dispose(first);
  });
  const token = await first.login();
  const tunnels: Array<{ id: string; configPath: string; port: number }> = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const made = await createTunnel(first, token, frps, `rf_kept_${i}`);
    await addProxy(first, token, made.id, tcpTo(`echo_${i}`, echo.port, port));
    await start(first, token, made.id);
    tunnels.push({ ...made, port });
  }
  for (const { id } of tunnels) await statusUntil(first, token, id, (s) => s.connected === true, 2000);
  const pids = tunnels.map((x) => frpcPids(x.configPath));
  const conns = await Promise.all(tunnels.map((x) => EchoConnection.open(x.port)));
  t.teardown(() => conns.forEach((c) => c.close()));
  await Promise.all(conns.map((c) => c.exchange('before')));

  await first.stop('SIGKILL');
  // Open connections go on carrying bytes, and new ones are made, while no daemon runs.
  for (let round = 0; round < 20; round++) await Promise.all(conns.map((c) => c.exchange(`away ${round}`)));
  await Promise.all(tunnels.map((x) => roundTrip(x.port, 'a new connection while the daemon is away')));

  const second = (next.daemon = await startDaemon({ dataDir: first.dataDir, env: BOOT }));
  const token2 = await second.login();
  await second.waitForOutput(/"adopted":3/);
  for (const { id } of tunnels)
    await statusUntil(second, token2, id, (s) => s.state === 'running' && s.connected === true, 3000);
  t.deepEqual(
    tunnels.map((x) => frpcPids(x.configPath)),
    pids,
    'the same frpc processes, one per config file: none started twice',
  );
  await Promise.all(conns.map((c) => c.exchange('after the new daemon took over')));
  t.false(conns.some((c) => c.closed));
});
