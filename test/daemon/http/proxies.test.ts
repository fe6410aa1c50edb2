import { readFile, writeFile } from 'node:fs/promises';
import test, { type ExecutionContext } from 'ava';
import { parse } from 'smol-toml';
import { dispose, startDaemon, type Daemon } from '../../helpers/daemon.js';
import { createInstance, frpcVerify, instanceSettings } from '../../helpers/instances.js';
import { expectedView, merged, POSTGRES, PROXY_EXAMPLES, VISITORS_TOML } from '../../config/proxy-examples.js';

let daemon: Daemon;
let root: string;
let visitor: string;
test.before(async () => {
  daemon = await startDaemon({ settingsToml: instanceSettings() });
  root = await daemon.login();
  visitor = (await daemon.userWithToken(root, 'px_visitor', 'visitor')).token;
});
test.after.always(() => dispose(daemon));

const tcp = (name: string, remotePort: string, extra: object = {}) => ({
  name,
  type: 'tcp',
  localIP: '127.0.0.1',
  localPort: '22',
  remotePort,
  ...extra,
});

const list = async (id: string, token = root) =>
  (await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token })).body;

test('create, list, modify, rename, enable/disable and delete proxies', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'px_crud');
  const created = await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: tcp('ssh', '6000') },
    { token: root },
  );
  t.like(created.body.data, {
    instanceID: Number(id),
    configPath,
    proxyName: 'ssh',
    applied: 'on next start',
    plan: { action: 'file only' },
    dryRun: false,
  });
  await daemon.post(
    '/tunnelAct/proxyMgr/create',
    {
      instanceID: id,
      proxyInfo: {
        name: 'web',
        type: 'http',
        localIP: '127.0.0.1',
        localPort: '80',
        remotePort: '',
        customDomains: ['a.example.com'],
      },
    },
    { token: root },
  );
  const listed = await list(id, visitor);
  t.is(listed.data.proxyCount, 2);
  t.deepEqual(listed.data.proxies[0], {
    name: 'ssh',
    type: 'tcp',
    localIP: '127.0.0.1',
    localPort: '22',
    remotePort: '6000',
    enabled: true,
    // Its health is the stopped tunnel's; what frpc says of it: nothing while the tunnel does not run (remoteAddr,
    // naming the server, is for admins).
    health: { state: 'stopped', reason: null, since: null },
    status: null,
    err: '',
    statusSince: null,
  });
  t.like(listed.data.proxies[1], {
    name: 'web',
    type: 'http',
    localPort: '80',
    remotePort: '',
    customDomains: ['a.example.com'],
  });

  const modified = await daemon.post(
    '/tunnelAct/proxyMgr/modify',
    { instanceID: id, proxyInfo: tcp('ssh', '6001') },
    { token: root },
  );
  t.true(modified.body.success, modified.body.message);
  t.is((await list(id)).data.proxies[0].remotePort, '6001');

  const renamed = await daemon.post(
    '/tunnelAct/proxyMgr/modify',
    { instanceID: id, oldName: 'ssh', newName: 'ssh2', proxyInfo: tcp('ssh', '6001') },
    { token: root },
  );
  t.is(renamed.body.data.proxyName, 'ssh2');
  const renamedInside = await daemon.post(
    '/tunnelAct/proxyMgr/modify',
    { instanceID: id, proxyInfo: { ...tcp('ssh3', '6001'), oldName: 'ssh2' } },
    { token: root },
  );
  t.is(renamedInside.body.data.proxyName, 'ssh3');

  const disabled = await daemon.post(
    '/tunnelAct/proxyMgr/setStatus',
    { instanceID: id, proxyName: 'ssh3', enabled: false },
    { token: root },
  );
  t.true(disabled.body.success);
  t.is((await list(id)).data.proxies[0].enabled, false);
  t.is((parse(await readFile(configPath, 'utf8')) as any).proxies[0].enabled, false, "frpc's own enabled = false");
  t.true((await frpcVerify(configPath)).ok);
  await daemon.post(
    '/tunnelAct/proxyMgr/setStatus',
    { instanceID: id, proxyName: 'ssh3', enabled: true },
    { token: root },
  );
  t.false('enabled' in (parse(await readFile(configPath, 'utf8')) as any).proxies[0], 'omitted when true');

  const deleted = await daemon.post(
    '/tunnelAct/proxyMgr/delete',
    { instanceID: id, proxyName: 'web' },
    { token: root },
  );
  t.like(deleted.body.data, { instanceID: Number(id), configPath, proxyName: 'web', applied: 'on next start' });
  t.deepEqual(
    (await list(id)).data.proxies.map((p: any) => p.name),
    ['ssh3'],
  );
  t.true((await frpcVerify(configPath)).ok, (await frpcVerify(configPath)).output);
});

test('proxy validation and conflicts', async (t) => {
  const { id } = await createInstance(daemon, root, 'px_rules');
  await daemon.post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcp('taken', '7001') }, { token: root });
  const cases: Array<[object, number, RegExp]> = [
    [{ instanceID: id }, 400, /proxyInfo is required/],
    [{ instanceID: id, proxyInfo: tcp('p', '7002', { type: 'ftp' }) }, 400, /type must be one of/],
    [{ instanceID: id, proxyInfo: tcp('p', '70000') }, 400, /remotePort/],
    [{ instanceID: id, proxyInfo: tcp('p', '7002', { localPort: '0' }) }, 400, /localPort/],
    [{ instanceID: id, proxyInfo: tcp('p', '') }, 400, /remotePort is required/],
    [{ instanceID: id, proxyInfo: tcp('bad name', '7002') }, 400, /name must be/],
    [{ instanceID: id, proxyInfo: tcp('taken', '7003') }, 409, /already exists/],
    [{ instanceID: id, proxyInfo: tcp('p2', '7001') }, 409, /remotePort 7001 is already used by proxy taken/],
    [{ instanceID: '99999', proxyInfo: tcp('p', '7002') }, 404, /instance 99999 not found/],
  ];
  for (const [body, status, message] of cases) {
    const res = await daemon.post('/tunnelAct/proxyMgr/create', body, { token: root });
    t.is(res.status, status, JSON.stringify(body));
    t.regex(res.body.message, message, JSON.stringify(body));
  }
  const unknown = await daemon.post(
    '/tunnelAct/proxyMgr/modify',
    { instanceID: id, proxyInfo: tcp('ghost', '7005') },
    { token: root },
  );
  t.is(unknown.status, 404);
  const delUnknown = await daemon.post(
    '/tunnelAct/proxyMgr/delete',
    { instanceID: id, proxyName: 'ghost' },
    { token: root },
  );
  t.is(delUnknown.status, 404);
  const setBad = await daemon.post(
    '/tunnelAct/proxyMgr/setStatus',
    { instanceID: id, proxyName: 'taken', enabled: 'no' },
    { token: root },
  );
  t.is(setBad.status, 400);
  for (const path of ['create', 'modify', 'delete', 'setStatus']) {
    const res = await daemon.post(
      `/tunnelAct/proxyMgr/${path}`,
      { instanceID: id, proxyName: 'taken', proxyInfo: tcp('x', '1') },
      { token: visitor },
    );
    t.is(res.status, 403, path);
  }
});

test('values cannot inject keys or blocks, and template actions other than {{ .Envs.NAME }} are refused everywhere', async (t) => {
  const tricky = 'eve" serverPort = 1 ]] [[proxies]] name = "x\\';
  const { id, configPath } = await createInstance(daemon, root, 'px_inject', { user: tricky }, { serverPort: '7000' });
  const file = parse(await readFile(configPath, 'utf8')) as any;
  t.is(file.serverPort, 7000, 'serverPort not overwritten');
  t.is(file.user, tricky, 'quotes, backslashes and ]] are escaped by the TOML writer');
  t.is(file.proxies, undefined, 'no block injected');
  const newline = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'configFile', modifiedData: { user: 'a\n[[proxies]]\nname = "b"' } },
    { token: root },
  );
  t.is(newline.status, 400, 'newlines are refused outright');
  const sneaky = await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: tcp('p1', '7100', { localIP: '127.0.0.1"\n[[proxies]]\nname = "evil' }) },
    { token: root },
  );
  t.is(sneaky.status, 400, 'an IP with quotes and newlines is not an IP');
  const templates: Array<[string, object]> = [
    ['proxy name', { instanceID: id, proxyInfo: tcp('{{x}}', '7101') }],
    ['localIP', { instanceID: id, proxyInfo: tcp('p2', '7102', { localIP: '{{ .Envs.HOME | printf "%s" }}' }) }],
    ['subdomain', { instanceID: id, proxyInfo: { name: 'p3', type: 'http', localPort: '80', subdomain: 'a}}' } }],
  ];
  for (const [what, body] of templates) {
    const res = await daemon.post('/tunnelAct/proxyMgr/create', body, { token: root });
    t.is(res.status, 400, what);
  }
  const modify = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'configFile', modifiedData: { 'auth.token': 'a{{ .Env.PATH }}b' } },
    { token: root },
  );
  t.is(modify.status, 400);
  t.regex(modify.body.message, /Go template/);
  t.false(modify.body.message.includes('.Env.PATH'), 'the secret value is not echoed');
  t.true((await frpcVerify(configPath)).ok);
});

test('modify configFile changes top-level keys only; proxies stay as they were', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'px_common', { 'auth.token': 'old' });
  await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: tcp('keep', '7200', { 'transport.useEncryption': true }) },
    { token: root },
  );
  const before = (parse(await readFile(configPath, 'utf8')) as any).proxies;
  const res = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    {
      instanceID: id,
      type: 'configFile',
      modifiedData: {
        server_addr: 'new.example.com',
        server_port: '7443',
        'auth.method': 'token',
        'auth.token': 'new-secret',
      },
    },
    { token: root },
  );
  t.like(res.body.data, { instanceID: Number(id), configPath, applied: 'on next start', verify: { verified: true } });
  t.regex(res.body.data.diff, /^\+serverAddr = "new.example.com"$/m, 'the diff says what changed');
  t.false(res.body.data.diff.includes('"old"'), 'secrets masked on both sides');
  t.regex(res.body.data.diff, /^\+token = "\*{8} \(new value\)"$/m, 'the token shows as changed');
  const after = parse(await readFile(configPath, 'utf8')) as any;
  t.like(after, { serverAddr: 'new.example.com', serverPort: 7443, auth: { token: 'new-secret' } });
  t.deepEqual(after.proxies, before);
  t.deepEqual(before[0].transport, { useEncryption: true });
  t.false(JSON.stringify(res.body).includes('new-secret'));
  t.false(
    daemon.output.some((l) => l.includes('new-secret')),
    'never logged',
  );
  const unknown = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'configFile', modifiedData: { not_a_key: 1 } },
    { token: root },
  );
  t.is(unknown.status, 400);
  t.regex(unknown.body.message, /not_a_key/);
  const badType = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'other', modifiedData: {} },
    { token: root },
  );
  t.is(badType.status, 400);
  t.true((await frpcVerify(configPath)).ok);
});

test('modify systemConfig renames the record, not the file, and checks runUser', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'px_sys');
  const res = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    {
      instanceID: id,
      type: 'systemConfig',
      modifiedData: { name: 'px_sys_renamed', bootAtStart: true, runUser: 'root' },
    },
    { token: root },
  );
  t.true(res.body.success, res.body.message);
  t.deepEqual(res.body.data, {
    instanceID: Number(id),
    configPath,
    bootAtStart: true,
    runUser: 'root',
    probes: false,
    policy: {},
  });
  const info = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root });
  t.like(info.body.data, { name: 'px_sys_renamed', bootAtStart: true, configPath });
  const badUser = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'systemConfig', modifiedData: { runUser: 'root; rm -rf /' } },
    { token: root },
  );
  t.is(badUser.status, 400);
  const unknownKey = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'systemConfig', modifiedData: { colour: 'red' } },
    { token: root },
  );
  t.is(unknownKey.status, 400);
  await createInstance(daemon, root, 'px_other');
  const clash = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'systemConfig', modifiedData: { name: 'px_other' } },
    { token: root },
  );
  t.is(clash.status, 409);
});

// ---- every key frpc knows for the proxy's type ----

const fileOf = async (configPath: string): Promise<any> => parse(await readFile(configPath, 'utf8'));
const blockIn = async (configPath: string, name: string) =>
  (await fileOf(configPath)).proxies.find((p: any) => p.name === name);

async function verified(t: ExecutionContext, configPath: string, what: string): Promise<void> {
  const result = await frpcVerify(configPath);
  t.true(result.ok, `${what}: ${result.output}`);
}

test('every proxy type and plugin round-trips: create, file, list, modify one field, file, each file verified', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'px_every_type');
  for (const example of PROXY_EXAMPLES) {
    const name: string = example.input.name;
    const created = await daemon.post(
      '/tunnelAct/proxyMgr/create',
      { instanceID: id, proxyInfo: example.input },
      { token: root },
    );
    t.true(created.body.success, `${name}: ${created.body.message}`);
    t.is(
      created.body.message,
      `proxy ${name} added to instance px_every_type; it applies at the next start (revision ${created.body.data.revision})`,
    );
    t.deepEqual(await blockIn(configPath, name), example.file, `${name}: file after create`);
    await verified(t, configPath, `${name} after create`);

    const { health, status, err, remoteAddr, statusSince, ...listed } = (await list(id)).data.proxies.find(
      (p: any) => p.name === name,
    );
    t.deepEqual(listed, expectedView(example.file, example.secrets), `${name}: list`);
    t.deepEqual({ status, err, remoteAddr, statusSince }, { status: null, err: '', remoteAddr: '', statusSince: null });
    t.is(health.state, 'stopped', `${name}: a proxy of a stopped tunnel (or a disabled one) is stopped`);

    const modified = await daemon.post(
      '/tunnelAct/proxyMgr/modify',
      { instanceID: id, proxyInfo: { name, ...example.modify } },
      { token: root },
    );
    t.true(modified.body.success, `${name}: ${modified.body.message}`);
    t.deepEqual(await blockIn(configPath, name), merged(example.file, example.modified), `${name}: file after modify`);
    await verified(t, configPath, `${name} after modify`);
  }
  t.is((await fileOf(configPath)).proxies.length, PROXY_EXAMPLES.length);
  const everything = JSON.stringify((await list(id)).data) + daemon.output.join('\n');
  for (const example of PROXY_EXAMPLES) {
    for (const path of example.secrets) {
      const secret = String(path.split('.').reduce((table: any, key) => table[key], example.file));
      t.false(everything.includes(secret), `${example.input.name}: ${path} never in the list or the log`);
    }
  }
});

test('an stcp proxy keeps its secretKey and allowUsers; list and modify keep them too', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'px_stcp');
  const proxyInfo = { ...POSTGRES.input, remotePort: '' };
  const created = await daemon.post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo }, { token: root });
  t.regex(
    created.body.message,
    /^proxy postgres added to instance px_stcp; it applies at the next start \(revision \d+\)$/,
  );
  const written = POSTGRES.file;
  t.deepEqual((await fileOf(configPath)).proxies, [written]);
  const listed = (await list(id)).data.proxies[0];
  t.is(listed.secretKey, '********');
  // The old shape of a modify request: only the five fields, the rest must stay.
  const modify = await daemon.post(
    '/tunnelAct/proxyMgr/modify',
    {
      instanceID: id,
      proxyInfo: { name: 'postgres', type: 'stcp', localIP: '127.0.0.1', localPort: '5433', remotePort: '' },
    },
    { token: root },
  );
  t.true(modify.body.success, modify.body.message);
  t.deepEqual((await fileOf(configPath)).proxies, [{ ...written, localPort: 5433 }]);
  // A list entry sent back as it is keeps the masked secret.
  await daemon.post(
    '/tunnelAct/proxyMgr/modify',
    { instanceID: id, proxyInfo: { ...listed, localPort: '5434' } },
    { token: root },
  );
  t.deepEqual((await fileOf(configPath)).proxies, [{ ...written, localPort: 5434 }]);
  await verified(t, configPath, 'stcp');
  t.false(
    daemon.output.some((line) => line.includes('pg-visitor-secret')),
    'never logged',
  );
});

test('unknown keys and wrong types are refused by name with a 400, and the file is unchanged', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'px_refused');
  await daemon.post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcp('ssh', '7300') }, { token: root });
  const before = await readFile(configPath, 'utf8');
  const cases: Array<[string, object, RegExp]> = [
    ['create', tcp('x', '7301', { colour: 'red' }), /^Unknown proxy key: colour$/],
    [
      'create',
      tcp('x', '7301', { transport: { useEncryption: true, bogus: 1 } }),
      /^Unknown proxy key: transport\.bogus$/,
    ],
    [
      'create',
      tcp('x', '7301', { 'plugin.type': 'socks5', 'plugin.unixPath': '/x' }),
      /^plugin\.unixPath is not an option of the socks5 plugin/,
    ],
    [
      'create',
      tcp('x', '7301', { secretKey: 'k' }),
      /^secretKey is only used by stcp, xtcp and sudp proxies, not tcp$/,
    ],
    [
      'create',
      tcp('x', '7301', { transport: { useEncryption: 'yes' } }),
      /^transport\.useEncryption must be true or false$/,
    ],
    ['create', tcp('x', '7301', { 'healthCheck.maxFailed': 'many' }), /^healthCheck\.maxFailed must be an integer$/],
    ['create', tcp('x', '7301', { metadatas: { owner: 1 } }), /^metadatas\.owner must be a string$/],
    ['modify', { name: 'ssh', 'transport.bandwidthLimit': 5 }, /^transport\.bandwidthLimit must be a string$/],
    ['modify', { name: 'ssh', locations: ['/'] }, /^locations is only used by http proxies, not tcp$/],
    ['modify', { name: 'ssh', nonsense: null }, /^Unknown proxy key: nonsense$/],
  ];
  for (const [path, proxyInfo, message] of cases) {
    const res = await daemon.post(`/tunnelAct/proxyMgr/${path}`, { instanceID: id, proxyInfo }, { token: root });
    t.is(res.status, 400, JSON.stringify(proxyInfo));
    t.regex(res.body.message, message);
  }
  t.is(await readFile(configPath, 'utf8'), before);
});

test('null removes a key, an entry or a whole table through modify', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'px_null');
  await daemon.post(
    '/tunnelAct/proxyMgr/create',
    {
      instanceID: id,
      proxyInfo: tcp('ssh', '7400', {
        transport: { useEncryption: true, useCompression: true },
        metadatas: { a: '1', b: '2' },
        'loadBalancer.group': 'g',
      }),
    },
    { token: root },
  );
  await daemon.post(
    '/tunnelAct/proxyMgr/modify',
    {
      instanceID: id,
      proxyInfo: { name: 'ssh', 'transport.useCompression': null, 'metadatas.a': null, loadBalancer: null },
    },
    { token: root },
  );
  t.deepEqual(await blockIn(configPath, 'ssh'), {
    name: 'ssh',
    type: 'tcp',
    localIP: '127.0.0.1',
    localPort: 22,
    remotePort: 7400,
    transport: { useEncryption: true },
    metadatas: { b: '2' },
  });
  const refused = await daemon.post(
    '/tunnelAct/proxyMgr/modify',
    { instanceID: id, proxyInfo: { name: 'ssh', remotePort: null } },
    { token: root },
  );
  t.is(refused.status, 400);
  t.regex(refused.body.message, /^remotePort is required for tcp and udp proxies$/);
  await verified(t, configPath, 'after removals');
});

test('visitors in the file are kept through every edit', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'px_visitors');
  await daemon.post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcp('ssh', '7500') }, { token: root });
  await writeFile(configPath, (await readFile(configPath, 'utf8')) + VISITORS_TOML);
  const expected = (parse(VISITORS_TOML) as any).visitors;
  const edits: Array<[string, object]> = [
    [
      '/tunnelAct/proxyMgr/create',
      { instanceID: id, proxyInfo: tcp('web', '7501', { 'transport.useEncryption': true }) },
    ],
    ['/tunnelAct/proxyMgr/modify', { instanceID: id, proxyInfo: { name: 'ssh', localPort: '2222' } }],
    ['/tunnelAct/proxyMgr/modify', { instanceID: id, oldName: 'web', newName: 'web2', proxyInfo: { name: 'web' } }],
    ['/tunnelAct/proxyMgr/setStatus', { instanceID: id, proxyName: 'web2', enabled: false }],
    ['/tunnelAct/proxyMgr/delete', { instanceID: id, proxyName: 'web2' }],
    [
      '/tunnelAct/instanceMgr/modify',
      { instanceID: id, type: 'configFile', modifiedData: { 'auth.token': 'rotated', 'log.level': 'debug' } },
    ],
  ];
  for (const [path, body] of edits) {
    const res = await daemon.post(path, body, { token: root });
    t.true(res.body.success, `${path}: ${res.body.message}`);
    t.deepEqual((await fileOf(configPath)).visitors, expected, `visitors after ${path}`);
  }
  await verified(t, configPath, 'with visitors');
});

test('visitors are listed beside the proxies: name, type, the proxy they reach, where they bind; never a secret', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'px_visitor_list');
  t.deepEqual((await list(id)).data.visitors, [], 'none yet');
  t.is((await list(id)).data.visitorCount, 0);
  await writeFile(configPath, (await readFile(configPath, 'utf8')) + VISITORS_TOML);
  const listed = await list(id);
  t.is(listed.message, '0 proxies, 2 visitors');
  t.is(listed.data.visitorCount, 2);
  t.deepEqual(listed.data.visitors, [
    {
      name: 'pg_visitor',
      type: 'stcp',
      serverName: 'postgres',
      serverUser: '',
      bindAddr: '127.0.0.1',
      bindPort: '15432',
      enabled: true,
    },
    {
      name: 'p2p_visitor',
      type: 'xtcp',
      serverName: 'p2p',
      serverUser: '',
      bindAddr: '',
      bindPort: '16000',
      enabled: true,
    },
  ]);
  t.false(JSON.stringify(listed).includes('visitor-secret'), 'secretKey is not shown');
});

test('log.to is refused unless console, saying why; a file that has one is put back on the console at the next edit', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'px_log_to');
  for (const modifiedData of [
    { 'log.to': '/var/log/frpc.log' },
    { log: { to: 'frpc.log' } },
    { log_file: '/tmp/frpc.log' },
  ]) {
    const res = await daemon.post(
      '/tunnelAct/instanceMgr/modify',
      { instanceID: id, type: 'configFile', modifiedData },
      { token: root },
    );
    t.is(res.status, 400, JSON.stringify(modifiedData));
    t.regex(
      res.body.message,
      /must be "console": tunnelward captures the tunnel's console output, rotates it and streams it/,
    );
  }
  const atCreate = await daemon.post(
    '/tunnelAct/instanceMgr/create',
    {
      instanceInfo: { name: 'px_log_to2', serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' },
      additionalProperties: { 'log.to': '/var/log/frpc.log' },
    },
    { token: root },
  );
  t.is(atCreate.status, 400);
  t.regex(atCreate.body.message, /^log\.to must be "console"/);

  await writeFile(
    configPath,
    `${await readFile(configPath, 'utf8')}\n[log]\nto = "/var/log/frpc.log"\nlevel = "warn"\n`.replace(
      '[log]\ndisablePrintColor = true\n',
      '',
    ),
  );
  t.is((await fileOf(configPath)).log.to, '/var/log/frpc.log');
  const edit = await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: tcp('ssh', '7600') },
    { token: root },
  );
  t.true(edit.body.success, edit.body.message);
  t.deepEqual((await fileOf(configPath)).log, { to: 'console', level: 'warn' });
  await verified(t, configPath, 'log.to rewritten');
});

test('{{ .Envs.NAME }} placeholders are accepted in secret fields and written as they are; other template syntax is refused', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'px_env', { 'auth.token': '{{ .Envs.FRP_TOKEN }}' });
  const modify = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    {
      instanceID: id,
      type: 'configFile',
      modifiedData: { 'auth.oidc.clientSecret': '{{.Envs.OIDC_SECRET}}' },
    },
    { token: root },
  );
  t.true(modify.body.success, modify.body.message);
  const created = await daemon.post(
    '/tunnelAct/proxyMgr/create',
    {
      instanceID: id,
      proxyInfo: {
        name: 'pg',
        type: 'stcp',
        localPort: '5432',
        secretKey: '{{ .Envs.PG_SECRET_KEY }}',
        allowUsers: ['*'],
      },
    },
    { token: root },
  );
  t.true(created.body.success, created.body.message);
  const file = await fileOf(configPath);
  t.is(file.auth.token, '{{ .Envs.FRP_TOKEN }}');
  t.is(file.auth.oidc.clientSecret, '{{.Envs.OIDC_SECRET}}');
  t.is(file.proxies[0].secretKey, '{{ .Envs.PG_SECRET_KEY }}');
  await verified(t, configPath, 'placeholders');

  const refused: Array<[string, object]> = [
    [
      '/tunnelAct/instanceMgr/modify',
      { instanceID: id, type: 'configFile', modifiedData: { 'auth.token': '{{ env "FRP_TOKEN" }}' } },
    ],
    [
      '/tunnelAct/instanceMgr/modify',
      { instanceID: id, type: 'configFile', modifiedData: { user: '{{ .Envs.9lives }}' } },
    ],
    [
      '/tunnelAct/proxyMgr/create',
      { instanceID: id, proxyInfo: { name: 'pg2', type: 'stcp', localPort: '5432', secretKey: '{{- .Envs.PG }}' } },
    ],
    ['/tunnelAct/proxyMgr/modify', { instanceID: id, proxyInfo: { name: 'pg', secretKey: 'x}}' } }],
  ];
  for (const [path, body] of refused) {
    const res = await daemon.post(path, body, { token: root });
    t.is(res.status, 400, JSON.stringify(body));
    t.regex(
      res.body.message,
      /other than \{\{ \.Envs\.NAME \}\} placeholders .*frpc renders its config file as a Go template/,
    );
  }
  t.is((await fileOf(configPath)).proxies[0].secretKey, '{{ .Envs.PG_SECRET_KEY }}');
});

test('instances on the same server cannot hold the same remote port, domain, subdomain or proxy name; other servers may', async (t) => {
  const server = { serverPort: '7100' };
  const a = await createInstance(daemon, root, 'px_same_a', {}, server);
  const b = await createInstance(daemon, root, 'px_same_b', {}, server);
  const elsewhere = await createInstance(daemon, root, 'px_elsewhere', {}, { serverPort: '7101' });
  const add = (id: string, proxyInfo: Record<string, unknown>) =>
    daemon.post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo }, { token: root });
  const tcp = { type: 'tcp', localIP: '127.0.0.1', localPort: '22' };
  const web = { type: 'http', localIP: '127.0.0.1', localPort: '80' };
  t.true((await add(a.id, { name: 'ssh_a', ...tcp, remotePort: '6022' })).body.success);
  t.true(
    (await add(a.id, { name: 'web_a', ...web, customDomains: ['app.example.com'], subdomain: 'app' })).body.success,
  );
  const before = await readFile(b.configPath, 'utf8');

  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [
      { name: 'ssh_b', ...tcp, remotePort: '6022' },
      /remotePort 6022 \(tcp\) is already used by proxy ssh_a of instance px_same_a \(\d+\) on the same server 127\.0\.0\.1:7100/,
    ],
    [
      { name: 'web_b', ...web, customDomains: ['APP.example.com'] },
      /custom domain app\.example\.com \(http\) is already used by proxy web_a of instance px_same_a/,
    ],
    [{ name: 'web_c', ...web, subdomain: 'app' }, /subdomain app \(http\) is already used by proxy web_a/],
    [
      { name: 'ssh_a', ...tcp, remotePort: '6023' },
      /the name ssh_a is already used by proxy ssh_a of instance px_same_a/,
    ],
  ];
  for (const [proxyInfo, message] of cases) {
    const res = await add(b.id, proxyInfo);
    t.is(res.status, 409, JSON.stringify(proxyInfo));
    t.regex(res.body.message, message);
  }
  t.is(await readFile(b.configPath, 'utf8'), before, 'nothing was written');

  // What does not meet on a server is fine: udp 6022 beside tcp 6022, another location, another server.
  t.true(
    (await add(b.id, { name: 'dns_b', type: 'udp', localIP: '127.0.0.1', localPort: '53', remotePort: '6022' })).body
      .success,
  );
  t.true(
    (await add(b.id, { name: 'web_b', ...web, customDomains: ['app.example.com'], locations: ['/api'] })).body.success,
  );
  t.true((await add(elsewhere.id, { name: 'ssh_a', ...tcp, remotePort: '6022' })).body.success);
  // A disabled proxy holds nothing; enabling it again checks again.
  t.true(
    (
      await daemon.post(
        '/tunnelAct/proxyMgr/setStatus',
        { instanceID: a.id, proxyName: 'ssh_a', enabled: false },
        { token: root },
      )
    ).body.success,
  );
  t.true((await add(b.id, { name: 'ssh_b', ...tcp, remotePort: '6022' })).body.success);
  const again = await daemon.post(
    '/tunnelAct/proxyMgr/setStatus',
    { instanceID: a.id, proxyName: 'ssh_a', enabled: true },
    { token: root },
  );
  t.is(again.status, 409);
  t.regex(again.body.message, /remotePort 6022 \(tcp\) is already used by proxy ssh_b of instance px_same_b/);
  // Moving an instance onto a server where its proxies clash is refused the same way.
  const move = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: elsewhere.id, type: 'configFile', modifiedData: { serverPort: 7100 } },
    { token: root },
  );
  t.is(move.status, 409);
});
