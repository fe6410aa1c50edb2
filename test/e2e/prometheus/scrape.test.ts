// A real Prometheus scraping the real daemon, whose tunnels are the real frpc through real frps: a metrics-scoped key
// made with the CLI, read from a credentials file (no X-Timestamp: Prometheus sends fixed headers only), the example
// config and rules; tunnelward's series read back through Prometheus's query API.
import { readFile, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import test from 'ava';
import { cli, loggedIn } from '../../helpers/cli.js';
import { echoServer, freePort } from '../../helpers/frp.js';
import { startPrometheus } from '../../helpers/prometheus.js';
import { addProxy, createTunnel, frpsFor, healthUntil, realFrpDaemon, start, tcpTo } from '../../helpers/real-frp.js';
import { until } from '../../helpers/until.js';

test('Prometheus scrapes /metrics with a metrics key: every tunnel by name with the host, up and connected, and why one is down', async (t) => {
  t.timeout(120_000);
  const stays = await frpsFor(t);
  const goes = await frpsFor(t);
  const { daemon, root } = await realFrpDaemon(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const one = await createTunnel(daemon, root, stays, 'pm_one');
  await addProxy(daemon, root, one.id, tcpTo('echo', echo.port, await freePort()));
  const two = await createTunnel(daemon, root, goes, 'pm_two');
  await createTunnel(daemon, root, stays, 'pm_three');
  await start(daemon, root, one.id);
  await start(daemon, root, two.id);
  await healthUntil(daemon, root, one.id, 'up');
  await healthUntil(daemon, root, two.id, 'up');
  // pm_two's server goes away: down, not connected, for that reason.
  await goes.down();
  await healthUntil(daemon, root, two.id, 'down', /^not connected to the server/);

  // The key, made as an operator makes it.
  const operator = await loggedIn(daemon, t);
  const made = await cli(['keys', 'create', 'prometheus', '--scope', 'metrics'], operator);
  t.is(made.code, 0, made.stderr);
  const key = made.stdout.trim();

  const { prometheus, keyFile, configFile } = await startPrometheus(t, new URL(daemon.url).host, key);
  t.is((await stat(keyFile)).mode & 0o777, 0o600, 'the key file is for Prometheus alone');
  t.false((await readFile(configFile, 'utf8')).includes(key), 'the config names the key file, not the key');

  const targets = await until(
    () => prometheus.api('targets'),
    (data) => data.activeTargets.length === 1 && data.activeTargets[0].health === 'up',
    { timeoutMs: 30_000, what: 'the tunnelward target up in Prometheus' },
  );
  t.like(targets.activeTargets[0], { labels: { job: 'tunnelward' }, lastError: '' });

  // The series, as Prometheus stored them: one per tunnel, by name, with the host.
  const byName = async (expr: string) =>
    Object.fromEntries(
      (await prometheus.query(expr)).map(({ metric, value }) => [
        metric.instance_name!,
        { ...metric, value: value[1] },
      ]),
    );
  const up = await until(
    () => byName('tunnelward_tunnel_up'),
    (seen) => Object.keys(seen).length === 3,
    { what: 'tunnelward_tunnel_up of three tunnels' },
  );
  for (const [name, value] of [
    ['pm_one', '1'],
    ['pm_two', '0'],
    ['pm_three', '0'],
  ] as const)
    t.like(up[name], { host: hostname(), job: 'tunnelward', value }, name);
  t.like((await byName('tunnelward_tunnel_connected'))['pm_one'], { value: '1', host: hostname() });
  t.like((await byName('tunnelward_tunnel_connected'))['pm_two'], { value: '0' });
  const health = await byName('tunnelward_tunnel_health');
  t.like(health['pm_two'], { health: 'down', reason: 'disconnected', value: '1' });
  t.like(health['pm_three'], { health: 'stopped', reason: 'none' });
  t.like(health['pm_one'], { health: 'up', reason: 'none' });
  t.truthy((await byName('tunnelward_tunnel_memory_bytes'))['pm_one'], 'the running tunnel has its memory');

  // The example rules are loaded, and the tunnel that is down is on its way to an alert (pending for its 2 minutes).
  const rules = await prometheus.api('rules');
  t.deepEqual(
    rules.groups.flatMap((g: any) => g.rules.map((r: any) => `${r.name} ${r.health}`)),
    [
      'TunnelwardScrapeFailing ok',
      'TunnelwardTunnelDown ok',
      'TunnelwardProxyDown ok',
      'TunnelwardProxyUnreachable ok',
      'TunnelwardRestartStorm ok',
      'TunnelwardMemoryOverCap ok',
      'TunnelwardMemoryNearCap ok',
    ],
  );
  const alerts = await until(
    () => prometheus.api('alerts'),
    (data) => data.alerts.some((a: any) => a.labels.alertname === 'TunnelwardTunnelDown'),
    { what: 'the TunnelwardTunnelDown alert of pm_two' },
  );
  t.deepEqual(
    alerts.alerts.map((a: any) => `${a.labels.alertname} ${a.labels.instance_name} ${a.state}`),
    ['TunnelwardTunnelDown pm_two pending'],
  );
  t.regex(alerts.alerts[0].annotations.description, /^Health down, reason disconnected \(tunnelward status pm_two /);

  // The key revoked: the next scrape is refused, and the target says why.
  t.is((await cli(['keys', 'rm', 'prometheus'], operator)).code, 0);
  const refused = await until(
    () => prometheus.api('targets'),
    (data) => data.activeTargets[0].health === 'down',
    { timeoutMs: 30_000, what: 'the target down once the key is revoked' },
  );
  t.regex(refused.activeTargets[0].lastError, /401 Unauthorized/);
});
