import { appendFile } from 'node:fs/promises';
import test from 'ava';
import { VISITORS_TOML } from '../config/proxy-examples.js';
import { dispose, startDaemon, type Daemon } from '../helpers/daemon.js';
import { createInstance, instanceSettings } from '../helpers/instances.js';
import { openStream, wsUrl } from '../helpers/streams.js';

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
