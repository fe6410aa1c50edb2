import { access, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { dispose, startDaemon, type Daemon } from '../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf, tunnelPids, waitFor } from '../helpers/instances.js';

// Every step of create, start, restart, stop and delete is cut off by a SIGKILL of the daemon (TUNNELWARD_CRASH_AT),
// then a daemon is started on the same data dir, within the same boot of the host, and what it says is checked
// against what runs and what is on disk.

const BOOT = { TUNNELWARD_BOOT_ID: 'durability-boot' };
const exists = (path: string) => access(path).then(() => true, () => false);

/** Sends a request that the daemon dies during; the reply never comes. */
async function dies(t: any, daemon: Daemon, path: string, body: unknown, token: string): Promise<void> {
  await daemon.post(path, body, { token }).then(
    (res) => t.fail(`the daemon answered ${res.status} ${res.body.message} instead of dying`),
    () => {},
  );
  t.like(await daemon.exited, { signal: 'SIGKILL' });
}

/** A daemon set to die at `point`, with one instance `name` created (and started, when asked). */
async function prepared(t: any, point: string, name: string, started: boolean) {
  const daemon = await startDaemon({ settingsToml: instanceSettings(), env: { ...BOOT, TUNNELWARD_CRASH_AT: point } });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const instance = await createInstance(daemon, token, name);
  if (started) {
    const res = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: instance.id }, { token });
    if (!res.body.success) throw new Error(res.body.message);
  }
  return { daemon, token, ...instance };
}

/** The next daemon on the same data dir, logged in. */
async function after(t: any, daemon: Daemon) {
  const next = await startDaemon({ dataDir: daemon.dataDir, env: BOOT });
  t.teardown(() => next.stop('SIGKILL'));
  return { next, token: await next.login() };
}

/** What the daemon says and what runs agree, and stop and start still give exactly none and one. */
async function consistent(t: any, daemon: Daemon, token: string, id: string, configPath: string, expected: 'running' | 'stopped') {
  const status = await waitFor(() => statusOf(daemon, token, id), (s) => s.state === expected, 15_000);
  t.is(status.isRunning, expected === 'running');
  t.is((await tunnelPids(configPath)).length, expected === 'running' ? 1 : 0, `one process when running, none when stopped`);
  t.true((await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token })).body.success);
  t.deepEqual(await tunnelPids(configPath), []);
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token })).body.success);
  t.is((await tunnelPids(configPath)).length, 1);
  t.true((await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token })).body.success);
}

const commands: Array<[string, 'start' | 'restart' | 'stop', boolean, 'running' | 'stopped']> = [
  // point, command, started before it, the state it must end in once the next daemon has settled
  ['start:intent', 'start', false, 'running'],
  ['spawn:spawned', 'start', false, 'running'],
  ['spawn:recorded', 'start', false, 'running'],
  ['restart:intent', 'restart', true, 'running'],
  ['stop:signalled', 'restart', true, 'running'],
  ['spawn:spawned#2', 'restart', true, 'running'],
  ['spawn:recorded#2', 'restart', true, 'running'],
  ['stop:intent', 'stop', true, 'stopped'],
  ['stop:signalled', 'stop', true, 'stopped'],
];

for (const [point, command, started, expected] of commands) {
  test(`${command} cut off at ${point}: ${expected}, with exactly the processes it says`, async (t) => {
    const name = `du_${command}_${point.replace(/[^a-z0-9]/g, '_')}`;
    const { daemon, token, id, configPath } = await prepared(t, point, name, started);
    await dies(t, daemon, `/tunnelAct/instanceMgr/${command}`, { instanceID: id }, token);
    t.true((await tunnelPids(configPath)).length <= 2, 'what the dead daemon left');
    const { next, token: token2 } = await after(t, daemon);
    await consistent(t, next, token2, id, configPath, expected);
  });
}

test('delete cut off before it is marked: the instance is all there, stopped', async (t) => {
  const { daemon, token, id, configPath } = await prepared(t, 'delete:stopped', 'du_delete_early', true);
  await dies(t, daemon, '/tunnelAct/instanceMgr/delete', { instanceID: id }, token);
  const { next, token: token2 } = await after(t, daemon);
  t.true(await exists(configPath));
  await consistent(t, next, token2, id, configPath, 'stopped');
});

for (const point of ['delete:marked', 'delete:unbooted', 'delete:files']) {
  test(`delete cut off at ${point}: finished at the next start, nothing left`, async (t) => {
    const { daemon, token, id, configPath } = await prepared(t, point, `du_delete_${point.split(':')[1]}`, true);
    await dies(t, daemon, '/tunnelAct/instanceMgr/delete', { instanceID: id }, token);
    const { next, token: token2 } = await after(t, daemon);
    t.is((await next.get(`/tunnelAct/instanceMgr/status?instanceID=${id}`, { token: token2 })).status, 404);
    const list = await next.get('/tunnelAct/instanceMgr/list', { token: token2 });
    t.false(list.body.data.some((i: any) => String(i.instanceID) === id));
    t.false(await exists(configPath), 'no config file');
    t.deepEqual(await tunnelPids(configPath), []);
    await next.waitForOutput(/an interrupted delete of an instance was finished/);
  });
}

for (const point of ['create:recorded', 'create:written']) {
  test(`create cut off at ${point}: undone at the next start, and its id never handed out again`, async (t) => {
    // The instance made while preparing passes the point once; the create under test dies there the second time.
    const { daemon, token, id: firstId, configPath: firstPath } = await prepared(t, `${point}#2`, `du_first_${point.split(':')[1]}`, false);
    const name = `du_cut_${point.split(':')[1]}`;
    const body = { instanceInfo: { name, serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' } };
    await dies(t, daemon, '/tunnelAct/instanceMgr/create', body, token);
    const cutId = Number(firstId) + 1;
    const { next, token: token2 } = await after(t, daemon);
    const list = await next.get('/tunnelAct/instanceMgr/list', { token: token2 });
    t.deepEqual(list.body.data.map((i: any) => String(i.instanceID)), [firstId]);
    const dir = join(firstPath, '..');
    t.deepEqual((await readdir(dir)).filter((f) => f.endsWith('.toml')), [`tunnel_${firstId}.toml`], 'no file of the create that was cut off');
    await next.waitForOutput(/an interrupted create of an instance was undone/);
    const again = await createInstance(next, token2, name);
    t.is(Number(again.id), cutId + 1, 'a new id; the name is free again');
  });
}

test('start-up removes temp files of cut-off writes and moves unowned config files aside, keeping their ids from reuse', async (t) => {
  const first = await startDaemon({ settingsToml: instanceSettings(), env: BOOT });
  t.teardown(() => dispose(first));
  const token = await first.login();
  const { configPath } = await createInstance(first, token, 'du_sweep');
  await first.stop('SIGKILL');
  const instanceDir = join(configPath, '..');
  const temps = [
    join(first.dataDir, '.tunnelward.db.4242.0123456789ab.tmp'),
    join(first.dataDir, '.settings.toml.4242.ba9876543210.tmp'),
    join(instanceDir, '.tunnel_1.toml.4242.abcdefabcdef.tmp'),
  ];
  for (const file of temps) await writeFile(file, 'half a write');
  const stray = join(instanceDir, 'tunnel_40.toml');
  await writeFile(stray, 'serverAddr = "10.1.2.3"\n');

  const { next, token: token2 } = await after(t, first);
  for (const file of temps) t.false(await exists(file), file);
  t.false(await exists(stray));
  const aside = (await readdir(join(first.dataDir, 'orphaned'))).filter((f) => f.startsWith('tunnel_40.toml'));
  t.is(aside.length, 1);
  t.is(await readFile(join(first.dataDir, 'orphaned', aside[0]!), 'utf8'), 'serverAddr = "10.1.2.3"\n', 'moved, not changed');
  await next.waitForOutput(/"file":"[^"]*tunnel_40\.toml".*a config file that no instance owns was moved aside/);
  t.true(await exists(configPath), 'an owned file stays');
  const made = await createInstance(next, token2, 'du_after_sweep');
  t.is(Number(made.id), 41, 'ids up to the stray file are never handed out');
});
