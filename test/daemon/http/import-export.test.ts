import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { parse } from 'smol-toml';
import { parse as parseYaml } from 'yaml';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { dispose, startDaemon, type Daemon } from '../../helpers/daemon.js';
import { createInstance, frpcVerify, instanceSettings } from '../../helpers/instances.js';

type Tree = Record<string, any>;

const CONFIGS = join(PACKAGE_ROOT, 'test', 'fixtures', 'configs');
const SECRET = 'n0t-for-any-message-9f3k';
/** Every secret value of the sample files: none may reach a reply message or the daemon's log. */
const FILE_SECRETS = [
  'current-toml-s3cret-token',
  'current-webui-password',
  'current-http-password',
  'current-stcp-secret',
  'current-plugin-password',
  'current-xtcp-secret',
  'legacy-ini-s3cret-token',
  'legacy-admin-password',
  'legacy-http-password',
  'legacy-xtcp-secret',
  'legacy-socks-password',
  'yaml-s3cret-token',
  'yaml-http-password',
  'yaml-stcp-secret',
  'json-s3cret-token',
  'json-xtcp-secret',
  'json-sudp-secret',
];

let daemon: Daemon;
let root: string;
let admin: string;
let visitor: string;
test.before(async () => {
  daemon = await startDaemon({ settingsToml: instanceSettings() });
  root = await daemon.login();
  admin = (await daemon.userWithToken(root, 'ie_admin', 'admin')).token;
  visitor = (await daemon.userWithToken(root, 'ie_visitor', 'visitor')).token;
});
test.after.always(async () => {
  if (daemon) await dispose(daemon);
});

const sample = (file: string) => readFile(join(CONFIGS, file), 'utf8');
const importConfig = (body: Tree, token = root) => daemon.post('/tunnelAct/instanceMgr/import', body, { token });
const exportConfig = (id: number, token = root) =>
  daemon.get(`/tunnelAct/instanceMgr/export?instanceID=${id}`, { token });
const remove = (id: number) =>
  daemon.post('/tunnelAct/instanceMgr/delete', { instanceID: String(id) }, { token: root });
const readToml = async (path: string): Promise<Tree> => parse(await readFile(path, 'utf8')) as Tree;
const instanceFiles = () => readdir(join(daemon.dataDir, 'instances')).catch(() => [] as string[]);
const instanceNames = async () =>
  ((await daemon.get('/tunnelAct/instanceMgr/list', { token: root })).body.data as Tree[]).map((i) => i.name).sort();

function withoutWebServer(file: Tree): Tree {
  const { webServer: _ours, ...rest } = file;
  return rest;
}

/** Every key name in a parsed document, at every depth. */
function allKeys(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) allKeys(item, out);
  else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      out.push(key);
      allKeys(item, out);
    }
  }
  return out;
}

/** What the legacy INI sample must become in frpc's current format (webServer aside). */
const LEGACY_AS_CURRENT: Tree = {
  serverAddr: 'frp-legacy.example.com',
  serverPort: 7000,
  loginFailExit: false,
  auth: { token: 'legacy-ini-s3cret-token', additionalScopes: ['HeartBeats'] },
  transport: { poolCount: 2, tls: { enable: true, serverName: 'frp-legacy.example.com' } },
  log: { to: 'console', level: 'debug', maxDays: 3, disablePrintColor: true },
  metadatas: { region: 'eu-west', team: 'platform' },
  proxies: [
    {
      name: 'ssh',
      type: 'tcp',
      localIP: '127.0.0.1',
      localPort: 22,
      remotePort: 7022,
      transport: { useEncryption: true, useCompression: true },
    },
    { name: 'game', type: 'udp', localIP: '127.0.0.1', localPort: 27015, remotePort: 27015 },
    {
      name: 'web',
      type: 'http',
      localIP: '127.0.0.1',
      localPort: 80,
      customDomains: ['app.example.org', 'www.example.org'],
      locations: ['/', '/static'],
      httpUser: 'admin',
      httpPassword: 'legacy-http-password',
      requestHeaders: { set: { 'X-Forwarded-Proto': 'https' } },
      metadatas: { owner: 'web-team' },
    },
    { name: 'tls-site', type: 'https', localIP: '127.0.0.1', localPort: 443, subdomain: 'secure' },
    { name: 'vnc', type: 'xtcp', localIP: '127.0.0.1', localPort: 5900, secretKey: 'legacy-xtcp-secret' },
    {
      name: 'socks',
      type: 'tcp',
      remotePort: 7080,
      plugin: { type: 'socks5', username: 'proxyuser', password: 'legacy-socks-password' },
    },
  ],
  visitors: [
    {
      name: 'vnc_visitor',
      type: 'xtcp',
      serverName: 'vnc',
      secretKey: 'legacy-xtcp-secret',
      bindAddr: '127.0.0.1',
      bindPort: 15900,
    },
  ],
};

/** Each sample, what its file must hold once imported (webServer aside), and what it counts. */
const SAMPLES: Array<{
  file: string;
  format: string;
  proxies: number;
  visitors: number;
  expected: () => Promise<Tree>;
  ownWebServer: boolean;
}> = [
  {
    file: 'current.toml',
    format: 'toml',
    proxies: 6,
    visitors: 2,
    ownWebServer: true,
    expected: async () => {
      const source = withoutWebServer(parse(await sample('current.toml')) as Tree);
      return { loginFailExit: false, ...source, log: { ...source.log, disablePrintColor: true } };
    },
  },
  {
    file: 'legacy.ini',
    format: 'ini',
    proxies: 6,
    visitors: 1,
    ownWebServer: true,
    expected: async () => LEGACY_AS_CURRENT,
  },
  {
    file: 'sample.yaml',
    format: 'yaml',
    proxies: 6,
    visitors: 1,
    ownWebServer: false,
    expected: async () => {
      const source = parseYaml(await sample('sample.yaml')) as Tree;
      // A file that does not say loginFailExit gets it false.
      return { loginFailExit: false, ...source, log: { ...source.log, disablePrintColor: true } };
    },
  },
  {
    file: 'sample.json',
    format: 'json',
    proxies: 7,
    visitors: 2,
    ownWebServer: false,
    expected: async () => ({ loginFailExit: false, ...(JSON.parse(await sample('sample.json')) as Tree) }),
  },
];

/** A refusal: the status, a message naming the problem, no secret in it. */
function refused(t: ExecutionContext, res: { status: number; body: { message: string } }, status: number, why: RegExp) {
  t.is(res.status, status, res.body.message);
  t.regex(res.body.message, why);
  for (const secret of [SECRET, ...FILE_SECRETS]) t.false(res.body.message.includes(secret), res.body.message);
}

for (const { file, format, proxies, visitors, expected, ownWebServer } of SAMPLES) {
  for (const given of [true, false]) {
    test.serial(
      `${file} imports (format ${given ? 'given' : 'guessed'}) into a 0600 file in frpc's current TOML that frpc accepts`,
      async (t) => {
        const name = `ie_${format}_${given ? 'given' : 'guessed'}`;
        const res = await importConfig({ name, content: await sample(file), ...(given ? { format } : {}) });
        t.is(res.status, 200, res.body.message);
        const data = res.body.data;
        t.like(data, { name, format, proxyCount: proxies, visitorCount: visitors });
        t.true(Number.isInteger(data.instanceID));
        t.is((await stat(data.configPath)).mode & 0o777, 0o600);
        const written = await readToml(data.configPath);
        // frps's client list names the host and the instance (the samples set no clientID of their own).
        const { clientID, ...rest } = withoutWebServer(written);
        t.regex(String(clientID), new RegExp(`^[A-Za-z0-9._-]+-${name}$`));
        t.deepEqual(rest, await expected());
        // Every key in frpc's current spelling: no [common], no snake_case.
        t.deepEqual(
          allKeys(written).filter((key) => key === 'common' || /_/.test(key)),
          [],
        );
        if (format === 'toml') {
          // Its own admin endpoint is safe (loopback, a real password, a free port): kept as it was.
          t.like(written.webServer, { addr: '127.0.0.1', port: 7400, user: 'admin' });
          t.regex(res.body.message, /its webServer \(on loopback, with a password\) was kept/);
        } else {
          // tunnelward's own: the legacy file's listened on 0.0.0.0, and the others had none.
          t.like(written.webServer, { addr: '127.0.0.1', user: 'tunnelward' });
          t.not(written.webServer.port, 7400);
          t.true(written.webServer.password.length >= 32);
          if (ownWebServer)
            t.regex(
              res.body.message,
              /webServer was replaced by tunnelward's own admin endpoint: it listened on 0\.0\.0\.0/,
            );
          else t.notRegex(res.body.message, /webServer/);
        }
        const verified = await frpcVerify(data.configPath);
        t.true(verified.ok, verified.output);
        const info = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${data.instanceID}`, { token: root });
        t.like(info.body.data, { name, serverAddr: written.serverAddr, serverPort: String(written.serverPort) });
        const listed = await daemon.get(`/tunnelAct/instanceMgr/list`, { token: root });
        t.true(listed.body.data.some((i: Tree) => i.instanceID === data.instanceID));
        t.true((await remove(data.instanceID)).body.success);
      },
    );
  }
}

test.serial('a legacy file read as TOML: a [common] table and snake_case keys are mapped too', async (t) => {
  const content = [
    '[common]',
    'server_addr = "frp.old.example.com"',
    'server_port = "7000"',
    'token = "old-toml-token"',
    'tls_enable = true',
    '[[proxies]]',
    'name = "ssh"',
    'type = "tcp"',
    'local_port = "22"',
    'remote_port = "6622"',
    '[[proxies]]',
    'name = "ssh_visitor"',
    'role = "visitor"',
    'type = "stcp"',
    'server_name = "db"',
    'sk = "old-sk"',
    'bind_port = "9000"',
    '',
  ].join('\n');
  const res = await importConfig({ name: 'ie_old_toml', content });
  t.like(res.body.data, { format: 'toml', proxyCount: 1, visitorCount: 1 });
  const written = await readToml(res.body.data.configPath);
  t.like(written, {
    serverAddr: 'frp.old.example.com',
    serverPort: 7000,
    auth: { token: 'old-toml-token' },
    transport: { tls: { enable: true } },
  });
  t.deepEqual(written.proxies, [{ name: 'ssh', type: 'tcp', localIP: '127.0.0.1', localPort: 22, remotePort: 6622 }]);
  t.deepEqual(written.visitors, [
    { name: 'ssh_visitor', type: 'stcp', serverName: 'db', secretKey: 'old-sk', bindPort: 9000 },
  ]);
  await remove(res.body.data.instanceID);
});

test.serial('what cannot be represented is refused with a 400 naming it, and nothing is created', async (t) => {
  const filesBefore = await instanceFiles();
  const namesBefore = await instanceNames();
  const server = 'serverAddr = "frp.example.com"\n';
  const token = `auth.token = "${SECRET}"\n`;
  const tcp = (name: string, extra = '') =>
    `[[proxies]]\nname = "${name}"\ntype = "tcp"\nlocalPort = 22\nremotePort = 6000\n${extra}`;
  const ini = `[common]\nserver_addr = frp.example.com\ntoken = ${SECRET}\n`;
  const cases: Array<[string, Tree, RegExp]> = [
    [
      'unknown keys',
      { content: `${server}${token}colour = "blue"\nauth.tokn = "${SECRET}"\n` },
      /Unknown config keys: (colour, auth\.tokn \(did you mean auth\.token\?\)|auth\.tokn \(did you mean auth\.token\?\), colour)$/,
    ],
    [
      'an unknown proxy key',
      { content: server + tcp('ssh', 'remote_addr = "x"\n') },
      /proxies\[0\] \(name ssh\): Unknown proxy key: remote_addr/,
    ],
    [
      'a proxy type frpc does not know',
      { content: `${server}${token}[[proxies]]\nname = "f"\ntype = "ftp"\nlocalPort = 21\n` },
      /proxies\[0\] \(name f\): type must be one of: tcp, udp/,
    ],
    [
      'a key of another proxy type',
      {
        content: `${server}[[proxies]]\nname = "w"\ntype = "http"\nlocalPort = 80\nsubdomain = "w"\nremotePort = 80\n`,
      },
      /remotePort is only used by tcp and udp proxies, not http/,
    ],
    [
      'an invalid value',
      { content: server + tcp('ssh').replace('remotePort = 6000', 'remotePort = 70000') },
      /remotePort must be a port number from 1 to 65535/,
    ],
    [
      'what frpc requires',
      { content: `${server}[[proxies]]\nname = "w"\ntype = "http"\nlocalPort = 80\n` },
      /a http proxy needs customDomains or subdomain/,
    ],
    [
      'two proxies of one name',
      { content: server + tcp('ssh') + tcp('ssh').replace('6000', '6001') },
      /proxies\[1\] \(name ssh\): Proxy ssh already exists/,
    ],
    [
      'an INI range section',
      { content: `${ini}[range:web]\ntype = tcp\nlocal_port = 6000-6005\nremote_port = 7000-7005\n` },
      /"range:web": INI range sections .* cannot be imported/,
    ],
    [
      'an INI role',
      { content: `${ini}[p]\nrole = client\nlocal_port = 22\nremote_port = 6000\n` },
      /\[p\]: role must be server or visitor/,
    ],
    [
      'INI without [common]',
      { content: `[ssh]\ntype = tcp\nlocal_port = x\n`, format: 'ini' },
      /no \[common\] section/,
    ],
    [
      'includes of other files',
      { content: `${server}${token}includes = ["./confd/*.toml"]\n` },
      /includes: the included files were not sent: the CLI.s import reads and sends them/,
    ],
    [
      'a visitor key of another type',
      {
        content: `${server}[[visitors]]\nname = "v"\ntype = "stcp"\nserverName = "s"\nbindPort = 9000\nkeepTunnelOpen = true\n`,
      },
      /visitors\[0\] \(name v\): keepTunnelOpen is only used by xtcp visitors, not stcp/,
    ],
    [
      'an unknown visitor key',
      { content: `${server}[[visitors]]\nname = "v"\ntype = "stcp"\nserverName = "s"\nbindPort = 9000\nlisten = 1\n` },
      /Unknown visitor key: listen/,
    ],
    [
      'a visitor without its server',
      { content: `${server}[[visitors]]\nname = "v"\ntype = "xtcp"\nbindPort = 9000\nsecretKey = "${SECRET}"\n` },
      /serverName is required/,
    ],
    ['no server', { content: token }, /serverAddr is required/],
    ['a Go template action', { content: `${server}user = '{{ env "HOME" }}'\n` }, /user must not contain "\{\{"/],
    [
      'a masked secret',
      { content: `${server}auth.token = "********"\n` },
      /auth\.token is the mask an export shows in place of a secret/,
    ],
    [
      'TOML that does not parse',
      { content: `${server}auth.token = ${SECRET}\n`, format: 'toml' },
      /^content is not valid TOML \(line 2, column \d+: /,
    ],
    [
      'text of no format',
      { content: `${server}auth.token = ${SECRET}\n` },
      /^content is in none of the formats frpc reads \(as TOML: line 2/,
    ],
    [
      'YAML that does not parse',
      { content: `serverAddr: a\nauth:\n  token: ${SECRET}\n   x: y: z\n`, format: 'yaml' },
      /^content is not valid YAML \(line 3/,
    ],
    [
      'JSON that does not parse',
      { content: `{"serverAddr": "a", "auth": {"token": ${SECRET}}}` },
      /^content is not valid JSON/,
    ],
    ['JSON that is no mapping', { content: `["${SECRET}"]`, format: 'json' }, /content is JSON but not a mapping/],
    [
      'a __proto__ key',
      { content: `{"serverAddr": "a", "__proto__": {"user": "x"}}` },
      /reserved key "__proto__" at its top level/,
    ],
    ['an unknown format', { content: server, format: 'xml' }, /format must be toml, ini, yaml or json/],
    ['no content', { content: '' }, /content is required/],
    ['a bad name', { name: 'bad name!', content: server }, /name must be 1-64 characters/],
    [
      'an unknown run user',
      { runUser: 'no_such_user_here', content: server },
      /runUser "no_such_user_here" is not a user/,
    ],
  ];
  for (const [what, body, why] of cases) {
    const res = await importConfig({ name: 'ie_refused', ...body });
    refused(t, res, 400, why);
    t.log(what, '->', res.body.message);
  }
  t.deepEqual(await instanceFiles(), filesBefore, 'no config file is left behind');
  t.deepEqual(await instanceNames(), namesBefore, 'no instance is left behind');
});

test.serial(
  'pathological files and keys (20 000-part dotted keys, deep nesting, huge arrays): a quick 400',
  async (t) => {
    const dotted = (parts: number) => Array.from({ length: parts }, () => 'a').join('.');
    const base = 'serverAddr = "a.example.com"\n';
    const proxyBlock = (i: number) =>
      `[[proxies]]\nname = "p${i}"\ntype = "tcp"\nlocalPort = 22\nremotePort = ${1000 + i}\n`;
    const imports: Array<[string, Record<string, string>]> = [
      ['a 20 000-part dotted key', { format: 'toml', content: `${base}${dotted(20_000)} = 1\n` }],
      ['a 20 000-part dotted table header', { format: 'toml', content: `${base}[${dotted(20_000)}]\nx = 1\n` }],
      [
        'a 20 000-part dotted key in a proxy',
        { format: 'toml', content: `${base}${proxyBlock(0)}${dotted(20_000)} = 1\n` },
      ],
      [
        'a 20 000-part dotted section name in INI',
        {
          format: 'ini',
          content: `[common]\nserver_addr = a\n[${dotted(20_000)}]\nlocal_port = 22\nremote_port = 6000\n`,
        },
      ],
      ['a 20 000-part dotted key guessed', { content: `${base}${dotted(20_000)} = 1\n` }],
      [
        'inline tables 5 000 deep',
        { format: 'toml', content: `${base}a = ${'{b = '.repeat(5000)}1${'}'.repeat(5000)}\n` },
      ],
      ['arrays 50 000 deep', { format: 'toml', content: `${base}a = ${'['.repeat(50_000)}${']'.repeat(50_000)}\n` }],
      [
        'an inline array of 100 000 items',
        { format: 'toml', content: `${base}includes = [${'1,'.repeat(100_000)}]\n` },
      ],
      ['JSON 5 000 deep', { format: 'json', content: `{"a":${'{"a":'.repeat(5000)}1${'}'.repeat(5001)}` }],
      ['YAML 5 000 deep', { format: 'yaml', content: `a: ${'['.repeat(5000)}${']'.repeat(5000)}\n` }],
    ];
    const filesBefore = await instanceFiles();
    const namesBefore = await instanceNames();
    const outcomes: string[] = [];
    const slow: string[] = [];
    for (const [what, body] of imports) {
      const started = performance.now();
      const res = await importConfig({ name: 'ie_pathological', ...body });
      const ms = performance.now() - started;
      if (ms > 5000) slow.push(`${what}: ${Math.round(ms)} ms`);
      outcomes.push(`${what}: ${res.status} ${res.body.message.slice(0, 200)}`);
    }
    const { id } = await createInstance(daemon, root, 'ie_target');
    const edits: Array<[string, string, unknown]> = [
      ['configFile', 'modify', { instanceID: id, type: 'configFile', modifiedData: { [dotted(20_000)]: 1 } }],
      [
        'configFile',
        'modify',
        { instanceID: id, type: 'configFile', modifiedData: { [`metadatas.${dotted(20_000)}`]: 'x' } },
      ],
      [
        'proxy',
        'create',
        { instanceID: id, proxyInfo: { name: 'deep', type: 'tcp', localPort: '22', [dotted(20_000)]: 1 } },
      ],
    ];
    for (const [what, op, body] of edits) {
      const path = what === 'proxy' ? `/tunnelAct/proxyMgr/${op}` : `/tunnelAct/instanceMgr/${op}`;
      const started = performance.now();
      const res = await daemon.post(path, body, { token: root });
      const ms = performance.now() - started;
      if (ms > 5000) slow.push(`${what} ${op}: ${Math.round(ms)} ms`);
      outcomes.push(`${what} ${op}: ${res.status} ${res.body.message.slice(0, 200)}`);
    }
    t.deepEqual(
      outcomes.filter((o) => !/: 400 /.test(o)),
      [],
      outcomes.join('\n'),
    );
    t.deepEqual(slow, []);
    t.deepEqual(await instanceFiles(), [...filesBefore, `tunnel_${id}.toml`].sort());
    t.deepEqual(await instanceNames(), [...namesBefore, 'ie_target'].sort());
    t.is((await daemon.get('/system/getStatus')).body.data.Status, 'Online');
    await remove(Number(id));
  },
);

test.serial(
  'a visitor cannot import; a name in use and proxies another instance holds on the server are 409s',
  async (t) => {
    const content = await sample('current.toml');
    refused(t, await importConfig({ name: 'ie_by_visitor', content }, visitor), 403, /./);
    t.false((await instanceNames()).includes('ie_by_visitor'));
    await createInstance(daemon, root, 'ie_taken');
    refused(t, await importConfig({ name: 'ie_taken', content }), 409, /an instance named ie_taken already exists/);
    const first = await importConfig({ name: 'ie_holder', content }, admin);
    t.is(first.status, 200, first.body.message);
    const filesBefore = await instanceFiles();
    refused(
      t,
      await importConfig({ name: 'ie_clash', content }),
      409,
      /proxy ssh: the name edge01\.ssh is already used by proxy ssh of instance ie_holder/,
    );
    t.deepEqual(await instanceFiles(), filesBefore);
    t.false((await instanceNames()).includes('ie_clash'));
    await remove(first.body.data.instanceID);
  },
);

test.serial(
  'export masks every secret for an admin and a visitor, shows them to a superuser, never holds webServer',
  async (t) => {
    const imported = await importConfig({ name: 'ie_export', content: await sample('current.toml') });
    const id: number = imported.body.data.instanceID;
    const file = await readToml(imported.body.data.configPath);
    const asRoot = await exportConfig(id);
    t.like(asRoot.body.data, { instanceID: id, name: 'ie_export', format: 'toml', masked: false });
    t.deepEqual(parse(asRoot.body.data.content), withoutWebServer(file));
    for (const token of [admin, visitor]) {
      const res = await exportConfig(id, token);
      t.is(res.status, 200, res.body.message);
      t.like(res.body.data, { instanceID: id, format: 'toml', masked: true });
      const shown = parse(res.body.data.content) as Tree;
      t.is(shown.webServer, undefined);
      t.is(shown.auth.token, '********');
      t.is(shown.proxies.find((p: Tree) => p.name === 'web').httpPassword, '********');
      t.is(shown.proxies.find((p: Tree) => p.name === 'postgres').secretKey, '********');
      t.is(shown.proxies.find((p: Tree) => p.name === 'files').plugin.httpPassword, '********');
      t.true(shown.visitors.every((v: Tree) => v.secretKey === '********'));
      // Everything else is as in the file, but the server: a visitor is not shown it (as in getInfo).
      t.is(shown.serverAddr, token === admin ? file.serverAddr : undefined);
      t.is(shown.serverPort, token === admin ? file.serverPort : undefined);
      t.deepEqual(shown.metadatas, file.metadatas);
      t.deepEqual(shown.proxies.find((p: Tree) => p.name === 'web').customDomains, ['www.example.com', 'example.com']);
      for (const secret of [...FILE_SECRETS, file.webServer.password])
        t.false(JSON.stringify(res.body).includes(secret));
      // A masked export cannot be imported as if its masks were the secrets.
      refused(t, await importConfig({ name: 'ie_masked', content: res.body.data.content }), 400, /is the mask/);
    }
    t.false(JSON.stringify(asRoot.body).includes(file.webServer.password));
    t.is((await exportConfig(999_999)).status, 404);
    t.is((await daemon.get('/tunnelAct/instanceMgr/export', { token: root })).status, 400);
    await remove(id);
  },
);

test.serial("importing a superuser's export gives the same instance, its own webServer aside", async (t) => {
  for (const { file } of SAMPLES) {
    const first = await importConfig({ name: 'ie_round', content: await sample(file) });
    t.is(first.status, 200, first.body.message);
    const original = await readToml(first.body.data.configPath);
    const exported = await exportConfig(first.body.data.instanceID);
    await remove(first.body.data.instanceID);
    const again = await importConfig({ name: 'ie_round', content: exported.body.data.content });
    t.is(again.status, 200, again.body.message);
    t.like(again.body.data, {
      format: 'toml',
      proxyCount: first.body.data.proxyCount,
      visitorCount: first.body.data.visitorCount,
    });
    const copy = await readToml(again.body.data.configPath);
    t.deepEqual(withoutWebServer(copy), withoutWebServer(original), file);
    t.not(copy.webServer.password, original.webServer.password);
    await remove(again.body.data.instanceID);
  }
});

test.serial('no secret of an imported file reaches the daemon log', async (t) => {
  const output = daemon.output.join('\n');
  t.true(output.includes('instance imported'), 'imports are logged');
  for (const secret of [SECRET, ...FILE_SECRETS]) t.false(output.includes(secret), secret);
});
