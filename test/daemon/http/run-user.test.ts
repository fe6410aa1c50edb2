import { chown } from 'node:fs/promises';
import test from 'ava';
import { currentOsUser } from '../../../src/system/os-users.js';
import { dispose, disposeWithTunnels, startDaemon, tempDir } from '../../helpers/daemon.js';
import { createInstance, fileAccess, instanceSettings, statusOf } from '../../helpers/instances.js';

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
  t.deepEqual(
    await fileAccess(configPath),
    { uid: 0, gid: 65534, mode: 0o640 },
    'as written, not changed by the start',
  );
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
  const nobody = { uid: 0, gid: 65534, mode: 0o640 };
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

  // A file written before run users could read their files (root's, 0600) is set right at the next start-up.
  await daemon.stop('SIGKILL');
  await chown(configPath, 0, 0);
  await chmod(configPath, 0o600);
  const next = await startDaemon({ dataDir: dir });
  t.teardown(() => next.stop('SIGKILL'));
  t.deepEqual(await fileAccess(configPath), nobody, 'set right at start-up');
});
