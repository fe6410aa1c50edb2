import { execFile } from 'node:child_process';
import { chown } from 'node:fs/promises';
import { promisify } from 'node:util';
import test, { type ExecutionContext } from 'ava';
import { currentOsUser, lookupOsUser, type OsUser } from '../../../src/system/os-users.js';
import { findExecutable } from '../../../src/system/trusted-program.js';
import { dispose, disposeWithTunnels, programDir, startDaemon, tempDir } from '../../helpers/daemon.js';
import { createInstance, fileAccess, instanceSettings, READABLE_BY_NOBODY, statusOf } from '../../helpers/instances.js';

const run = promisify(execFile);

test('a daemon that is not root cannot run a tunnel as another user, and says so', async (t) => {
  // As root, run the daemon as nobody; otherwise the daemon is already not root.
  const asRoot = process.getuid?.() === 0;
  const dir = await tempDir();
  const identity = asRoot ? { uid: 65534, gid: 65534 } : {};
  if (asRoot) await chown(dir, 65534, 65534);
  const daemon = await startDaemon({ dataDir: dir, settingsToml: instanceSettings(), ...identity });
  t.teardown(() => dispose(daemon));
  if (asRoot) await chown(`${dir}/settings.toml`, 65534, 65534);
  const token = await daemon.login();
  const { id } = await createInstance(daemon, token, 'ru_root', {}, { runUser: 'root' });
  const res = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
  t.is(res.status, 500);
  const me = asRoot ? 'nobody' : currentOsUser().name;
  t.regex(res.body.message, new RegExp(`tunnelward runs as ${me}, not root, so it cannot run instance ${id} as root`));
  t.is((await statusOf(daemon, token, id)).isRunning, false);

  const own = await createInstance(daemon, token, 'ru_self', {}, { runUser: me });
  const ok = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: own.id }, { token });
  t.true(ok.body.success, ok.body.message);
  t.true((await statusOf(daemon, token, own.id)).isRunning);
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: own.id }, { token });
});

test('as root, a tunnel runs as its runUser, its config file readable by that user and by no other', async (t) => {
  const { chmod, readFile } = await import('node:fs/promises');
  const { tunnelPids } = await import('../../helpers/instances.js');
  const dir = await tempDir();
  const daemon = await startDaemon({ dataDir: dir, settingsToml: instanceSettings() });
  const token = await daemon.login();
  // The tunnel is stopped even when an assertion fails on the way.
  t.teardown(() => disposeWithTunnels(daemon, token));
  const { id, configPath } = await createInstance(daemon, token, 'ru_nobody', {}, { runUser: 'nobody' });
  if (process.getuid?.() !== 0) {
    // Only root can switch users: anyone else is refused with the reason.
    const refused = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
    t.regex(refused.body.message, /not root, so it cannot run instance/);
    return;
  }
  // The temp data dir is 0700: the tunnel could not reach its file, and the start says so.
  const blocked = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
  t.regex(blocked.body.message, new RegExp(`runUser nobody cannot reach .*: ${dir} is not searchable by it`));
  await chmod(dir, 0o711);
  const res = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
  t.true(res.body.success, res.body.message);
  const [pid] = await tunnelPids(configPath);
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  t.regex(status, /^Uid:\s+65534\s+65534/m);
  t.regex(status, /^Gid:\s+65534\s+65534/m);
  t.regex(status, /^Groups:\s*$/m, 'no supplementary groups carried over from root');
  t.deepEqual(await fileAccess(configPath), READABLE_BY_NOBODY, 'as written, not changed by the start');
  const environ = await readFile(`/proc/${pid}/environ`, 'latin1');
  t.false(environ.includes('TUNNELWARD_ADMIN_PASSWORD'), "tunnelward's environment is not passed on");
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token });
});

test('as root, every write of a config file makes it readable by the run user: create, edits, a new runUser, start-up', async (t) => {
  if (process.getuid?.() !== 0) {
    // Only root can give a file to another group: as anyone else the file is the daemon's own, mode 0600.
    const daemon = await startDaemon({ settingsToml: instanceSettings() });
    t.teardown(() => dispose(daemon));
    const { configPath } = await createInstance(daemon, await daemon.login(), 'ru_mine');
    t.is((await fileAccess(configPath)).mode, 0o600);
    return;
  }
  const { chown, chmod, readdir } = await import('node:fs/promises');
  const nobody = READABLE_BY_NOBODY;
  const rootOnly = { uid: 0, gid: 0, mode: 0o600 };
  const dir = await tempDir();
  const settingsToml = instanceSettings();
  const daemon = await startDaemon({ dataDir: dir, settingsToml });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const { id, configPath } = await createInstance(daemon, token, 'ru_files', {}, { runUser: 'nobody' });
  t.deepEqual(await fileAccess(configPath), nobody, 'as created');
  const edit = await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: { name: 'p', type: 'tcp', localPort: '22', remotePort: '7022' } },
    { token },
  );
  t.true(edit.body.success, edit.body.message);
  t.deepEqual(await fileAccess(configPath), nobody, 'after a proxy edit');
  const common = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'configFile', modifiedData: { 'transport.poolCount': 2 } },
    { token },
  );
  t.true(common.body.success, common.body.message);
  t.deepEqual(await fileAccess(configPath), nobody, 'after a config file edit');

  const toRoot = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'systemConfig', modifiedData: { runUser: 'root' } },
    { token },
  );
  t.true(toRoot.body.success, toRoot.body.message);
  t.deepEqual(await fileAccess(configPath), rootOnly, "a tunnel run as root: root's alone");
  await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'systemConfig', modifiedData: { runUser: 'nobody' } },
    { token },
  );
  t.deepEqual(await fileAccess(configPath), nobody, 'back to nobody');
  t.deepEqual(
    (await readdir(`${dir}/instances`)).filter((name) => name.endsWith('.tmp')),
    [],
    'no temp file left behind',
  );

  // A file as earlier versions wrote it is set right at the next start-up: root's 0600, which nobody cannot read,
  // and nobody's primary group with 0640, which sync and _apt (nogroup too) could read.
  let current = daemon;
  for (const [gid, mode] of [
    [0, 0o600],
    [65534, 0o640],
  ] as const) {
    await current.stop('SIGKILL');
    await run('setfacl', ['-b', configPath]);
    await chown(configPath, 0, gid);
    await chmod(configPath, mode);
    const next = await startDaemon({ dataDir: dir });
    t.teardown(() => next.stop('SIGKILL'));
    t.deepEqual(await fileAccess(configPath), nobody, `set right at start-up (gid ${gid}, mode ${mode.toString(8)})`);
    current = next;
  }
});

/** Two throwaway users whose primary group is one throwaway group, removed (the users, then the group) at the end. */
async function usersSharingAGroup(t: ExecutionContext, tag: string): Promise<OsUser[]> {
  const group = `tw-${tag}-${process.pid}`;
  const names = [`tw-${tag}1-${process.pid}`, `tw-${tag}2-${process.pid}`];
  await run('groupadd', [group]);
  t.teardown(async () => {
    try {
      for (const name of names) if (lookupOsUser(name)) await run('userdel', [name]);
    } finally {
      await run('groupdel', [group]);
    }
  });
  for (const name of names) {
    await run('useradd', ['--no-create-home', '--no-user-group', '--gid', group, '--home-dir', '/nonexistent', name]);
  }
  return names.map((name) => lookupOsUser(name)!);
}

/** The file as `user` reads it (with its groups), or why it could not. */
const readAs = (user: OsUser, path: string) =>
  run('setpriv', [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--init-groups', 'cat', path]).then(
    (out) => out.stdout,
    (err: { stderr: string }) => `refused: ${err.stderr.trim()}`,
  );

// Serial: useradd and groupdel of two tests at once would meet on the lock of /etc/passwd.
test.serial(
  'as root, a run user that shares its primary group reads its config file through an ACL; the others in the group cannot',
  async (t) => {
    if (process.getuid?.() !== 0) return t.pass('only root runs tunnels as other users');
    const { chmod, readFile } = await import('node:fs/promises');
    const { tunnelPids } = await import('../../helpers/instances.js');
    const [first, second] = await usersSharingAGroup(t, 'acl');
    const dir = await tempDir();
    await chmod(dir, 0o711);
    const daemon = await startDaemon({ dataDir: dir, settingsToml: instanceSettings() });
    const token = await daemon.login();
    t.teardown(() => disposeWithTunnels(daemon, token));
    const secret = { 'auth.token': 'only-the-run-user-reads-this' };
    const { id, configPath } = await createInstance(daemon, token, 'ru_shared', secret, { runUser: first!.name });
    t.deepEqual(await fileAccess(configPath), { uid: 0, gid: 0, mode: 0o640, aclUsers: [first!.uid] });
    t.regex(await readAs(first!, configPath), /only-the-run-user-reads-this/);
    t.regex(await readAs(second!, configPath), /^refused: .*Permission denied/, 'the same primary group reads nothing');

    const res = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
    t.true(res.body.success, res.body.message);
    const [pid] = await tunnelPids(configPath);
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    t.regex(status, new RegExp(`^Uid:\\s+${first!.uid}\\s`, 'm'));
    t.regex(status, new RegExp(`^Gid:\\s+${first!.gid}\\s`, 'm'));
    await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token });

    // A new run user: the file is given to it alone.
    const moved = await daemon.post(
      '/tunnelAct/instanceMgr/modify',
      { instanceID: id, type: 'systemConfig', modifiedData: { runUser: second!.name } },
      { token },
    );
    t.true(moved.body.success, moved.body.message);
    t.regex(await readAs(second!, configPath), /only-the-run-user-reads-this/);
    t.regex(await readAs(first!, configPath), /^refused: .*Permission denied/);
  },
);

test.serial(
  'as root, without setfacl a run user that shares its primary group is refused at create, at modify and at start, saying both ways out',
  async (t) => {
    if (process.getuid?.() !== 0) return t.pass('only root runs tunnels as other users');
    const { chmod, rm, symlink } = await import('node:fs/promises');
    const [first] = await usersSharingAGroup(t, 'noacl');
    const dir = await tempDir();
    await chmod(dir, 0o711);
    // A PATH with node (the fixture frpc's interpreter) and flock (the data dir's lock) alone: no setfacl on it.
    const bin = await programDir();
    t.teardown(() => rm(bin, { recursive: true, force: true }));
    await symlink(process.execPath, `${bin}/node`);
    await symlink(await findExecutable('flock'), `${bin}/flock`);
    const withoutAcl = { env: { PATH: bin } };
    const refusal = new RegExp(
      `^runUser ${first!.name} shares its primary group \\(gid ${first!.gid}\\) with tw-noacl2-${process.pid}, so only ` +
        `an ACL lets it alone read its config file, and setfacl on PATH is missing or not an executable file: install ` +
        `the acl package \\(setfacl\\), or give ${first!.name} a primary group of its own`,
    );

    let daemon = await startDaemon({ dataDir: dir, settingsToml: instanceSettings(), ...withoutAcl });
    // The daemon of the moment: each one before it was stopped on the way.
    t.teardown(() => dispose(daemon));
    let token = await daemon.login();
    const created = await daemon.post(
      '/tunnelAct/instanceMgr/create',
      {
        instanceInfo: { name: 'ru_noacl', serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' },
        runUser: first!.name,
      },
      { token },
    );
    t.is(created.status, 400);
    t.regex(created.body.message, refusal);
    const { id, configPath } = await createInstance(daemon, token, 'ru_later');
    const modified = await daemon.post(
      '/tunnelAct/instanceMgr/modify',
      { instanceID: id, type: 'systemConfig', modifiedData: { runUser: first!.name } },
      { token },
    );
    t.is(modified.status, 400);
    t.regex(modified.body.message, refusal);
    await daemon.stop('SIGKILL');

    // Made with setfacl there, started after it is gone: refused, and the file made root's alone at start-up.
    daemon = await startDaemon({ dataDir: dir });
    token = await daemon.login();
    const ok = await daemon.post(
      '/tunnelAct/instanceMgr/modify',
      { instanceID: id, type: 'systemConfig', modifiedData: { runUser: first!.name } },
      { token },
    );
    t.true(ok.body.success, ok.body.message);
    await daemon.stop('SIGKILL');
    daemon = await startDaemon({ dataDir: dir, ...withoutAcl });
    token = await daemon.login();
    t.deepEqual(await fileAccess(configPath), { uid: 0, gid: 0, mode: 0o600 });
    const started = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
    t.is(started.status, 400);
    t.regex(started.body.message, refusal);
    t.like(await statusOf(daemon, token, id), { isRunning: false });
  },
);
