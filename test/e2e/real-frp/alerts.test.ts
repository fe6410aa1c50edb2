// Alerts people keep on, and supervision that acts on health, with the real frpc and frps: a start's login announced,
// a start that cannot log in announced with why, one digest webhook per outage, and the health policy's restart of a
// tunnel that runs but is not logged in.

import test from 'ava';
import { createServer } from 'node:net';
import { echoServer, freePort } from '../../helpers/frp.js';
import { until } from '../../helpers/until.js';
import { statusOf, waitFor } from '../../helpers/instances.js';
import { startReceiver } from '../../helpers/receiver.js';
import {
  addProxy,
  adminEndpointOf,
  alertsOf,
  createTunnel,
  frpsFor,
  realFrpDaemon,
  start,
  statusUntil,
  tcpTo,
} from '../../helpers/real-frp.js';

test('a start announces instance.connected once its login holds; a start against a server that is down announces instance.disconnected with why', async (t) => {
  t.timeout(60_000);
  const frps = await frpsFor(t);
  const { daemon, root } = await realFrpDaemon(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const { alerts, next } = await alertsOf(t, daemon, root);

  const { id } = await createTunnel(daemon, root, frps, 'al_up');
  await addProxy(daemon, root, id, tcpTo('echo', echo.port, await freePort()));
  await start(daemon, root, id);
  const connected = await next(id, 'instance.connected');
  t.like(connected, { name: 'al_up', from: null, to: 'connected' });
  t.false(
    alerts(id).some((e) => e.event === 'proxy.up'),
    "a proxy's first sight after a start is not news",
  );

  // The server down before the start; frpc kept running (loginFailExit false) and retrying.
  await frps.down();
  const { id: late } = await createTunnel(daemon, root, frps, 'al_down', { loginFailExit: false });
  await start(daemon, root, late);
  const disconnected = await next(late, 'instance.disconnected');
  t.like(disconnected, { name: 'al_down', from: null, to: 'disconnected' });
  t.regex(disconnected.err, /^(server unreachable: dial tcp: .*connection refused|no login within 1 s of the start)$/);
  t.false(disconnected.err.includes('127.0.0.1'), "the server's address is for admins only");
  // And when it comes, the login is news too.
  await frps.up();
  await next(late, 'instance.connected');
});

test('digest: one frps outage over two tunnels is one webhook down and one back up, listing the tunnels and proxies with why', async (t) => {
  t.timeout(90_000);
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const frps = await frpsFor(t);
  const { daemon, root } = await realFrpDaemon(t, {
    'Notification.Enabled': true,
    'Webhook.URL': receiver.url,
    'Webhook.DigestSecs': 3,
  });
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const ids: string[] = [];
  for (const name of ['dg_a', 'dg_b']) {
    const { id } = await createTunnel(daemon, root, frps, name);
    await addProxy(daemon, root, id, tcpTo(`${name}_one`, echo.port, await freePort()));
    await addProxy(daemon, root, id, tcpTo(`${name}_two`, echo.port, await freePort()));
    await start(daemon, root, id);
    ids.push(id);
  }
  for (const id of ids) await statusUntil(daemon, root, id, (s) => s.health.state === 'up', 30_000);
  // The start's logins, in digests (one, unless a loaded machine started the two further apart than the window);
  // the proxies' first sight is not news.
  const digests = () => receiver.received.map((r) => r.body).filter((b) => b.event === 'alerts.digest');
  const named = (list: any[]) => list.flatMap((d) => d.items.map((i: any) => i.name as string)).sort();
  await receiver.waitFor(() => named(digests()).length === 2, 30_000);
  const ups = digests().length;
  t.true(digests().every((d) => d.to === 'up' && d.name === `127.0.0.1:${frps.bindPort}`));
  t.deepEqual(named(digests()), ['dg_a', 'dg_b']);
  t.true(digests().every((d) => d.items.every((i: any) => i.proxy === undefined)));

  await frps.down();
  await receiver.waitFor(() => digests().some((d) => d.to === 'down'), 30_000);
  const down = digests().find((d) => d.to === 'down');
  // Both tunnels and all four proxies, in one webhook, each with why.
  t.is(down.items.filter((i: any) => i.proxy === undefined).length, 2);
  t.deepEqual(down.items.filter((i: any) => i.proxy !== undefined).length, 4);
  for (const item of down.items) t.regex(item.err, /^(server lost|server unreachable: |session shutdown)/);
  t.regex(
    down.message,
    /^server 127\.0\.0\.1:\d+: 2 tunnels and 4 proxies down: tunnels dg_[ab] \(.+\), dg_[ab] \(.+\); proxies dg_[ab]\/dg_[ab]_one/,
  );
  const kinds = receiver.received.map((r) => r.body.event);
  t.false(
    kinds.some((k) => /^(proxy\.(up|down)|instance\.(connected|disconnected))$/.test(k)),
    'no alert sent one by one',
  );

  await frps.up();
  // Back: both tunnels and their four proxies (in one digest, or two when frpc's own login backoffs part them).
  const back = () =>
    digests()
      .filter((d) => d.to === 'up')
      .slice(ups);
  await receiver.waitFor(() => back().flatMap((d) => d.items).length === 6, 60_000);
  t.true(back().length <= 2, `${back().length} digests for one return`);
  t.regex(back()[0].message, /^server 127\.0\.0\.1:\d+: .* back up: tunnels dg_[ab]/);
  t.is(digests().filter((d) => d.to === 'down').length, 1, 'one outage, one digest down');
});

test('the health policy restarts a tunnel not logged in for Health.DisconnectedSecs, counted apart from crashes, with why; the next restart waits twice as long', async (t) => {
  t.timeout(90_000);
  const frps = await frpsFor(t);
  const { daemon, root } = await realFrpDaemon(t, { 'Health.DisconnectedSecs': 2 });
  const { events } = await alertsOf(t, daemon, root);
  const { id } = await createTunnel(daemon, root, frps, 'hp_one', { loginFailExit: false });
  await start(daemon, root, id);
  await statusUntil(daemon, root, id, (s) => s.connected === true, 30_000);
  const firstPid = (await statusOf(daemon, root, id)).pid;

  await frps.down();
  const restarts = () =>
    events.messages.filter((e) => e.event === 'instance.healthRestart' && e.instanceID === Number(id));
  await events.waitFor(() => restarts().length >= 1, 30_000);
  t.regex(
    restarts()[0].message,
    /^not connected to its server for [2-9] s \(server (unreachable|lost)[^)]*\): restarted by the health policy \(Health\.DisconnectedSecs 2\); the first of this outage, the next after 4 s more without a change$/,
  );
  const after = await statusUntil(
    daemon,
    root,
    id,
    (s) => s.healthRestarts >= 1 && s.state === 'running' && s.pid !== firstPid,
    20_000,
  );
  t.is(after.restarts, 0, 'not a crash');
  // The second waits 4 s from the restart's own start, and says it is the second.
  await events.waitFor(() => restarts().length >= 2, 30_000);
  t.regex(
    restarts()[1].message,
    /^not (connected to its server|logged in since its start) for [4-9] s .*restart 2 of this outage, the next after 8 s/,
  );
  const gap = Date.parse(restarts()[1].at) - Date.parse(restarts()[0].at);
  t.true(gap >= 4000, `the second came ${gap} ms after the first`);

  // Back: logged in again, the streak ends, nothing more is restarted; never failed.
  await frps.up();
  const back = await statusUntil(daemon, root, id, (s) => s.connected === true, 30_000);
  t.not(back.state, 'failed');
  const metrics = await fetch(`${daemon.url}/metrics`, {
    headers: { 'X-Token': root, 'X-Timestamp': String(Date.now()) },
  });
  t.regex(await metrics.text(), /^tunnelward_health_restarts_total\{host="[^"]+"\} [2-9]$/m);
  const made = restarts().length;
  await waitFor(
    () => statusOf(daemon, root, id),
    (s) => s.connected === true && s.healthRestarts === made,
    10_000,
  );
});

test("an admin port another program takes between a restart's check and frpc's bind: frpc exits 1, and the tunnel is started again in its slot on a new port", async (t) => {
  t.timeout(90_000);
  const frps = await frpsFor(t);
  // The first restart after a crash comes at once; the second after 2 s, time to take the port.
  const { daemon, root } = await realFrpDaemon(t, {
    'Watchdog.BackoffSecs': 2,
    'Watchdog.BackoffMaxSecs': 2,
    'Watchdog.StableSecs': 600,
    'Watchdog.StartLimit': 10,
  });
  const { events } = await alertsOf(t, daemon, root);
  const { id, configPath } = await createTunnel(daemon, root, frps, 'ap_taken', { loginFailExit: false });
  await start(daemon, root, id);
  const first = await statusUntil(daemon, root, id, (s) => s.connected === true, 30_000);
  const { port } = await adminEndpointOf(configPath);
  process.kill(first.pid, 'SIGKILL');
  const second = await statusUntil(daemon, root, id, (s) => s.state === 'running' && s.pid !== first.pid, 20_000);
  process.kill(second.pid, 'SIGKILL');
  // Taken while the tunnel waits for its next start.
  const holder = createServer();
  await until(
    () =>
      new Promise<boolean>((resolve) => {
        holder.once('error', () => resolve(false));
        holder.listen(port, '127.0.0.1', () => resolve(true));
      }),
    (taken) => taken,
    { timeoutMs: 5000, everyMs: 5, what: 'the admin port to be free to take' },
  );
  t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())));

  const restarted = await events.waitFor(
    (m) => m.some((e) => e.event === 'instance.healthRestart' && e.instanceID === Number(id)),
    30_000,
  );
  t.is(
    restarted.find((e) => e.event === 'instance.healthRestart').message,
    `its admin port ${port} was taken by another program as frpc started (bind: address already in use): started again with a new port by the health policy`,
  );
  t.true(
    events.messages.some((e) => e.event === 'instance.failed' && e.instanceID === Number(id)),
    'the exit itself was a failure',
  );
  const back = await statusUntil(daemon, root, id, (s) => s.state === 'running' && s.connected === true, 30_000);
  t.not((await adminEndpointOf(configPath)).port, port, 'a new admin port');
  t.is(back.health.state, 'up');
});
