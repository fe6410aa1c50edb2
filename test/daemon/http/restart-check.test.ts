import { chmod, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { dispose, programDir, startDaemon } from '../../helpers/daemon.js';
import { createInstance, FIXTURE_FRPC, instanceSettings, statusOf } from '../../helpers/instances.js';

test('a restart that could not start the tunnel again is refused before its stop: the tunnel keeps running', async (t) => {
  const programs = await programDir();
  t.teardown(() => rm(programs, { recursive: true, force: true }));
  const frpc = join(programs, 'frpc');
  await symlink(FIXTURE_FRPC, frpc);
  const daemon = await startDaemon({ settingsToml: instanceSettings({}, frpc) });
  t.teardown(() => dispose(daemon));
  const root = await daemon.login();
  const a = await createInstance(daemon, root, 'rc_a');
  const b = await createInstance(daemon, root, 'rc_b');
  for (const { id } of [a, b]) {
    const started = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
    t.true(started.body.success, started.body.message);
  }
  const pidOf = async (id: string) => {
    const status = await statusOf(daemon, root, id);
    t.is(status.state, 'running', `instance ${id} keeps running`);
    return status.pid as number;
  };
  const pids = { a: await pidOf(a.id), b: await pidOf(b.id) };

  // The tunnel client is no longer one only root can change: a start would refuse it, so a restart stops nothing.
  await chmod(programs, 0o777);
  const single = await daemon.post('/tunnelAct/instanceMgr/restart', { instanceID: a.id }, { token: root });
  t.is(single.status, 409);
  t.false(single.body.success);
  t.regex(
    single.body.message,
    new RegExp(
      `^instance ${a.id} cannot restart, so it was not stopped: TunnelPath ${frpc} is refused: ${programs} is writable by every user`,
    ),
  );
  t.is(await pidOf(a.id), pids.a);
  const all = await daemon.post('/tunnelAct/instanceMgr/restart', { all: true }, { token: root });
  t.true(all.body.success, all.body.message);
  t.like(all.body.data, { ok: 0, failed: 2 });
  for (const result of all.body.data.results) {
    t.like(result, { ok: false, state: 'running' });
    t.regex(result.message, /cannot restart, so it was not stopped: TunnelPath .* is writable by every user/);
  }
  t.is(await pidOf(a.id), pids.a);
  t.is(await pidOf(b.id), pids.b);

  // A config file the tunnel could not read as it stands now: refused with the reason, the old run goes on.
  await chmod(programs, 0o755);
  await writeFile(b.configPath, 'serverAddr = \n');
  const broken = await daemon.post('/tunnelAct/instanceMgr/restart', { instanceID: b.id }, { token: root });
  t.is(broken.status, 400);
  t.regex(broken.body.message, new RegExp(`^instance ${b.id} cannot restart, so it was not stopped: .*not valid TOML`));
  t.is(await pidOf(b.id), pids.b);

  // Once a start can happen, the restart does what it says.
  const restarted = await daemon.post('/tunnelAct/instanceMgr/restart', { instanceID: a.id }, { token: root });
  t.true(restarted.body.success, restarted.body.message);
  t.not(await pidOf(a.id), pids.a);
  for (const { id } of [a, b]) await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token: root });
});
