import { execFile } from 'node:child_process';
import { readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { CLI, programDir, tempDir } from '../../helpers/daemon.js';

const run = promisify(execFile);

test('service install --print prints a unit that systemd-analyze accepts and that spares the tunnels', async (t) => {
  const dir = await tempDir();
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { stdout } = await run(process.execPath, [CLI, 'service', 'install', '--print', '--data-dir', dir]);
  t.regex(stdout, /^KillMode=process$/m);
  t.regex(stdout, new RegExp(`^ExecStart=${process.execPath} .*dist/src/cli\\.js serve --data-dir ${dir}$`, 'm'));
  t.regex(stdout, /^Restart=always$/m);
  const unit = join(dir, 'tunnelward.service');
  await writeFile(unit, stdout);
  const verified = await run('systemd-analyze', ['verify', unit]).then(
    (r) => r.stderr,
    (e) => `failed: ${e.stderr}`,
  );
  t.is(verified, '');
});

test('service install and uninstall write the unit and run systemctl (recorded here)', async (t) => {
  const dir = await tempDir();
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // systemctl's stand-in where the daemon runs programs from: not under /tmp.
  const bin = await programDir('bin-');
  t.teardown(() => rm(bin, { recursive: true, force: true }));
  await symlink(join(PACKAGE_ROOT, 'test', 'fixtures', 'record-command.mjs'), join(bin, 'systemctl'));
  const units = join(dir, 'units');
  await writeFile(
    join(dir, 'settings.toml'),
    `[Systemd]\nUnitDir = "${units}"\nSystemctl = "${join(bin, 'systemctl')}"\n`,
  );
  const record = join(dir, 'commands.log');
  const env = { ...process.env, TUNNELWARD_TEST_RECORD: record };
  const installed = await run(
    process.execPath,
    [CLI, 'service', 'install', '--data-dir', dir, '--host', '::1', '--port', '8601', '--no-start'],
    { env },
  );
  t.regex(installed.stdout, /installed .* and enabled it/);
  t.regex(installed.stdout, /not started \(--no-start\)/);
  const unit = await readFile(join(units, 'tunnelward.service'), 'utf8');
  t.regex(unit, /^KillMode=process$/m);
  t.regex(unit, new RegExp(`^ExecStart=.* serve --data-dir ${dir} --host ::1 --port 8601$`, 'm'));
  const removed = await run(process.execPath, [CLI, 'service', 'uninstall', '--data-dir', dir], { env });
  t.regex(removed.stdout, /stopped and disabled tunnelward\.service/);
  await t.throwsAsync(stat(join(units, 'tunnelward.service')));
  const again = await run(process.execPath, [CLI, 'service', 'uninstall', '--data-dir', dir], { env });
  t.regex(again.stdout, /tunnelward\.service is not installed/);
  const commands = (await readFile(record, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.deepEqual(commands, [
    ['systemctl', 'daemon-reload'],
    ['systemctl', 'enable', 'tunnelward.service'],
    ['systemctl', 'disable', '--now', 'tunnelward.service'],
    ['systemctl', 'daemon-reload'],
  ]);
  const bad = await run(process.execPath, [CLI, 'service', 'start']).catch((e) => e);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /service needs install or uninstall/);
});

test('service install refuses what a unit cannot hold: port 0, a host that is not an address', async (t) => {
  const dir = await tempDir(undefined, t);
  const zero = await run(process.execPath, [
    CLI,
    'service',
    'install',
    '--print',
    '--data-dir',
    dir,
    '--port',
    '0',
  ]).catch((e) => e);
  t.is(zero.code, 1);
  t.regex(zero.stderr, /a service needs a fixed port/);
  const host = await run(process.execPath, [CLI, 'service', 'install', '--print', '--host', '0.0.0.0 --x']).catch(
    (e) => e,
  );
  t.is(host.code, 1);
  t.regex(host.stderr, /host must be an IP address or a host name/);
});

test('service install --user names a user that must exist; a malformed name is refused by name', async (t) => {
  const dir = await tempDir();
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const printed = await run(process.execPath, [
    CLI,
    'service',
    'install',
    '--print',
    '--data-dir',
    dir,
    '--user',
    'nobody',
  ]);
  t.regex(printed.stdout, /^User=nobody$/m);

  const missing = await run(process.execPath, [
    CLI,
    'service',
    'install',
    '--data-dir',
    dir,
    '--user',
    'tw_no_such_user',
  ]).catch((e) => e);
  t.is(missing.code, 1);
  t.is(
    missing.stderr,
    'tunnelward: user tw_no_such_user does not exist on this host (not in /etc/passwd): create it first ' +
      '(useradd --system tw_no_such_user) and give it the data dir, or leave --user out\n',
  );
  const malformed = await run(process.execPath, [CLI, 'service', 'install', '--print', '--user', 'Root;id']).catch(
    (e) => e,
  );
  t.is(malformed.code, 1);
  t.regex(malformed.stderr, /^tunnelward: user /);
  t.deepEqual((await readdir(dir)).sort(), [], 'nothing written');
});

test('service install where systemd does not run: nothing stays installed, and it says what to do; uninstall still removes a unit file', async (t) => {
  const dir = await tempDir();
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // systemctl as it answers on a host whose PID 1 is not systemd.
  const bin = await programDir('bin-');
  t.teardown(() => rm(bin, { recursive: true, force: true }));
  const systemctl = join(bin, 'systemctl');
  await writeFile(
    systemctl,
    '#!/bin/sh\necho "System has not been booted with systemd as init system (PID 1). Can\'t operate." >&2\nexit 1\n',
    { mode: 0o755 },
  );
  const units = join(dir, 'units');
  await writeFile(join(dir, 'settings.toml'), `[Systemd]\nUnitDir = "${units}"\nSystemctl = "${systemctl}"\n`);
  const installed = await run(process.execPath, [CLI, 'service', 'install', '--data-dir', dir, '--no-start']).catch(
    (e) => e,
  );
  t.is(installed.code, 1);
  t.regex(installed.stderr, /daemon-reload failed: System has not been booted with systemd/);
  t.regex(installed.stderr, /tunnelward\.service was not installed .*removed\)\. Where systemd does not run/);
  t.regex(installed.stderr, / serve --data-dir /);
  t.deepEqual(await readdir(units), [], 'no unit file left behind');
  // A unit file left by an older install is removed all the same.
  await writeFile(join(units, 'tunnelward.service'), '[Service]\n');
  const removed = await run(process.execPath, [CLI, 'service', 'uninstall', '--data-dir', dir]);
  t.regex(
    removed.stdout,
    /^removed .*tunnelward\.service; tunnelward\.service could not be stopped or disabled \(.*disable --now tunnelward\.service failed: System has not been booted/m,
  );
  t.deepEqual(await readdir(units), []);
});
