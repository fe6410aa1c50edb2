// `tunnelward doctor` and the console's Health page over the tunnels, with the real frpc and frps: a wrong token, a
// server gone, a key the installed frpc does not know.

import test from 'ava';
import { readFile, writeFile } from 'node:fs/promises';
import { cli, loggedIn } from '../../helpers/cli.js';
import { launchBrowser, login, noProblems, openConsole, shot } from '../../helpers/console.js';
import { echoServer, freePort } from '../../helpers/frp.js';
import { addProxy, createTunnel, frpsFor, realFrpDaemon, start, statusUntil, tcpTo } from '../../helpers/real-frp.js';

const LOGIN_REFUSED =
  "not connected to the server: login refused: token in login doesn't match token from configuration";

test('doctor: a tunnel down with its reason exits 1; a server gone adds its tunnel; a key frpc does not know warns; the Health page and the proxies-down chip count the same', async (t) => {
  t.timeout(120_000);
  const frps = await frpsFor(t);
  const { daemon, root } = await realFrpDaemon(t);
  const env = await loggedIn(daemon, t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const refused = await createTunnel(daemon, root, frps, 'dr_token', { 'auth.token': 'not-the-token-1234' });
  await addProxy(daemon, root, refused.id, tcpTo('ssh', echo.port, await freePort()));
  const fine = await createTunnel(daemon, root, frps, 'dr_fine');
  await addProxy(daemon, root, fine.id, tcpTo('web', echo.port, await freePort()));
  await start(daemon, root, refused.id);
  await start(daemon, root, fine.id);
  await statusUntil(daemon, root, refused.id, (s) => /login refused/.test(s.health.reason ?? ''), 30_000);
  await statusUntil(daemon, root, fine.id, (s) => s.health.state === 'up', 30_000);

  const first = await cli(['doctor'], env);
  t.is(first.code, 1, 'a tunnel down fails the doctor');
  t.regex(
    first.stdout,
    new RegExp(`^fail\\s+tunnels\\s+1 tunnel down: 1 ${LOGIN_REFUSED.replace(/[()]/g, '\\$&')} \\(dr_token\\)$`, 'm'),
  );
  t.regex(first.stdout, /^ok\s+failedTunnels\s/m);
  t.regex(first.stdout, /^ok\s+tunnelFiles\s+the TunnelPath frpc \(0\.71\.0\) accepts every config file \(2\)$/m);
  // The proxy of the refused tunnel is down too, though frpc reports no proxy at all.
  t.regex(first.stdout, /^tunnels: 1 up, 1 down; proxies: 1 up, 1 down$/m);
  t.regex(first.stdout, /^fail: 1 failed, 0 warned, 13 ok/m);

  // The server gone: both down, grouped by reason; the list says each proxy is down by its health.
  await frps.down();
  // frpc's first words on the loss may be the session's end (`session shutdown`); its dial error follows at the retry.
  await statusUntil(daemon, root, fine.id, (s) => /server unreachable: dial tcp/.test(s.health.reason ?? ''), 30_000);
  const list = (await daemon.get('/tunnelAct/instanceMgr/list', { token: root })).body.data as Array<{
    name: string;
    proxyStatus: Record<string, number>;
    proxyHealth: Record<string, number>;
  }>;
  const listed = list.find((i) => i.name === 'dr_fine')!;
  t.deepEqual(listed.proxyStatus, {}, 'frpc reports no proxy while it is not logged in');
  t.like(listed.proxyHealth, { down: 1, up: 0 });
  // A key frpc 0.71.0 does not know (as a file written for a later frp has): the file is refused, a warning.
  const text = await readFile(fine.configPath, 'utf8');
  await writeFile(fine.configPath, text.replace(/^serverPort = /m, 'keyFromALaterFrp = true\nserverPort = '));
  const second = await cli(['doctor'], env);
  t.is(second.code, 1);
  // Grouped by reason (the refused one may meanwhile find the server gone too): dr_fine's is the dial error.
  t.regex(
    second.stdout,
    /^fail\s+tunnels\s+2 tunnels down: .*\d not connected to the server: server unreachable: dial tcp: [^(]*\((?:dr_token, )?dr_fine\)/m,
  );
  t.regex(
    second.stdout,
    /^warn\s+tunnelFiles\s+the TunnelPath frpc \(0\.71\.0\) refuses 1 config file: 1 .*unknown field "keyFromALaterFrp".* \(dr_fine\)\. an unknown field is most often a key newer than this frpc/m,
  );
  t.regex(second.stdout, /^tunnels: 2 down; proxies: 2 down$/m);

  // The console: the same checks, and the cards count by health; so does the instances' chip.
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const page = await openConsole(t, browser, daemon);
  await login(page);
  const chip = page.locator('.summary [data-count="proxiesDown"] .chip-value');
  await chip.filter({ hasText: /^2$/ }).waitFor();
  await page.goto(`${daemon.url}/#/health`);
  const card = (key: string) => page.locator(`.health-cards [data-count="${key}"] .chip-value`);
  await card('proxiesDown').waitFor();
  t.is(await card('tunnelsDown').textContent(), '2');
  t.is(await card('proxiesDown').textContent(), '2');
  t.regex(await page.locator('tr[data-check="tunnels"] td[data-label="Found"]').innerText(), /^2 tunnels down: /);
  t.regex(await page.locator('tr[data-check="tunnels"] td[data-label="Result"]').innerText(), /fail/);
  t.regex(await page.locator('tr[data-check="tunnelFiles"] td[data-label="Result"]').innerText(), /warn/);
  await shot(page, 'health-tunnels-down');
  noProblems(t, page);
});
