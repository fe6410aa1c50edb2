// The published document and the server agree: what the server refuses, the document's request schemas refuse;
// what it answers, the document's response schemas accept (the request helper checks every answer of the suite
// against the document; this file shows that check is not empty, on the drifts found by measuring).
import test from 'ava';
import { dispose, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, tcpProxy } from '../../helpers/instances.js';
import { requestDrift, responseDrift } from '../../helpers/response-schema.js';

let daemon: Daemon;
let root: string;
test.before(async () => {
  ({ daemon, root } = await startWithRoot({ settingsToml: instanceSettings() }));
});
test.after.always(() => dispose(daemon));

test("an admin's proxy list and a guest's each match exactly one documented shape; a drift would be caught", async (t) => {
  const { id } = await createInstance(daemon, root, 'drift_px');
  const made = await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: tcpProxy('ssh', 7201) },
    { token: root },
  );
  t.true(made.body.success, made.body.message);
  const listed = await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token: root });
  const proxy = listed.body.data.proxies[0];
  t.truthy(proxy.localPort, 'the admin view has the details');
  t.is(responseDrift('GET', '/tunnelAct/proxyMgr/list', 200, listed.body), undefined);
  // The guest view is exactly its fields: one with a detail too many is not a guest view, and must not pass as one.
  const guest = {
    name: 'ssh',
    type: 'tcp',
    enabled: true,
    health: { state: 'stopped', reason: null, since: null },
    status: null,
    err: '',
    statusSince: null,
  };
  const body = (proxies: object[]) => ({ ...listed.body, data: { ...listed.body.data, proxies } });
  t.is(responseDrift('GET', '/tunnelAct/proxyMgr/list', 200, body([guest])), undefined);
  t.regex(
    responseDrift('GET', '/tunnelAct/proxyMgr/list', 200, body([{ ...guest, localPort: '22' }])) ?? '',
    /does not match/,
  );
  t.regex(responseDrift('GET', '/tunnelAct/proxyMgr/list', 418, listed.body) ?? '', /418 is not documented/);
});

test('what the server refuses, the document refuses; what it takes, the document takes', async (t) => {
  const { id } = await createInstance(daemon, root, 'drift_req');
  const cases: Array<{ path: string; body: Record<string, unknown>; server: number }> = [
    { path: '/settings/set', body: { ListenPort: '0' }, server: 400 },
    { path: '/settings/set', body: { ListenPort: '99999' }, server: 400 },
    { path: '/settings/set', body: { ListenPort: '08080' }, server: 200 },
    { path: '/settings/set', body: { 'Webhook.URL': 'ftp://x' }, server: 400 },
    { path: '/settings/set', body: { 'Webhook.URL': 'https://hooks.example.com/x' }, server: 200 },
    {
      path: '/settings/set',
      body: { TrustedProxies: Array.from({ length: 300 }, (_, i) => `10.0.${i >> 8}.${i & 255}`) },
      server: 400,
    },
    { path: '/tunnelAct/instanceMgr/stop', body: { instanceIDs: [] }, server: 400 },
    { path: '/tunnelAct/instanceMgr/stop', body: { instanceID: '0' }, server: 400 },
    { path: '/tunnelAct/instanceMgr/stop', body: { instanceID: `00${id}` }, server: 200 },
    {
      path: '/tunnelAct/proxyMgr/create',
      body: { instanceID: id, proxyInfo: { ...tcpProxy('str_bool', 7202), enabled: 'false' } },
      server: 200,
    },
    // The proxy body is documented per type and plugin: a blank key of another type is "not given" (a form may send
    // every key), an unknown key is refused whatever its value (a blank one was taken before).
    {
      path: '/tunnelAct/proxyMgr/create',
      body: {
        instanceID: id,
        proxyInfo: { ...tcpProxy('blank_other', 7203), customDomains: '', plugin: { crtPath: '' } },
      },
      server: 200,
    },
    {
      path: '/tunnelAct/proxyMgr/create',
      body: { instanceID: id, proxyInfo: { ...tcpProxy('blank_unknown', 7204), bogus: '' } },
      server: 400,
    },
    {
      path: '/tunnelAct/proxyMgr/create',
      body: { instanceID: id, proxyInfo: { ...tcpProxy('http_key', 7205), customDomains: ['a.example.com'] } },
      server: 400,
    },
    {
      path: '/tunnelAct/proxyMgr/create',
      body: {
        instanceID: id,
        proxyInfo: { ...tcpProxy('other_plugin', 7206), plugin: { type: 'socks5', localPath: '/srv' } },
      },
      server: 400,
    },
    // frpc's top-level settings are documented from their key table too (before: any key, any value).
    {
      path: '/tunnelAct/instanceMgr/modify',
      body: { instanceID: id, type: 'configFile', modifiedData: { bogus: 1 } },
      server: 400,
    },
    {
      path: '/tunnelAct/instanceMgr/modify',
      body: { instanceID: id, type: 'configFile', modifiedData: { transport: { tcpMux: 'maybe' } } },
      server: 400,
    },
    {
      path: '/tunnelAct/instanceMgr/modify',
      body: { instanceID: id, type: 'configFile', modifiedData: { metadatas: { owner: null } } },
      server: 400,
    },
    {
      path: '/tunnelAct/instanceMgr/modify',
      body: { instanceID: id, type: 'configFile', modifiedData: { metadatas: { owner: 'ops' }, user: null } },
      server: 200,
    },
    // A conformance run found null taken as "left out" here, where the document says a string.
    {
      path: '/tunnelAct/instanceMgr/modify',
      body: { instanceID: id, type: 'systemConfig', modifiedData: { runUser: null, bootAtStart: false } },
      server: 400,
    },
    {
      path: '/tunnelAct/instanceMgr/modify',
      body: { instanceID: id, type: 'systemConfig', modifiedData: { runUser: 'root', bootAtStart: false } },
      server: 200,
    },
    { path: '/tunnelAct/instanceMgr/modify', body: { instanceID: id, type: 'other', modifiedData: {} }, server: 400 },
    {
      path: '/tunnelAct/instanceMgr/modify',
      body: { instanceID: id, type: 'labels', modifiedData: { 'bad key!': 'x' } },
      server: 400,
    },
  ];
  for (const c of cases) {
    const res = await daemon.post(c.path, c.body, { token: root });
    const label = `${c.path} ${JSON.stringify(c.body).slice(0, 80)}`;
    t.is(res.status, c.server, `${label}: ${res.body.message}`);
    const drift = requestDrift('POST', c.path, c.body);
    if (c.server === 400) t.truthy(drift, `${label}: the document takes what the server refuses`);
    else t.is(drift, undefined, `${label}: the document refuses what the server takes`);
  }
  // Back to what the daemon runs with: the port applies at the next start only, the URL now.
  await daemon.post('/settings/set', { ListenPort: '7500', 'Webhook.URL': '' }, { token: root });
});
