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
