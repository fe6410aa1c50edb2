import { appendFile } from 'node:fs/promises';
import test from 'ava';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { VISITORS_TOML } from '../../config/proxy-examples.js';
import { ADMIN, Daemon, dispose, disposeWithTunnels, startDaemon, startWithRoot } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, tcpProxy, waitFor } from '../../helpers/instances.js';
import { Nginx, guideNginxRecipe } from '../../helpers/nginx.js';
import { openStream, wsUrl } from '../../helpers/streams.js';

const register = (daemon: Daemon, username: string) => daemon.post('/register', { username, passwd: 'Passw0rd!x' });

const systemLog = (daemon: Daemon, token?: string) =>
  openStream(wsUrl(daemon.url, `/system/getLogs${token ? `?token=${token}` : ''}`)).then(
    (stream) => (stream.ws.close(), 101),
    (refusal: { status: number }) => refusal.status,
  );

const selfCheckExposure = async (daemon: Daemon, token: string) => {
  const res = await daemon.get('/system/selfCheck', { token });
  return res.body.data.checks.find((c: any) => c.name === 'exposure');
};

/** What a visitor sees of an instance and its proxies, and what an admin sees. */
async function views(daemon: Daemon, root: string, name: string) {
  const visitor = await daemon.userWithToken(root, `${name}_v`, 'visitor');
  const inst = await createInstance(daemon, root, name);
  await daemon.post(
    '/tunnelAct/proxyMgr/create',
    {
      instanceID: inst.id,
      proxyInfo: { name: 'db', type: 'tcp', localIP: '10.1.2.3', localPort: '5432', remotePort: '6543' },
    },
    { token: root },
  );
  await appendFile(inst.configPath, VISITORS_TOML);
  const read = async (token: string) => {
    const listed = (await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${inst.id}`, { token })).body.data;
    return {
      info: (await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${inst.id}`, { token })).body.data,
      proxy: listed.proxies[0],
      visitor: listed.visitors[0],
      exported: (await daemon.get(`/tunnelAct/instanceMgr/export?instanceID=${inst.id}`, { token })).status,
    };
  };
  return { visitor: await read(visitor.token), admin: await read(root) };
}

test('on loopback the contract stays as it is: registration open, the system log without a token, visitors see details', async (t) => {
  const daemon = await startDaemon({ settingsToml: instanceSettings() });
  t.teardown(() => dispose(daemon));
  const root = await daemon.login();
  t.true((await register(daemon, 'loop_guest')).body.success);
  t.is(await systemLog(daemon), 101);
  const check = await selfCheckExposure(daemon, root);
  t.true(check.ok, check.message);
  t.false(daemon.output.some((line) => line.includes('open door')));

  const seen = await views(daemon, root, 'loop_inst');
  t.is(seen.visitor.info.configPath, seen.admin.info.configPath);
  t.is(seen.visitor.info.runUser, 'root');
  t.is(seen.visitor.proxy.localIP, '10.1.2.3');
  t.is(seen.visitor.visitor.bindPort, '15432');
  t.is(seen.visitor.exported, 200);
});

test('listening on 0.0.0.0: registration closed, the system log needs a token, visitors see no internals, every open door is named', async (t) => {
  const daemon = await startDaemon({ settingsToml: instanceSettings(), args: ['--host', '0.0.0.0'] });
  t.teardown(() => dispose(daemon));
  const root = await daemon.login();

  const closed = await register(daemon, 'wide_guest');
  t.is(closed.status, 403);
  t.regex(closed.body.message, /self-registration is closed.*off loopback/);
  t.is(await systemLog(daemon), 401);
  t.is(await systemLog(daemon, root), 101);

  // Plain HTTP is the one door left open by default; the start-up log says so, and so does the self-check.
  const check = await selfCheckExposure(daemon, root);
  t.false(check.ok);
  t.regex(check.message, /plain HTTP/);
  t.notRegex(check.message, /register|SystemLog|Visitor/);
  t.true(daemon.output.some((line) => /open door: plain HTTP/.test(line)));

  const seen = await views(daemon, root, 'wide_inst');
  t.is(seen.visitor.info.configPath, undefined);
  t.is(seen.visitor.info.runUser, undefined);
  t.is(seen.visitor.proxy.name, 'db');
  t.is(seen.visitor.proxy.localIP, undefined);
  t.is(seen.visitor.proxy.localPort, undefined);
  t.deepEqual(seen.visitor.visitor, { name: 'pg_visitor', type: 'stcp', enabled: true }, 'not where it listens');
  t.is(seen.visitor.exported, 403);
  t.is(seen.admin.info.configPath.endsWith('.toml'), true, 'an admin still sees everything');
  t.is(seen.admin.proxy.localIP, '10.1.2.3');
  t.is(seen.admin.visitor.serverName, 'postgres');

  // Each door opens only when a setting says so explicitly, and the self-check names it then.
  const set = await daemon.post(
    '/settings/set',
    { 'Register.Enabled': true, 'SystemLog.RequireToken': false, 'Visitor.ShowDetails': true },
    { token: root },
  );
  t.true(set.body.success, set.body.message);
  t.true((await register(daemon, 'wide_guest')).body.success);
  t.is(await systemLog(daemon), 101);
  const open = await selfCheckExposure(daemon, root);
  t.regex(open.message, /register a visitor.*log streams to anyone.*visitors see local addresses/);
  const shown = await daemon.get('/tunnelAct/instanceMgr/list', { token: root });
  t.true(shown.body.success);
});

/** The same daemon, reached through a reverse proxy at `url`. */
function through(daemon: Daemon, url: string): Daemon {
  const proxied = new Daemon(daemon.proc, daemon.dataDir);
  proxied.url = url;
  return proxied;
}

/** The client address the audit trail recorded for the latest login. */
const lastLoginIp = async (daemon: Daemon, token: string) =>
  (await daemon.get('/system/audit?action=login&limit=1', { token })).body.data.entries[0].ip;

const UNTRUSTED_FORWARD = /arrived through a reverse proxy.*TrustedProxies is empty/;

test("behind the operator guide's nginx recipe: forwarded requests find the doors closed; a trusted proxy closes them for all and its clients' own addresses are recorded", async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => dispose(daemon));
  const nginx = await Nginx.start(`server {\n  listen @LISTEN@;\n${await guideNginxRecipe(daemon.url)}}\n`);
  t.teardown(() => nginx.stop());
  const proxied = through(daemon, nginx.url);

  // TrustedProxies is empty: a forwarded request may come from anywhere, so it finds the `auto` doors closed.
  const closed = await register(proxied, 'proxied_guest');
  t.is(closed.status, 403);
  t.regex(closed.body.message, /self-registration is closed.*behind a reverse proxy/);
  t.is(await systemLog(proxied), 401);
  t.is(await systemLog(proxied, root), 101, 'the WebSocket upgrade passes through the recipe');
  const seen = await views(proxied, root, 'proxied_inst');
  t.is(seen.visitor.info.configPath, undefined);
  t.is(seen.visitor.info.runUser, undefined);
  t.is(seen.visitor.proxy.localIP, undefined);
  t.is(seen.visitor.exported, 403);
  t.is(seen.admin.proxy.localIP, '10.1.2.3', 'an admin still sees everything');
  // The local host, reaching the daemon itself, still finds the contract as it is.
  t.true((await register(daemon, 'local_guest')).body.success);

  // The client's own address is not believed (the proxy is not named): the audit trail has nginx's.
  const client = { body: ADMIN, localAddress: '127.0.0.2' };
  t.is((await proxied.rawRequest('POST', '/login', client)).status, 200);
  t.is(await lastLoginIp(daemon, root), '127.0.0.1');
  // Said once in the daemon's log, however many forwarded requests follow.
  await daemon.waitForOutput(UNTRUSTED_FORWARD);
  t.is(daemon.output.filter((line) => UNTRUSTED_FORWARD.test(line)).length, 1);

  // Named in TrustedProxies: the real client's address is logged and audited, and the doors are closed to everyone.
  const trusted = await daemon.post('/settings/set', { TrustedProxies: ['127.0.0.1'] }, { token: root });
  t.true(trusted.body.success, trusted.body.message);
  t.is((await proxied.rawRequest('POST', '/login', client)).status, 200);
  t.is(await lastLoginIp(daemon, root), '127.0.0.2');
  await daemon.waitForOutput(/"action":"login".*"ip":"127\.0\.0\.2"/);
  t.is((await register(proxied, 'proxied_guest')).status, 403);
  t.is((await register(daemon, 'local_guest2')).status, 403, 'the proxy reaches the daemon from this host too');
  t.is(await systemLog(daemon), 401);
  t.is((await views(daemon, root, 'trusted_inst')).visitor.exported, 403);

  // An explicitly opened door is named by the self-check; plain HTTP is not, the proxy in front holds the TLS.
  t.true((await selfCheckExposure(daemon, root)).ok);
  const opened = await daemon.post('/settings/set', { 'Register.Enabled': true }, { token: root });
  t.true(opened.body.success, opened.body.message);
  const open = await selfCheckExposure(daemon, root);
  t.false(open.ok);
  t.regex(open.message, /register a visitor/);
  t.notRegex(open.message, /plain HTTP/);
  t.true((await register(proxied, 'proxied_guest')).body.success);
  t.is(daemon.output.filter((line) => UNTRUSTED_FORWARD.test(line)).length, 1);
});

test('with TrustedProxies set, the start-up warning names the doors left open, on loopback too', async (t) => {
  const daemon = await startDaemon({
    settingsToml: `TrustedProxies = ["127.0.0.1"]\n"Register.Enabled" = true\n`,
  });
  t.teardown(() => dispose(daemon));
  await daemon.waitForOutput(/open door: anyone who reaches the port can register/);
  t.false(daemon.output.some((line) => /open door: (plain HTTP|the daemon's log|visitors see)/.test(line)));
});

test('a visitor never reads the tunnel server: not in getInfo, not in an export, not in the proxy list (details shown)', async (t) => {
  const daemon = await startDaemon({ settingsToml: instanceSettings({ 'Status.PollSecs': 600 }) });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const root = await daemon.login();
  const visitor = await daemon.userWithToken(root, 'srv_visitor', 'visitor');
  const control = join(daemon.dataDir, 'control.json');
  await writeFile(control, JSON.stringify({ server: 'up' }));
  const inst = await createInstance(daemon, root, 'srv_inst', { metadatas: { 'fixture.control': control } });
  await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: inst.id, proxyInfo: tcpProxy('ssh', 6410) },
    { token: root },
  );
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: inst.id }, { token: root })).body.success);
  const list = (token: string) =>
    daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${inst.id}`, { token }).then((res) => res.body.data.proxies[0]);
  const admin = await waitFor(
    () => list(root),
    (p) => p.status === 'running',
  );
  t.is(admin.remoteAddr, '127.0.0.1:6410', 'an admin sees where the proxy is reached');

  const seen = await list(visitor.token);
  t.is(seen.status, 'running');
  t.is(seen.localIP, '127.0.0.1', 'details are shown on loopback');
  t.false('remoteAddr' in seen, 'but not the server the proxy is reached on');
  const info = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${inst.id}`, { token: visitor.token });
  t.false('serverAddr' in info.body.data || 'serverPort' in info.body.data);

  const exported = await daemon.get(`/tunnelAct/instanceMgr/export?instanceID=${inst.id}`, { token: visitor.token });
  t.true(exported.body.success, exported.body.message);
  const doc = parse(exported.body.data.content) as Record<string, unknown>;
  t.false('serverAddr' in doc || 'serverPort' in doc, exported.body.data.content);
  t.like(doc, { proxies: [{ name: 'ssh' }] });
  const full = await daemon.get(`/tunnelAct/instanceMgr/export?instanceID=${inst.id}`, { token: root });
  t.like(parse(full.body.data.content), { serverAddr: '127.0.0.1' });
});
