// End-to-end probes with the real frpc and frps: a proxy that frpc says runs is checked from the server's side beside
// its local service, and the health, the proxy list, the events and the metrics say which side fails.

import test, { type ExecutionContext } from 'ava';
import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { cli, loggedIn } from '../../helpers/cli.js';
import { disposeWithTunnels, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { freePort, roundTrip } from '../../helpers/frp.js';
import {
  addProxy,
  alertsOf,
  createTunnel,
  frpsFor,
  healthUntil,
  httpTo,
  realFrpSettings,
  start,
  statusUntil,
  tcpTo,
} from '../../helpers/real-frp.js';

type Health = { state: string; reason: string | null };

/** Probes every second, two failures in a row, alerts after 1 s. */
async function probingDaemon(t: ExecutionContext, more: Record<string, number> = {}) {
  const { daemon, root } = await startWithRoot({
    settingsToml: realFrpSettings({ 'Probe.IntervalSecs': 1, 'Probe.TimeoutSecs': 2, 'Probe.Failures': 2, ...more }),
  });
  t.teardown(() => disposeWithTunnels(daemon, root));
  return { daemon, root };
}

async function probesOn(daemon: Daemon, root: string, id: string) {
  const res = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'systemConfig', modifiedData: { probes: true } },
    { token: root },
  );
  if (!res.body.success) throw new Error(`probes on failed: ${res.body.message}`);
  return res.body.data as { probes: boolean };
}

/** The proxies' own health, as `proxyMgr/list` gives it. */
async function proxyHealth(daemon: Daemon, root: string, id: string): Promise<Map<string, Health>> {
  const list = await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token: root });
  return new Map((list.body.data.proxies as Array<{ name: string; health: Health }>).map((p) => [p.name, p.health]));
}

/** A value of `/metrics` (NaN when absent). */
async function metric(daemon: Daemon, root: string, line: RegExp): Promise<number> {
  const res = await fetch(`${daemon.url}/metrics`, { headers: { 'X-Token': root, 'X-Timestamp': String(Date.now()) } });
  const text = await res.text();
  const found = text.split('\n').find((l) => line.test(l));
  return found ? Number(found.split(' ').pop()) : NaN;
}

/** Waits until the metric line reads `value` (or, given a test, a value that passes it). */
async function metricUntil(
  daemon: Daemon,
  root: string,
  line: RegExp,
  value: number | ((v: number) => boolean),
  timeoutMs = 20_000,
) {
  const pass = typeof value === 'number' ? (v: number) => v === value : value;
  const end = Date.now() + timeoutMs;
  for (;;) {
    const now = await metric(daemon, root, line);
    if (pass(now)) return now;
    if (Date.now() > end) throw new Error(`${String(line)} is ${now}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** An echo service on `port` (0: any), closed with the test; `close` takes it down and `listen` brings it back. */
async function echoOn(t: ExecutionContext, port = 0) {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const listen = (at: number) =>
    new Promise<number>((resolve, reject) => {
      server = createServer((socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => socket.destroy());
        socket.pipe(socket);
      });
      server.once('error', reject);
      server.listen(at, '127.0.0.1', () => resolve((server!.address() as AddressInfo).port));
    });
  const close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      if (!server?.listening) return resolve();
      server.close(() => resolve());
    });
  t.teardown(close);
  return { port: await listen(port), listen, close };
}

/**
 * A relay between frpc and frps's control port: frpc logs in through it. `cut` kills the upstream side only and holds
 * frpc's connection open, so frpc goes on saying its proxies run while frps (restarted) no longer has them.
 */
async function controlRelay(t: ExecutionContext, upstreamPort: number) {
  const downs = new Set<Socket>();
  const ups = new Set<Socket>();
  let holding = false;
  const server = createServer((down) => {
    const up = connect(upstreamPort, '127.0.0.1');
    downs.add(down);
    ups.add(up);
    down.pipe(up);
    up.pipe(down, { end: false });
    const drop = () => {
      ups.delete(up);
      up.destroy();
      if (!holding) down.destroy();
    };
    up.on('error', drop);
    up.on('close', drop);
    down.on('error', () => down.destroy());
    down.on('close', () => {
      downs.delete(down);
      up.destroy();
    });
  });
  const port = await new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
  const release = () => {
    holding = false;
    for (const socket of [...downs, ...ups]) socket.destroy();
  };
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        release();
        server.close(() => resolve());
      }),
  );
  return {
    port,
    /** Upstream connections die, frpc's are held open (no FIN, no reset): the server went away unseen. */
    cut() {
      holding = true;
      for (const up of ups) up.destroy();
    },
    /** frpc's held connections are closed: it sees the loss and logs in again. */
    release,
  };
}

test('a working tcp proxy is probed up; its local service down is told apart, and back', async (t) => {
  t.timeout(90_000);
  const frps = await frpsFor(t);
  const { daemon, root } = await probingDaemon(t);
  const echo = await echoOn(t);
  const { id } = await createTunnel(daemon, root, frps, 'pr_tcp');
  await addProxy(daemon, root, id, tcpTo('echo', echo.port, await freePort()));
  t.like(await probesOn(daemon, root, id), { probes: true });
  const info = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root });
  t.is(info.body.data.probes, true);
  const { next } = await alertsOf(t, daemon, root);
  await start(daemon, root, id);
  await healthUntil(daemon, root, id, 'up');
  await metricUntil(daemon, root, /^tunnelward_proxy_probes\{result="reachable",host="[^"]+"\}/, 1);
  t.like((await proxyHealth(daemon, root, id)).get('echo'), { state: 'up', reason: null });

  await echo.close();
  const down = await healthUntil(daemon, root, id, 'down', /local service down/);
  t.is(down.health.reason, 'no proxy working: proxy echo: local service down: connection refused');
  t.is(down.proxyStatus.running, 1, 'frpc still says it runs');
  t.like((await proxyHealth(daemon, root, id)).get('echo'), {
    state: 'down',
    reason: 'local service down: connection refused',
  });
  const alert = await next(id, 'proxy.unreachable', 'echo');
  t.like(alert, { to: 'local service down', err: 'local service down: connection refused' });
  t.is(await metric(daemon, root, /^tunnelward_proxy_probes\{result="local_down",host="[^"]+"\}/), 1);

  await echo.listen(echo.port);
  await healthUntil(daemon, root, id, 'up');
  t.like(await next(id, 'proxy.reachable', 'echo'), { to: 'reachable', from: 'local service down' });
});

test('unreachable from outside: frps restarted without the proxy while frpc still says it runs', async (t) => {
  t.timeout(90_000);
  const frps = await frpsFor(t);
  const relay = await controlRelay(t, frps.bindPort);
  const { daemon, root } = await probingDaemon(t);
  const echo = await echoOn(t);
  // frpc logs in through the relay; its tcp mux keepalive is long, so it does not notice the cut by itself.
  const { id } = await createTunnel(
    daemon,
    root,
    frps,
    'pr_lost',
    { 'transport.tcpMuxKeepaliveInterval': 600 },
    { serverPort: String(relay.port) },
  );
  await addProxy(daemon, root, id, tcpTo('echo', echo.port, await freePort()));
  await addProxy(daemon, root, id, tcpTo('other', echo.port, await freePort()));
  await probesOn(daemon, root, id);
  const { next } = await alertsOf(t, daemon, root);
  await start(daemon, root, id);
  await healthUntil(daemon, root, id, 'up');
  await metricUntil(daemon, root, /^tunnelward_proxy_probes\{result="reachable",host="[^"]+"\}/, 2);

  relay.cut();
  await frps.down();
  await frps.up();
  const lost = await healthUntil(daemon, root, id, 'down', /unreachable from outside/);
  t.is(lost.connected, true, 'frpc still says it is logged in');
  t.is(lost.proxyStatus.running, 2, 'and that both proxies run');
  t.regex(
    lost.health.reason,
    /^no proxy working: proxy (echo|other): unreachable from outside: connection refused \(and 1 more\)$/,
  );
  t.like((await proxyHealth(daemon, root, id)).get('echo'), {
    state: 'down',
    reason: 'unreachable from outside: connection refused',
  });
  t.like(await next(id, 'proxy.unreachable', 'echo'), {
    to: 'unreachable from outside',
    err: 'unreachable from outside: connection refused',
  });

  // frpc sees the loss, logs in to the new frps, and its proxies are carried again.
  relay.release();
  await healthUntil(daemon, root, id, 'up');
  await metricUntil(daemon, root, /^tunnelward_proxy_probes\{result="reachable",host="[^"]+"\}/, 2);
});

test("half-open: the health policy restarts a tunnel whose connection is held open unseen, and it carries again within the policy's time plus one restart", async (t) => {
  t.timeout(90_000);
  const frps = await frpsFor(t);
  const relay = await controlRelay(t, frps.bindPort);
  const { daemon, root } = await probingDaemon(t, { 'Health.UnreachableSecs': 3 });
  const echo = await echoOn(t);
  // frpc's own keepalive would notice in 10 minutes: the policy must act first.
  const { id } = await createTunnel(
    daemon,
    root,
    frps,
    'pr_half',
    { 'transport.tcpMuxKeepaliveInterval': 600 },
    { serverPort: String(relay.port) },
  );
  const remotePort = await freePort();
  await addProxy(daemon, root, id, tcpTo('echo', echo.port, remotePort));
  await probesOn(daemon, root, id);
  const { events } = await alertsOf(t, daemon, root);
  await start(daemon, root, id);
  const before = await healthUntil(daemon, root, id, 'up');
  await roundTrip(remotePort, 'before');

  // The server's side goes (and comes back empty) while frpc's connection is held: no FIN, no reset.
  const cutAt = Date.now();
  relay.cut();
  await frps.down();
  await frps.up();
  const restarted = await events.waitFor(
    (m) => m.some((e) => e.event === 'instance.healthRestart' && e.instanceID === Number(id)),
    60_000,
  );
  t.regex(
    restarted.find((e) => e.event === 'instance.healthRestart').message,
    /^proxy echo unreachable from outside for [3-9] s \(connection refused\) while frpc says it runs: restarted by the health policy \(Health\.UnreachableSecs 3\)/,
  );
  // The new frpc logs in through the relay to the new frps: carried again.
  const after = await healthUntil(daemon, root, id, 'up');
  t.not(after.pid, before.pid);
  await roundTrip(remotePort, 'after');
  const recoveredMs = Date.now() - cutAt;
  t.log(`carried again ${recoveredMs} ms after the cut (probes: 1 s x 2 failures, policy 3 s, a restart)`);
  t.true(recoveredMs < 30_000, `recovered in ${recoveredMs} ms`);
  t.is(after.restarts, 0, 'not a crash');
  // One: the failures of the run it ended are not the new run's (they once made a second restart at once).
  t.is(after.healthRestarts, 1);
});

test("an http proxy is probed through frps's vhost port with its domain as Host", async (t) => {
  t.timeout(90_000);
  const frps = await frpsFor(t);
  const { daemon, root } = await probingDaemon(t);
  const seen: Array<{ host: string; agent: string }> = [];
  const web = createHttpServer((req, res) => {
    seen.push({ host: req.headers.host ?? '', agent: req.headers['user-agent'] ?? '' });
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('ok');
  });
  const port = await new Promise<number>((resolve) =>
    web.listen(0, '127.0.0.1', () => resolve((web.address() as AddressInfo).port)),
  );
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        web.closeAllConnections();
        web.close(() => resolve());
      }),
  );
  const { id } = await createTunnel(daemon, root, frps, 'pr_http');
  await addProxy(daemon, root, id, httpTo('web', port, 'probe.example.test'));
  // Turned on as an operator types it.
  const on = await cli(['probes', 'pr_http', 'on'], await loggedIn(daemon, t));
  t.is(on.code, 0, on.stderr);
  await start(daemon, root, id);
  await healthUntil(daemon, root, id, 'up');
  await metricUntil(daemon, root, /^tunnelward_proxy_probes\{result="reachable",host="[^"]+"\}/, 1);
  const probes = seen.filter((r) => r.agent === 'tunnelward-probe');
  // One request directly, one through frps's vhost port (frps keeps the Host header): the same Host both times.
  t.true(probes.length >= 2);
  t.true(probes.every((r) => r.host === 'probe.example.test'));

  // The service answering 503 directly and through frps alike is the service's own business: still up.
  web.removeAllListeners('request');
  web.on('request', (_req, res) => {
    res.writeHead(503);
    res.end();
  });
  const before = await metric(daemon, root, /^tunnelward_probes_total\{outcome="ok",host="[^"]+"\}/);
  // Two probes more have passed since (Probe.Failures: a failing one would have turned it down by then).
  await metricUntil(daemon, root, /^tunnelward_probes_total\{outcome="ok",host="[^"]+"\}/, (v) => v >= before + 2);
  t.like((await statusUntil(daemon, root, id, () => true)).health, { state: 'up' });
  t.is(await metric(daemon, root, /^tunnelward_probes_total\{outcome="failed",host="[^"]+"\}/), 0);

  web.close();
  web.closeAllConnections();
  const down = await healthUntil(daemon, root, id, 'down', /local service down/);
  t.is(down.health.reason, 'no proxy working: proxy web: local service down: connection refused');
});
