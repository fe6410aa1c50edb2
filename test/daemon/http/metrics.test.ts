// GET /metrics: the Prometheus text format, read by a Prometheus text parser, for admins.
import test from 'ava';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { disposeWithTunnels, startWithRoot } from '../../helpers/daemon.js';
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
  const { id } = await createInstance(daemon, root, 'mt_one', { metadatas: { 'fixture.logBurst': '5' } });
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
