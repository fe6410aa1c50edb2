import { chmod, chown, copyFile, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { dispose, programDir, startDaemon } from '../../helpers/daemon.js';
import { createInstance, FIXTURE_FRPC, instanceSettings, statusOf } from '../../helpers/instances.js';

/** A copy of the fixture frpc at `path`, with `mode`. */
async function program(path: string, mode = 0o755): Promise<string> {
  await copyFile(FIXTURE_FRPC, path);
  await chmod(path, mode);
  return path;
}

const PROGRAM_KEYS = ['TunnelPath', 'Systemd.Systemctl', 'Systemd.Journalctl', 'InitD.UpdateRcD', 'Windows.Schtasks'];
const DIRECTORY_KEYS = ['InstancePath', 'Systemd.UnitDir', 'InitD.ScriptDir', 'InitD.PidDir', 'InitD.LogDir'];

test('program settings: a superuser sets them, only to files that only root can change, checked again at each use', async (t) => {
  const programs = await programDir();
  t.teardown(() => rm(programs, { recursive: true, force: true }));
  const unsafe = await mkdtemp('/tmp/tunnelward-unsafe-'); // /tmp itself: writable by all, sticky
  t.teardown(() => rm(unsafe, { recursive: true, force: true }));
  // A link to the fixture (which imports its siblings), in a directory only root can change.
  const frpc = join(programs, 'frpc');
  await symlink(FIXTURE_FRPC, frpc);
  const daemon = await startDaemon({ settingsToml: instanceSettings() });
  t.teardown(() => dispose(daemon));
  const root = await daemon.login();
  const admin = await daemon.userWithToken(root, 'pp_admin', 'admin');
  const value = async (key: string) => (await daemon.get(`/settings/get?key=${key}`, { token: root })).body.data.value;

  // An admin cannot choose what the daemon runs (as root) nor where it writes what it runs.
  for (const [key, to] of [
    ...PROGRAM_KEYS.map((k) => [k, frpc]),
    ...DIRECTORY_KEYS.map((k) => [k, join(daemon.dataDir, 'elsewhere')]),
  ] as Array<[string, string]>) {
    const res = await daemon.post('/settings/set', { Debug: true, [key]: to }, { token: admin.token });
    t.is(res.status, 403, key);
    t.false(res.body.success);
    t.regex(res.body.message, new RegExp(`^only a superuser may change ${key.replace('.', '\\.')} `), key);
  }
  t.is(await value('Debug'), false, 'a refused request changes nothing');
  const resent = await daemon.post(
    '/settings/set',
    { Debug: true, TunnelPath: await value('TunnelPath') },
    { token: admin.token },
  );
  t.true(resent.body.success, 'an admin may send the current value back (a whole form saved)');

  // A superuser: only an executable file that only root can change, in directories only root can change.
  const refused = async (to: string, reason: RegExp) => {
    const res = await daemon.post('/settings/set', { TunnelPath: to }, { token: root });
    // Well-formed, but the file is not fit to run: refused by its state.
    t.is(res.status, 409, to);
    t.regex(res.body.message, reason);
  };
  await refused('/nonexistent/frpc', /^TunnelPath \/nonexistent\/frpc is missing or not an executable file$/);
  await refused('frpc-not-on-path', /^TunnelPath frpc-not-on-path on PATH is missing or not an executable file$/);
  await refused(
    await program(join(unsafe, 'frpc')),
    new RegExp(`^TunnelPath ${unsafe}/frpc is refused: /tmp is writable by every user \\(mode 1777`),
  );
  await refused(
    await program(join(programs, 'frpc-group'), 0o775),
    /^TunnelPath \S+\/frpc-group is refused: \S+\/frpc-group is writable by its group \(mode 0775/,
  );
  const owned = await program(join(programs, 'frpc-nobody'));
  await chown(owned, 65534, 65534);
  await refused(owned, /is refused: \S+\/frpc-nobody is owned by uid 65534, not by root/);
  await symlink(join(unsafe, 'frpc'), join(programs, 'frpc-link'));
  await refused(join(programs, 'frpc-link'), /frpc-link is refused: \/tmp is writable by every user/);
  // A trusted file that does not answer `-v` as frpc does (a version x.y.z) is not a tunnel client.
  await writeFile(join(programs, 'not-frpc'), '#!/bin/sh\necho hello\n', { mode: 0o755 });
  await refused(
    join(programs, 'not-frpc'),
    /^TunnelPath \S+\/not-frpc -v answered "hello", not a version: is it frpc\?$/,
  );
  await writeFile(join(programs, 'frpc-broken'), '#!/bin/sh\nexit 3\n', { mode: 0o755 });
  await refused(join(programs, 'frpc-broken'), /^TunnelPath \S+\/frpc-broken -v failed \(exit 3\): is it frpc\?$/);
  t.is(await value('TunnelPath'), FIXTURE_FRPC, 'nothing refused was stored');
  t.false((await readFile(join(daemon.dataDir, 'settings.toml'), 'utf8')).includes('frpc-'));

  const accepted = await daemon.post('/settings/set', { TunnelPath: frpc }, { token: root });
  t.true(accepted.body.success, accepted.body.message);
  const { id } = await createInstance(daemon, root, 'pp_web');
  const started = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
  t.true(started.body.success, started.body.message);
  const stopped = await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token: root });
  t.true(stopped.body.success, stopped.body.message);

  // Its directory changed after it was accepted: it is not run, and the start says why.
  await chmod(programs, 0o777);
  const again = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
  t.false(again.body.success);
  t.regex(again.body.message, new RegExp(`${frpc} is refused: ${programs} is writable by every user \\(mode 0777\\)`));
  t.is((await statusOf(daemon, root, id)).state, 'stopped');
  const check = await daemon.get('/system/selfCheck', { token: root });
  const tunnelPath = check.body.data.checks.find((c: { name: string }) => c.name === 'tunnelPath');
  t.like(tunnelPath, { ok: false });
  t.regex(tunnelPath.message, /is writable by every user/);
});
