import { execFile } from 'node:child_process';
import { chmod, mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { dispose, programDir, startDaemon } from '../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf, tunnelPids, waitFor } from '../helpers/instances.js';

const run = promisify(execFile);
const RECORDER = join(PACKAGE_ROOT, 'test', 'fixtures', 'record-command.mjs');

/** A temporary root with recording stand-ins named like the real commands (where the daemon runs programs from). */
async function fakeRoot() {
  const root = await programDir('tunnelward-root-');
  const bin = join(root, 'bin');
  await mkdir(bin);
  for (const name of ['systemctl', 'update-rc.d', 'schtasks']) await symlink(RECORDER, join(bin, name));
  const record = join(root, 'commands.log');
  return {
    root,
    bin,
    record,
    async commands(): Promise<string[][]> {
      const text = await readFile(record, 'utf8').catch(() => '');
      await rm(record, { force: true });
      return text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    },
  };
}

const modify = (daemon: any, token: string, id: string, data: object) =>
  daemon.post('/tunnelAct/instanceMgr/modify', { instanceID: id, type: 'systemConfig', modifiedData: data }, { token });

test('systemd: unit files that systemd-analyze accepts, and the exact commands for enable, rename, disable, delete', async (t) => {
  const fake = await fakeRoot();
  t.teardown(() => rm(fake.root, { recursive: true, force: true }));
  const units = join(fake.root, 'units');
  const daemon = await startDaemon({
    settingsToml: instanceSettings({
      InitSystem: 'systemd',
      'Systemd.UnitDir': units,
      'Systemd.Systemctl': join(fake.bin, 'systemctl'),
    }),
    env: { TUNNELWARD_TEST_RECORD: fake.record },
  });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const { id, configPath } = await createInstance(daemon, token, 'bs_web');
  t.deepEqual(
    await fake.commands(),
    [['systemctl', '--version']],
    'the unit is written at create, not enabled (what it may say depends on the version, asked once); systemd reads it at its first start',
  );
  const unitPath = join(units, `tunnel_${id}.service`);
  const unit = await readFile(unitPath, 'utf8');
  t.regex(unit, /^User=root$/m);
  t.regex(unit, new RegExp(`^ExecStart=\\S+frpc\\.mjs -c ${configPath.replace(/\./g, '\\.')}$`, 'm'));
  t.regex(unit, /^After=network-online\.target$/m);
  t.regex(unit, /^Type=simple$/m);
  t.regex(unit, /^Restart=on-failure$/m);
  const verified = await run('systemd-analyze', ['verify', unitPath]).then(
    (r) => ({ code: 0, stderr: r.stderr }),
    (e) => ({ code: e.code, stderr: e.stderr }),
  );
  t.deepEqual(verified, { code: 0, stderr: '' });

  const status = await statusOf(daemon, token, id);
  t.like(status, { initSystem: 'systemd', serviceName: `tunnel_${id}` });

  const on = await modify(daemon, token, id, { bootAtStart: true });
  t.deepEqual(on.body.data, {
    instanceID: Number(id),
    configPath,
    bootAtStart: true,
    runUser: 'root',
    probes: false,
    policy: {},
  });
  t.deepEqual(
    await fake.commands(),
    [['systemctl', 'enable', '--no-reload', `tunnel_${id}.service`]],
    'enabling needs no reload',
  );

  const renamed = await modify(daemon, token, id, { name: 'bs_web2', runUser: 'nobody' });
  t.true(renamed.body.success);
  t.false('bootServiceError' in renamed.body.data);
  t.deepEqual(await fake.commands(), [
    ['systemctl', 'disable', '--no-reload', `tunnel_${id}.service`],
    ['systemctl', 'enable', '--no-reload', `tunnel_${id}.service`],
  ]);
  t.regex(await readFile(unitPath, 'utf8'), /^User=nobody$/m);
  t.regex(await readFile(unitPath, 'utf8'), /^Description=tunnel bs_web2 /m);

  const off = await modify(daemon, token, id, { bootAtStart: false });
  t.is(off.body.data.bootAtStart, false);
  t.deepEqual(await fake.commands(), [['systemctl', 'disable', '--no-reload', `tunnel_${id}.service`]]);

  await daemon.post('/tunnelAct/instanceMgr/delete', { instanceID: id }, { token });
  t.deepEqual(await fake.commands(), [
    ['systemctl', 'disable', '--no-reload', `tunnel_${id}.service`],
    ['systemctl', 'daemon-reload'],
  ]);
  await t.throwsAsync(stat(unitPath), undefined, 'unit file removed');
});

test('each bootServiceError case answers success with the error, and the record matches what is in place', async (t) => {
  const fake = await fakeRoot();
  t.teardown(() => rm(fake.root, { recursive: true, force: true }));
  const daemon = await startDaemon({
    settingsToml: instanceSettings({
      InitSystem: 'systemd',
      'Systemd.UnitDir': join(fake.root, 'units'),
      'Systemd.Systemctl': join(fake.bin, 'systemctl'),
    }),
    env: {
      TUNNELWARD_TEST_RECORD: fake.record,
      TUNNELWARD_TEST_FAIL: '^systemctl (enable|disable) --no-reload tunnel_[0-9]+\\.service$',
    },
  });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const { id } = await createInstance(daemon, token, 'bs_fail');

  // enabling fails: still a success, bootAtStart stays false
  const enable = await modify(daemon, token, id, { bootAtStart: true });
  t.true(enable.body.success);
  t.like(enable.body.data, { bootAtStart: false, instanceName: 'bs_fail' });
  t.regex(
    enable.body.data.bootServiceError,
    /systemctl enable --no-reload tunnel_\d+\.service failed: systemctl: simulated failure/,
  );
  const info = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token });
  t.is(info.body.data.bootAtStart, false);

  // an init system that cannot be used here at all: Windows' scheduled tasks on a Linux host (the command lines
  // themselves are unit-tested in windows-task.test.ts)
  const other = await startDaemon({
    settingsToml: instanceSettings({ InitSystem: 'windows', 'Windows.Schtasks': '/nonexistent/schtasks' }),
  });
  t.teardown(() => dispose(other));
  const token2 = await other.login();
  const win = await createInstance(other, token2, 'bs_win');
  const unsupported = await modify(other, token2, win.id, { bootAtStart: true });
  t.true(unsupported.body.success);
  t.like(unsupported.body.data, { bootAtStart: false, instanceName: 'bs_win' });
  t.regex(unsupported.body.data.bootServiceError, /tunnelPath must be an absolute Windows path/);
});

test('a systemctl whose directory became writable by others after it was set is not run, and the error says why', async (t) => {
  const fake = await fakeRoot();
  t.teardown(() => rm(fake.root, { recursive: true, force: true }));
  const daemon = await startDaemon({
    settingsToml: instanceSettings({
      InitSystem: 'systemd',
      'Systemd.UnitDir': join(fake.root, 'units'),
      'Systemd.Systemctl': join(fake.bin, 'systemctl'),
    }),
    env: { TUNNELWARD_TEST_RECORD: fake.record },
  });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const { id } = await createInstance(daemon, token, 'bs_unsafe');
  t.true((await fake.commands()).length > 0, 'run while it was safe');
  await chmod(fake.bin, 0o775);
  const enable = await modify(daemon, token, id, { bootAtStart: true });
  t.like(enable.body.data, { bootAtStart: false });
  t.regex(
    enable.body.data.bootServiceError,
    new RegExp(`^${fake.bin}/systemctl is refused: ${fake.bin} is writable by its group \\(mode 0775`),
  );
  t.deepEqual(await fake.commands(), [], 'nothing was run');
});

test('disabling that fails keeps bootAtStart on; a rename while on that fails is reported too', async (t) => {
  const fake = await fakeRoot();
  t.teardown(() => rm(fake.root, { recursive: true, force: true }));
  const daemon = await startDaemon({
    settingsToml: instanceSettings({
      InitSystem: 'systemd',
      'Systemd.UnitDir': join(fake.root, 'units'),
      'Systemd.Systemctl': join(fake.bin, 'systemctl'),
    }),
    env: { TUNNELWARD_TEST_RECORD: fake.record, TUNNELWARD_TEST_FAIL: '^systemctl disable' },
  });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const { id } = await createInstance(daemon, token, 'bs_sticky', {}, { bootAtStart: true });
  const off = await modify(daemon, token, id, { bootAtStart: false });
  t.true(off.body.success);
  t.like(off.body.data, { bootAtStart: true, instanceName: 'bs_sticky' });
  t.regex(off.body.data.bootServiceError, /systemctl disable .* failed/);
  const rename = await modify(daemon, token, id, { name: 'bs_sticky2' });
  t.like(rename.body.data, { bootAtStart: true });
  t.regex(rename.body.data.bootServiceError, /systemctl disable/);
  t.is((await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token })).body.data.name, 'bs_sticky2');
});

test('a rename racing a create of the same name: one gets the name, the other a 409; the boot service stays as recorded', async (t) => {
  const fake = await fakeRoot();
  t.teardown(() => rm(fake.root, { recursive: true, force: true }));
  const gate = join(fake.root, 'gate');
  const daemon = await startDaemon({
    settingsToml: instanceSettings({
      InitSystem: 'systemd',
      'Systemd.UnitDir': join(fake.root, 'units'),
      'Systemd.Systemctl': join(fake.bin, 'systemctl'),
    }),
    env: {
      TUNNELWARD_TEST_RECORD: fake.record,
      TUNNELWARD_TEST_HOLD: '^systemctl disable',
      TUNNELWARD_TEST_GATE: gate,
    },
  });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const { id } = await createInstance(daemon, token, 'bs_racer', {}, { bootAtStart: true });
  await writeFile(gate, '');
  await fake.commands();

  // The rename is held in the middle of its boot-service work (the old service's disable) while the create runs.
  const renaming = modify(daemon, token, id, { name: 'bs_contested' });
  // Read without taking: a line the stand-in appends between a read and a removal would be lost.
  await waitFor(
    () => readFile(fake.record, 'utf8').catch(() => ''),
    (text) => text.includes(`["systemctl","disable","--no-reload","tunnel_${id}.service"]`),
    30_000,
  );
  const created = await daemon.post(
    '/tunnelAct/instanceMgr/create',
    { instanceInfo: { name: 'bs_contested', serverAddr: '127.0.0.1', serverPort: '7300', auth_method: 'token' } },
    { token },
  );
  await rm(gate);
  const replies = [await renaming, created];
  const summary = replies.map((r) => `${r.status} ${r.body.message}`).join('; ');
  t.is(replies.filter((r) => r.body.success).length, 1, summary);
  const refused = replies.find((r) => !r.body.success)!;
  t.is(refused.status, 409, summary);
  t.is(refused.body.message, 'an instance named bs_contested already exists');

  const info = (await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token })).body.data;
  const lastOfUnit = (await fake.commands()).filter((c) => c.at(-1) === `tunnel_${id}.service`).at(-1);
  t.true(info.bootAtStart, summary);
  t.deepEqual(
    lastOfUnit,
    ['systemctl', 'enable', '--no-reload', `tunnel_${id}.service`],
    'the record says boot at start: so is it',
  );
  const names = (await daemon.get('/tunnelAct/instanceMgr/list', { token })).body.data.map((i: any) => i.name);
  t.is(names.filter((n: string) => n === 'bs_contested').length, 1);
});

test('init.d: the script runs the tunnel for real under a temporary root; update-rc.d is recorded', async (t) => {
  const fake = await fakeRoot();
  t.teardown(() => rm(fake.root, { recursive: true, force: true }));
  const dirs = { scripts: join(fake.root, 'init.d'), run: join(fake.root, 'run'), log: join(fake.root, 'log') };
  for (const d of Object.values(dirs)) await mkdir(d);
  const daemon = await startDaemon({
    settingsToml: instanceSettings({
      InitSystem: 'init.d',
      'InitD.ScriptDir': dirs.scripts,
      'InitD.PidDir': dirs.run,
      'InitD.LogDir': dirs.log,
      'InitD.UpdateRcD': join(fake.bin, 'update-rc.d'),
    }),
    env: { TUNNELWARD_TEST_RECORD: fake.record },
  });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const { id, configPath } = await createInstance(daemon, token, 'bs_initd', {}, { bootAtStart: true });
  t.deepEqual(await fake.commands(), [['update-rc.d', `tunnel_${id}`, 'defaults']]);
  const script = join(dirs.scripts, `tunnel_${id}`);
  await run('sh', ['-n', script]);
  t.is((await stat(script)).mode & 0o777, 0o755);

  const start = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
  t.true(start.body.success, start.body.message);
  const pid = Number((await readFile(join(dirs.run, `tunnel_${id}.pid`), 'utf8')).trim());
  t.deepEqual(await tunnelPids(configPath), [pid], 'the init script started it');
  t.like(await statusOf(daemon, token, id), { isRunning: true, initSystem: 'init.d' });
  const logFile = join(dirs.log, `tunnel_${id}.log`);
  const logged = await waitFor(
    () => readFile(logFile, 'utf8').catch(() => ''),
    (text) => /start frpc service/.test(text),
  );
  t.regex(logged, /start frpc service/, 'the script sends the tunnel output to its log file');
  const stop = await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token });
  t.true(stop.body.success, stop.body.message);
  t.deepEqual(await tunnelPids(configPath), []);

  await modify(daemon, token, id, { bootAtStart: false });
  t.deepEqual(await fake.commands(), [['update-rc.d', '-f', `tunnel_${id}`, 'remove']]);
});

test('injection attempts through name and runUser never reach a unit or a command', async (t) => {
  const fake = await fakeRoot();
  t.teardown(() => rm(fake.root, { recursive: true, force: true }));
  const daemon = await startDaemon({
    settingsToml: instanceSettings({
      InitSystem: 'systemd',
      'Systemd.UnitDir': join(fake.root, 'units'),
      'Systemd.Systemctl': join(fake.bin, 'systemctl'),
    }),
    env: { TUNNELWARD_TEST_RECORD: fake.record },
  });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const { id } = await createInstance(daemon, token, 'bs_safe');
  await fake.commands();
  for (const name of ['x\nExecStartPre=/bin/sh', 'a;b', '$(id)', '%h', '../../etc']) {
    const res = await modify(daemon, token, id, { name, bootAtStart: true });
    t.is(res.status, 400, JSON.stringify(name));
  }
  for (const runUser of ['root\nUser=evil', '$(id)', 'root;reboot', '../root', 'no_such_user_x']) {
    const res = await modify(daemon, token, id, { runUser, bootAtStart: true });
    t.is(res.status, 400, JSON.stringify(runUser));
  }
  t.deepEqual(await fake.commands(), [], 'no command ran');
  const unit = await readFile(join(fake.root, 'units', `tunnel_${id}.service`), 'utf8');
  t.false(/evil|\$\(id\)|ExecStartPre/.test(unit));
});
