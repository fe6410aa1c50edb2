// GET /metrics: the Prometheus text format, read by a Prometheus text parser, for admins.
import { writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { disposeWithTunnels, startWithRoot, tempDir } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf } from '../../helpers/instances.js';
import { until } from '../../helpers/until.js';

interface Family {
  name: string;
  type: string;
  metrics: Array<{ value: string; labels?: Record<string, string> }>;
}

test('instances by state, proxies by status, restarts, output, webhooks, requests by route, the process', async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  // The imaginary server of the fixture frpc: another client holds remote port 6401.
  const control = join(await tempDir('metrics-', t), 'control.json');
  await writeFile(control, JSON.stringify({ portsTaken: [6401] }));
  const { id } = await createInstance(daemon, root, 'mt_one', {
    metadatas: { 'fixture.logBurst': '5', 'fixture.control': control },
  });
  await daemon.post(
    '/tunnelAct/proxyMgr/create',
    {
      instanceID: id,
      proxyInfo: { name: 'ssh', type: 'tcp', localIP: '127.0.0.1', localPort: '22', remotePort: '6400' },
    },
    { token: root },
  );
  await createInstance(daemon, root, 'mt_two');
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root })).body.success);
  // The status read that follows a start.
  await until(
    () => statusOf(daemon, root, id),
    (s) => s.connected === true && s.proxyStatus.running === 1,
    { what: "frpc's status read: connected, its proxy running" },
  );

  const res = await fetch(`${daemon.url}/metrics`, { headers: { 'X-Token': root, 'X-Timestamp': String(Date.now()) } });
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const families = parsePrometheusTextFormat(await res.text()) as Family[];
  const family = (name: string) => families.find((f) => f.name === name)!;
  const value = (name: string, labels: Record<string, string> = {}) =>
    Number(
      family(name).metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value ?? NaN,
    );
  t.is(family('tunnelward_instances').type, 'GAUGE');
  t.is(value('tunnelward_instances', { state: 'running' }), 1);
  t.is(value('tunnelward_instances', { state: 'stopped' }), 1);
  t.is(value('tunnelward_instances_connected'), 1);
  t.is(value('tunnelward_proxies', { status: 'running' }), 1);
  t.is(value('tunnelward_instance_restarts'), 0);
  t.true(value('tunnelward_instance_log_lines_total') >= 5, 'the burst lines were counted');
  t.true(value('tunnelward_instance_log_bytes_total') > 0);
  t.is(family('tunnelward_webhook_events_total').type, 'COUNTER');
  t.is(value('tunnelward_webhook_events_total', { outcome: 'dropped' }), 0);
  t.is(value('tunnelward_http_requests_total', { route: '/tunnelAct/instanceMgr/start', status: '200' }), 1);
  t.true(value('tunnelward_http_requests_total', { route: '/login', status: '200' }) >= 1);
  t.true(value('process_resident_memory_bytes') > 10 * 1024 * 1024);
  t.true(value('process_cpu_seconds_total') > 0);

  // Each tunnel's own series, by its name, every series with the host it comes from.
  t.true(
    families.every((f) => f.metrics.every((m) => m.labels?.host === hostname())),
    'every series has the host label',
  );
  t.is(value('tunnelward_tunnel_up', { instance_name: 'mt_one' }), 1);
  t.is(value('tunnelward_tunnel_up', { instance_name: 'mt_two' }), 0);
  t.is(value('tunnelward_tunnel_connected', { instance_name: 'mt_one' }), 1);
  t.is(value('tunnelward_tunnel_connected', { instance_name: 'mt_two' }), 0);
  t.deepEqual(
    family('tunnelward_tunnel_health')
      .metrics.map((m) => `${m.labels!.instance_name} ${m.labels!.health} ${m.labels!.reason} ${m.value}`)
      .sort(),
    ['mt_one up none 1', 'mt_two stopped none 1'],
  );
  t.is(value('tunnelward_tunnel_restarts_total', { instance_name: 'mt_one', cause: 'exit' }), 0);
  t.is(value('tunnelward_tunnel_restarts_total', { instance_name: 'mt_one', cause: 'health' }), 0);
  t.true(value('tunnelward_tunnel_memory_bytes', { instance_name: 'mt_one' }) > 0, "the running tunnel's RSS");
  t.deepEqual(
    family('tunnelward_tunnel_memory_bytes').metrics.map((m) => m.labels!.instance_name),
    ['mt_one'],
    'only running tunnels have a memory series',
  );
  t.is(family('tunnelward_tunnel_memory_cap_bytes').metrics.length, 0, 'no cap, no series');
  t.is(family('tunnelward_proxy_down').metrics.length, 0, 'no proxy down');

  // A cap of its own is shown; a proxy that frpc cannot start in a tunnel that carries is a proxy_down series
  // (added while the tunnel is stopped: a change that frpc refuses while it runs is put back).
  t.true((await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token: root })).body.success);
  const policy = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'systemConfig', modifiedData: { policy: { memoryMaxMB: 300 } } },
    { token: root },
  );
  t.true(policy.body.success, policy.body.message);
  const broken = await daemon.post(
    '/tunnelAct/proxyMgr/create',
    {
      instanceID: id,
      proxyInfo: {
        name: 'web',
        type: 'tcp',
        localIP: '127.0.0.1',
        localPort: '80',
        remotePort: '6401',
      },
    },
    { token: root },
  );
  t.true(broken.body.success, broken.body.message);
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root })).body.success);
  const scraped = async () =>
    parsePrometheusTextFormat(
      await (
        await fetch(`${daemon.url}/metrics`, { headers: { 'X-Token': root, 'X-Timestamp': String(Date.now()) } })
      ).text(),
    ) as Family[];
  const later = await until(
    scraped,
    (fs) => fs.some((f) => f.name === 'tunnelward_proxy_down' && f.metrics.length > 0),
    {
      what: 'a proxy_down series for the proxy frpc cannot start',
    },
  );
  const of = (name: string) => later.find((f) => f.name === name)!.metrics;
  t.deepEqual(
    of('tunnelward_proxy_down').map((m) => ({ ...m.labels, value: m.value })),
    [{ host: hostname(), instance_name: 'mt_one', proxy: 'web', reason: 'start_error', value: '1' }],
  );
  t.like(of('tunnelward_tunnel_health').find((m) => m.labels!.instance_name === 'mt_one')!.labels, {
    health: 'degraded',
    reason: 'proxies_down',
  });
  t.is(of('tunnelward_tunnel_up').find((m) => m.labels!.instance_name === 'mt_one')!.value, '1', 'degraded carries');
  t.is(Number(of('tunnelward_tunnel_memory_cap_bytes')[0]!.value), 300 * 1024 * 1024);

  // A path that is no route is counted under one label, whatever it was.
  await daemon.get('/no/such/thing?token=secret');
  const again = parsePrometheusTextFormat(
    await (
      await fetch(`${daemon.url}/metrics`, { headers: { 'X-Token': root, 'X-Timestamp': String(Date.now()) } })
    ).text(),
  ) as Family[];
  const requests = again.find((f) => f.name === 'tunnelward_http_requests_total')!;
  t.true(requests.metrics.some((m) => m.labels?.route === 'unmatched' && m.labels.status === '404'));
  t.false(requests.metrics.some((m) => m.labels?.route?.includes('no/such')));

  const visitor = await daemon.userWithToken(root, 'mt_visitor', 'visitor');
  t.is((await daemon.get('/metrics', { token: visitor.token })).status, 403);
  t.is((await daemon.get('/metrics')).status, 401);
});
