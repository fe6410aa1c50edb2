import test, { type ExecutionContext } from 'ava';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { AppError } from '../../../src/errors.js';
import { currentOsUser } from '../../../src/system/os-users.js';
import { fileAccess, READABLE_BY_NOBODY } from '../../helpers/instances.js';
import { envPlaceholders, onlyPlaceholders } from '../../../src/config/go-template.js';
import { expectedView, merged, POSTGRES, PROXY_EXAMPLES, VISITORS_TOML } from '../../config/proxy-examples.js';
import {
  readTunnelConfig,
  TunnelConfig,
  writeTunnelConfig,
  type ProxyInput,
} from '../../../src/config/tunnel-config.js';

type Table = Record<string, any>;

const SECRET = 'sup3r-s3cret-t0ken';

const OLD_SHAPE = `
# written by the older service
[common]
server_addr = "frp.example.com"
server_port = "7000"
auth.method = "token"
auth.token = "${SECRET}"
log_file = "/var/log/frpc.log"
admin_port = 7400
meta_env = "prod"

[[proxies]]
name = "ssh"
type = "tcp"
local_ip = "127.0.0.1"
local_port = "22"
remote_port = "6000"
use_encryption = true

[[proxies]]
name = "web"
type = "http"
local_ip = "127.0.0.1"
local_port = 8080
custom_domains = "a.example.com, b.example.com"
http_pwd = "pw"
`;

const CURRENT_SHAPE = `
serverAddr = "10.0.0.1"
serverPort = 7000
futureSetting = "kept"
auth.method = "token"
auth.token = "${SECRET}"
webServer.port = 7400
metadatas.team = "ops"

[[proxies]]
name = "ssh"
type = "tcp"
localIP = "127.0.0.1"
localPort = 22
remotePort = 6000
transport.useEncryption = true
transport.bandwidthLimit = "1MB"
metadatas.owner = "alice"
annotations."prefix/key" = "v"
someFutureField = [1, 2]

[[proxies]]
name = "web"
type = "https"
localIP = "localhost"
localPort = 8443
customDomains = ["web.example.com"]
subdomain = "web"
enabled = false

[[proxies]]
name = "sock"
type = "tcp"
remotePort = 6001
[proxies.plugin]
type = "unix_domain_socket"
unixPath = "/var/run/docker.sock"

[[visitors]]
name = "v1"
type = "stcp"
serverName = "x"
secretKey = "k"
bindPort = 9000
`;

const reparse = (config: TunnelConfig): Table => parse(config.toString()) as Table;
const blockNamed = (config: TunnelConfig, name: string): Table =>
  reparse(config).proxies.find((p: Table) => p.name === name);

const fresh = () => TunnelConfig.create({ serverAddr: 'frp.example.com', serverPort: '7000', authMethod: 'token' });

const tcp = (name: string, remotePort: string | number, extra: ProxyInput = {}): ProxyInput => ({
  name,
  type: 'tcp',
  localIP: '127.0.0.1',
  localPort: '22',
  remotePort,
  ...extra,
});

function fails(t: ExecutionContext, fn: () => unknown, status: number, message: RegExp): AppError {
  const err = t.throws(fn, { instanceOf: AppError });
  t.is(err.status, status, err.message);
  t.regex(err.message, message);
  t.false(err.message.includes(SECRET), 'a message never shows the token');
  return err;
}

/** Every key name in a parsed document, at every depth. */
function allKeys(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) allKeys(item, out);
  else if (value && typeof value === 'object' && !(value instanceof Date)) {
    for (const [key, item] of Object.entries(value)) {
      out.push(key);
      allKeys(item, out);
    }
  }
  return out;
}

// ---- create / round trips ----

test('create writes what frpc accepts: integer port, auth.method, no colour codes, a failed first login not fatal', (t) => {
  const config = TunnelConfig.create(
    { serverAddr: 'frp.example.com', serverPort: '7000', authMethod: 'token' },
    { 'auth.token': SECRET, 'transport.tls.enable': true },
  );
  const doc = reparse(config);
  t.deepEqual(doc, {
    serverAddr: 'frp.example.com',
    serverPort: 7000,
    auth: { method: 'token', token: SECRET },
    loginFailExit: false,
    log: { disablePrintColor: true },
    transport: { tls: { enable: true } },
  });
  t.is(config.serverAddr, 'frp.example.com');
  t.is(config.serverPort, '7000');
  t.is(config.authMethod, 'token');
  t.deepEqual(config.proxies(), []);
  t.deepEqual(config.unknownKeys(), []);
});

test('create validates the base fields and the additional properties', (t) => {
  const base = { serverAddr: 'frp.example.com', serverPort: 7000, authMethod: 'token' };
  fails(
    t,
    () => TunnelConfig.create({ ...base, serverPort: '70000' }),
    400,
    /^serverPort must be a port number from 1 to 65535$/,
  );
  fails(
    t,
    () => TunnelConfig.create({ ...base, serverAddr: 'bad host!' }),
    400,
    /^serverAddr must be an IPv4 or IPv6 address or a host name$/,
  );
  fails(
    t,
    () => TunnelConfig.create({ ...base, authMethod: 'password' }),
    400,
    /^auth_method must be one of: token, oidc$/,
  );
  fails(t, () => TunnelConfig.create(base, { nope: 1 }), 400, /^Unknown config key: nope$/);
  fails(
    t,
    () => TunnelConfig.create(base, { server_port: 7001 }),
    400,
    /server_port cannot be set in additionalProperties/,
  );
  t.is(TunnelConfig.create({ ...base, serverAddr: '::1' }).serverAddr, '::1');
});

test('a file round-trips: settings, proxies, visitors and unknown keys survive', (t) => {
  const config = TunnelConfig.parse(CURRENT_SHAPE, '/etc/x.toml');
  const once = config.toString();
  const again = TunnelConfig.parse(once).toString();
  t.is(again, once, 'rewriting is stable');
  const doc = parse(once) as Table;
  t.is(doc.futureSetting, 'kept');
  t.deepEqual(doc.metadatas, { team: 'ops' });
  t.deepEqual(doc.proxies[0].transport, { useEncryption: true, bandwidthLimit: '1MB' });
  t.deepEqual(doc.proxies[0].annotations, { 'prefix/key': 'v' });
  t.deepEqual(doc.proxies[0].someFutureField, [1, 2]);
  t.deepEqual(doc.proxies[2].plugin, { type: 'unix_domain_socket', unixPath: '/var/run/docker.sock' });
  t.deepEqual(doc.visitors, [{ name: 'v1', type: 'stcp', serverName: 'x', secretKey: 'k', bindPort: 9000 }]);
  t.deepEqual(config.unknownKeys(), ['futureSetting']);
});

test('proxies() shows the API shape: string ports, enabled always present, then the other keys of the type', (t) => {
  const config = TunnelConfig.parse(CURRENT_SHAPE);
  t.deepEqual(config.proxies(), [
    {
      name: 'ssh',
      type: 'tcp',
      localIP: '127.0.0.1',
      localPort: '22',
      remotePort: '6000',
      enabled: true,
      transport: { useEncryption: true, bandwidthLimit: '1MB' },
      metadatas: { owner: 'alice' },
      annotations: { 'prefix/key': 'v' },
    },
    {
      name: 'web',
      type: 'https',
      localIP: 'localhost',
      localPort: '8443',
      remotePort: '',
      enabled: false,
      customDomains: ['web.example.com'],
      subdomain: 'web',
    },
    {
      name: 'sock',
      type: 'tcp',
      localIP: '',
      localPort: '',
      remotePort: '6001',
      enabled: true,
      plugin: { type: 'unix_domain_socket', unixPath: '/var/run/docker.sock' },
    },
  ]);
  t.false('someFutureField' in config.proxies()[0]!, 'a key frpc does not know is kept in the file, not shown');
});

// ---- the older shape ----

test('an older file ([common], snake_case) is read and rewritten in the current shape', (t) => {
  const config = TunnelConfig.parse(OLD_SHAPE, '/old.toml');
  t.is(config.serverAddr, 'frp.example.com');
  t.is(config.serverPort, '7000');
  t.is(config.authMethod, 'token');
  t.deepEqual(config.proxies()[0], {
    name: 'ssh',
    type: 'tcp',
    localIP: '127.0.0.1',
    localPort: '22',
    remotePort: '6000',
    enabled: true,
    transport: { useEncryption: true },
  });
  t.deepEqual(config.proxies()[1]!.customDomains, ['a.example.com', 'b.example.com']);
  t.is(config.proxies()[1]!.httpPassword, '********', 'a secret is masked');

  const out = config.toString();
  t.false(/^\s*\[common\]/m.test(out), 'no [common] table');
  const doc = parse(out) as Table;
  t.false(
    allKeys(doc).some((key) => key.includes('_')),
    `no snake_case key in:\n${out}`,
  );
  t.deepEqual(doc, {
    serverAddr: 'frp.example.com',
    serverPort: 7000,
    auth: { method: 'token', token: SECRET },
    log: { to: 'console' }, // the tunnel's output is captured from its console
    webServer: { port: 7400 },
    metadatas: { env: 'prod' },
    proxies: [
      {
        name: 'ssh',
        type: 'tcp',
        localIP: '127.0.0.1',
        localPort: 22,
        remotePort: 6000,
        transport: { useEncryption: true },
      },
      {
        name: 'web',
        type: 'http',
        localIP: '127.0.0.1',
        localPort: 8080,
        customDomains: ['a.example.com', 'b.example.com'],
        httpPassword: 'pw',
      },
    ],
  });
});

test('older files: current spellings win, visitors marked by role move to [[visitors]], plugins map', (t) => {
  const config = TunnelConfig.parse(`
serverAddr = "new.example.com"
server_addr = "old.example.com"
token = "t"

[[proxies]]
name = "docker"
type = "tcp"
remote_port = 6003
plugin = "unix_domain_socket"
plugin_unix_path = "/var/run/docker.sock"

[[proxies]]
name = "secret_ssh_visitor"
type = "stcp"
role = "visitor"
server_name = "secret_ssh"
sk = "abc"
bind_addr = "127.0.0.1"
bind_port = "6000"
`);
  t.deepEqual(reparse(config), {
    serverAddr: 'new.example.com',
    auth: { token: 't' },
    proxies: [
      {
        name: 'docker',
        type: 'tcp',
        remotePort: 6003,
        plugin: { type: 'unix_domain_socket', unixPath: '/var/run/docker.sock' },
      },
    ],
    visitors: [
      {
        name: 'secret_ssh_visitor',
        type: 'stcp',
        serverName: 'secret_ssh',
        secretKey: 'abc',
        bindAddr: '127.0.0.1',
        bindPort: 6000,
      },
    ],
  });
});

test('a file that is not TOML is refused naming the file, without quoting its content', (t) => {
  const err = fails(
    t,
    () =>
      TunnelConfig.parse(
        `serverAddr = "x"\nauth.token = "${SECRET}\nserverPort = 7000\n`,
        '/data/instances/tunnel_3.toml',
      ),
    400,
    /^Config file \/data\/instances\/tunnel_3\.toml is not valid TOML \(line 2, column \d+: /,
  );
  t.false(err.message.includes('auth.token'));
  fails(t, () => TunnelConfig.parse('proxies = 3'), 400, /proxies must be an array of tables/);
  fails(t, () => TunnelConfig.parse('__proto__ = { a = 1 }'), 400, /has the reserved key "__proto__" at its top level/);
  fails(t, () => TunnelConfig.parse('[transport]\ntoString = 1'), 400, /reserved key "toString" inside transport/);
});

// ---- setCommon ----

test('setCommon sets dotted and older names, converting numeric-string ports and booleans', (t) => {
  const config = fresh();
  config.setCommon({
    server_addr: '192.0.2.7',
    server_port: '7001',
    'auth.token': SECRET,
    'transport.tls.enable': 'false',
    'log.level': 'debug',
    'transport.poolCount': 5,
    auth_method: 'oidc',
    oidc_client_id: 'frpc',
    'auth.oidc.tokenEndpointURL': 'https://sso.example.com/token',
    transport: { tcpMux: false },
  });
  const doc = reparse(config);
  t.is(doc.serverAddr, '192.0.2.7');
  t.is(doc.serverPort, 7001);
  t.deepEqual(doc.auth, {
    method: 'oidc',
    token: SECRET,
    oidc: { clientID: 'frpc', tokenEndpointURL: 'https://sso.example.com/token' },
  });
  t.deepEqual(doc.transport, { tls: { enable: false }, poolCount: 5, tcpMux: false });
  t.deepEqual(doc.log, { disablePrintColor: true, level: 'debug' });
  t.is(config.serverPort, '7001');
  t.is(config.authMethod, 'oidc');
});

test('setCommon names every unknown key and changes nothing', (t) => {
  const config = fresh();
  const before = config.toString();
  fails(
    t,
    () => config.setCommon({ serverPort: 7001, bogus: 1, 'auth.nope': 2, 'odd key"': 3 }),
    400,
    /^Unknown config keys: bogus, auth\.nope, "odd key\\""$/,
  );
  t.is(config.toString(), before);
});

test('setCommon type-checks values and is all-or-nothing', (t) => {
  const config = fresh();
  const before = config.toString();
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ serverPort: 0 }, /^serverPort must be a port number from 1 to 65535$/],
    [{ server_port: '7000x' }, /^server_port must be a port number from 1 to 65535$/],
    [{ serverPort: 7000.5 }, /^serverPort must be a port number/],
    [{ 'webServer.port': 7400 }, /^webServer\.port: webServer is managed by tunnelward/],
    [{ 'auth.method': 'basic' }, /^auth\.method must be one of: token, oidc$/],
    [{ 'transport.tls.enable': 'yes' }, /^transport\.tls\.enable must be true or false$/],
    [{ 'transport.poolCount': 'five' }, /^transport\.poolCount must be an integer$/],
    [{ 'auth.token': 12345 }, /^auth\.token must be a string$/],
    [{ serverAddr: 'a b' }, /^serverAddr must be an IPv4 or IPv6 address or a host name$/],
    [{ serverAddr: '300.1.1.1' }, /^serverAddr must be an IPv4/],
    [{ user: 'a\nb' }, /^user must not contain control characters/],
    [{ start: 'ssh' }, /^start must be an array of strings$/],
    [{ metadatas: { 'bad key': 'x' } }, /^metadatas entry names must be/],
    [{ metadatas: { ok: 1 } }, /^metadatas\.ok must be a string$/],
    [{ serverAddr: null }, /^serverAddr cannot be removed$/],
    [{ server_addr: 'a.example.com', serverAddr: 'b.example.com' }, /both set serverAddr/],
    [{ serverPort: 7001, 'log.level': 'loud' }, /^log\.level must be one of: trace, debug, info, warn, error$/],
  ];
  for (const [patch, message] of cases) {
    fails(t, () => config.setCommon(patch), 400, message);
    t.is(config.toString(), before, `unchanged after ${JSON.stringify(patch)}`);
  }
});

test('auth.method oidc needs what frpc requires with it: a client ID, an http(s) token endpoint, no scope parameter', (t) => {
  const base = { serverAddr: 'frp.example.com', serverPort: 7000, authMethod: 'oidc' };
  const oidc = { clientID: 'frpc', tokenEndpointURL: 'https://sso.example.com/token' };
  fails(
    t,
    () => TunnelConfig.create(base),
    400,
    /^auth\.oidc\.clientID is required when auth\.method is oidc; auth\.oidc\.tokenEndpointURL is required when auth\.method is oidc$/,
  );
  t.deepEqual(reparse(TunnelConfig.create(base, { auth: { oidc } })).auth, { method: 'oidc', oidc });
  const config = fresh();
  const before = config.toString();
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ 'auth.method': 'oidc', 'auth.oidc.clientID': 'frpc' }, /^auth\.oidc\.tokenEndpointURL is required/],
    [{ 'auth.method': 'oidc', 'auth.oidc': { ...oidc, clientID: '' } }, /^auth\.oidc\.clientID is required/],
    ...['sso.example.com/token', 'ftp://sso.example.com/token', 'http:sso.example.com', 'https:///token'].map(
      (url): [Record<string, unknown>, RegExp] => [
        { 'auth.method': 'oidc', 'auth.oidc': { ...oidc, tokenEndpointURL: url } },
        /^auth\.oidc\.tokenEndpointURL must be an absolute http or https URL$/,
      ],
    ),
    [
      { 'auth.method': 'oidc', 'auth.oidc': { ...oidc, additionalEndpointParams: { scope: 'openid' } } },
      /^auth\.oidc\.additionalEndpointParams\.scope is not allowed; use auth\.oidc\.scope$/,
    ],
    [
      { 'auth.method': 'oidc', 'auth.oidc': { ...oidc, audience: 'a', additionalEndpointParams: { audience: 'b' } } },
      /^auth\.oidc\.audience and auth\.oidc\.additionalEndpointParams\.audience cannot both be set$/,
    ],
  ];
  for (const [patch, message] of cases) {
    fails(t, () => config.setCommon(patch), 400, message);
    t.is(config.toString(), before, `unchanged after ${JSON.stringify(patch)}`);
  }
  // With the token method frpc leaves the oidc settings alone. An endpoint from the environment is frpc's to check.
  config.setCommon({ 'auth.oidc.clientID': 'frpc' });
  config.setCommon({ 'auth.method': 'oidc', 'auth.oidc.tokenEndpointURL': '{{ .Envs.OIDC_URL }}' });
  config.setCommon({ 'auth.method': 'oidc', 'auth.oidc.tokenEndpointURL': 'https://auth.example.com/token' });
  t.is(config.authMethod, 'oidc');
  fails(t, () => config.setCommon({ 'auth.oidc.clientID': null }), 400, /^auth\.oidc\.clientID is required/);
  fails(
    t,
    () =>
      TunnelConfig.imported({ serverAddr: 'frp.example.com', auth: { method: 'oidc' } }, { format: 'json', text: '' }),
    400,
    /auth\.oidc\.clientID is required when auth\.method is oidc/,
  );
});

test("a heartbeat timeout below the heartbeat interval is refused, counting frpc's defaults without tcpMux", (t) => {
  const config = fresh();
  const before = config.toString();
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [
      { transport: { heartbeatInterval: 30, heartbeatTimeout: 10 } },
      /^transport\.heartbeatTimeout \(10\) must not be less than transport\.heartbeatInterval \(30\)$/,
    ],
    [{ 'transport.tcpMux': false, 'transport.heartbeatTimeout': 10 }, /\(10\) .*\(30\); without tcpMux/],
    [{ tcp_mux: 'false', heartbeat_interval: 120 }, /\(90\) .*\(120\)/],
  ];
  for (const [patch, message] of cases) {
    fails(t, () => config.setCommon(patch), 400, message);
    t.is(config.toString(), before, `unchanged after ${JSON.stringify(patch)}`);
  }
  // With tcpMux an unset one is off; a negative one is off too.
  config.setCommon({ 'transport.heartbeatTimeout': 10 });
  config.setCommon({ 'transport.heartbeatInterval': 30, 'transport.heartbeatTimeout': -1 });
  config.setCommon({ 'transport.tcpMux': false, 'transport.heartbeatTimeout': 30 });
  t.deepEqual(reparse(config).transport, { heartbeatTimeout: 30, heartbeatInterval: 30, tcpMux: false });
  fails(t, () => config.setCommon({ 'transport.heartbeatInterval': 31 }), 400, /\(30\) .*\(31\)/);
});

test('feature gates: only those frpc knows, and the virtual network only with its gate on', (t) => {
  const config = fresh();
  const before = config.toString();
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [
      { featureGates: { Teleport: true } },
      /^featureGates\.Teleport: frpc knows no such feature gate \(only VirtualNet\)$/,
    ],
    [{ 'featureGates.virtualnet': true }, /^featureGates\.virtualnet: frpc knows no such feature gate/],
    [{ 'virtualNet.address': '100.86.0.1/24' }, /^virtualNet\.address needs featureGates\.VirtualNet = true/],
    [
      { 'virtualNet.address': '100.86.0.1/24', 'featureGates.VirtualNet': false },
      /^virtualNet\.address needs featureGates\.VirtualNet = true/,
    ],
  ];
  for (const [patch, message] of cases) {
    fails(t, () => config.setCommon(patch), 400, message);
    t.is(config.toString(), before, `unchanged after ${JSON.stringify(patch)}`);
  }
  config.setCommon({ featureGates: { VirtualNet: true }, 'virtualNet.address': '100.86.0.1/24' });
  fails(t, () => config.setCommon({ 'featureGates.VirtualNet': null }), 400, /needs featureGates\.VirtualNet/);
  config.setCommon({ 'featureGates.VirtualNet': null, 'virtualNet.address': null });
  t.is(config.toString(), before);
});

test('includes: an absolute path whose directory exists, as frpc looks for it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tunnelward-includes-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const config = fresh();
  const before = config.toString();
  const cases: Array<[unknown, RegExp]> = [
    [['/nonexistent-tunnelward-dir/*.toml'], /^includes: the directory "\/nonexistent-tunnelward-dir" does not exist$/],
    [['confd/*.toml'], /^includes: "confd\/\*\.toml" must be an absolute path$/],
    [[`${dir}/a.toml`, `${dir}/missing/b.toml`], /^includes: the directory ".*\/missing" does not exist$/],
  ];
  for (const [includes, message] of cases) {
    fails(t, () => config.setCommon({ includes }), 400, message);
    t.is(config.toString(), before, `unchanged after ${JSON.stringify(includes)}`);
  }
  config.setCommon({ includes: [`${dir}/*.toml`] });
  t.deepEqual(reparse(config).includes, [`${dir}/*.toml`]);
});

test('setCommon never shows a secret value in its messages', (t) => {
  const config = fresh();
  for (const value of [`{{ .X }}${SECRET}`, `{{ .Envs.X }}}}${SECRET}`, `${SECRET}\n`, [SECRET], { x: SECRET }]) {
    const err = t.throws(() => config.setCommon({ 'auth.token': value }), { instanceOf: AppError });
    t.is(err.status, 400);
    t.false(err.message.includes(SECRET));
  }
});

test('setCommon refuses to touch proxies and visitors', (t) => {
  const config = TunnelConfig.parse(CURRENT_SHAPE);
  fails(t, () => config.setCommon({ proxies: [] }), 400, /^proxies cannot be changed through the config file settings/);
  fails(t, () => config.setCommon({ 'proxies.0.name': 'x' }), 400, /^proxies cannot be changed/);
  fails(t, () => config.setCommon({ visitors: [] }), 400, /^visitors cannot be changed/);
  t.is(config.proxies().length, 3);
});

test('setCommon removes a key given null, with the tables it empties', (t) => {
  const config = fresh();
  config.setCommon({ 'auth.token': SECRET, 'transport.tls.enable': true });
  config.setCommon({ 'auth.token': null, 'transport.tls.enable': null });
  t.deepEqual(reparse(config), {
    serverAddr: 'frp.example.com',
    serverPort: 7000,
    auth: { method: 'token' },
    loginFailExit: false,
    log: { disablePrintColor: true },
  });
});

test('setCommon leaves the proxies exactly as they were (parsed and as text)', (t) => {
  for (const source of [CURRENT_SHAPE, OLD_SHAPE]) {
    const config = TunnelConfig.parse(source);
    const before = reparse(config);
    const textBefore = config.toString();
    config.setCommon({
      server_addr: 'other.example.com',
      server_port: 7100,
      'auth.token': 'new',
      'log.level': 'warn',
      metadatas: { a: 'b' },
    });
    const after = reparse(config);
    t.deepEqual(after.proxies, before.proxies);
    t.deepEqual(after.visitors, before.visitors);
    const proxyPart = (s: string) => s.slice(s.indexOf('[[proxies]]'));
    // Unchanged line for line; a setting in a table the file lacked ([log]) is written after them.
    t.true(proxyPart(config.toString()).startsWith(proxyPart(textBefore)), config.toString());
    t.is(after.serverAddr, 'other.example.com');
    t.is(after.serverPort, 7100);
  }
});

// ---- proxies ----

test('addProxy appends a block with integer ports', (t) => {
  const config = fresh();
  const view = config.addProxy({ name: 'ssh', type: 'tcp', localIP: '127.0.0.1', localPort: '22', remotePort: '6000' });
  t.deepEqual(view, {
    name: 'ssh',
    type: 'tcp',
    localIP: '127.0.0.1',
    localPort: '22',
    remotePort: '6000',
    enabled: true,
  });
  config.addProxy({ name: 'web', type: 'http', localPort: 80, customDomains: 'a.example.com, *.b.example.com' });
  config.addProxy({ name: 'dns', type: 'udp', local_ip: '::1', local_port: 53, remote_port: '6053' });
  config.addProxy({ name: 'mux', type: 'tcpmux', localPort: 8080, subdomain: 'mux' });
  config.addProxy({ name: 'p2p', type: 'xtcp', localPort: 22, remotePort: '' });
  t.deepEqual(reparse(config).proxies, [
    { name: 'ssh', type: 'tcp', localIP: '127.0.0.1', localPort: 22, remotePort: 6000 },
    {
      name: 'web',
      type: 'http',
      localIP: '127.0.0.1',
      localPort: 80,
      customDomains: ['a.example.com', '*.b.example.com'],
    },
    { name: 'dns', type: 'udp', localIP: '::1', localPort: 53, remotePort: 6053 },
    {
      name: 'mux',
      type: 'tcpmux',
      localIP: '127.0.0.1',
      localPort: 8080,
      subdomain: 'mux',
      multiplexer: 'httpconnect',
    },
    { name: 'p2p', type: 'xtcp', localIP: '127.0.0.1', localPort: 22 },
  ]);
});

test('addProxy validates every field', (t) => {
  const config = fresh();
  const cases: Array<[ProxyInput, RegExp]> = [
    [{ ...tcp('x', 6000), name: undefined }, /^name is required$/],
    [{ ...tcp('x', 6000), name: '' }, /^name is required$/],
    [tcp('bad name', 6000), /^name must be 1-64 characters from A-Z, a-z, 0-9, "_", "\." and "-"$/],
    [tcp('a'.repeat(65), 6000), /^name must be 1-64 characters/],
    [tcp('x/y', 6000), /^name must be 1-64 characters/],
    [{ ...tcp('x', 6000), name: 5 as unknown as string }, /^name must be a string$/],
    [{ ...tcp('x', 6000), type: undefined }, /^type is required$/],
    [{ ...tcp('x', 6000), type: 'ftp' }, /^type must be one of: tcp, udp, http, https, stcp, xtcp, sudp, tcpmux$/],
    [tcp('x', 6000, { localIP: 'not a host' }), /^localIP must be an IPv4 or IPv6 address or a host name$/],
    [tcp('x', 6000, { localIP: '999.1.1.1' }), /^localIP must be an IPv4/],
    [tcp('x', 6000, { localPort: '0' }), /^localPort must be a port number from 1 to 65535$/],
    [tcp('x', 6000, { localPort: 65536 }), /^localPort must be a port number/],
    [tcp('x', 6000, { localPort: '22a' }), /^localPort must be a port number/],
    [tcp('x', 6000, { localPort: 2.5 }), /^localPort must be a port number/],
    [tcp('x', 6000, { localPort: undefined }), /^localPort is required$/],
    [tcp('x', '99999'), /^remotePort must be a port number from 1 to 65535$/],
    [tcp('x', ''), /^remotePort is required for tcp and udp proxies$/],
    [{ ...tcp('x', ''), type: 'udp' }, /^remotePort is required for tcp and udp proxies$/],
    [
      { name: 'w', type: 'http', localPort: 80, remotePort: 8080, subdomain: 'w' },
      /^remotePort is only used by tcp and udp proxies, not http$/,
    ],
    [{ name: 'w', type: 'https', localPort: 443 }, /^a https proxy needs customDomains or subdomain$/],
    [{ name: 'w', type: 'http', localPort: 80, customDomains: ['bad domain'] }, /^customDomains must hold host names/],
    [
      { name: 'w', type: 'http', localPort: 80, customDomains: 7 as unknown as string },
      /^customDomains must be an array of strings or a comma-separated string$/,
    ],
    [{ name: 'w', type: 'http', localPort: 80, subdomain: 'a.b' }, /^subdomain must be a single DNS label/],
    [
      tcp('x', 6000, { customDomains: ['a.example.com'] }),
      /^customDomains is only used by http, https and tcpmux proxies, not tcp$/,
    ],
    [tcp('x', 6000, { subdomain: 'x' }), /^subdomain is only used by http, https and tcpmux proxies, not tcp$/],
    [null as unknown as ProxyInput, /^proxyInfo must be an object$/],
  ];
  for (const [input, message] of cases) fails(t, () => config.addProxy(input), 400, message);
  t.deepEqual(config.proxies(), []);
});

test('addProxy: a duplicate name or remotePort is a 409', (t) => {
  const config = fresh();
  config.addProxy(tcp('ssh', 6000));
  fails(t, () => config.addProxy(tcp('ssh', 6001)), 409, /^Proxy ssh already exists$/);
  fails(t, () => config.addProxy(tcp('ssh2', '6000')), 409, /^remotePort 6000 is already used by proxy ssh$/);
  // tcp and udp ports are separate on the server.
  config.addProxy({ ...tcp('dns', 6000), type: 'udp' });
  fails(t, () => config.addProxy({ ...tcp('dns2', 6000), type: 'udp' }), 409, /already used by proxy dns$/);
  t.deepEqual(
    config.proxies().map((p) => p.name),
    ['ssh', 'dns'],
  );
});

test('modifyProxy changes given fields and keeps the rest, extra fields included', (t) => {
  const config = TunnelConfig.parse(CURRENT_SHAPE);
  const view = config.modifyProxy('ssh', { name: 'ssh', localPort: '2222', localIP: '', remotePort: '' });
  t.like(view, {
    name: 'ssh',
    type: 'tcp',
    localIP: '127.0.0.1',
    localPort: '2222',
    remotePort: '6000',
    enabled: true,
  });
  t.deepEqual(view.transport, { useEncryption: true, bandwidthLimit: '1MB' });
  const block = reparse(config).proxies[0];
  t.deepEqual(block, {
    name: 'ssh',
    type: 'tcp',
    localIP: '127.0.0.1',
    localPort: 2222,
    remotePort: 6000,
    someFutureField: [1, 2],
    transport: { useEncryption: true, bandwidthLimit: '1MB' },
    metadatas: { owner: 'alice' },
    annotations: { 'prefix/key': 'v' },
  });
  fails(t, () => config.modifyProxy('nope', { localPort: 1 }), 404, /^Proxy nope not found$/);
  fails(t, () => config.modifyProxy('ssh', { localPort: 0 }), 400, /^localPort must be a port number/);
});

test('modifyProxy renames with newName (or a different name), and follows the start list', (t) => {
  const config = TunnelConfig.parse(CURRENT_SHAPE);
  config.setCommon({ start: ['ssh', 'web'] });
  const view = config.modifyProxy('ssh', { name: 'ssh' }, 'ssh-main');
  t.is(view.name, 'ssh-main');
  t.deepEqual(
    config.proxies().map((p) => p.name),
    ['ssh-main', 'web', 'sock'],
  );
  t.deepEqual(reparse(config).start, ['ssh-main', 'web']);
  config.modifyProxy('web', { name: 'web2' });
  t.deepEqual(
    config.proxies().map((p) => p.name),
    ['ssh-main', 'web2', 'sock'],
  );
  fails(t, () => config.modifyProxy('web2', {}, 'sock'), 409, /^Proxy sock already exists$/);
  fails(t, () => config.modifyProxy('web2', {}, 'bad name'), 400, /^newName must be 1-64 characters/);
  fails(t, () => config.modifyProxy('ssh', {}, 'x'), 404, /^Proxy ssh not found$/);
});

test('modifyProxy checks remotePort conflicts, and keeping its own port is fine', (t) => {
  const config = fresh();
  config.addProxy(tcp('a', 6000));
  config.addProxy(tcp('b', 6001));
  fails(t, () => config.modifyProxy('b', { remotePort: 6000 }), 409, /^remotePort 6000 is already used by proxy a$/);
  t.is(config.modifyProxy('b', { remotePort: '6001', localPort: 23 }).localPort, '23');
  t.is(config.modifyProxy('b', { remotePort: 6002 }).remotePort, '6002');
});

test('modifyProxy to another type drops the fields the new type does not have', (t) => {
  const config = fresh();
  config.addProxy(tcp('a', 6000));
  fails(t, () => config.modifyProxy('a', { type: 'http' }), 400, /^a http proxy needs customDomains or subdomain$/);
  fails(
    t,
    () => config.modifyProxy('a', { type: 'http', remotePort: 6000, subdomain: 'a' }),
    400,
    /^remotePort is only used by tcp and udp/,
  );
  config.modifyProxy('a', { type: 'http', subdomain: 'a' });
  t.deepEqual(reparse(config).proxies, [
    { name: 'a', type: 'http', localIP: '127.0.0.1', localPort: 22, subdomain: 'a' },
  ]);
  fails(t, () => config.modifyProxy('a', { type: 'tcp' }), 400, /^remotePort is required for tcp and udp proxies$/);
  config.modifyProxy('a', { type: 'tcp', remotePort: 7000 });
  t.deepEqual(reparse(config).proxies, [
    { name: 'a', type: 'tcp', localIP: '127.0.0.1', localPort: 22, remotePort: 7000 },
  ]);
});

test('deleteProxy removes the block; an unknown one is a 404', (t) => {
  const config = TunnelConfig.parse(CURRENT_SHAPE);
  config.deleteProxy('web');
  t.deepEqual(
    config.proxies().map((p) => p.name),
    ['ssh', 'sock'],
  );
  fails(t, () => config.deleteProxy('web'), 404, /^Proxy web not found$/);
});

test('setProxyEnabled writes enabled = false, and removes the key when enabling', (t) => {
  const config = fresh();
  config.addProxy(tcp('ssh', 6000));
  t.false(config.setProxyEnabled('ssh', false).enabled);
  t.is(reparse(config).proxies[0].enabled, false);
  t.false(config.proxies()[0]!.enabled);
  t.true(config.setProxyEnabled('ssh', true).enabled);
  t.false('enabled' in reparse(config).proxies[0]);
  t.true(config.proxies()[0]!.enabled);
  fails(t, () => config.setProxyEnabled('nope', true), 404, /^Proxy nope not found$/);
  fails(t, () => config.setProxyEnabled('ssh', 'no' as unknown as boolean), 400, /^enabled must be true or false$/);
});

// ---- injection ----

test('values that try to break out of their TOML string are refused or stay inside it', (t) => {
  const config = fresh();
  const attempts: ProxyInput[] = [
    tcp('x"\n[[proxies]]\nname = "evil', 6000),
    tcp('x]]', 6000),
    tcp('x', 6000, { localIP: '127.0.0.1"\nremotePort = 1' }),
    tcp('x', 6000, { localIP: '127.0.0.1\n[[proxies]]' }),
    { name: 'w', type: 'http', localPort: 80, customDomains: ['a.com"]\n[[proxies]]\nname = "evil'] },
    { name: 'w', type: 'http', localPort: 80, subdomain: 'a"\nx = "y' },
  ];
  for (const input of attempts) t.throws(() => config.addProxy(input), { instanceOf: AppError });
  fails(t, () => config.setCommon({ metadatas: { 'a"]]\n[[proxies]]': 'x' } }), 400, /^metadatas entry names must be/);
  t.deepEqual(reparse(config).proxies, undefined);

  // What is allowed through is written by the serializer, so quotes and brackets stay inside the value.
  const sneaky = 'me" ]]\t [[proxies]] name = "evil';
  fails(t, () => config.setCommon({ user: sneaky }), 400, /control characters/);
  const oneLine = 'me" ] ]] [[proxies]] name = "evil" # \\';
  config.setCommon({ user: oneLine, 'auth.oidc.audience': '/tmp/a\'b"c]]' });
  const doc = reparse(config);
  t.is(doc.user, oneLine);
  t.is(doc.auth.oidc.audience, '/tmp/a\'b"c]]');
  t.is(doc.proxies, undefined);
  t.deepEqual(Object.keys(doc).sort(), ['auth', 'log', 'loginFailExit', 'serverAddr', 'serverPort', 'user']);
});

test('kept values with newlines and ]] are escaped when rewritten, never turned into blocks', (t) => {
  const payload = 'x"\n[[proxies]]\nname = "evil"\ntype = "tcp"\n';
  const config = TunnelConfig.parse(`
serverAddr = "a.example.com"
serverPort = 7000
note = ${JSON.stringify(payload)}

[[proxies]]
name = "ssh"
type = "tcp"
localPort = 22
remotePort = 6000
comment = ${JSON.stringify(payload)}
`);
  config.modifyProxy('ssh', { localPort: 23 });
  const doc = reparse(config);
  t.is(doc.note, payload);
  t.is(doc.proxies.length, 1);
  t.is(doc.proxies[0].comment, payload);
  t.deepEqual(
    config.proxies().map((p) => p.name),
    ['ssh'],
  );
});

test('template actions other than {{ .Envs.NAME }} are refused in every value we write, saying why', (t) => {
  const config = fresh();
  const why =
    /must not contain "\{\{" or "\}\}" other than \{\{ \.Envs\.NAME \}\} placeholders .*: frpc renders its config file as a Go template/;
  fails(t, () => config.setCommon({ 'auth.token': '{{ .Envs.my-home }}' }), 400, why);
  fails(t, () => config.setCommon({ 'auth.token': '{{ env "HOME" }}' }), 400, /^auth\.token must not contain/);
  fails(t, () => config.setCommon({ user: 'a}}b' }), 400, /^user must not contain/);
  fails(t, () => config.setCommon({ start: ['{{x'] }), 400, /^start must not contain/);
  fails(
    t,
    () => config.setCommon({ metadatas: { k: '{{ .Envs.X | printf "%s" }}' } }),
    400,
    /^metadatas\.k must not contain/,
  );
  fails(t, () => config.addProxy(tcp('{{x}}', 6000)), 400, /^name must not contain/);
  fails(t, () => config.addProxy(tcp('x', 6000, { localIP: '{{- .Envs.IP }}' })), 400, /^localIP must not contain/);
  fails(
    t,
    () => config.addProxy({ name: 'w', type: 'http', localPort: 80, customDomains: 'a.com,{{x}}' }),
    400,
    /^customDomains must not contain/,
  );
  fails(
    t,
    () => config.addProxy({ name: 'w', type: 'http', localPort: 80, subdomain: '}}' }),
    400,
    /^subdomain must not contain/,
  );
  fails(
    t,
    () => config.addProxy(tcp('x', 6000, { secretKey: '{{{ .Envs.A }}' })),
    400,
    /^secretKey must not contain|is only used/,
  );
  fails(
    t,
    () => config.addProxy({ name: 's', type: 'stcp', localPort: 22, secretKey: '{{{ .Envs.A }}' }),
    400,
    /^secretKey must not contain/,
  );
  config.addProxy(tcp('ok', 6000));
  fails(t, () => config.modifyProxy('ok', {}, '{{x}}'), 400, /^newName must not contain/);
  // tunnelward finds a proxy in frpc's status by its name, and picks its keys by its type: both are literal.
  fails(t, () => config.modifyProxy('ok', {}, '{{ .Envs.NAME }}'), 400, /^newName must be 1-64 characters/);
  fails(
    t,
    () => TunnelConfig.create({ serverAddr: '{{ .A }}', serverPort: 7000, authMethod: 'token' }),
    400,
    /^serverAddr must not contain/,
  );
  fails(t, () => config.addProxy({ name: 'p', type: '{{ .Envs.T }}', localPort: 1 }), 400, /^type must be one of/);
  fails(t, () => config.setCommon({ 'log.level': '{{ .Envs.LEVEL }}' }), 400, /^log\.level must be one of/);
  t.false(config.toString().includes('{{'));
});

test('{{ .Envs.NAME }} placeholders in secret fields are written as they are, and envPlaceholders lists the names', (t) => {
  const config = TunnelConfig.create(
    { serverAddr: 'frp.example.com', serverPort: 7000, authMethod: 'token' },
    { 'auth.token': 'tk-{{.Envs.FRP_TOKEN}}-{{  .Envs.FRP_SUFFIX  }}' },
  );
  config.addProxy({ name: 'pg', type: 'stcp', localPort: 5432, secretKey: '{{ .Envs.PG_SK }}' });
  config.addProxy({
    name: 'web',
    type: 'http',
    localPort: 80,
    customDomains: ['web.example.com'],
    httpPassword: '{{ .Envs._PW }}',
    plugin: { type: 'http_proxy', httpPassword: '{{ .Envs.PLUGIN_PW }}' },
  });
  const doc = reparse(config);
  t.is(doc.auth.token, 'tk-{{.Envs.FRP_TOKEN}}-{{  .Envs.FRP_SUFFIX  }}');
  t.like(doc.proxies[0], { secretKey: '{{ .Envs.PG_SK }}' });
  t.like(doc.proxies[1], { httpPassword: '{{ .Envs._PW }}', plugin: { httpPassword: '{{ .Envs.PLUGIN_PW }}' } });
  // In the order of the file: plain top-level keys come before the [auth] table.
  t.deepEqual(config.envPlaceholders(), ['FRP_TOKEN', 'FRP_SUFFIX', 'PG_SK', '_PW', 'PLUGIN_PW']);
  t.deepEqual(
    envPlaceholders('a = "{{ .Envs.B }}"\nb = "{{ .Envs.B }}{{.Envs.C9}}"\nc = "{{ .Envs.lower }} {{ .Envs.9X }}"\n'),
    ['B', 'C9', 'lower'],
  );
  t.deepEqual(envPlaceholders('serverAddr = "x"\n'), []);
});

test('secretValues: each secret as frpc reads it (placeholders filled), wherever the other placeholders are', (t) => {
  const config = TunnelConfig.parse(
    [
      'serverAddr = "{{ .Envs.HOST }}"',
      'serverPort = 7000',
      'metadatas = { owner = "{{ .Envs.OWNER }}" }',
      '[auth]',
      'token = "t-{{ .Envs.TOKEN }}-{{ .Envs.MISSING }}"',
      '[webServer]',
      'password = "admin-pw-1"',
      '[[proxies]]',
      'name = "s"',
      'type = "stcp"',
      'localPort = 22',
      'localIP = "{{ .Envs.IP }}"',
      'secretKey = "sk-literal"',
      '[[visitors]]',
      'name = "v"',
      'type = "stcp"',
      'serverName = "s"',
      'bindPort = 9000',
      'secretKey = "{{ .Envs.VK }}"',
      '',
    ].join('\n'),
  );
  t.deepEqual(config.secretValues({ TOKEN: 'abc', VK: 'visitor-key', HOST: 'h' }).sort(), [
    'admin-pw-1',
    'sk-literal',
    't-abc-<no value>',
    'visitor-key',
  ]);
  t.deepEqual(config.envPlaceholders(), ['HOST', 'OWNER', 'TOKEN', 'MISSING', 'IP', 'VK']);
});

test("onlyPlaceholders reads a value as Go's lexer would", (t) => {
  for (const ok of [
    '',
    'plain',
    '{{ .Envs.A }}',
    '{{.Envs.A_1}}',
    '{{ .Envs.frp_token }}',
    '{{ .Envs._a9 }}',
    'x{{ .Envs.A }}y{{ .Envs.B }}',
    '{ .Envs.A }',
    '}{',
    'a}b{c',
    '{{ .Envs.A }}}',
  ]) {
    t.true(onlyPlaceholders(ok), ok);
  }
  for (const bad of [
    '{{',
    '}}',
    '{{ .Envs.a-b }}',
    '{{ .Envs.é }}',
    '{{ .Envs.9A }}',
    '{{ .Envs.A}} }}',
    '{{{ .Envs.A }}',
    '{{- .Envs.A }}',
    '{{ .Envs.A -}}',
    '{{\t.Envs.A }}',
    '{{ .Envs }}',
    '{{ .Envs.A.B }}',
    '{{/* c */}}',
    '{{ .Envs.A | html }}',
  ]) {
    t.false(onlyPlaceholders(bad), bad);
  }
});

// ---- proxies: every key frpc knows for the type ----

test('every proxy type and plugin round-trips: create, file, list, modify one field, file', (t) => {
  const config = fresh();
  for (const example of PROXY_EXAMPLES) {
    const name = example.input.name;
    const view = config.addProxy(example.input);
    t.deepEqual(view, expectedView(example.file, example.secrets), `${name}: create reply`);
    t.deepEqual(blockNamed(config, name), example.file, `${name}: file after create`);
    t.deepEqual(
      config.proxies().find((p) => p.name === name),
      expectedView(example.file, example.secrets),
      `${name}: list`,
    );
    config.modifyProxy(name, { name, ...example.modify });
    t.deepEqual(blockNamed(config, name), merged(example.file, example.modified), `${name}: file after modify`);
  }
  const listed = JSON.stringify(config.proxies());
  for (const example of PROXY_EXAMPLES) {
    for (const path of example.secrets) {
      const secret = String(path.split('.').reduce((table: Table, key) => table[key], example.file));
      t.false(listed.includes(secret), `${example.input.name}: ${path} is masked in the list`);
    }
  }
  t.is(TunnelConfig.parse(config.toString()).toString(), config.toString(), 'reading the file back changes nothing');
});

test('the stcp proxy keeps its secretKey, allowUsers and transport settings', (t) => {
  const config = fresh();
  config.addProxy(POSTGRES.input);
  config.modifyProxy('postgres', {
    name: 'postgres',
    type: 'stcp',
    localIP: '127.0.0.1',
    localPort: '5433',
    remotePort: '',
  });
  t.deepEqual(reparse(config).proxies[0], { ...POSTGRES.file, localPort: 5433 });
});

test('unknown proxy keys are refused by their dotted name, all at once, and nothing changes', (t) => {
  const config = fresh();
  config.addProxy(tcp('ssh', 6000));
  const before = config.toString();
  fails(t, () => config.addProxy(tcp('x', 6001, { colour: 'red' })), 400, /^Unknown proxy key: colour$/);
  fails(
    t,
    () =>
      config.addProxy(
        tcp('x', 6001, {
          transport: { useEncryption: true, bogus: 1 },
          'healthCheck.nope': 2,
          'odd key"': 3,
        } as ProxyInput),
      ),
    400,
    /^Unknown proxy keys: transport\.bogus, healthCheck\.nope, "odd key\\""$/,
  );
  fails(t, () => config.modifyProxy('ssh', { 'plugin.nonsense': 'x' }), 400, /^Unknown proxy key: plugin\.nonsense$/);
  fails(t, () => config.modifyProxy('ssh', { localPort: 23, role: 'server' }), 400, /^Unknown proxy key: role$/);
  fails(
    t,
    () => config.modifyProxy('ssh', { __proto__x: 1, constructor: 1 } as ProxyInput),
    400,
    /^Unknown proxy keys: __proto__x, constructor$/,
  );
  t.is(config.toString(), before);
});

test('keys of another proxy type or plugin are refused, saying whose they are', (t) => {
  const config = fresh();
  const cases: Array<[ProxyInput, RegExp]> = [
    [tcp('x', 6001, { secretKey: 'k' }), /^secretKey is only used by stcp, xtcp and sudp proxies, not tcp$/],
    [
      { name: 'x', type: 'stcp', localPort: 22, locations: ['/'] },
      /^locations is only used by http proxies, not stcp$/,
    ],
    [
      { name: 'x', type: 'https', localPort: 443, subdomain: 'x', httpUser: 'u' },
      /^httpUser is only used by http and tcpmux proxies, not https$/,
    ],
    [
      { name: 'x', type: 'http', subdomain: 'x', 'natTraversal.disableAssistedAddrs': true, localPort: 1 },
      /^natTraversal\.disableAssistedAddrs is only used by xtcp proxies, not http$/,
    ],
    [tcp('x', 6001, { plugin: { unixPath: '/x' } }), /^plugin\.unixPath is a plugin option: set plugin\.type too$/],
    [
      tcp('x', 6001, { plugin: { type: 'socks5', unixPath: '/x' } }),
      /^plugin\.unixPath is not an option of the socks5 plugin \(only of unix_domain_socket\)$/,
    ],
    [
      tcp('x', 6001, { plugin: { type: 'http2http', localAddr: 'a:1', crtPath: '/c' } }),
      /^plugin\.crtPath is not an option of the http2http plugin \(only of https2http, https2https and tls2raw\)$/,
    ],
    [
      tcp('x', 6001, { plugin: { type: 'ftp_proxy' } }),
      /^plugin\.type must be one of: unix_domain_socket, http_proxy, socks5, static_file, https2http, https2https, http2https, http2http, tls2raw$/,
    ],
  ];
  for (const [input, message] of cases) fails(t, () => config.addProxy(input), 400, message);
  t.deepEqual(config.proxies(), []);
});

test('wrong types are refused by the dotted name, every one in one message', (t) => {
  const config = fresh();
  const cases: Array<[ProxyInput, RegExp]> = [
    [tcp('x', 6001, { 'transport.useEncryption': 'yes' }), /^transport\.useEncryption must be true or false$/],
    [tcp('x', 6001, { transport: { useCompression: 1 } }), /^transport\.useCompression must be true or false$/],
    [
      tcp('x', 6001, { transport: { bandwidthLimit: '1GB' } }),
      /^transport\.bandwidthLimit must be a number followed by MB or KB/,
    ],
    [
      tcp('x', 6001, { 'transport.bandwidthLimitMode': 'both' }),
      /^transport\.bandwidthLimitMode must be one of: client, server$/,
    ],
    [
      tcp('x', 6001, { 'transport.proxyProtocolVersion': 'v3' }),
      /^transport\.proxyProtocolVersion must be one of: v1, v2$/,
    ],
    [
      tcp('x', 6001, { healthCheck: { type: 'tcp', timeoutSeconds: 'soon' } }),
      /^healthCheck\.timeoutSeconds must be an integer$/,
    ],
    [
      tcp('x', 6001, { 'healthCheck.httpHeaders': { Host: 'a' } }),
      /^healthCheck\.httpHeaders must be an array of \{ name, value \} objects$/,
    ],
    [
      tcp('x', 6001, { 'healthCheck.httpHeaders': [{ name: 'Host', value: 'a', extra: 1 }] }),
      /^healthCheck\.httpHeaders\[0\] may hold only name and value$/,
    ],
    [tcp('x', 6001, { metadatas: { owner: 7 } }), /^metadatas\.owner must be a string$/],
    [tcp('x', 6001, { 'metadatas.owner': true }), /^metadatas\.owner must be a string$/],
    [tcp('x', 6001, { annotations: { 'bad key!': 'v' } }), /^annotations entry names must be/],
    [tcp('x', 6001, { enabled: 'off' }), /^enabled must be true or false$/],
    [tcp('x', 6001, { 'loadBalancer.groupKey': 5 }), /^loadBalancer\.groupKey must be a string$/],
    [
      { name: 'x', type: 'stcp', localPort: 22, allowUsers: 7 },
      /^allowUsers must be an array of strings or a comma-separated string$/,
    ],
    [{ name: 'x', type: 'stcp', localPort: 22, secretKey: ['k'] }, /^secretKey must be a string$/],
    [
      { name: 'x', type: 'tcpmux', localPort: 22, subdomain: 'x', multiplexer: 'other' },
      /^multiplexer must be "httpconnect"$/,
    ],
    [
      { name: 'x', type: 'http', localPort: 80, subdomain: 'x', requestHeaders: { set: 'x' } },
      /^requestHeaders\.set must be an object of names to strings$/,
    ],
    [
      tcp('x', 6001, { plugin: { type: 'https2http', localAddr: 'a:1', enableHTTP2: 'maybe' } }),
      /^plugin\.enableHTTP2 must be true or false$/,
    ],
    [tcp('x', 6001, { plugin: { type: 'socks5', password: 12345 } }), /^plugin\.password must be a string$/],
  ];
  for (const [input, message] of cases) fails(t, () => config.addProxy(input), 400, message);
  fails(
    t,
    () =>
      config.addProxy(
        tcp('x', 6001, { 'transport.useEncryption': 'yes', localPort: 'x', 'healthCheck.maxFailed': 1.5 }),
      ),
    400,
    /^localPort must be a port number from 1 to 65535; transport\.useEncryption must be true or false; healthCheck\.maxFailed must be an integer$/,
  );
  t.deepEqual(config.proxies(), []);
});

test('frpc validation rules: plugin options it requires, the http health check path, no localPort with a plugin', (t) => {
  const config = fresh();
  fails(
    t,
    () => config.addProxy(tcp('x', 6001, { localPort: undefined, plugin: { type: 'unix_domain_socket' } })),
    400,
    /^plugin\.unixPath is required by the unix_domain_socket plugin$/,
  );
  fails(
    t,
    () => config.addProxy(tcp('x', 6001, { localPort: undefined, plugin: { type: 'static_file' } })),
    400,
    /^plugin\.localPath is required by the static_file plugin$/,
  );
  for (const type of ['https2http', 'https2https', 'http2https', 'http2http', 'tls2raw']) {
    fails(
      t,
      () => config.addProxy(tcp('x', 6001, { localPort: undefined, plugin: { type } })),
      400,
      new RegExp(`^plugin\\.localAddr is required by the ${type} plugin$`),
    );
  }
  fails(
    t,
    () => config.addProxy(tcp('x', 6001, { healthCheck: { type: 'http' } })),
    400,
    /^healthCheck\.path is required for an http health check$/,
  );
  const socks = config.addProxy({ name: 'socks', type: 'tcp', remotePort: 6002, plugin: { type: 'socks5' } });
  t.is(socks.localPort, '');
  t.deepEqual(
    reparse(config).proxies[0],
    { name: 'socks', type: 'tcp', remotePort: 6002, plugin: { type: 'socks5' } },
    'no localIP either',
  );
});

test('nested and dotted keys are the same key; giving both, or a map and one of its entries, is refused', (t) => {
  const nested = fresh();
  const dotted = fresh();
  nested.addProxy(
    tcp('a', 6001, { transport: { useEncryption: true }, healthCheck: { type: 'tcp' }, metadatas: { k: 'v' } }),
  );
  dotted.addProxy(tcp('a', 6001, { 'transport.useEncryption': true, 'healthCheck.type': 'tcp', 'metadatas.k': 'v' }));
  t.is(dotted.toString(), nested.toString());
  fails(
    t,
    () => nested.addProxy(tcp('b', 6002, { transport: { useEncryption: true }, 'transport.useEncryption': false })),
    400,
    /both set transport\.useEncryption$/,
  );
  fails(
    t,
    () => nested.addProxy(tcp('b', 6002, { local_port: 22 })),
    400,
    /^local_port and localPort both set localPort$/,
  );
  fails(
    t,
    () => nested.modifyProxy('a', { metadatas: { x: 'y' }, 'metadatas.k': 'w' }),
    400,
    /^metadatas\.k and metadatas both set metadatas\.k$/,
  );
  fails(
    t,
    () => nested.modifyProxy('a', { 'metadatas.k': 'w', metadatas: { x: 'y' } }),
    400,
    /^metadatas and metadatas\.k both set metadatas$/,
  );
});

test('modify keeps every key it is not given; null removes a key, an entry or a whole table', (t) => {
  const config = fresh();
  config.addProxy({
    name: 'web',
    type: 'http',
    localPort: 80,
    subdomain: 'web',
    httpUser: 'u',
    httpPassword: 'pw-secret',
    transport: { useEncryption: true, useCompression: true },
    metadatas: { a: '1', b: '2' },
    healthCheck: { type: 'http', path: '/h' },
  });
  config.modifyProxy('web', { httpUser: null, 'transport.useCompression': null, 'metadatas.a': null });
  t.deepEqual(reparse(config).proxies[0], {
    name: 'web',
    type: 'http',
    localIP: '127.0.0.1',
    localPort: 80,
    subdomain: 'web',
    httpPassword: 'pw-secret',
    transport: { useEncryption: true },
    metadatas: { b: '2' },
    healthCheck: { type: 'http', path: '/h' },
  });
  config.modifyProxy('web', { transport: null, healthCheck: null, metadatas: null });
  t.deepEqual(reparse(config).proxies[0], {
    name: 'web',
    type: 'http',
    localIP: '127.0.0.1',
    localPort: 80,
    subdomain: 'web',
    httpPassword: 'pw-secret',
  });
  fails(t, () => config.modifyProxy('web', { name: null }), 400, /^name cannot be removed$/);
  fails(t, () => config.modifyProxy('web', { type: null }), 400, /^type cannot be removed$/);
  fails(t, () => config.modifyProxy('web', { localPort: null }), 400, /^localPort is required$/);
  fails(
    t,
    () => config.modifyProxy('web', { subdomain: null }),
    400,
    /^a http proxy needs customDomains or subdomain$/,
  );
  config.modifyProxy('web', { remotePort: null, secretKey: null }); // keys the type does not have: nothing to remove
  t.is(reparse(config).proxies[0].httpPassword, 'pw-secret');
});

test('a plugin: null or plugin.type: null removes the plugin; another plugin type drops the options it lacks', (t) => {
  const config = fresh();
  config.addProxy({
    name: 'p',
    type: 'tcp',
    remotePort: 6001,
    plugin: { type: 'https2http', localAddr: '127.0.0.1:80', crtPath: '/c', hostHeaderRewrite: 'h' },
  });
  config.modifyProxy('p', { plugin: { type: 'http2http' } });
  t.deepEqual(reparse(config).proxies[0].plugin, {
    type: 'http2http',
    localAddr: '127.0.0.1:80',
    hostHeaderRewrite: 'h',
  });
  fails(t, () => config.modifyProxy('p', { plugin: null }), 400, /^localPort is required$/);
  config.modifyProxy('p', { plugin: null, localPort: 8080 });
  t.false('plugin' in reparse(config).proxies[0]);
  config.modifyProxy('p', { 'plugin.type': 'socks5', 'plugin.username': 'u' });
  config.modifyProxy('p', { 'plugin.type': null });
  t.false('plugin' in reparse(config).proxies[0]);
});

test('a type change drops the keys of the old type, keeps the common ones and the unknown ones', (t) => {
  const config = TunnelConfig.parse(`${CURRENT_SHAPE.slice(0, CURRENT_SHAPE.indexOf('[[proxies]]'))}
[[proxies]]
name = "pg"
type = "stcp"
localPort = 5432
secretKey = "sk"
allowUsers = ["*"]
transport.useEncryption = true
futureKey = "kept"
`);
  config.modifyProxy('pg', { type: 'xtcp' });
  t.like(reparse(config).proxies[0], { type: 'xtcp', secretKey: 'sk', allowUsers: ['*'] });
  config.modifyProxy('pg', { type: 'tcp', remotePort: 6543 });
  t.deepEqual(reparse(config).proxies[0], {
    name: 'pg',
    type: 'tcp',
    localPort: 5432,
    remotePort: 6543,
    transport: { useEncryption: true },
    futureKey: 'kept',
  });
});

test('a secret sent back masked keeps its value on modify, and is refused on create', (t) => {
  const config = fresh();
  config.addProxy({ name: 'pg', type: 'stcp', localPort: 5432, secretKey: 'pg-visitor-secret' });
  const listed = config.proxies()[0]!;
  t.is(listed.secretKey, '********');
  config.modifyProxy('pg', { ...listed, localPort: '5433' });
  t.like(reparse(config).proxies[0], { secretKey: 'pg-visitor-secret', localPort: 5433 });
  fails(
    t,
    () => config.addProxy({ name: 'pg2', type: 'stcp', localPort: 5432, secretKey: '********' }),
    400,
    /^secretKey is the mask the list shows in place of a secret/,
  );
  fails(
    t,
    () => config.modifyProxy('pg', { 'loadBalancer.groupKey': '********' }),
    400,
    /^loadBalancer\.groupKey is the mask/,
  );
});

test('proxy messages never show a secret value', (t) => {
  const config = fresh();
  for (const value of [`{{ .X }}${SECRET}`, `${SECRET}\n`, [SECRET], { x: SECRET }, 12345]) {
    for (const input of [
      { name: 's', type: 'stcp', localPort: 22, secretKey: value },
      { name: 'h', type: 'http', localPort: 80, subdomain: 'h', httpPassword: value },
      { name: 'p', type: 'tcp', remotePort: 6001, plugin: { type: 'socks5', password: value } },
      tcp('t', 6002, { secretKey: value }),
    ]) {
      const err = t.throws(() => config.addProxy(input as ProxyInput), { instanceOf: AppError });
      t.is(err.status, 400);
      t.false(err.message.includes(SECRET), err.message);
    }
  }
});

test('visitors stay exactly as they were through every edit', (t) => {
  const config = TunnelConfig.parse(CURRENT_SHAPE + VISITORS_TOML);
  const visitors = reparse(config).visitors;
  t.is(visitors.length, 3);
  const textOf = (s: string) => s.slice(s.indexOf('[[visitors]]'));
  const before = textOf(config.toString());
  config.addProxy(tcp('new', 6100, { transport: { useEncryption: true } }));
  config.modifyProxy('ssh', { localPort: 2200, 'transport.useCompression': true });
  config.modifyProxy('web', {}, 'web-renamed');
  config.setProxyEnabled('new', false);
  config.deleteProxy('sock');
  config.setCommon({ 'auth.token': 'rotated', 'log.level': 'debug' });
  t.deepEqual(reparse(config).visitors, visitors);
  t.true(textOf(config.toString()).startsWith(before), config.toString());
  fails(t, () => config.setCommon({ visitors: [] }), 400, /^visitors cannot be changed/);
});

test('log.to is refused unless it is console, saying why; a file with another one is put back on the console', (t) => {
  const config = fresh();
  const why = /^log\.to must be "console": tunnelward captures the tunnel's console output, rotates it and streams it/;
  fails(t, () => config.setCommon({ 'log.to': '/var/log/frpc.log' }), 400, why);
  fails(t, () => config.setCommon({ log: { to: 'frpc.log' } }), 400, /^log\.to must be "console"/);
  fails(t, () => config.setCommon({ log_file: '/var/log/frpc.log' }), 400, /^log_file must be "console"/);
  fails(t, () => config.setCommon({ 'log.to': '{{ .Envs.LOG_FILE }}' }), 400, /^log\.to must be "console"/);
  fails(
    t,
    () =>
      TunnelConfig.create(
        { serverAddr: 'a.example.com', serverPort: 7000, authMethod: 'token' },
        { 'log.to': '/tmp/x.log' },
      ),
    400,
    why,
  );
  config.setCommon({ 'log.to': 'console', 'log.maxDays': 3 });
  t.deepEqual(reparse(config).log, { disablePrintColor: true, to: 'console', maxDays: 3 });
  config.setCommon({ 'log.to': null });
  t.false('to' in reparse(config).log);

  const existing = TunnelConfig.parse(
    'serverAddr = "a.example.com"\nserverPort = 7000\nlog.to = "/var/log/frpc.log"\nlog.level = "warn"\n',
  );
  t.deepEqual(reparse(existing).log, { to: 'console', level: 'warn' });
  t.deepEqual(reparse(TunnelConfig.parse('serverAddr = "a"\nlog.to = "console"\n')).log, { to: 'console' });
});

// ---- files ----

test("write is atomic with mode 0600 for a tunnel run as tunnelward's own user; read gives back the same config", async (t) => {
  const me = currentOsUser().name;
  const dir = await mkdtemp(join(tmpdir(), 'tunnel-config-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'tunnel_1.toml');
  const config = TunnelConfig.create(
    { serverAddr: 'frp.example.com', serverPort: 7000, authMethod: 'token' },
    { 'auth.token': SECRET },
  );
  config.addProxy(tcp('ssh', 6000));
  await writeTunnelConfig(path, config, me);
  t.is((await stat(path)).mode & 0o777, 0o600);
  t.deepEqual(await readdir(dir), ['tunnel_1.toml'], 'no temp file left behind');
  const read = await readTunnelConfig(path);
  t.is(read.toString(), config.toString());

  // Rewriting over a looser file still leaves 0600.
  await writeFile(path, OLD_SHAPE, { mode: 0o644 });
  await writeTunnelConfig(path, await readTunnelConfig(path), me);
  t.is((await stat(path)).mode & 0o777, 0o600);
  t.false((await readFile(path, 'utf8')).includes('[common]'));

  // Written by root for a tunnel run as another user: root's file, readable by that user alone.
  if (process.getuid?.() !== 0) return;
  await writeTunnelConfig(path, config, 'nobody');
  t.deepEqual(await fileAccess(path), READABLE_BY_NOBODY);
  t.deepEqual(await readdir(dir), ['tunnel_1.toml'], 'no temp file left behind');
});

test('reading a missing file is a clear 409: the instance is there, its file is not', async (t) => {
  const path = join(tmpdir(), 'tunnel-config-missing', 'nope.toml');
  const err = await t.throwsAsync(readTunnelConfig(path), { instanceOf: AppError });
  t.is(err.status, 409);
  t.is(
    err.message,
    `the config file ${path} is missing (removed outside tunnelward): restore it, or delete the instance`,
  );
});

test('the admin endpoint: only tunnelward writes webServer, on loopback; a file an operator set is read as it is', (t) => {
  const config = fresh();
  t.is(config.adminEndpoint(), undefined);
  fails(t, () => config.setCommon({ webServer: { port: 7400 } }), 400, /webServer is managed by tunnelward/);
  config.setAdminEndpoint(45123, 'tunnelward', 'pw-secret');
  t.deepEqual(reparse(config).webServer, { addr: '127.0.0.1', port: 45123, user: 'tunnelward', password: 'pw-secret' });
  t.deepEqual(config.adminEndpoint(), { host: '127.0.0.1', port: 45123, user: 'tunnelward', password: 'pw-secret' });
  const theirs = TunnelConfig.parse(
    'serverAddr = "a.example"\nserverPort = 7000\n[webServer]\naddr = "0.0.0.0"\nport = 7400\nuser = "admin"\npassword = "x"\n',
  );
  t.deepEqual(theirs.adminEndpoint(), { host: '127.0.0.1', port: 7400, user: 'admin', password: 'x' });
});

test('replacedBy: the whole file checked as every edit is; masked secrets keep their values, webServer stays ours', (t) => {
  const current = TunnelConfig.create(
    { serverAddr: 'frp.example.com', serverPort: 7000, authMethod: 'token' },
    {
      'auth.token': SECRET,
    },
  );
  current.addProxy({
    name: 'web',
    type: 'http',
    localPort: '80',
    customDomains: ['a.example.com'],
    httpPassword: 'pw1',
  } as ProxyInput);
  current.setAdminEndpoint(7400, 'tunnelward', 'admin-pass');
  const masked = current.exportText(true);
  t.false(masked.includes(SECRET));

  // Edited from the masked export: a key changed, a proxy added, a webServer of the user's own.
  const edited = `webServer.port = 1\n${masked.replace('serverPort = 7000', 'serverPort = 7001')}\n[[proxies]]\nname = "ssh"\ntype = "tcp"\nlocalPort = 22\nremotePort = 6022\n`;
  const { config, notes } = current.replacedBy(edited);
  const file = parse(config.toString()) as Table;
  t.is(file.serverPort, 7001);
  t.is(file.auth.token, SECRET, 'the masked token keeps its value');
  t.is(file.proxies[0].httpPassword, 'pw1', "the masked proxy's password keeps its value");
  t.like(file.webServer, { port: 7400, password: 'admin-pass' });
  t.is(notes.length, 1);
  t.regex(notes[0]!, /webServer is tunnelward's own admin endpoint/);
  t.deepEqual(config.adminEndpoint(), current.adminEndpoint());
  t.not(config.version(), current.version());
  t.false(config.sameSettingsAs(current), 'serverPort changed');
  t.is(current.replacedBy(current.exportText(false)).config.version(), current.version(), 'the export is no change');

  // Every problem in one 400; a mask with nothing behind it is one.
  const bad = `bogus = 1\n${masked}[[proxies]]\nname = "x"\ntype = "tcp"\nlocalPort = "no"\nsecretKey = "********"\n`;
  const err = t.throws(() => current.replacedBy(bad), { instanceOf: AppError });
  t.is(err?.status, 400);
  t.regex(err!.message, /Unknown config key: bogus/);
  t.regex(err!.message, /proxies\[1\]\.secretKey is the mask/);
  t.regex(err!.message, /proxies\[1\] \(name x\): /);
  t.throws(() => current.replacedBy('serverAddr = '), { message: /The edited file is not valid TOML/ });

  // The start-up policy: a file without loginFailExit gets false (and says so); the operator's own choice stays.
  const without = current.replacedBy(current.exportText(false).replace('loginFailExit = false\n', ''));
  t.is((parse(without.config.toString()) as Table).loginFailExit, false);
  t.true(without.notes.some((n) => /^loginFailExit = false was added/.test(n)));
  const chosen = current.replacedBy(current.exportText(false).replace('loginFailExit = false', 'loginFailExit = true'));
  t.is((parse(chosen.config.toString()) as Table).loginFailExit, true);
  t.deepEqual(chosen.notes, []);
});

test('an unknown key names the key it was likely meant as: remotPort, auth.tokn, serverAdr', (t) => {
  const config = TunnelConfig.create({ serverAddr: '127.0.0.1', serverPort: '7000', authMethod: 'token' });
  fails(
    t,
    () => config.addProxy({ name: 'x', type: 'tcp', localPort: '22', remotPort: '6000' } as never),
    400,
    /^Unknown proxy key: remotPort \(did you mean remotePort\?\)$/,
  );
  fails(
    t,
    () => config.setCommon({ 'auth.tokn': 'x' }),
    400,
    /^Unknown config key: auth\.tokn \(did you mean auth\.token\?\)$/,
  );
  fails(t, () => config.setCommon({ serverAdr: 'x' }), 400, /did you mean serverAddr\?/);
});

test('exportTextBeside: a secret that changed, or is new, shows as changed; one as it was, as the mask; never a value', (t) => {
  const file = (token: string, keys: Record<string, string>) =>
    [
      'serverAddr = "127.0.0.1"',
      'serverPort = 7000',
      '[auth]',
      `token = "${token}"`,
      ...Object.entries(keys).flatMap(([name, key]) => [
        '[[proxies]]',
        `name = "${name}"`,
        'type = "stcp"',
        'localPort = 22',
        `secretKey = "${key}"`,
      ]),
      '',
    ].join('\n');
  const before = TunnelConfig.parse(file('old-token', { a: 'key-a', b: 'key-b' }));
  // The proxies in another order: each is found by its name. Proxy b's key changed, c is new.
  const after = TunnelConfig.parse(file('new-token', { b: 'key-b2', a: 'key-a', c: 'key-c' }));
  const text = after.exportTextBeside(before);
  const shown = parse(text) as { auth: { token: string }; proxies: Array<{ name: string; secretKey: string }> };
  t.is(shown.auth.token, '******** (new value)');
  t.deepEqual(
    shown.proxies.map((p) => [p.name, p.secretKey]),
    [
      ['b', '******** (new value)'],
      ['a', '********'],
      ['c', '******** (new value)'],
    ],
  );
  t.false(/token-|key-/.test(text), text);
  t.is(before.exportTextBeside(before), before.exportText(true), 'nothing changed: as exportText masks it');
});
