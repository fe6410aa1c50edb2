import { chown } from 'node:fs/promises';
import test from 'ava';
import { currentOsUser } from '../../src/system/os-users.js';
import { dispose, startDaemon, tempDir } from '../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf } from '../helpers/instances.js';

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

test('as root, a tunnel runs as its runUser with that user owning its config file', async (t) => {
  const { chmod, stat, readFile } = await import('node:fs/promises');
  const { tunnelPids } = await import('../helpers/instances.js');
  const dir = await tempDir();
  const daemon = await startDaemon({ dataDir: dir, settingsToml: instanceSettings() });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
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
  t.is((await stat(configPath)).uid, 65534);
  t.is((await stat(configPath)).mode & 0o777, 0o600);
  const environ = await readFile(`/proc/${pid}/environ`, 'latin1');
  t.false(environ.includes('TUNNELWARD_ADMIN_PASSWORD'), "tunnelward's environment is not passed on");
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token });
});
