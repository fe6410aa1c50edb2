import { execFile } from 'node:child_process';
import { copyFile, cp, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { CLI_SCRIPT, PACKAGE_ROOT } from '../../../src/paths.js';
import { cli, loggedIn } from '../../helpers/cli.js';
import { disposeWithTunnels, startWithRoot, tempDir } from '../../helpers/daemon.js';
import { instanceSettings } from '../../helpers/instances.js';

// A tunnelward whose own files sit where anyone may change them (a clone under /tmp) hands root to whoever does:
// the doctor and `service install` say so, and say nothing of a tunnelward only root can change.

const run = promisify(execFile);

/** A copy of this tunnelward's build in `parent` (its node_modules linked): what a clone there would run. */
async function copyOfTunnelward(parent: string): Promise<string> {
  const root = join(parent, 'tunnelward');
  for (const dir of ['src', 'actors', 'machines', 'console'])
    await cp(join(PACKAGE_ROOT, 'dist', dir), join(root, 'dist', dir), { recursive: true });
  await copyFile(join(PACKAGE_ROOT, 'package.json'), join(root, 'package.json'));
  await symlink(join(PACKAGE_ROOT, 'node_modules'), join(root, 'node_modules'));
  return join(root, 'dist', 'src', 'cli.js');
}

const printUnit = (script: string, dataDir: string) =>
  run(process.execPath, [script, 'service', 'install', '--print', '--data-dir', dataDir]);

test('a tunnelward run from a world-writable tree: the doctor warns, and so does service install --print', async (t) => {
  t.is(process.getuid?.(), 0, 'these tests run as root');
  const clone = await tempDir('tunnelward-clone-', t);
  const script = await copyOfTunnelward(clone);
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings(), cli: script });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const env = await loggedIn(daemon, t);

  const doctor = await cli(['doctor'], env);
  t.is(doctor.code, 0, 'a warning, not a failure');
  const line = doctor.stdout.split('\n').find((l) => /^\S+\s+daemonFiles\s/.test(l)) ?? '';
  t.regex(line, /^warn\s+daemonFiles\s+tunnelward's own files can be changed by others than root: /);
  t.regex(line, /\/tmp[^ ]* is writable by every user \(mode 1777\)/);
  t.true(line.includes(script), line);
  t.true(line.includes(join(clone, 'tunnelward', 'node_modules')), line);
  t.regex(line, /whoever changes them runs code as root at the daemon's next start/);
  t.regex(doctor.stdout, /^ok: 0 failed, 1 warned, 13 ok/m);

  const printed = await printUnit(script, daemon.dataDir);
  t.true(new RegExp(`^ExecStart=${process.execPath} .*${script} serve`, 'm').test(printed.stdout), printed.stdout);
  t.regex(printed.stdout, /^\[Unit\]/, 'the unit alone on standard output');
  t.regex(printed.stderr, /^warning: tunnelward's own files can be changed by others than root: .*mode 1777/);
  t.true(printed.stderr.includes(script), printed.stderr);
  t.is(printed.stderr.split('\n').length, 2, 'one line');
});

test('a tunnelward only root can change: no warning from the doctor or service install --print', async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const env = await loggedIn(daemon, t);
  const doctor = await cli(['doctor'], env);
  t.is(doctor.code, 0, doctor.stdout);
  t.regex(
    doctor.stdout,
    new RegExp(
      `^ok\\s+daemonFiles\\s+${process.execPath}, ${CLI_SCRIPT}, .*node_modules: only root can change them$`,
      'm',
    ),
  );
  t.regex(doctor.stdout, /^ok: 0 failed, 0 warned, 14 ok/m);
  const printed = await printUnit(CLI_SCRIPT, daemon.dataDir);
  t.is(printed.stderr, '');
});
