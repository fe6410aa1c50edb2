// Proxy edits on a running tunnel go through frpc's reload (the fixture's admin API): the other proxies keep
// running, a refused reload leaves the file and the tunnel as they were.
import test from 'ava';
import { readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { disposeWithTunnels, startWithRoot, tempDir, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, tunnelPids, waitFor, tcpProxy } from '../../helpers/instances.js';
import { until } from '../../helpers/until.js';

let daemon: Daemon;
let root: string;
test.before(async () => {
  ({ daemon, root } = await startWithRoot({ settingsToml: instanceSettings() }));
});
test.after.always(() => disposeWithTunnels(daemon, root));

const tcp = tcpProxy;
const post = (path: string, body: unknown) => daemon.post(path, body, { token: root });
const logOf = (id: string) => readFile(join(daemon.dataDir, 'logs', `tunnel_${id}.log`), 'utf8').catch(() => '');

test('added, removed and disabled proxies reach a running tunnel by reload; the others stay up; a refusal is rolled back', async (t) => {
  const control = join(await tempDir(undefined, t), 'control.json');
  await writeFile(control, JSON.stringify({ server: 'up' }));
  const { id, configPath } = await createInstance(daemon, root, 'rl_one', {
    metadatas: { 'fixture.control': control },
  });
  for (const proxy of [tcp('ssh', 6100), tcp('web', 6101)])
    t.like((await post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: proxy })).body.data, {
      applied: 'on next start',
    });
  t.true((await post('/tunnelAct/instanceMgr/start', { instanceID: id })).body.success);
  const [pid] = await tunnelPids(configPath);
  await waitFor(
    () => logOf(id),
    (log) => log.includes('[web] start proxy success'),
  );

  const added = await post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcp('db', 6102) });
  t.true(added.body.success, added.body.message);
  t.is(added.body.data.applied, 'reload');
  t.regex(added.body.message, /applied by a reload/);
  const removed = await post('/tunnelAct/proxyMgr/delete', { instanceID: id, proxyName: 'web' });
  t.is(removed.body.data.applied, 'reload');
  const disabled = await post('/tunnelAct/proxyMgr/setStatus', { instanceID: id, proxyName: 'db', enabled: false });
  t.is(disabled.body.data.applied, 'reload');
  const log = await waitFor(
    () => logOf(id),
    (text) => text.includes('proxy removed: [db]'),
  );
  t.regex(log, /proxy added: \[db\]/);
  t.regex(log, /proxy removed: \[web\]/);
  t.deepEqual(await tunnelPids(configPath), [pid], 'the same process: no restart');
  t.is(log.match(/\[ssh\] start proxy success/g)?.length, 1, 'ssh was never started again');

  // frpc refuses the next reload: the file goes back to what it was and the tunnel runs on untouched.
  const before = await readFile(configPath, 'utf8');
  await writeFile(control, JSON.stringify({ server: 'up', refuseReload: 'proxy [mail]: port not allowed' }));
  const refused = await post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcp('mail', 6103) });
  t.is(refused.status, 400);
  t.regex(refused.body.message, /frpc refused the change: invalid argument: proxy \[mail\]: port not allowed/);
  t.is(await readFile(configPath, 'utf8'), before, 'rolled back');
  t.deepEqual(await tunnelPids(configPath), [pid]);
  const list = await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token: root });
  t.deepEqual(
    list.body.data.proxies.map((p: { name: string }) => p.name),
    ['ssh', 'db'],
  );
  // The same name can be added once frpc accepts it: nothing of the refused one was kept.
  await writeFile(control, JSON.stringify({ server: 'up' }));
  t.is(
    (await post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcp('mail', 6103) })).body.data.applied,
    'reload',
  );

  // The admin endpoint is tunnelward's: a wrong password is refused.
  const web = (parse(await readFile(configPath, 'utf8')) as { webServer: { port: number; password: string } })
    .webServer;
  const wrong = await fetch(`http://127.0.0.1:${web.port}/api/status`, {
    headers: { Authorization: `Basic ${Buffer.from('tunnelward:guess').toString('base64')}` },
  });
  t.is(wrong.status, 401);
  t.false(JSON.stringify(list.body).includes(web.password), 'the password is never shown');
});

test('an instance made before tunnelward managed the admin endpoint gets one at its next start', async (t) => {
  const first = await startWithRoot({ settingsToml: instanceSettings() });
  const { id, configPath } = await createInstance(first.daemon, first.root, 'rl_old');
  await first.daemon.stop();
  // As an older tunnelward wrote it: no webServer at all.
  const text = await readFile(configPath, 'utf8');
  await writeFile(configPath, text.replace(/\[webServer\][^[]*/s, ''));
  t.false((await readFile(configPath, 'utf8')).includes('webServer'));
  const { daemon: next, root: token } = await startWithRoot({ dataDir: first.daemon.dataDir });
  t.teardown(() => disposeWithTunnels(next, token));
  t.true((await next.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token })).body.success);
  const file = parse(await readFile(configPath, 'utf8')) as { webServer?: { port: number } };
  t.truthy(file.webServer?.port);
  const proxy = await next.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: tcp('ssh', 6200) },
    { token },
  );
  t.is(proxy.body.data.applied, 'reload');
});

test('a top-level change, which frpc cannot reload, restarts a running tunnel and says so; a stopped one waits', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'rl_common');
  const idle = await post('/tunnelAct/instanceMgr/modify', {
    instanceID: id,
    type: 'configFile',
    modifiedData: { user: 'a' },
  });
  t.is(idle.body.data.applied, 'on next start');
  t.true((await post('/tunnelAct/instanceMgr/start', { instanceID: id })).body.success);
  const [before] = await tunnelPids(configPath);
  const changed = await post('/tunnelAct/instanceMgr/modify', {
    instanceID: id,
    type: 'configFile',
    modifiedData: { user: 'ops' },
  });
  t.true(changed.body.success, changed.body.message);
  t.is(changed.body.data.applied, 'restart');
  t.regex(changed.body.message, /applied by a restart/);
  const [after] = await tunnelPids(configPath);
  t.not(after, before, 'a new process reads the new settings');
  t.is((parse(await readFile(configPath, 'utf8')) as { user: string }).user, 'ops');
});

test("a reload that cannot reach frpc's admin API is applied by a restart instead; the change stands", async (t) => {
  const control = join(await tempDir(undefined, t), 'control.json');
  await writeFile(control, JSON.stringify({ server: 'up' }));
  const { id, configPath } = await createInstance(daemon, root, 'rl_unreachable', {
    metadatas: { 'fixture.control': control },
  });
  t.true((await post('/tunnelAct/instanceMgr/start', { instanceID: id })).body.success);
  const [before] = await tunnelPids(configPath);
  await writeFile(control, JSON.stringify({ server: 'up', admin: 'down' }));
  const admin = (parse(await readFile(configPath, 'utf8')) as { webServer: { port: number } }).webServer.port;
  // A new connection each time (a kept-alive one outlives the listener).
  await until(
    () =>
      new Promise<string>((resolve) => {
        const socket = connect(admin, '127.0.0.1', () => {
          socket.destroy();
          resolve('up');
        });
        socket.on('error', () => resolve('down'));
      }),
    (state) => state === 'down',
    { what: "the tunnel's admin API to stop answering" },
  );
  const added = await post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcp('late', 6300) });
  t.true(added.body.success, added.body.message);
  t.is(added.body.data.applied, 'restart');
  t.regex(added.body.message, /applied by a restart/);
  const [after] = await tunnelPids(configPath);
  t.not(after, before);
  t.true((await readFile(configPath, 'utf8')).includes('name = "late"'));
});
