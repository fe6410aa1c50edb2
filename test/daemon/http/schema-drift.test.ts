// The published document and the server agree: what the server refuses, the document's request schemas refuse;
// what it answers, the document's response schemas accept (the request helper checks every answer of the suite
// against the document; this file shows that check is not empty, on the drifts found by measuring).
import test from 'ava';
import { dispose, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, tcpProxy } from '../../helpers/instances.js';
import { requestDrift, responseDrift } from '../../helpers/response-schema.js';
import { openApiDocument } from '../../../src/http/openapi.js';

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

// ---- Requests derived from the document, field by field ----

const doc = openApiDocument() as Record<string, any>;

/** A schema with its `$ref` followed (inside the document). */
function resolved(schema: any): any {
  let at = schema;
  while (at && typeof at.$ref === 'string') {
    at = (at.$ref as string)
      .slice(2)
      .split('/')
      .reduce((node: any, part) => node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
  }
  return at;
}

/** The values a schema names itself (its enums and consts, in its alternatives too). */
function namedValues(schema: any, depth = 0): unknown[] {
  const node = resolved(schema);
  if (!node || typeof node !== 'object' || depth > 6) return [];
  return [
    ...(Array.isArray(node.enum) ? node.enum : []),
    ...('const' in node ? [node.const] : []),
    ...['anyOf', 'oneOf', 'allOf'].flatMap((key) =>
      Array.isArray(node[key]) ? node[key].flatMap((part: unknown) => namedValues(part, depth + 1)) : [],
    ),
  ];
}

/** The schema of a field of an operation's request body, by its path. */
function fieldSchema(path: string, field: string[]): any {
  let node = resolved(doc.paths[path].post.requestBody.content['application/json'].schema);
  for (const key of field) {
    const options = [node, ...['anyOf', 'oneOf', 'allOf'].flatMap((k) => node?.[k] ?? [])].map(resolved);
    node = resolved(options.find((option) => option?.properties?.[key])?.properties[key]);
  }
  return node;
}

/** Texts as people and generators write them: hosts, addresses, templates, control characters, paths. */
const TEXTS = [
  '',
  'a',
  '0',
  'frps.example.com',
  '*.example.com',
  '10.0.0.1',
  '::1',
  'fe80::1%eth0',
  '300.1.1.1',
  '1.2.3',
  'a..b',
  '-a',
  'a_b',
  'x'.repeat(64),
  `${'a.'.repeat(127)}a`,
  'a b',
  'a\nb',
  'a\u0000',
  '{{',
  'a}}',
  '{{ .X }}',
  '{{ .Envs.FRP_SERVER }}',
  'h{{ .Envs.HOST }}.example.com',
  '/etc/frp',
  '1MB',
  '********',
  'token',
  'TOKEN',
];
const LISTS: unknown[] = [
  [],
  ['a'],
  'a',
  'a,b',
  ['/etc/frp-extra.toml'],
  ['frp-extra.toml'],
  ['HeartBeats'],
  ['NewWorkConns', 'HeartBeats'],
  ['Nope'],
  ['a\nb'],
  ['{{ .Envs.FILE }}'],
  null,
];
const GATES: unknown[] = [{}, { VirtualNet: true }, { VirtualNet: 'false' }, { Nope: true }, { virtualnet: true }];

interface Derived {
  path: string;
  /** A request the server takes, into which each value goes. */
  body: Record<string, unknown>;
  /** Where in the body. */
  field: string[];
  /** Values beside those the field's schema names. */
  probes: unknown[];
  /** The probes alone: the values the schema names are judged against what the request changes, not by it. */
  probesOnly?: true;
}

const put = (body: Record<string, unknown>, field: string[], value: unknown): Record<string, unknown> => {
  const copy = structuredClone(body);
  let at: Record<string, unknown> = copy;
  for (const key of field.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
  at[field.at(-1)!] = value;
  return copy;
};

test('requests derived from the document: what it takes the server takes, what it refuses the server refuses', async (t) => {
  t.timeout(300_000);
  const { id } = await createInstance(daemon, root, 'derived');
  let created = 0;
  const create = (extra: Record<string, unknown> = {}) => ({
    instanceInfo: { name: 'new', serverAddr: 'frps.example.com', serverPort: '7000', auth_method: 'token' },
    ...extra,
  });
  const modify = { instanceID: id, type: 'configFile', modifiedData: {}, dryRun: true };
  const proxy = (info: Record<string, unknown>) => ({ instanceID: id, dryRun: true, proxyInfo: info });
  const tcp = { name: 'derived_tcp', type: 'tcp', localPort: 22, remotePort: 7301 };
  const http = { name: 'derived_http', type: 'http', localPort: 80, subdomain: 'derived' };
  const oidc = { clientID: 'tunnelward', tokenEndpointURL: 'https://id.example.com/token' };
  /** A key of a new proxy (dry run). */
  const proxyKey = (info: Record<string, unknown>, field: string[], probes: unknown[]): Derived => ({
    path: '/tunnelAct/proxyMgr/create',
    body: proxy(info),
    field: ['proxyInfo', ...field],
    probes,
  });
  /** A top-level setting of the instance's file, changed (dry run). */
  const setting = (field: string[], probes: unknown[]): Derived => ({
    path: '/tunnelAct/instanceMgr/modify',
    body: modify,
    field: ['modifiedData', ...field],
    probes,
  });
  const cases: Derived[] = [
    { path: '/tunnelAct/instanceMgr/create', body: create(), field: ['instanceInfo', 'serverAddr'], probes: TEXTS },
    {
      path: '/tunnelAct/instanceMgr/create',
      body: create(),
      field: ['instanceInfo', 'serverPort'],
      probes: ['7000', '07000', '0', '65536', 'a', ''],
    },
    {
      path: '/tunnelAct/instanceMgr/create',
      // With what oidc needs beside it (a rule between settings, said in words).
      body: create({ additionalProperties: { auth: { oidc } } }),
      field: ['instanceInfo', 'auth_method'],
      probes: [...TEXTS, 'OIDC', 'oidc '],
    },
    {
      path: '/tunnelAct/instanceMgr/create',
      body: create(),
      field: ['additionalProperties'],
      probes: [
        {},
        { serverAddr: 'frps.example.com' },
        { server_addr: 'frps.example.com' },
        { serverPort: 7000 },
        { auth: { method: 'token' } },
        { auth: { token: 'secret' } },
        { user: 'a\nb' },
        { start: 'ssh' },
        { start: ['ssh'] },
        { includes: '/etc/frp-extra.toml' },
        { includes: ['/etc/frp-extra.toml'] },
        { includes: ['frp-extra.toml'] },
        { featureGates: { VirtualNet: true } },
        { featureGates: { Nope: true } },
        { virtualNet: { address: '100.86.0.1/24' }, featureGates: { VirtualNet: true } },
        { webServer: { port: 7400 } },
      ],
    },
    setting(['serverAddr'], [...TEXTS, null]),
    setting(['serverPort'], [7000, '7000', null]),
    setting(['user'], TEXTS),
    setting(['transport', 'connectServerLocalIP'], TEXTS),
    setting(['start'], LISTS),
    setting(['includes'], LISTS),
    setting(['auth', 'additionalScopes'], LISTS),
    setting(['featureGates'], GATES),
    setting(['metadatas'], [{ owner: 'ops' }, { owner: 'a\nb' }, { owner: '{{ .Envs.OWNER }}' }, { 'bad key': 'x' }]),
    {
      path: '/tunnelAct/instanceMgr/modify',
      body: { instanceID: id, type: 'environment', modifiedData: {}, dryRun: true },
      field: ['modifiedData'],
      probes: [
        {},
        { FRP_TOKEN: 'x' },
        { frp_token: 'x' },
        { FRP_TOKEN: null },
        { '1X': 'x' },
        { 'A-B': 'x' },
        { ['X'.repeat(129)]: 'x' },
        { PATH: '/bin' },
        { LD_PRELOAD: '/x.so' },
        { TMPDIR: '/tmp' },
        { FRP_TOKEN: '********' },
        { FRP_TOKEN: 'a\u0000b' },
        { FRP_TOKEN: 'a\nb' },
      ],
    },
    proxyKey(tcp, ['localIP'], TEXTS),
    proxyKey(tcp, ['transport', 'bandwidthLimit'], ['1MB', '1.5KB', '1 MB', '1GB', '', '{{ .Envs.LIMIT }}']),
    proxyKey(tcp, ['remotePort'], [7302, '', null]),
    proxyKey(tcp, ['localPort'], [22, '', null]),
    proxyKey(
      { ...tcp, localPort: '' },
      ['plugin'],
      [
        '',
        { type: 'socks5' },
        { type: '' },
        { type: 'static_file' },
        { type: 'static_file', localPath: '/srv' },
        { type: 'http_proxy', httpPassword: '********' },
        { type: 'http_proxy', httpPassword: 'secret' },
      ],
    ),
    proxyKey(
      tcp,
      ['healthCheck'],
      [{ type: 'tcp' }, { type: 'http' }, { type: 'http', path: '/health' }, { type: 'http', path: '' }],
    ),
    proxyKey(
      { name: 'derived_stcp', type: 'stcp', localPort: 22 },
      ['secretKey'],
      ['s3cret', '********', '{{ .Envs.SK }}'],
    ),
    proxyKey(
      http,
      ['customDomains'],
      [...LISTS, ...TEXTS, ['a.example.com', '*.example.com'], ' a.example.com , b.example.com ', ' , '],
    ),
    proxyKey({ ...http, subdomain: '' }, ['subdomain'], TEXTS),
    {
      path: '/tunnelAct/proxyMgr/modify',
      body: proxy({ name: 'ssh' }),
      field: ['proxyInfo', 'type'],
      // http, https and tcpmux need a domain this tcp proxy does not have: the proxy's rule, not the request's.
      probes: [null, '', [], 'tcp', 'udp'],
      probesOnly: true,
    },
    {
      path: '/tunnelAct/proxyMgr/modify',
      body: proxy({ name: 'ssh' }),
      field: ['proxyInfo', 'localIP'],
      probes: TEXTS,
    },
  ];
  // The proxy the modifications name.
  t.true(
    (
      await daemon.post(
        '/tunnelAct/proxyMgr/create',
        { instanceID: id, proxyInfo: tcpProxy('ssh', 7300) },
        { token: root },
      )
    ).body.success,
  );

  const disagreements: string[] = [];
  for (const c of cases) {
    const values = [...(c.probesOnly ? [] : namedValues(fieldSchema(c.path, c.field))), ...c.probes];
    const seen = { taken: 0, refused: 0 };
    for (const value of values) {
      let body = put(c.body, c.field, value);
      if (c.path.endsWith('/instanceMgr/create')) body = put(body, ['instanceInfo', 'name'], `derived_${++created}`);
      const documented = requestDrift('POST', c.path, body) === undefined;
      const res = await daemon.post(c.path, body, { token: root });
      seen[documented ? 'taken' : 'refused']++;
      if (documented === (res.status !== 400)) continue;
      disagreements.push(
        `${c.path} ${c.field.join('.')} = ${JSON.stringify(value).slice(0, 60)}: the document ${
          documented ? 'takes' : 'refuses'
        } it, the server answers ${res.status} ${String(res.body.message).slice(0, 160)}`,
      );
    }
    // Each field is tried on both sides of its rule.
    if (seen.taken === 0 || seen.refused === 0)
      disagreements.push(`${c.path} ${c.field.join('.')}: one-sided, ${JSON.stringify(seen)}`);
  }
  t.deepEqual(disagreements, []);
});
