// The change pipeline: every change of a config file runs start to finish in its instance's queue slot, with one
// answer (the plan, how it went, the revision), a failed apply put back whole, dry runs that write nothing, changes
// made against a revision refused once it moved on, and the revisions' history, diff and rollback.
import test from 'ava';
import { access, chmod, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { disposeWithTunnels, programDir, startWithRoot, tempDir, type Daemon } from '../../helpers/daemon.js';
import {
  createInstance,
  FIXTURE_FRPC,
  instanceSettings,
  statusOf,
  tcpProxy,
  tunnelPids,
  waitFor,
} from '../../helpers/instances.js';

let daemon: Daemon;
let root: string;
test.before(async () => {
  ({ daemon, root } = await startWithRoot({ settingsToml: instanceSettings({ 'Revisions.Keep': 4 }) }));
});
test.after.always(() => disposeWithTunnels(daemon, root));

const post = (path: string, body: unknown, token = root) => daemon.post(path, body, { token });
const get = (path: string, token = root) => daemon.get(path, { token });
const modify = (id: string, modifiedData: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  post('/tunnelAct/instanceMgr/modify', { instanceID: id, type: 'configFile', modifiedData, ...extra });
const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/** A running instance whose fixture reads `control` (its imaginary server, its admin API). */
async function running(t: any, name: string) {
  const control = join(await tempDir(undefined, t), 'control.json');
  await writeFile(control, JSON.stringify({ server: 'up' }));
  const made = await createInstance(daemon, root, name, { metadatas: { 'fixture.control': control } });
  t.true(
    (await post('/tunnelAct/proxyMgr/create', { instanceID: made.id, proxyInfo: tcpProxy('ssh', 6500) })).body.success,
  );
  const started = await post('/tunnelAct/instanceMgr/start', { instanceID: made.id });
  t.true(started.body.success, started.body.message);
  return { ...made, control };
}

test('a stop that comes while an edit is being applied by a restart runs after it, and is never undone', async (t) => {
  const { id, configPath, control } = await running(t, 'cp_race');
  const hold = join(await tempDir(undefined, t), 'verify-hold');
  // A top-level change (a restart applies it) whose frpc verify waits until the stop is queued behind it.
  const edit = modify(id, {
    metadatas: { 'fixture.control': control, 'fixture.verifyHold': hold },
  });
  await waitFor(
    () => exists(`${hold}.waiting`),
    (there) => there,
  );
  const stop = post('/tunnelAct/instanceMgr/stop', { instanceID: id });
  await waitFor(
    () => statusOf(daemon, root, id),
    (status) => status.queued === 2,
  );
  await writeFile(hold, '');
  const [edited, stopped] = await Promise.all([edit, stop]);
  t.true(edited.body.success, edited.body.message);
  t.is(edited.body.data.applied, 'restart', 'the edit was applied in its own slot, while the tunnel ran');
  t.true(stopped.body.success, stopped.body.message);
  const status = await statusOf(daemon, root, id);
  t.is(status.state, 'stopped', "the operator's stop stands");
  t.deepEqual(await tunnelPids(configPath), []);
  t.regex(await readFile(configPath, 'utf8'), /verifyHold/, 'the edit stands too');
});

test('an edit the tunnel does not come up with is put back, file and tunnel, and answered as a failure (502)', async (t) => {
  const { id, configPath, control } = await running(t, 'cp_putback');
  const before = await readFile(configPath, 'utf8');
  const revision = (await statusOf(daemon, root, id)).revision;
  const [oldPid] = await tunnelPids(configPath);
  // frpc exits at once with the new file: the restart that applies it does not hold.
  const res = await modify(id, {
    metadatas: { 'fixture.control': control, 'fixture.exit': 'now', 'fixture.exitCode': '3' },
  });
  t.is(res.status, 502);
  t.regex(res.body.message, /the tunnel did not come up with the new file: .*exited with code 3/s);
  t.regex(res.body.message, /the file is back at revision \d+, and the tunnel was restarted on it/);
  t.is(await readFile(configPath, 'utf8'), before, 'the file is as it was, byte for byte');
  const status = await statusOf(daemon, root, id);
  t.is(status.state, 'running');
  t.is(status.revision, revision, 'no revision was made');
  const [pid] = await tunnelPids(configPath);
  t.not(pid, oldPid, 'restarted on the old file');
  const history = await get(`/tunnelAct/instanceMgr/history?instanceID=${id}`);
  t.is(history.body.data.current, revision);

  // A file the tunnel cannot start with is refused before anything is written: a placeholder with no variable.
  const placeholder = await modify(id, { 'auth.token': '{{ .Envs.T }}' });
  t.is(placeholder.status, 400);
  t.regex(
    placeholder.body.message,
    /no environment variable T \(set it with: tunnelward env set cp_putback T; the API: modify, type environment\)/,
  );
  t.is(await readFile(configPath, 'utf8'), before);
  t.deepEqual(await tunnelPids(configPath), [pid], 'the tunnel was not touched');
});

test('a reload that frpc does not answer is not a refusal: the change stands and a restart applies it', async (t) => {
  const { id, configPath, control } = await running(t, 'cp_hang');
  const [oldPid] = await tunnelPids(configPath);
  await writeFile(control, JSON.stringify({ server: 'up', hangReload: true }));
  const started = Date.now();
  const res = await post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcpProxy('web', 6501) });
  const took = Date.now() - started;
  t.true(res.body.success, res.body.message);
  t.is(res.body.data.applied, 'restart');
  t.regex(
    res.body.data.plan.reason,
    /frpc could not be asked to reload \(cannot reach the tunnel's admin API: no answer within 3000 ms\)/,
  );
  t.true(took < 15_000, `bounded: ${took} ms`);
  t.regex(await readFile(configPath, 'utf8'), /name = "web"/);
  const [pid] = await tunnelPids(configPath);
  t.not(pid, oldPid);
  await writeFile(control, JSON.stringify({ server: 'up' }));
  const next = await post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcpProxy('db', 6502) });
  t.is(next.body.data.applied, 'reload');
  t.deepEqual(next.body.data.observed, { db: 'running' }, 'the proxy it added was seen running');
  t.deepEqual(await tunnelPids(configPath), [pid]);
});

test('a dry run answers the diff, the verify result and the plan, and writes nothing', async (t) => {
  const { id, configPath } = await running(t, 'cp_dry');
  const before = await readFile(configPath, 'utf8');
  const mtime = (await stat(configPath)).mtimeMs;
  const revisions = (await get(`/tunnelAct/instanceMgr/history?instanceID=${id}`)).body.data.total;
  const auditOf = async () =>
    (await get('/system/audit?limit=1000')).body.data.entries.filter((e: any) => e.targetID === id).length;
  const audited = await auditOf();
  const dry = await post('/tunnelAct/proxyMgr/create', {
    instanceID: id,
    proxyInfo: tcpProxy('web', 6503),
    dryRun: true,
  });
  t.true(dry.body.success, dry.body.message);
  t.like(dry.body.data, {
    applied: 'not applied',
    dryRun: true,
    plan: { action: 'reload' },
    verify: { verified: true },
  });
  t.regex(dry.body.data.diff, /^\+name = "web"$/m);
  t.regex(
    dry.body.message,
    /^proxy web would be added to instance cp_dry; dry run, nothing written; plan: reload \(only proxies or visitors changed/,
  );
  const settings = await modify(id, { loginFailExit: true }, { dryRun: true });
  t.like(settings.body.data, { applied: 'not applied', plan: { action: 'restart' } });
  t.regex(settings.body.data.plan.reason, /top-level settings changed \(loginFailExit\)/);
  const invalid = await modify(id, { serverPort: 'x' }, { dryRun: true });
  t.is(invalid.status, 400, 'a dry run checks as the change would');
  t.is(await readFile(configPath, 'utf8'), before);
  t.is((await stat(configPath)).mtimeMs, mtime);
  t.is((await get(`/tunnelAct/instanceMgr/history?instanceID=${id}`)).body.data.total, revisions);
  t.is(await auditOf(), audited, 'nothing changed: nothing audited');

  // An environment variable, and an import, checked the same way: nothing set, nothing created.
  const env = await post('/tunnelAct/instanceMgr/modify', {
    instanceID: id,
    type: 'environment',
    modifiedData: { TOKEN_X: 'v' },
    dryRun: true,
  });
  t.like(env.body.data, { dryRun: true, environment: {} });
  t.regex(env.body.message, /checked; dry run, nothing changed/);
  const listed = (await get('/tunnelAct/instanceMgr/list')).body.data.length;
  const imported = await post('/tunnelAct/instanceMgr/import', {
    name: 'cp_dry_import',
    content:
      'serverAddr = "127.0.0.1"\nserverPort = 7000\n[[proxies]]\nname = "a"\ntype = "tcp"\nlocalPort = 22\nremotePort = 6504\n',
    dryRun: true,
  });
  t.true(imported.body.success, imported.body.message);
  t.like(imported.body.data, {
    name: 'cp_dry_import',
    format: 'toml',
    proxyCount: 1,
    dryRun: true,
    verify: { verified: true },
  });
  t.regex(imported.body.message, /^dry run, nothing created: cp_dry_import would be imported from toml: 1 proxies/);
  t.is((await get('/tunnelAct/instanceMgr/list')).body.data.length, listed, 'nothing created');
  const refused = await post('/tunnelAct/instanceMgr/import', {
    name: 'cp_dry_bad',
    content: 'serverAdr = 1\n',
    dryRun: true,
  });
  t.is(refused.status, 400);
});

test('a change made against a revision the instance has moved on from is a 409, and nothing changes', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'cp_base');
  const info = await get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`);
  const base = info.body.data.revision;
  t.is(base, 1, 'a new instance stands at its first revision');
  const first = await post('/tunnelAct/proxyMgr/create', {
    instanceID: id,
    proxyInfo: tcpProxy('a', 6510),
    baseRevision: base,
  });
  t.true(first.body.success, first.body.message);
  t.is(first.body.data.revision, base + 1);
  const before = await readFile(configPath, 'utf8');
  const stale = await post('/tunnelAct/proxyMgr/create', {
    instanceID: id,
    proxyInfo: tcpProxy('b', 6511),
    baseRevision: base,
  });
  t.is(stale.status, 409);
  t.regex(stale.body.message, /instance cp_base is at revision 2, not 1: it was changed since/);
  t.is(await readFile(configPath, 'utf8'), before);
  const exported = await get(`/tunnelAct/instanceMgr/export?instanceID=${id}`);
  t.is(exported.body.data.revision, base + 1, 'export gives the revision to make an edit against');
});

test('history, one revision, diffs and a rollback: a rollback is a change like any other, and a new revision', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'cp_history', { 'auth.token': 'tok-one' });
  await post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcpProxy('ssh', 6520) });
  await modify(id, { 'auth.token': 'tok-two', loginFailExit: true });
  const atTwo = await readFile(configPath, 'utf8');
  await post('/tunnelAct/proxyMgr/delete', { instanceID: id, proxyName: 'ssh' });
  const history = await get(`/tunnelAct/instanceMgr/history?instanceID=${id}`);
  t.like(history.body.data, { instanceID: Number(id), current: 4, total: 4 });
  t.deepEqual(
    history.body.data.revisions.map((r: any) => [r.revision, r.kind, r.by, r.plan, r.current]),
    [
      [4, 'proxy.delete', 'admin', 'file only', true],
      [3, 'config.set', 'admin', 'file only', false],
      [2, 'proxy.create', 'admin', 'file only', false],
      [1, 'create', 'admin', 'file only', false],
    ],
  );
  t.deepEqual(history.body.data.revisions[1].request, { keys: ['auth.token', 'loginFailExit'] }, 'names, never values');
  t.false(JSON.stringify(history.body).includes('tok-'));

  // One revision: secrets masked for an admin, in clear for a superuser.
  const admin = await daemon.userWithToken(root, 'cp_admin', 'admin');
  const shown = await get(`/tunnelAct/instanceMgr/revision?instanceID=${id}&revision=3`, admin.token);
  t.like(shown.body.data, { revision: 3, kind: 'config.set', masked: true });
  t.regex(shown.body.data.content, /token = "\*{8}"/);
  const clear = await get(`/tunnelAct/instanceMgr/revision?instanceID=${id}&revision=3`);
  t.regex(clear.body.data.content, /token = "tok-two"/);

  // Diffs between two revisions, and from one to the live file.
  const diff = await get(`/tunnelAct/instanceMgr/diff?instanceID=${id}&from=2&to=3`, admin.token);
  t.regex(diff.body.data.diff, /^\+loginFailExit = true$/m);
  t.regex(
    diff.body.data.diff,
    /^-token = "\*{8}"\n\+token = "\*{8} \(new value\)"$/m,
    'a changed secret shows as changed',
  );
  t.false(diff.body.data.diff.includes('tok-'));
  const live = await get(`/tunnelAct/instanceMgr/diff?instanceID=${id}&from=3`, admin.token);
  t.is(live.body.data.to, 'live');
  t.regex(live.body.data.diff, /^-name = "ssh"$/m);

  // Rollback to 3: the file as it was then, as revision 5.
  const rolled = await post('/tunnelAct/instanceMgr/rollback', { instanceID: id, revision: 3 });
  t.true(rolled.body.success, rolled.body.message);
  t.like(rolled.body.data, { revision: 5, applied: 'on next start', changed: true });
  t.regex(rolled.body.message, /rolled back to revision 3/);
  t.is(await readFile(configPath, 'utf8'), atTwo);
  const again = await get(`/tunnelAct/instanceMgr/history?instanceID=${id}&limit=1`);
  t.like(again.body.data.revisions[0], { revision: 5, kind: 'rollback', request: { to: 3 }, current: true });
  t.is((await post('/tunnelAct/instanceMgr/rollback', { instanceID: id, revision: 3 })).body.data.applied, 'unchanged');

  // Revisions.Keep is 4 here: the oldest went, and a revision no longer kept says so.
  t.is((await get(`/tunnelAct/instanceMgr/history?instanceID=${id}`)).body.data.total, 4);
  const gone = await post('/tunnelAct/instanceMgr/rollback', { instanceID: id, revision: 1 });
  t.is(gone.status, 404);
  t.regex(gone.body.message, /has no revision 1/);
  const texts = await readdir(join(daemon.dataDir, 'revisions', `tunnel_${id}`));
  t.true(texts.length <= 4, `texts no revision names are removed (${texts.length} kept)`);
  for (const name of texts)
    t.is((await stat(join(daemon.dataDir, 'revisions', `tunnel_${id}`, name))).mode & 0o777, 0o600);

  // Bad input gets a clear error.
  t.is((await get(`/tunnelAct/instanceMgr/revision?instanceID=${id}&revision=zero`)).status, 400);
  t.is((await post('/tunnelAct/instanceMgr/rollback', { instanceID: id })).status, 400);
});

test('a file changed by hand is recorded as found before the next change, so history and rollback tell the truth', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'cp_hand');
  await writeFile(configPath, `user = "by-hand"\n${await readFile(configPath, 'utf8')}`);
  const res = await post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcpProxy('ssh', 6530) });
  t.true(res.body.success, res.body.message);
  t.is(res.body.data.revision, 3);
  const history = await get(`/tunnelAct/instanceMgr/history?instanceID=${id}`);
  t.like(history.body.data.revisions[1], { revision: 2, kind: 'found', by: 'tunnelward' });
  const back = await post('/tunnelAct/instanceMgr/rollback', { instanceID: id, revision: 1 });
  t.true(back.body.success, back.body.message);
  t.false((await readFile(configPath, 'utf8')).includes('by-hand'));
});

test('changes of the record are revisions too: the environment (names only), the run user, start at boot', async (t) => {
  const { id } = await createInstance(daemon, root, 'cp_record');
  const env = await post('/tunnelAct/instanceMgr/modify', {
    instanceID: id,
    type: 'environment',
    modifiedData: { SECRET_A: 'value-never-recorded', OLD: null },
  });
  t.true(env.body.success, env.body.message);
  const system = await post('/tunnelAct/instanceMgr/modify', {
    instanceID: id,
    type: 'systemConfig',
    modifiedData: { name: 'cp_record2' },
  });
  t.true(system.body.success, system.body.message);
  const history = (await get(`/tunnelAct/instanceMgr/history?instanceID=${id}`)).body.data;
  t.deepEqual(
    history.revisions.map((r: any) => [r.revision, r.kind, r.request, r.plan]),
    [
      [3, 'system', { name: 'cp_record2' }, 'none'],
      [2, 'environment', { SECRET_A: 'set', OLD: 'unset' }, 'none'],
      [1, 'create', history.revisions[2].request, 'file only'],
    ],
  );
  t.false(JSON.stringify(history).includes('value-never-recorded'));
  t.is(history.revisions[0].version, history.revisions[2].version, 'the file is as it was');
});

test('a restart refused by its start checks after the write (TunnelPath gone) puts the file back: no new file behind a failure', async (t) => {
  // A daemon of its own, whose TunnelPath becomes one it may not run (writable by every user).
  const programs = await programDir();
  t.teardown(() => rm(programs, { recursive: true, force: true }));
  const frpc = join(programs, 'frpc');
  await symlink(FIXTURE_FRPC, frpc);
  const { daemon: own, root: ownRoot } = await startWithRoot({ settingsToml: instanceSettings({}, frpc) });
  t.teardown(() => disposeWithTunnels(own, ownRoot));
  const control = join(await tempDir(undefined, t), 'control.json');
  await writeFile(control, JSON.stringify({ server: 'up' }));
  const { id, configPath } = await createInstance(own, ownRoot, 'cp_gone', {
    metadatas: { 'fixture.control': control },
  });
  t.true((await own.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: ownRoot })).body.success);
  const before = await readFile(configPath, 'utf8');
  const pidOf = async () =>
    (await own.get(`/tunnelAct/instanceMgr/status?instanceID=${id}`, { token: ownRoot })).body.data.pid;
  const pid = await pidOf();
  t.true(typeof pid === 'number');
  await chmod(programs, 0o777);
  const res = await own.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'configFile', modifiedData: { loginFailExit: true } },
    { token: ownRoot },
  );
  t.is(res.status, 409);
  t.regex(res.body.message, /cannot restart, so it was not stopped: TunnelPath .* is writable by every user/);
  t.regex(res.body.message, /the file is back at revision \d+, and the tunnel runs on it/);
  t.is(await readFile(configPath, 'utf8'), before, 'the file as it was');
  t.is(await pidOf(), pid, 'the tunnel untouched');
  const status = (await own.get(`/tunnelAct/instanceMgr/status?instanceID=${id}`, { token: ownRoot })).body.data;
  t.like(status, { state: 'running', queued: 0 });
  t.is(
    (await own.get(`/tunnelAct/instanceMgr/history?instanceID=${id}`, { token: ownRoot })).body.data.current,
    status.revision,
  );
});
