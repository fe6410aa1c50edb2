// "Is it up, and if not, why": the one health answer, with its reason in frpc's words, as every view shows it,
// with the real frpc and frps: a wrong token, a server gone, a remote port taken.

import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { cli, loggedIn } from '../../helpers/cli.js';
import { launchBrowser, login, noProblems, openConsole, shot } from '../../helpers/console.js';
import { CLI, type Daemon } from '../../helpers/daemon.js';
import { waitFor } from '../../helpers/instances.js';
import { echoServer, freePort } from '../../helpers/frp.js';
import {
  addProxy,
  alertsOf,
  createTunnel,
  frpsFor,
  healthUntil,
  realFrpDaemon,
  start,
  tcpTo,
} from '../../helpers/real-frp.js';

const daemonFor = realFrpDaemon;

type Health = { state: string; reason: string | null; since: string | null };

/** The health as the status, getInfo and list each show it: the same answer everywhere. */
async function healthEverywhere(t: ExecutionContext, daemon: Daemon, root: string, id: string): Promise<Health> {
  const [status, info, list] = await Promise.all([
    daemon.get(`/tunnelAct/instanceMgr/status?instanceID=${id}`, { token: root }),
    daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root }),
    daemon.get('/tunnelAct/instanceMgr/list', { token: root }),
  ]);
  const listed = (list.body.data as Array<{ instanceID: number; health: Health }>).find(
    (i) => i.instanceID === Number(id),
  );
  t.deepEqual(info.body.data.health, status.body.data.health, 'getInfo says what status says');
  t.deepEqual(listed?.health, status.body.data.health, 'the list says what status says');
  return status.body.data.health as Health;
}

test('a wrong token: down, "login refused" with frps\'s words, in every view and in ls', async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const env = await loggedIn(daemon, t);
  const { id } = await createTunnel(daemon, root, frps, 'hl_token', { 'auth.token': 'not-the-token-1234' });
  await start(daemon, root, id);
  await healthUntil(daemon, root, id, 'down', /login refused/);
  const health = await healthEverywhere(t, daemon, root, id);
  t.is(
    health.reason,
    "not connected to the server: login refused: token in login doesn't match token from configuration",
  );
  t.truthy(health.since);
  const ls = await cli(['ls'], env);
  t.regex(ls.stdout, /hl_token\s+running\s+down\b.*login refused: token in login doesn't match/);

  // The console: amber, with the reason, in the list and on the instance's page.
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const page = await openConsole(t, browser, daemon);
  await login(page);
  const badge = page.locator('tr[data-instance="hl_token"] .badge');
  await badge.filter({ hasText: 'running · down' }).waitFor();
  t.regex((await badge.getAttribute('title')) ?? '', /login refused: token in login doesn't match/);
  t.regex((await badge.getAttribute('class')) ?? '', /\bhealth-down\b/);
  t.regex(
    await page.locator('tr[data-instance="hl_token"] .state-cell .why').innerText(),
    /^not connected to the server: login refused: token in login doesn't match/,
    'the reason under the state, as ls prints it',
  );
  await shot(page, 'health-down-list');
  await page.locator('tr[data-instance="hl_token"] a').first().click();
  await page.getByText(/^not connected to the server: login refused/).waitFor();
  await shot(page, 'health-down-instance');
  noProblems(t, page);
});

test('a server gone: down with "server unreachable" and the dial error, the disconnected event says why; back: up', async (t) => {
  t.timeout(90_000);
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const { id } = await createTunnel(daemon, root, frps, 'hl_lost');
  await addProxy(daemon, root, id, tcpTo('echo', echo.port, await freePort()));
  const { next } = await alertsOf(t, daemon, root);
  // `tunnelward events` as an operator follows it: the proxy by name, and why.
  const env = await loggedIn(daemon, t);
  // From the first event kept: a CLI slow to start on a loaded machine must not miss what came before it connected.
  const follow = spawn(process.execPath, [CLI, 'events', '--since', '0'], { env: { ...process.env, ...env } });
  t.teardown(() => follow.kill('SIGKILL'));
  let printed = '';
  follow.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  await start(daemon, root, id);
  await healthUntil(daemon, root, id, 'up');
  t.like(await healthEverywhere(t, daemon, root, id), { state: 'up', reason: null });

  await frps.down();
  await healthUntil(daemon, root, id, 'down', /server unreachable: dial tcp: connect: connection refused/);
  const health = await healthEverywhere(t, daemon, root, id);
  t.regex(health.reason!, /^not connected to the server: server unreachable: dial tcp: /);
  t.false(health.reason!.includes('127.0.0.1'), "the server's address is for admins only");
  const disconnected = await next(id, 'instance.disconnected');
  t.regex(String(disconnected.err), /server unreachable|session shutdown|connection reset/);
  const lines = await waitFor(
    async () => printed,
    (text) => /instance\.disconnected/.test(text),
  );
  if (/proxy\.down/.test(lines)) t.regex(lines, /proxy\.down hl_lost \(\d+\) proxy echo: running -> disconnected/);
  t.regex(lines, /instance\.disconnected hl_lost \(\d+\) not connected: server unreachable: /);

  await frps.up();
  await healthUntil(daemon, root, id, 'up');
});

test("a remote port taken: degraded, naming the proxy and frps's error; the other proxy runs", async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const held = createServer();
  const heldPort = await new Promise<number>((resolve) =>
    held.listen(0, '127.0.0.1', () => resolve((held.address() as { port: number }).port)),
  );
  t.teardown(() => new Promise<void>((resolve) => held.close(() => resolve())));
  const { id } = await createTunnel(daemon, root, frps, 'hl_port');
  await addProxy(daemon, root, id, tcpTo('fine', echo.port, await freePort()));
  await addProxy(daemon, root, id, tcpTo('taken', echo.port, heldPort));
  await start(daemon, root, id);
  await healthUntil(daemon, root, id, 'degraded');
  const health = await healthEverywhere(t, daemon, root, id);
  t.regex(health.reason!, /^proxy taken: start error: .*port/);
  // Each proxy's own answer, in the list and in `tunnelward proxies`.
  const list = await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token: root });
  const byName = new Map(
    (list.body.data.proxies as Array<{ name: string; health: Health }>).map((p) => [p.name, p.health]),
  );
  t.like(byName.get('fine'), { state: 'up', reason: null });
  t.like(byName.get('taken'), { state: 'down' });
  t.regex(byName.get('taken')!.reason!, /^start error: .*port/);
  const env = await loggedIn(daemon, t);
  const table = (await cli(['proxies', 'hl_port'], env)).stdout;
  t.regex(table, /^fine\s.*\sup\s/m);
  t.regex(table, /^taken\s.*\sdown\s+start error: /m);
});

test("frpc's own health check failed: degraded, the proxy down with its words, and proxy.down says why, in every view and in ls", async (t) => {
  t.timeout(90_000);
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const checked = await echoServer();
  const other = await echoServer();
  t.teardown(() => other.close());
  const { id } = await createTunnel(daemon, root, frps, 'hl_check');
  await addProxy(daemon, root, id, {
    ...tcpTo('checked', checked.port, await freePort()),
    healthCheck: { type: 'tcp', intervalSeconds: 1, maxFailed: 1 },
  });
  await addProxy(daemon, root, id, tcpTo('plain', other.port, await freePort()));
  const { next } = await alertsOf(t, daemon, root);
  await start(daemon, root, id);
  await healthUntil(daemon, root, id, 'up');

  await checked.close();
  await healthUntil(daemon, root, id, 'degraded', /health check failed/);
  const health = await healthEverywhere(t, daemon, root, id);
  t.regex(health.reason!, /^proxy checked: health check failed/);
  const down = await next(id, 'proxy.down', 'checked');
  t.like(down, { to: 'check failed' });
  const env = await loggedIn(daemon, t);
  t.regex((await cli(['ls'], env)).stdout, /hl_check\s+running\s+degraded\b.*proxy checked: health check failed/);
  t.regex((await cli(['proxies', 'hl_check'], env)).stdout, /^checked\s.*\sdown\s+health check failed/m);
});
