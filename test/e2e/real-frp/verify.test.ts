// The real frpc (v0.71.0, built by test/setup/build-frp.sh) judges every config file tunnelward writes: each file
// the API makes (create, proxy edits, config edits, rename, import) must pass `frpc verify`; and where tunnelward
// says it checks a rule, a file that breaks the rule is one the real frpc refuses too. No tunnel is started.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { parse, stringify } from 'smol-toml';
import { stringify as stringifyYaml } from 'yaml';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { PROXY_EXAMPLES } from '../../config/proxy-examples.js';
import { disposeWithTunnels, startWithRoot, type Daemon, type Response } from '../../helpers/daemon.js';
import { frpVersion, REAL_FRPC } from '../../helpers/frp.js';
import { createInstance, instanceSettings } from '../../helpers/instances.js';

type Tree = Record<string, any>;

interface Counted {
  /** How many files the real frpc verified in this test. */
  verified?: number;
}
const test = anyTest as TestFn<Counted>;

const CONFIGS = join(PACKAGE_ROOT, 'test', 'fixtures', 'configs');

let daemon: Daemon;
let root: string;
/** Files written by the test itself: the originals it imports and the broken files frpc must refuse. */
let scratch: string;

test.before(async () => {
  await frpVersion(); // says at once how to build frpc when it is missing
  scratch = await mkdtemp(join(tmpdir(), 'tunnelward-verify-'));
  ({ daemon, root } = await startWithRoot({ settingsToml: instanceSettings() }));
});
test.after.always(async () => {
  await disposeWithTunnels(daemon, root);
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** What `frpc verify -c <path>` says, run with the environment a tunnel would have (its `{{ .Envs.NAME }}`). */
function realVerify(path: string, env: Record<string, string> = {}): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(REAL_FRPC, ['verify', '-c', path], { env: { ...process.env, ...env } }, (err, stdout, stderr) =>
      resolve({ ok: err === null && stdout.includes('syntax is ok'), output: `${stdout}${stderr}`.trim() }),
    );
  });
}

/** Asserts the real frpc accepts the file as it is now; counts it. */
async function accepts(t: ExecutionContext<Counted>, path: string, what: string, env: Record<string, string> = {}) {
  const { ok, output } = await realVerify(path, env);
  t.context.verified = (t.context.verified ?? 0) + 1;
  t.true(
    ok,
    ok ? what : `${what}: the real frpc refused the file tunnelward wrote: ${output}\n${await readFile(path, 'utf8')}`,
  );
}

let scratchFiles = 0;
/** Writes a file of the test's own (extension `ext` tells frpc its format) and returns its path. */
async function scratchFile(text: string, ext = '.toml'): Promise<string> {
  const path = join(scratch, `file-${++scratchFiles}${ext}`);
  await writeFile(path, text);
  return path;
}

/** Asserts the real frpc refuses this text, saying `why`. */
async function frpcRefuses(t: ExecutionContext, text: string, why: RegExp, what: string, ext = '.toml') {
  const { ok, output } = await realVerify(await scratchFile(text, ext));
  t.false(ok, `${what}: the real frpc accepted it`);
  t.regex(output, why, what);
}

async function call(path: string, body: unknown, what: string): Promise<any> {
  const res = await daemon.post(path, body, { token: root });
  if (!res.body.success) throw new Error(`${what}: ${res.status} ${res.body.message}`);
  return res.body.data;
}

const tomlOf = async (path: string): Promise<Tree> => parse(await readFile(path, 'utf8')) as Tree;
const setEnvironment = (id: string, modifiedData: Tree) =>
  call('/tunnelAct/instanceMgr/modify', { instanceID: id, type: 'environment', modifiedData }, 'environment');
const modifyConfig = (id: string, modifiedData: Tree) =>
  daemon.post('/tunnelAct/instanceMgr/modify', { instanceID: id, type: 'configFile', modifiedData }, { token: root });
const createProxy = (id: string, proxyInfo: Tree) =>
  daemon.post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo }, { token: root });
const importConfig = (name: string, content: string, format?: string) =>
  daemon.post('/tunnelAct/instanceMgr/import', { name, content, format }, { token: root });

const logCount = (t: ExecutionContext<Counted>) => t.log(`${t.context.verified ?? 0} files verified by the real frpc`);

// ---- files tunnelward writes ----

/** [instance name, auth_method, additionalProperties]: every top-level setting the API takes, in each spelling. */
const CREATED: Array<[string, string, Tree]> = [
  [
    'v_token_everything',
    'token',
    {
      user: 'edge01',
      clientID: 'edge01-berlin',
      auth: { token: 'created-token', additionalScopes: ['HeartBeats', 'NewWorkConns'] },
      loginFailExit: true,
      natHoleStunServer: 'stun.example.com:3478',
      dnsServer: '127.0.0.53',
      udpPacketSize: 1400,
      start: ['ssh', 'web'],
      metadatas: { site: 'berlin', owner: 'ops' },
      log: { to: 'console', level: 'debug', maxDays: 5, disablePrintColor: true },
      transport: {
        protocol: 'tcp',
        wireProtocol: 'v2',
        dialServerTimeout: 5,
        dialServerKeepalive: 60,
        connectServerLocalIP: '127.0.0.1',
        proxyURL: 'http://proxyuser:proxy-password@127.0.0.1:3128',
        poolCount: 3,
        tcpMux: false,
        tcpMuxKeepaliveInterval: 20,
        heartbeatInterval: 20,
        heartbeatTimeout: 60,
        tls: {
          enable: true,
          disableCustomTLSFirstByte: false,
          certFile: '/etc/frp/client.crt',
          keyFile: '/etc/frp/client.key',
          trustedCaFile: '/etc/frp/ca.crt',
          serverName: 'frp.example.com',
        },
      },
      featureGates: { VirtualNet: true },
      virtualNet: { address: '100.86.0.1/24' },
    },
  ],
  [
    'v_quic_dotted',
    'token',
    {
      'auth.token': 'quic-token',
      'transport.protocol': 'quic',
      'transport.quic.keepalivePeriod': 10,
      'transport.quic.maxIdleTimeout': 30,
      'transport.quic.maxIncomingStreams': 100000,
      'log.level': 'trace',
    },
  ],
  [
    'v_kcp_older_names',
    'token',
    {
      token: 'older-token',
      protocol: 'kcp',
      pool_count: '2',
      tcp_mux: 'false',
      heartbeat_interval: '15',
      heartbeat_timeout: '45',
      log_level: 'warn',
      log_max_days: '2',
      disable_log_color: 'true',
      login_fail_exit: 'false',
      tls_enable: 'true',
      tls_server_name: 'frp.example.com',
      dial_server_timeout: '3',
      udp_packet_size: '1300',
      nat_hole_stun_server: 'stun.example.com:3478',
      dns_server: '127.0.0.53',
    },
  ],
  ['v_websocket', 'token', { 'auth.token': 'ws-token', 'transport.protocol': 'websocket', 'transport.tcpMux': true }],
  ['v_wss', 'token', { 'transport.protocol': 'wss', 'transport.tls.enable': true }],
  ['v_token_none', 'token', {}],
  [
    'v_oidc',
    'oidc',
    {
      auth: {
        oidc: {
          clientID: 'frpc-edge',
          clientSecret: 'oidc-client-secret',
          audience: 'frps',
          scope: 'openid',
          tokenEndpointURL: 'https://sso.example.com/oauth2/token',
          additionalEndpointParams: { resource: 'frp' },
          trustedCaFile: '/etc/frp/sso-ca.crt',
          insecureSkipVerify: false,
          proxyURL: 'http://127.0.0.1:3128',
        },
      },
    },
  ],
  [
    'v_oidc_older_names',
    'oidc',
    {
      oidc_client_id: 'frpc-edge',
      oidc_client_secret: 'oidc-client-secret',
      oidc_audience: 'frps',
      oidc_scope: 'openid',
      oidc_token_endpoint_url: 'http://127.0.0.1:8080/token',
    },
  ],
];

test('a created instance, with every setting the API takes, under each auth method', async (t) => {
  for (const [name, authMethod, additional] of CREATED) {
    const instanceInfo = { name, serverAddr: '127.0.0.1', serverPort: '7000', auth_method: authMethod };
    const { configPath } = await call(
      '/tunnelAct/instanceMgr/create',
      { instanceInfo, additionalProperties: additional },
      `create ${name}`,
    );
    if (name === 'v_token_everything') t.like(await tomlOf(configPath), additional, 'the file holds every setting');
    await accepts(t, configPath, name);
  }
  // Secrets from the instance's own environment, as the tunnel reads them.
  const env = { FRP_TOKEN: 'token-from-env', OIDC_SECRET: 'oidc-from-env' };
  const fromEnv: Array<[string, string, Tree]> = [
    ['v_env_token', 'token', { 'auth.token': '{{ .Envs.FRP_TOKEN }}' }],
    [
      'v_env_oidc',
      'oidc',
      {
        'auth.oidc.clientID': 'frpc-edge',
        'auth.oidc.clientSecret': '{{ .Envs.OIDC_SECRET }}',
        'auth.oidc.tokenEndpointURL': 'https://sso.example.com/oauth2/token',
      },
    ],
  ];
  for (const [name, authMethod, additional] of fromEnv) {
    const instanceInfo = { name, serverAddr: '127.0.0.1', serverPort: '7000', auth_method: authMethod };
    const created = await call(
      '/tunnelAct/instanceMgr/create',
      { instanceInfo, additionalProperties: additional },
      name,
    );
    await setEnvironment(String(created.instanceID), env);
    t.regex(await readFile(created.configPath, 'utf8'), /\{\{ \.Envs\.(FRP_TOKEN|OIDC_SECRET) \}\}/);
    await accepts(t, created.configPath, `${name}: a secret from the environment`, env);
  }
  logCount(t);
});

test('a proxy of every type and plugin, through create, switch on and off, modify, rename and delete', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'v_proxies', { 'auth.token': 'proxies-token' });
  const post = (path: string, body: Tree, what: string) => call(path, { instanceID: id, ...body }, what);
  for (const example of PROXY_EXAMPLES) {
    await post('/tunnelAct/proxyMgr/create', { proxyInfo: example.input }, `create ${example.input.name}`);
    await accepts(t, configPath, `after creating ${example.input.name}`);
  }
  t.is((await tomlOf(configPath)).proxies.length, PROXY_EXAMPLES.length);

  // frpc validates only the proxies that are enabled (it filters the others out first), so each disabled one is
  // verified switched on too; and an enabled one switched off.
  const disabled = PROXY_EXAMPLES.filter((example) => example.file.enabled === false).map((e) => e.input.name);
  t.true(disabled.length > 0);
  for (const [proxyName, enabled] of [
    ...disabled.map((name) => [name, true] as const),
    ['ex_http', false] as const,
    ...disabled.map((name) => [name, false] as const),
    ['ex_http', true] as const,
  ]) {
    await post('/tunnelAct/proxyMgr/setStatus', { proxyName, enabled }, `setStatus ${proxyName}`);
    await accepts(t, configPath, `after setStatus ${proxyName} ${enabled}`);
  }

  // The older snake_case names, and secrets read from the instance's environment.
  await post(
    '/tunnelAct/proxyMgr/create',
    {
      proxyInfo: {
        name: 'older_names',
        type: 'tcp',
        local_ip: '127.0.0.1',
        local_port: '2200',
        remote_port: '6200',
        use_encryption: 'true',
        use_compression: true,
        bandwidth_limit: '512KB',
        bandwidth_limit_mode: 'client',
        proxy_protocol_version: 'v1',
        group: 'older',
        group_key: 'older-group-key',
        health_check_type: 'tcp',
        health_check_timeout_s: '3',
        health_check_max_failed: '2',
        health_check_interval_s: '5',
      },
    },
    'create older_names',
  );
  await accepts(t, configPath, 'after creating a proxy with the older names');
  const env = { STCP_SECRET: 'stcp-from-env', SOCKS_PASSWORD: 'socks-from-env', GROUP_KEY: 'group-from-env' };
  await setEnvironment(id, env);
  for (const proxyInfo of [
    { name: 'env_stcp', type: 'stcp', localPort: '5433', secretKey: '{{ .Envs.STCP_SECRET }}', allowUsers: '*' },
    {
      name: 'env_socks',
      type: 'tcp',
      remotePort: '6201',
      'loadBalancer.group': 'socks',
      'loadBalancer.groupKey': '{{ .Envs.GROUP_KEY }}',
      plugin: { type: 'socks5', username: 'u', password: '{{ .Envs.SOCKS_PASSWORD }}' },
    },
  ]) {
    await post('/tunnelAct/proxyMgr/create', { proxyInfo }, `create ${proxyInfo.name}`);
    await accepts(t, configPath, `after creating ${proxyInfo.name}`, env);
  }

  for (const example of PROXY_EXAMPLES) {
    const proxyInfo = { name: example.input.name, ...example.modify };
    await post('/tunnelAct/proxyMgr/modify', { proxyInfo }, `modify ${example.input.name}`);
    await accepts(t, configPath, `after modifying ${example.input.name}`, env);
  }
  // Edits that take keys away: another type, another plugin, no plugin, keys and tables removed by null.
  const reshapes: Tree[] = [
    { name: 'ex_udp', type: 'tcp' },
    { name: 'ex_http', type: 'https' },
    { name: 'ex_tcpmux', type: 'http', subdomain: 'mux' },
    { name: 'postgres', type: 'xtcp' },
    { name: 'ex_sudp', type: 'stcp' },
    { name: 'ex_socks5', plugin: { type: 'http_proxy', httpUser: 'h' } },
    { name: 'ex_uds', plugin: null, localPort: '2375' },
    { name: 'ex_static_file', 'plugin.type': null, localPort: '8088' },
    { name: 'ex_https2http', plugin: { type: 'https2https', localAddr: '127.0.0.1:8443' } },
    { name: 'ex_tls2raw', type: 'tcp', remotePort: '6202' },
    {
      name: 'ex_tcp',
      'transport.bandwidthLimit': null,
      healthCheck: null,
      'loadBalancer.groupKey': null,
      'metadatas.owner': null,
      annotations: null,
    },
  ];
  for (const proxyInfo of reshapes) {
    await post('/tunnelAct/proxyMgr/modify', { proxyInfo }, `modify ${proxyInfo.name}: ${JSON.stringify(proxyInfo)}`);
    await accepts(t, configPath, `after ${JSON.stringify(proxyInfo)}`, env);
  }

  // Renames: oldName and newName at the top level, and inside proxyInfo.
  await post('/tunnelAct/proxyMgr/modify', { oldName: 'ex_tcp', newName: 'ex_tcp_2', proxyInfo: {} }, 'rename');
  await accepts(t, configPath, 'after renaming ex_tcp', env);
  await post(
    '/tunnelAct/proxyMgr/modify',
    { proxyInfo: { oldName: 'postgres', newName: 'pg', localPort: '5434' } },
    'rename inside proxyInfo',
  );
  await accepts(t, configPath, 'after renaming postgres', env);
  t.is((await tomlOf(configPath)).proxies.filter((p: Tree) => ['ex_tcp_2', 'pg'].includes(p.name)).length, 2);

  for (const { name } of (await tomlOf(configPath)).proxies as Tree[]) {
    await post('/tunnelAct/proxyMgr/delete', { proxyName: name }, `delete ${name}`);
    await accepts(t, configPath, `after deleting ${name}`, env);
  }
  t.deepEqual((await tomlOf(configPath)).proxies ?? [], []);
  logCount(t);
});

test('the file after each configFile modification: set keys, the older names, null removes', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'v_modify', { 'auth.token': 'modify-token' });
  const confd = join(scratch, 'confd');
  await mkdir(confd);
  await call(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: { name: 'ssh', type: 'tcp', localPort: '22', remotePort: '6300' } },
    'proxy',
  );
  const patches: Tree[] = [
    { serverAddr: 'frp.example.org', serverPort: '7100', 'auth.token': 'changed-token' },
    { server_addr: '127.0.0.2', server_port: 7200, token: 'older-token', log_level: 'warn', pool_count: '2' },
    { tls_enable: 'false', login_fail_exit: true, protocol: 'websocket', dial_server_keepalive: '-1' },
    { transport: { protocol: 'tcp', tcpMux: false, heartbeatInterval: 10, heartbeatTimeout: 30 } },
    { metadatas: { a: '1', b: '2' } },
    { 'metadatas.c': '3' },
    { 'metadatas.a': null, 'auth.token': null, 'log.level': null, transport: { heartbeatTimeout: null } },
    { start: ['ssh'], user: 'renamed-user', 'transport.tls.enable': true, 'transport.tls.serverName': 'x.example' },
    {
      auth_method: 'oidc',
      'auth.oidc.clientID': 'frpc',
      'auth.oidc.tokenEndpointURL': 'https://sso.example.com/token',
      'auth.oidc.additionalEndpointParams': { resource: 'frp' },
    },
    { 'auth.oidc.additionalEndpointParams.tenant': 'edge', 'auth.oidc.additionalEndpointParams.resource': null },
    {
      'auth.method': 'token',
      'auth.oidc.clientID': null,
      'auth.oidc.tokenEndpointURL': null,
      'auth.oidc.additionalEndpointParams': null,
      start: null,
      metadatas: null,
    },
    { featureGates: { VirtualNet: true }, 'virtualNet.address': '100.86.0.2/24' },
    { 'virtualNet.address': null, 'featureGates.VirtualNet': null, 'log.to': 'console', 'log.maxDays': 1 },
    { includes: [join(confd, '*.toml')] },
    { includes: null },
  ];
  for (const patch of patches) {
    const res = await modifyConfig(id, patch);
    t.true(res.body.success, `${JSON.stringify(patch)}: ${res.body.message}`);
    await accepts(t, configPath, `after modifying ${JSON.stringify(patch)}`);
  }
  t.deepEqual(
    (await tomlOf(configPath)).proxies.map((p: Tree) => p.name),
    ['ssh'],
    'the proxies are untouched',
  );
  logCount(t);
});

test('the file after a systemConfig rename', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'v_before_rename', { 'auth.token': 'rename-token' });
  await call(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: { name: 'web', type: 'http', localPort: '80', subdomain: 'web' } },
    'proxy',
  );
  await accepts(t, configPath, 'before the rename');
  const renamed = await call(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'systemConfig', modifiedData: { name: 'v_after_rename', runUser: 'root' } },
    'rename',
  );
  await accepts(t, renamed.configPath, 'after the rename');
  logCount(t);
});

/** The import format of a sample file, by its extension. */
const FORMAT_OF: Record<string, string> = { '.toml': 'toml', '.ini': 'ini', '.yaml': 'yaml', '.json': 'json' };

test('each import sample: the real frpc reads the original, and the file tunnelward makes of it', async (t) => {
  const samples = (await readdir(CONFIGS)).filter((file) => FORMAT_OF[extname(file)] !== undefined);
  t.deepEqual([...new Set(samples.map((file) => FORMAT_OF[extname(file)]))].sort(), ['ini', 'json', 'toml', 'yaml']);
  for (const [index, file] of samples.entries()) {
    await accepts(t, join(CONFIGS, file), `the sample ${file} itself`);
    const imported = await importConfig(`v_sample_${index}`, await readFile(join(CONFIGS, file), 'utf8'));
    t.true(imported.body.success, `${file}: ${imported.body.message}`);
    t.is(imported.body.data.format, FORMAT_OF[extname(file)], file);
    await accepts(t, imported.body.data.configPath, `the file imported from ${file}`);
  }
  logCount(t);
});

/** Visitors of the three types with every key frpc knows for each, in frpc's current structure. */
const VISITORS: Tree[] = [
  {
    name: 'db_visitor',
    type: 'stcp',
    serverName: 'db',
    serverUser: 'alice',
    secretKey: 'stcp-visitor-secret',
    bindAddr: '127.0.0.1',
    bindPort: 15433,
    transport: { useEncryption: true, useCompression: true },
  },
  {
    name: 'p2p_visitor',
    type: 'xtcp',
    serverName: 'p2p',
    secretKey: 'xtcp-visitor-secret',
    bindAddr: '127.0.0.1',
    bindPort: 16001,
    protocol: 'kcp',
    keepTunnelOpen: true,
    maxRetriesAnHour: 8,
    minRetryInterval: 90,
    fallbackTo: 'db_visitor',
    fallbackTimeoutMs: 1000,
    natTraversal: { disableAssistedAddrs: true },
  },
  {
    name: 'dns_visitor',
    type: 'sudp',
    serverName: 'dns',
    secretKey: 'sudp-visitor-secret',
    bindPort: 10054,
    enabled: true,
  },
  // Only reached through another visitor's redirect: frpc allows a negative bindPort.
  { name: 'inner_visitor', type: 'xtcp', serverName: 'inner', secretKey: 'inner-secret', bindPort: -1 },
];

/** The same visitors in frpc's legacy INI, with its older key names. */
const VISITORS_INI = `[common]
server_addr = 127.0.0.1
server_port = 7003

[db_visitor]
role = visitor
type = stcp
server_name = db
server_user = alice
sk = stcp-visitor-secret
bind_addr = 127.0.0.1
bind_port = 15433
use_encryption = true
use_compression = true

[p2p_visitor]
role = visitor
type = xtcp
server_name = p2p
sk = xtcp-visitor-secret
bind_port = 16001
protocol = kcp
keep_tunnel_open = true
max_retries_an_hour = 8
min_retry_interval = 90
fallback_to = db_visitor
fallback_timeout_ms = 1000

[dns_visitor]
role = visitor
type = sudp
server_name = dns
sk = sudp-visitor-secret
bind_port = 10054
`;

test('every visitor type, imported from each format', async (t) => {
  const settings = (port: number) => ({ serverAddr: '127.0.0.1', serverPort: port, auth: { token: 'visitor-token' } });
  const contents: Array<[string, string]> = [
    ['toml', stringify({ ...settings(7000), visitors: VISITORS })],
    ['yaml', stringifyYaml({ ...settings(7001), visitors: VISITORS })],
    ['json', JSON.stringify({ ...settings(7002), visitors: VISITORS }, null, 2)],
    ['ini', VISITORS_INI],
  ];
  for (const [format, content] of contents) {
    await accepts(t, await scratchFile(content, `.${format}`), `the ${format} original`);
    const imported = await importConfig(`v_visitors_${format}`, content, format);
    t.true(imported.body.success, `${format}: ${imported.body.message}`);
    const { configPath } = imported.body.data;
    const types = ((await tomlOf(configPath)).visitors as Tree[]).map((v) => v.type);
    t.deepEqual([...new Set(types)].sort(), ['stcp', 'sudp', 'xtcp'], format);
    await accepts(t, configPath, `the file imported from ${format} visitors`);
    // Every edit keeps the visitors as they are: the file after one is still accepted.
    const id = String(imported.body.data.instanceID);
    t.true((await modifyConfig(id, { 'log.level': 'info' })).body.success);
    await call(
      '/tunnelAct/proxyMgr/create',
      { instanceID: id, proxyInfo: { name: 'db', type: 'stcp', localPort: '5432', secretKey: 'stcp-visitor-secret' } },
      'proxy beside the visitors',
    );
    await accepts(t, configPath, `the ${format} visitors' file after edits`);
  }
  logCount(t);
});

// ---- what tunnelward refuses, the real frpc refuses too ----

interface Refusal {
  what: string;
  /** The API request that must be refused. */
  api: (id: string) => Promise<Response>;
  apiSays: RegExp;
  /** 400 unless said. */
  status?: number;
  /** The same thing done to a file tunnelward wrote. */
  file: (doc: Tree) => void;
  frpcSays: RegExp;
}

/** A proxy block; a key given undefined is left out. */
const proxy = (extra: Tree): Tree =>
  Object.fromEntries(
    Object.entries({ name: 'p', type: 'tcp', localPort: 22, remotePort: 6500, ...extra }).filter(
      ([, v]) => v !== undefined,
    ),
  );

const REFUSALS: Refusal[] = [
  {
    what: 'a duplicate proxy name',
    api: (id) => createProxy(id, { name: 'ssh', type: 'tcp', localPort: '2222', remotePort: '6401' }),
    apiSays: /Proxy ssh already exists/,
    status: 409,
    file: (doc) => doc.proxies.push({ ...doc.proxies[0], remotePort: 6401 }),
    frpcSays: /proxy name \[ssh\] is duplicated/,
  },
  {
    what: 'a plugin without an option it requires',
    api: (id) => createProxy(id, { name: 'files', type: 'tcp', remotePort: '6402', plugin: { type: 'static_file' } }),
    apiSays: /plugin\.localPath is required by the static_file plugin/,
    file: (doc) => doc.proxies.push(proxy({ localPort: undefined, plugin: { type: 'static_file' } })),
    frpcSays: /plugin static_file: localPath is required/,
  },
  {
    what: 'an option of another plugin',
    api: (id) =>
      createProxy(id, { name: 'socks', type: 'tcp', remotePort: '6403', plugin: { type: 'socks5', unixPath: '/x' } }),
    apiSays: /plugin\.unixPath is not an option of the socks5 plugin/,
    file: (doc) => doc.proxies.push(proxy({ plugin: { type: 'socks5', unixPath: '/x' } })),
    frpcSays: /unmarshal proxy plugin error: .*unknown field "unixPath"/,
  },
  {
    what: 'an unknown plugin',
    api: (id) => createProxy(id, { name: 'odd', type: 'tcp', remotePort: '6404', plugin: { type: 'ftp' } }),
    apiSays: /plugin\.type must be one of/,
    file: (doc) => doc.proxies.push(proxy({ plugin: { type: 'ftp' } })),
    frpcSays: /unknown plugin type: ftp/,
  },
  {
    what: 'an http proxy without customDomains or subdomain',
    api: (id) => createProxy(id, { name: 'web', type: 'http', localPort: '80' }),
    apiSays: /a http proxy needs customDomains or subdomain/,
    file: (doc) => doc.proxies.push(proxy({ type: 'http', remotePort: undefined })),
    frpcSays: /subdomain and custom domains should not be both empty/,
  },
  {
    what: 'a key of another proxy type',
    api: (id) => createProxy(id, { name: 'web', type: 'tcp', localPort: '80', remotePort: '6405', subdomain: 'w' }),
    apiSays: /subdomain is only used by http, https and tcpmux proxies, not tcp/,
    file: (doc) => doc.proxies.push(proxy({ subdomain: 'w' })),
    frpcSays: /unmarshal ProxyConfig error: .*unknown field "subdomain"/,
  },
  {
    what: 'a bandwidth limit mode frpc does not know',
    api: (id) => createProxy(id, proxy({ name: 'bw', remotePort: '6406', 'transport.bandwidthLimitMode': 'both' })),
    apiSays: /transport\.bandwidthLimitMode must be one of: client, server/,
    file: (doc) => doc.proxies.push(proxy({ transport: { bandwidthLimitMode: 'both' } })),
    frpcSays: /bandwidth limit mode should be client or server/,
  },
  {
    what: 'an http health check without a path',
    api: (id) => createProxy(id, proxy({ name: 'hc', remotePort: '6407', healthCheck: { type: 'http' } })),
    apiSays: /healthCheck\.path is required for an http health check/,
    file: (doc) => doc.proxies.push(proxy({ healthCheck: { type: 'http' } })),
    frpcSays: /health check path should not be empty/,
  },
  {
    what: 'an annotation key that is not a qualified name',
    api: (id) => createProxy(id, proxy({ name: 'an', remotePort: '6408', annotations: { 'bad key!': 'x' } })),
    apiSays: /annotations entry names must be/,
    file: (doc) => doc.proxies.push(proxy({ annotations: { 'bad key!': 'x' } })),
    frpcSays: /annotation key bad key! is invalid/,
  },
  {
    what: 'an unknown setting',
    api: (id) => modifyConfig(id, { bogus: 1 }),
    apiSays: /Unknown config key: bogus/,
    file: (doc) => (doc.bogus = 1),
    frpcSays: /unknown field "bogus"/,
  },
  {
    what: 'an auth method frpc does not know',
    api: (id) => modifyConfig(id, { 'auth.method': 'basic' }),
    apiSays: /auth\.method must be one of: token, oidc/,
    file: (doc) => (doc.auth.method = 'basic'),
    frpcSays: /invalid auth method/,
  },
  {
    what: 'an additional auth scope frpc does not know',
    api: (id) => modifyConfig(id, { 'auth.additionalScopes': ['Everything'] }),
    apiSays: /auth\.additionalScopes must be one of: HeartBeats, NewWorkConns/,
    file: (doc) => (doc.auth.additionalScopes = ['Everything']),
    frpcSays: /invalid auth additional scopes/,
  },
  {
    what: 'a log level frpc does not know',
    api: (id) => modifyConfig(id, { 'log.level': 'loud' }),
    apiSays: /log\.level must be one of/,
    file: (doc) => (doc.log.level = 'loud'),
    frpcSays: /invalid log level/,
  },
  {
    what: 'a transport protocol frpc does not know',
    api: (id) => modifyConfig(id, { 'transport.protocol': 'udp' }),
    apiSays: /transport\.protocol must be one of/,
    file: (doc) => (doc.transport = { protocol: 'udp' }),
    frpcSays: /invalid transport\.protocol/,
  },
  {
    what: 'a port that is a string',
    api: (id) => modifyConfig(id, { serverPort: 'seven' }),
    apiSays: /serverPort must be a port number/,
    file: (doc) => (doc.serverPort = 'seven'),
    frpcSays: /serverPort.*cannot unmarshal string into int/,
  },
  {
    what: 'oidc without the client ID and token endpoint it needs',
    api: (id) => modifyConfig(id, { 'auth.method': 'oidc' }),
    apiSays: /auth\.oidc\.clientID is required .*auth\.oidc\.tokenEndpointURL is required/,
    file: (doc) => (doc.auth.method = 'oidc'),
    frpcSays: /auth\.oidc\.clientID is required; auth\.oidc\.tokenEndpointURL is required/,
  },
  {
    what: 'an oidc token endpoint that is not an http or https URL',
    api: (id) =>
      modifyConfig(id, {
        'auth.method': 'oidc',
        'auth.oidc.clientID': 'frpc',
        'auth.oidc.tokenEndpointURL': 'sso.example.com/token',
      }),
    apiSays: /auth\.oidc\.tokenEndpointURL must be an absolute http or https URL/,
    file: (doc) =>
      (doc.auth = {
        ...doc.auth,
        method: 'oidc',
        oidc: { clientID: 'frpc', tokenEndpointURL: 'sso.example.com/token' },
      }),
    frpcSays: /auth\.oidc\.tokenEndpointURL must be an absolute http or https URL/,
  },
  {
    what: 'an oidc scope among the additional endpoint parameters',
    api: (id) =>
      modifyConfig(id, {
        'auth.method': 'oidc',
        'auth.oidc.clientID': 'frpc',
        'auth.oidc.tokenEndpointURL': 'https://sso.example.com/token',
        'auth.oidc.additionalEndpointParams': { scope: 'openid' },
      }),
    apiSays: /auth\.oidc\.additionalEndpointParams\.scope is not allowed; use auth\.oidc\.scope/,
    file: (doc) =>
      (doc.auth = {
        ...doc.auth,
        method: 'oidc',
        oidc: {
          clientID: 'frpc',
          tokenEndpointURL: 'https://sso.example.com/token',
          additionalEndpointParams: { scope: 'openid' },
        },
      }),
    frpcSays: /auth\.oidc\.additionalEndpointParams\.scope is not allowed/,
  },
  {
    what: 'a heartbeat timeout shorter than the heartbeat interval',
    api: (id) => modifyConfig(id, { 'transport.heartbeatInterval': 30, 'transport.heartbeatTimeout': 10 }),
    apiSays: /transport\.heartbeatTimeout .*must not be less than transport\.heartbeatInterval/,
    file: (doc) => (doc.transport = { heartbeatInterval: 30, heartbeatTimeout: 10 }),
    frpcSays: /heartbeat timeout should not less than heartbeat interval/,
  },
  {
    what: "a heartbeat timeout below the interval frpc's default gives without tcpMux",
    api: (id) => modifyConfig(id, { 'transport.tcpMux': false, 'transport.heartbeatTimeout': 10 }),
    apiSays: /transport\.heartbeatTimeout .*must not be less than transport\.heartbeatInterval/,
    file: (doc) => (doc.transport = { tcpMux: false, heartbeatTimeout: 10 }),
    frpcSays: /heartbeat timeout should not less than heartbeat interval/,
  },
  {
    what: 'a virtual network address without its feature gate',
    api: (id) => modifyConfig(id, { 'virtualNet.address': '100.86.0.1/24' }),
    apiSays: /virtualNet\.address needs featureGates\.VirtualNet = true/,
    file: (doc) => (doc.virtualNet = { address: '100.86.0.1/24' }),
    frpcSays: /VirtualNet feature is not enabled/,
  },
  {
    what: 'a feature gate frpc does not know',
    api: (id) => modifyConfig(id, { featureGates: { Teleport: true } }),
    apiSays: /featureGates\.Teleport: frpc knows no such feature gate/,
    file: (doc) => (doc.featureGates = { Teleport: true }),
    frpcSays: /unrecognized feature gate: Teleport/,
  },
  {
    what: 'includes from a directory that does not exist',
    api: (id) => modifyConfig(id, { includes: ['/nonexistent-tunnelward-dir/*.toml'] }),
    apiSays: /includes: the directory "\/nonexistent-tunnelward-dir" does not exist/,
    file: (doc) => (doc.includes = ['/nonexistent-tunnelward-dir/*.toml']),
    frpcSays: /stat \/nonexistent-tunnelward-dir: no such file or directory/,
  },
];

test('what tunnelward refuses to write, the real frpc refuses to read', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'v_refusals', { 'auth.token': 'refusal-token' });
  const ssh = { name: 'ssh', type: 'tcp', localPort: '22', remotePort: '6400' };
  t.true((await createProxy(id, ssh)).body.success);
  const written = await readFile(configPath, 'utf8');
  for (const refusal of REFUSALS) {
    const res = await refusal.api(id);
    t.is(res.status, refusal.status ?? 400, `${refusal.what}: ${res.body.message}`);
    t.regex(res.body.message, refusal.apiSays, refusal.what);
    const doc = parse(written) as Tree;
    refusal.file(doc);
    await frpcRefuses(t, stringify(doc), refusal.frpcSays, refusal.what);
  }
  t.is(await readFile(configPath, 'utf8'), written, 'nothing refused reached the file');
  await accepts(t, configPath, 'the file after every refusal');
  logCount(t);
});

test('an oidc instance created without its client ID and token endpoint is refused, as frpc would refuse its file', async (t) => {
  const res = await daemon.post(
    '/tunnelAct/instanceMgr/create',
    { instanceInfo: { name: 'v_oidc_bare', serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'oidc' } },
    { token: root },
  );
  t.is(res.status, 400);
  t.regex(res.body.message, /auth\.oidc\.clientID is required/);
  await frpcRefuses(
    t,
    'serverAddr = "127.0.0.1"\nserverPort = 7000\nauth.method = "oidc"\n',
    /auth\.oidc\.clientID is required/,
    'a bare oidc file',
  );
});

test('imports that break what frpc checks are refused, as frpc refuses the originals', async (t) => {
  const settings = 'serverAddr = "127.0.0.1"\nserverPort = 7010\n';
  const ssh = (port: number) => `[[proxies]]\nname = "ssh"\ntype = "tcp"\nlocalPort = 22\nremotePort = ${port}\n`;
  const visitor = (extra: string) => `[[visitors]]\nname = "v"\ntype = "xtcp"\nserverName = "s"\n${extra}`;
  const cases: Array<[string, string, RegExp, RegExp]> = [
    [
      'duplicate proxy names',
      settings + ssh(6600) + ssh(6601),
      /Proxy ssh already exists/,
      /proxy name \[ssh\] is duplicated/,
    ],
    [
      'duplicate visitor names',
      settings + visitor('bindPort = 1\n') + visitor('bindPort = 2\n'),
      /another visitor has this name/,
      /visitor name \[v\] is duplicated/,
    ],
    [
      'an xtcp visitor protocol',
      settings + visitor('bindPort = 1\nprotocol = "tcp"\n'),
      /protocol must be one of: quic, kcp/,
      /protocol should be kcp or quic/,
    ],
    ['a visitor without bindPort', settings + visitor(''), /bindPort is required/, /bind port is required/],
    [
      'a visitor key of another type',
      settings + '[[visitors]]\nname = "v"\ntype = "stcp"\nserverName = "s"\nbindPort = 1\nkeepTunnelOpen = true\n',
      /keepTunnelOpen is only used by xtcp visitors/,
      /unmarshal VisitorConfig error: .*unknown field "keepTunnelOpen"/,
    ],
    [
      'oidc without its settings',
      settings + 'auth.method = "oidc"\n',
      /auth\.oidc\.clientID is required/,
      /auth\.oidc\.clientID is required/,
    ],
  ];
  for (const [index, [what, content, apiSays, frpcSays]] of cases.entries()) {
    const res = await importConfig(`v_bad_import_${index}`, content, 'toml');
    t.is(res.status, 400, `${what}: ${res.body.message}`);
    t.regex(res.body.message, apiSays, what);
    await frpcRefuses(t, content, frpcSays, what);
  }
});
