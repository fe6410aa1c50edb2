import { readFile } from 'node:fs/promises';
import test from 'ava';
import { parse } from 'smol-toml';
import { dispose, startDaemon, type Daemon } from '../helpers/daemon.js';
import { createInstance, frpcVerify, instanceSettings } from '../helpers/instances.js';

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
  const created = await daemon.post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcp('ssh', '6000') }, { token: root });
  t.deepEqual(created.body.data, { instanceID: Number(id), configPath, proxyName: 'ssh' });
  await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: { name: 'web', type: 'http', localIP: '127.0.0.1', localPort: '80', remotePort: '', customDomains: ['a.example.com'] } },
    { token: root },
  );
  const listed = await list(id, visitor);
  t.is(listed.data.proxyCount, 2);
  t.deepEqual(listed.data.proxies[0], { name: 'ssh', type: 'tcp', localIP: '127.0.0.1', localPort: '22', remotePort: '6000', enabled: true });
  t.like(listed.data.proxies[1], { name: 'web', type: 'http', localPort: '80', remotePort: '', customDomains: ['a.example.com'] });

  const modified = await daemon.post('/tunnelAct/proxyMgr/modify', { instanceID: id, proxyInfo: tcp('ssh', '6001') }, { token: root });
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

  const disabled = await daemon.post('/tunnelAct/proxyMgr/setStatus', { instanceID: id, proxyName: 'ssh3', enabled: false }, { token: root });
  t.true(disabled.body.success);
  t.is((await list(id)).data.proxies[0].enabled, false);
  t.is((parse(await readFile(configPath, 'utf8')) as any).proxies[0].enabled, false, "frpc's own enabled = false");
  t.true((await frpcVerify(configPath)).ok);
  await daemon.post('/tunnelAct/proxyMgr/setStatus', { instanceID: id, proxyName: 'ssh3', enabled: true }, { token: root });
  t.false('enabled' in (parse(await readFile(configPath, 'utf8')) as any).proxies[0], 'omitted when true');

  const deleted = await daemon.post('/tunnelAct/proxyMgr/delete', { instanceID: id, proxyName: 'web' }, { token: root });
  t.deepEqual(deleted.body.data, { instanceID: Number(id), configPath, proxyName: 'web' });
  t.deepEqual((await list(id)).data.proxies.map((p: any) => p.name), ['ssh3']);
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
  const unknown = await daemon.post('/tunnelAct/proxyMgr/modify', { instanceID: id, proxyInfo: tcp('ghost', '7005') }, { token: root });
  t.is(unknown.status, 404);
  const delUnknown = await daemon.post('/tunnelAct/proxyMgr/delete', { instanceID: id, proxyName: 'ghost' }, { token: root });
  t.is(delUnknown.status, 404);
  const setBad = await daemon.post('/tunnelAct/proxyMgr/setStatus', { instanceID: id, proxyName: 'taken', enabled: 'no' }, { token: root });
  t.is(setBad.status, 400);
  for (const path of ['create', 'modify', 'delete', 'setStatus']) {
    const res = await daemon.post(`/tunnelAct/proxyMgr/${path}`, { instanceID: id, proxyName: 'taken', proxyInfo: tcp('x', '1') }, { token: visitor });
    t.is(res.status, 403, path);
  }
});

test('values cannot inject keys or blocks, and {{ }} are refused everywhere', async (t) => {
  const tricky = 'eve" serverPort = 1 ]] [[proxies]] name = "x\\';
  const { id, configPath } = await createInstance(daemon, root, 'px_inject', { user: tricky });
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
    ['localIP', { instanceID: id, proxyInfo: tcp('p2', '7102', { localIP: '{{ .Envs.HOME }}' }) }],
    ['subdomain', { instanceID: id, proxyInfo: { name: 'p3', type: 'http', localPort: '80', subdomain: 'a}}' } }],
  ];
  for (const [what, body] of templates) {
    const res = await daemon.post('/tunnelAct/proxyMgr/create', body, { token: root });
    t.is(res.status, 400, what);
  }
  const modify = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'configFile', modifiedData: { 'auth.token': 'a{{ .Envs.PATH }}b' } },
    { token: root },
  );
  t.is(modify.status, 400);
  t.regex(modify.body.message, /Go template/);
  t.false(modify.body.message.includes('Envs'), 'the secret value is not echoed');
  t.true((await frpcVerify(configPath)).ok);
});

test('modify configFile changes top-level keys only; proxies stay as they were', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'px_common', { 'auth.token': 'old' });
  await daemon.post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcp('keep', '7200', { 'transport.useEncryption': true }) }, { token: root });
  const before = (parse(await readFile(configPath, 'utf8')) as any).proxies;
  const res = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'configFile', modifiedData: { server_addr: 'new.example.com', server_port: '7443', 'auth.method': 'token', 'auth.token': 'new-secret' } },
    { token: root },
  );
  t.deepEqual(res.body.data, { instanceID: Number(id), configPath });
  const after = parse(await readFile(configPath, 'utf8')) as any;
  t.like(after, { serverAddr: 'new.example.com', serverPort: 7443, auth: { token: 'new-secret' } });
  t.deepEqual(after.proxies, before);
  t.false(JSON.stringify(res.body).includes('new-secret'));
  t.false(daemon.output.some((l) => l.includes('new-secret')), 'never logged');
  const unknown = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'configFile', modifiedData: { not_a_key: 1 } },
    { token: root },
  );
  t.is(unknown.status, 400);
  t.regex(unknown.body.message, /not_a_key/);
  const badType = await daemon.post('/tunnelAct/instanceMgr/modify', { instanceID: id, type: 'other', modifiedData: {} }, { token: root });
  t.is(badType.status, 400);
  t.true((await frpcVerify(configPath)).ok);
});

test('modify systemConfig renames the record, not the file, and checks runUser', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'px_sys');
  const res = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'systemConfig', modifiedData: { name: 'px_sys_renamed', bootAtStart: true, runUser: 'root' } },
    { token: root },
  );
  t.true(res.body.success, res.body.message);
  t.deepEqual(res.body.data, { instanceID: Number(id), configPath, bootAtStart: true, runUser: 'root' });
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
