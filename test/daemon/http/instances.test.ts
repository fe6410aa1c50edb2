import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import test from 'ava';
import { parse } from 'smol-toml';
import { dispose, disposeWithTunnels, startDaemon, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import {
  createInstance,
  frpcVerify,
  instanceSettings,
  statusOf,
  tcpProxy,
  tunnelPids,
  waitFor,
} from '../../helpers/instances.js';
import { quietFor } from '../../helpers/until.js';

let daemon: Daemon;
let root: string;
let visitor: { token: string };
test.before(async () => {
  daemon = await startDaemon({ settingsToml: instanceSettings() });
  root = await daemon.login();
  visitor = await daemon.userWithToken(root, 'in_visitor', 'visitor');
});
test.after.always(async () => {
  const list = await daemon.get('/tunnelAct/instanceMgr/list', { token: root });
  for (const i of list.body.data ?? [])
    await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: String(i.instanceID) }, { token: root });
  await dispose(daemon);
});

test('create writes a 0600 config file named after the id that frpc-style validation accepts', async (t) => {
  const res = await daemon.post(
    '/tunnelAct/instanceMgr/create',
    {
      instanceInfo: { name: 'in_create', serverAddr: 'frp.example.com', serverPort: '7000', auth_method: 'token' },
      additionalProperties: {
        'auth.token': 'tok-secret',
        'transport.tls.enable': true,
        log_level: 'debug',
        'transport.poolCount': 5,
      },
    },
    { token: root },
  );
  t.true(res.body.success, res.body.message);
  const { instanceID, name, configPath, bootAtStart } = res.body.data;
  t.true(Number.isInteger(instanceID));
  t.is(name, 'in_create');
  t.is(bootAtStart, false);
  t.is(basename(configPath), `tunnel_${instanceID}.toml`);
  t.is((await stat(configPath)).mode & 0o777, 0o600);
  const file = parse(await readFile(configPath, 'utf8')) as any;
  t.like(file, { serverAddr: 'frp.example.com', serverPort: 7000, auth: { method: 'token', token: 'tok-secret' } });
  t.is(file.transport.tls.enable, true);
  t.is(file.log.level, 'debug', 'the older log_level spelling is mapped');
  t.is(file.transport.poolCount, 5);
  // frpc's admin API, for tunnelward alone: loopback, a port of its own, a random password never shown.
  t.like(file.webServer, { addr: '127.0.0.1', user: 'tunnelward' });
  t.true(Number.isInteger(file.webServer.port) && file.webServer.port > 0);
  t.true(file.webServer.password.length >= 32);
  t.true((await frpcVerify(configPath)).ok);
  t.false(JSON.stringify(res.body).includes('tok-secret'));
  t.false(JSON.stringify(res.body).includes(file.webServer.password));
  const own = await daemon.post(
    '/tunnelAct/instanceMgr/create',
    {
      instanceInfo: { name: 'in_own_web', serverAddr: 'frp.example.com', serverPort: '7000', auth_method: 'token' },
      additionalProperties: { webServer: { port: 7400 } },
    },
    { token: root },
  );
  t.is(own.status, 400);
  t.regex(own.body.message, /webServer is managed by tunnelward/);
});

test('create validates its input', async (t) => {
  const base = { name: 'in_bad', serverAddr: 'h', serverPort: '7000', auth_method: 'token' };
  const cases: Array<[object, number, RegExp]> = [
    [{}, 400, /instanceInfo is required/],
    [{ instanceInfo: { ...base, name: undefined } }, 400, /name is required/],
    [{ instanceInfo: { ...base, serverPort: 7000 } }, 400, /serverPort must be a string/],
    [{ instanceInfo: { ...base, serverPort: '70000' } }, 400, /serverPort/],
    [{ instanceInfo: { ...base, auth_method: 'password' } }, 400, /token, oidc/],
    [{ instanceInfo: { ...base, name: 'bad name!' } }, 400, /name must be 1-64/],
    [
      { instanceInfo: base, additionalProperties: { colour: 'blue', 'auth.tokn': 'x' } },
      400,
      /colour.*auth\.tokn|auth\.tokn.*colour/,
    ],
    [{ instanceInfo: base, additionalProperties: { user: '{{ env "HOME" }}' } }, 400, /Go template/],
    [{ instanceInfo: base, runUser: 'no_such_user_here' }, 400, /runUser "no_such_user_here" is not a user/],
    [{ instanceInfo: base, bootAtStart: 'yes' }, 400, /bootAtStart must be a boolean/],
  ];
  for (const [body, status, message] of cases) {
    const res = await daemon.post('/tunnelAct/instanceMgr/create', body, { token: root });
    t.is(res.status, status, JSON.stringify(body));
    t.regex(res.body.message, message, JSON.stringify(body));
  }
  await createInstance(daemon, root, 'in_dup');
  const dup = await daemon.post(
    '/tunnelAct/instanceMgr/create',
    { instanceInfo: { ...base, name: 'in_dup' } },
    { token: root },
  );
  t.is(dup.status, 409);
});

test('visitors see instances but change nothing; serverAddr and serverPort are hidden from them', async (t) => {
  const { id } = await createInstance(daemon, root, 'in_roles', {}, { serverPort: '7000' });
  for (const path of ['create', 'delete', 'modify', 'start', 'stop', 'restart']) {
    const res = await daemon.post(`/tunnelAct/instanceMgr/${path}`, { instanceID: id }, { token: visitor.token });
    t.is(res.status, 403, path);
  }
  const list = await daemon.get('/tunnelAct/instanceMgr/list', { token: visitor.token });
  const mine = list.body.data.find((i: any) => i.name === 'in_roles');
  t.like(mine, { instanceID: Number(id), createdBy: 'admin', isRunning: false });
  t.regex(mine.createdAt, /^\d{4}-\d{2}-\d{2}T/);
  const info = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: visitor.token });
  t.like(info.body.data, {
    name: 'in_roles',
    serviceName: `tunnel_${id}`,
    auth_method: 'token',
    runUser: 'root',
    bootAtStart: false,
  });
  t.false('serverAddr' in info.body.data);
  t.false('serverPort' in info.body.data);
  const adminInfo = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root });
  t.like(adminInfo.body.data, { serverAddr: '127.0.0.1', serverPort: '7000' });
  const byHeader = await daemon.get('/tunnelAct/instanceMgr/status', {
    token: visitor.token,
    headers: { 'X-InstanceID': id },
  });
  t.like(byHeader.body.data, {
    name: 'in_roles',
    initSystem: 'process',
    serviceName: `tunnel_${id}`,
    isRunning: false,
  });
});

test('unknown ids are 404, malformed ids 400', async (t) => {
  for (const path of ['start', 'stop', 'restart', 'delete']) {
    const res = await daemon.post(`/tunnelAct/instanceMgr/${path}`, { instanceID: '99999' }, { token: root });
    t.is(res.status, 404, path);
    t.regex(res.body.message, /instance 99999 not found/);
    const bad = await daemon.post(`/tunnelAct/instanceMgr/${path}`, { instanceID: 'abc' }, { token: root });
    t.is(bad.status, 400, path);
    const missing = await daemon.post(`/tunnelAct/instanceMgr/${path}`, {}, { token: root });
    t.is(missing.status, 400, path);
  }
  for (const path of ['status', 'getInfo']) {
    t.is((await daemon.get(`/tunnelAct/instanceMgr/${path}?instanceID=99999`, { token: root })).status, 404);
    t.is((await daemon.get(`/tunnelAct/instanceMgr/${path}?instanceID=1.5`, { token: root })).status, 400);
    t.is((await daemon.get(`/tunnelAct/instanceMgr/${path}`, { token: root })).status, 400);
  }
});

test('start, start again (409), stop, stop again (says so), restart', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'in_cycle');
  const start = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
  t.deepEqual(start.body, { success: true, message: `instance ${id} started`, data: {} });
  const [pid] = await tunnelPids(configPath);
  t.truthy(pid);
  t.is((await statusOf(daemon, root, id)).isRunning, true);
  const again = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
  t.is(again.status, 409);
  t.regex(again.body.message, /already running/);
  const restart = await daemon.post('/tunnelAct/instanceMgr/restart', { instanceID: id }, { token: root });
  t.true(restart.body.success);
  const after = await tunnelPids(configPath);
  t.is(after.length, 1);
  t.not(after[0], pid, 'a new process');
  const stop = await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token: root });
  t.deepEqual(stop.body, { success: true, message: `instance ${id} stopped`, data: {} });
  t.deepEqual(await tunnelPids(configPath), []);
  const stopAgain = await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token: root });
  t.is(stopAgain.status, 200);
  t.regex(stopAgain.body.message, /already stopped/);
  t.is((await statusOf(daemon, root, id)).isRunning, false);
});

test('a start whose tunnel exits says how (502), and the watchdog retries it up to the start limit', async (t) => {
  // Its own daemon, StartSecs 1.5: a start that fails is judged over a time a Node fixture boots in even on a
  // loaded machine.
  const { daemon: slow, root: slowRoot } = await startWithRoot({
    settingsToml: instanceSettings({ 'Instance.StartSecs': 1.5 }),
  });
  t.teardown(() => disposeWithTunnels(slow, slowRoot));
  const { id } = await createInstance(slow, slowRoot, 'in_exits', {
    metadatas: { 'fixture.exit': 'now', 'fixture.exitCode': '4' },
  });
  const res = await slow.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: slowRoot });
  t.is(res.status, 502, 'nothing failed in tunnelward: the tunnel did');
  t.false(res.body.success);
  t.regex(res.body.message, /exited with code 4 before it was up for 1500 ms; the watchdog starts it again/);
  t.regex(res.body.message, /fixture: exiting with code 4/);
  t.false(/\x1b\[/.test(res.body.message), 'colour codes stripped');
  // Supervised as any exit: retried after the backoff until the start limit, then failed.
  await slow.waitForOutput(new RegExp(`"instanceID":${id},.*"to":"failed"`), 30_000);
  const status = await statusOf(slow, slowRoot, id);
  t.is(status.state, 'failed');
  t.is(status.restarts, 2, 'the start limit (3 here) counts the operator start and 2 restarts');
  t.like(status.lastExit, { code: 4, signal: null });
  t.regex(status.lastError, /^exited with code 4; last log lines:\n.*fixture: exiting with code 4/s, 'why it gave up');
});

test("a config error (frpc exits 1 during its start) goes straight to failed with frpc's message, never retried", async (t) => {
  // Its own daemon, StartSecs 1.5: a start that fails is judged over a time a Node fixture boots in even on a
  // loaded machine.
  const { daemon: slow, root: slowRoot } = await startWithRoot({
    settingsToml: instanceSettings({ 'Instance.StartSecs': 1.5 }),
  });
  t.teardown(() => disposeWithTunnels(slow, slowRoot));
  const { id, configPath } = await createInstance(slow, slowRoot, 'in_config_error');
  // A key frpc does not know, written behind tunnelward's back: frpc refuses the file and exits 1.
  await writeFile(configPath, (await readFile(configPath, 'utf8')) + 'serverAdr = "typo"\n');
  const res = await slow.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: slowRoot });
  t.is(res.status, 502);
  t.regex(res.body.message, /exited with code 1 .*failed: exit code 1 says retrying will not help/s);
  t.regex(res.body.message, /serverAdr/);
  t.is((await statusOf(slow, slowRoot, id)).state, 'failed');
  await slow.waitForOutput(new RegExp(`"instanceID":${id},.*"to":"failed"`));
  // Past several backoff periods (0.1-0.4 s here), nothing was started again.
  await quietFor(1000, 'a restart of a failed tunnel');
  t.deepEqual(await tunnelPids(configPath), []);
  t.is((await statusOf(slow, slowRoot, id)).state, 'failed');
  const log = await readFile(`${slow.dataDir}/logs/tunnel_${id}.log`, 'utf8');
  t.is(log.split('\n').filter((l) => l.includes('serverAdr')).length, 1, 'one attempt only');
});

test('concurrent start/stop/restart bursts on one instance end in a consistent state', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'in_burst');
  const commands = [
    'start',
    'restart',
    'stop',
    'start',
    'start',
    'stop',
    'restart',
    'restart',
    'stop',
    'start',
    'restart',
  ];
  const results = await Promise.all(
    commands.map((c) => daemon.post(`/tunnelAct/instanceMgr/${c}`, { instanceID: id }, { token: root })),
  );
  for (const r of results) t.true(r.status === 200 || r.status === 409, `${r.status} ${r.body.message}`);
  const status = await statusOf(daemon, root, id);
  const pids = await tunnelPids(configPath);
  t.is(pids.length, status.isRunning ? 1 : 0, 'exactly one process when running, none when stopped');
  t.true(status.state === 'running' || status.state === 'stopped');
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token: root });
  t.deepEqual(await tunnelPids(configPath), []);
});

test('a tunnel that ignores SIGTERM is killed after the stop timeout', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'in_stubborn', {
    metadatas: { 'fixture.ignoreSigterm': 'true' },
  });
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
  t.is((await tunnelPids(configPath)).length, 1);
  const stop = await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token: root });
  t.true(stop.body.success);
  t.deepEqual(await tunnelPids(configPath), []);
  t.regex(await readFile(daemon.dataDir + `/logs/tunnel_${id}.log`, 'utf8'), /ignoring SIGTERM/);
});

test('crash while running: restarts with backoff, then gives up (failed) until started by hand', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'in_crashy', {
    metadatas: { 'fixture.crashAfterMs': '1500' },
  });
  const start = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
  t.true(start.body.success);
  const failed = await waitFor(
    () => statusOf(daemon, root, id),
    (s) => s.state === 'failed',
    30_000,
  );
  t.false(failed.isRunning);
  t.deepEqual(await tunnelPids(configPath), []);
  await daemon.waitForOutput(new RegExp(`"instanceID":${id},.*the watchdog gives up`));
  const lines = daemon.output.filter((l) => l.includes(`"instanceID":${id},`));
  t.is(
    lines.filter((l) => l.includes('restarting after a delay')).length,
    2,
    'StartLimit 3: two restarts, then give up',
  );
  t.true(lines.some((l) => l.includes('the watchdog gives up')));
  await quietFor(600, 'a restart of a failed tunnel');
  t.is((await statusOf(daemon, root, id)).state, 'failed', 'failed stays failed');
  const again = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
  t.true(again.body.success, 'a manual start leaves failed');
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token: root });
});

test('delete of a running instance stops it and removes its file', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'in_deleted');
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
  t.is((await tunnelPids(configPath)).length, 1);
  const res = await daemon.post('/tunnelAct/instanceMgr/delete', { instanceID: id }, { token: root });
  t.deepEqual(res.body, {
    success: true,
    message: 'instance in_deleted deleted; its log is kept (purge removes it)',
    data: { instanceID: Number(id), name: 'in_deleted', logKept: true },
  });
  t.deepEqual(await tunnelPids(configPath), []);
  await t.throwsAsync(stat(configPath));
  t.is((await daemon.get(`/tunnelAct/instanceMgr/status?instanceID=${id}`, { token: root })).status, 404);
  const list = await daemon.get('/tunnelAct/instanceMgr/list', { token: root });
  t.false(list.body.data.some((i: any) => i.name === 'in_deleted'));
});

test('a missing tunnel binary gives a clear message at start', async (t) => {
  const other = await startDaemon({
    settingsToml: instanceSettings().replace(/^TunnelPath = .*$/m, 'TunnelPath = "/nonexistent/frpc"'),
  });
  t.teardown(() => dispose(other));
  const token = await other.login();
  const { id } = await createInstance(other, token, 'in_nobinary');
  const res = await other.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
  t.is(res.status, 409, 'refused before anything is done: the settings are what is wrong');
  t.regex(res.body.message, /cannot start: TunnelPath \/nonexistent\/frpc is missing or not an executable file/);
  t.is((await other.get('/system/getStatus')).status, 200, 'the daemon is fine');
});

test('a config file deleted behind our back: start, restart and edits say so with a 409, and the daemon goes on', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'in_nofile');
  await rm(configPath);
  // A restart adds that it stopped nothing.
  const missing = new RegExp(
    `^(instance ${id} cannot restart, so it was not stopped: )?the config file ${configPath} is missing \\(removed outside tunnelward\\)`,
  );
  for (const [path, body] of [
    ['/tunnelAct/instanceMgr/start', { instanceID: id }],
    ['/tunnelAct/instanceMgr/restart', { instanceID: id }],
    ['/tunnelAct/instanceMgr/modify', { instanceID: id, type: 'configFile', modifiedData: { serverPort: '7001' } }],
    ['/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcpProxy('nofile', 6990) }],
  ] as const) {
    const res = await daemon.post(path, body, { token: root });
    t.is(res.status, 409, `${path}: ${res.body.message}`);
    t.regex(res.body.message, missing, path);
  }
  const list = await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token: root });
  t.is(list.status, 409, list.body.message);
  t.regex(list.body.message, missing);
  t.is((await statusOf(daemon, root, id)).isRunning, false);
  await t.throwsAsync(stat(configPath), undefined, 'nothing wrote a half file in its place');
  const removed = await daemon.post('/tunnelAct/instanceMgr/delete', { instanceID: id }, { token: root });
  t.true(removed.body.success, 'an instance without its file can still be deleted');
});

test('map keys (metadatas, featureGates, auth.oidc.additionalEndpointParams) entry by entry, as objects, removed with null', async (t) => {
  const res = await daemon.post(
    '/tunnelAct/instanceMgr/create',
    {
      instanceInfo: { name: 'in_maps', serverAddr: '127.0.0.1', serverPort: '7999', auth_method: 'token' },
      additionalProperties: {
        'metadatas.owner': 'ops',
        'metadatas.fixture.logEveryMs': '1000',
        auth: { oidc: { additionalEndpointParams: { audience: 'tunnels' } } },
        featureGates: { VirtualNet: true },
      },
    },
    { token: root },
  );
  t.true(res.body.success, res.body.message);
  const { instanceID, configPath } = res.body.data;
  const written = parse(await readFile(configPath, 'utf8'));
  t.deepEqual(written.metadatas, { owner: 'ops', 'fixture.logEveryMs': '1000' });
  t.deepEqual(written.auth, { method: 'token', oidc: { additionalEndpointParams: { audience: 'tunnels' } } });
  t.deepEqual(written.featureGates, { VirtualNet: true });

  const modify = (modifiedData: object) =>
    daemon.post(
      '/tunnelAct/instanceMgr/modify',
      { instanceID: String(instanceID), type: 'configFile', modifiedData },
      { token: root },
    );
  const changed = await modify({
    'metadatas.team': 'blue',
    'metadatas.owner': null,
    'featureGates.VirtualNet': false,
    'auth.oidc.additionalEndpointParams.resource': 'api',
  });
  t.true(changed.body.success, changed.body.message);
  const after = parse(await readFile(configPath, 'utf8'));
  t.deepEqual(after.metadatas, { 'fixture.logEveryMs': '1000', team: 'blue' }, 'the other entries are kept');
  t.deepEqual(after.featureGates, { VirtualNet: false });
  t.deepEqual((after.auth as any).oidc.additionalEndpointParams, { audience: 'tunnels', resource: 'api' });
  t.true((await frpcVerify(configPath)).ok, 'frpc reads what was written');
  // The fixture reads its controls from these entries: the file runs.
  const start = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: String(instanceID) }, { token: root });
  t.true(start.body.success, start.body.message);
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: String(instanceID) }, { token: root });

  for (const [data, message] of [
    [{ 'metadatas.team': 7 }, /^metadatas\.team must be a string$/],
    [{ 'featureGates.VirtualNet': 'yes' }, /^featureGates\.VirtualNet must be true or false$/],
    [{ 'metadatas.bad name': 'x' }, /^metadatas entry names must be/],
    [{ metadatas: { a: '1' }, 'metadatas.b': '2' }, /^metadatas\.b and metadatas both set metadatas\.b$/],
    [{ 'serverPort.x': '1' }, /^Unknown config key: serverPort\.x$/],
  ] as const) {
    const refused = await modify(data);
    t.is(refused.status, 400, JSON.stringify(data));
    t.regex(refused.body.message, message);
  }
  t.deepEqual(parse(await readFile(configPath, 'utf8')), after, 'a refused change writes nothing');
});
