// The real frpc run as a user other than root (`runUser`), against a real frps on loopback: run by tunnelward itself
// (InitSystem "process") and through an init.d script (the real start-stop-daemon). Its config file stays readable
// by that user after every write, so frpc starts, connects and applies hot reloads. (systemd units: systemd.test.ts.)
import test, { type ExecutionContext } from 'ava';
import { chmod, mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { disposeWithTunnels, startDaemon, tempDir, type Daemon } from '../../helpers/daemon.js';
import { echoServer, freePort, roundTrip } from '../../helpers/frp.js';
import { fileAccess, processIds, READABLE_BY_NOBODY, waitFor } from '../../helpers/instances.js';
import {
  addProxy,
  createTunnel,
  frpcPids,
  frpsFor,
  realFrpSettings,
  start,
  statusUntil,
  tcpTo,
} from '../../helpers/real-frp.js';
import { lookupOsUser } from '../../../src/system/os-users.js';

const RUN_USER = 'nobody';
const runUser = lookupOsUser(RUN_USER)!;

/** A daemon whose data dir the run user may pass through (0711, as tunnelward makes the dirs it creates). */
async function daemonFor(t: ExecutionContext, settings: Record<string, string | number> = {}) {
  const dataDir = await tempDir();
  await chmod(dataDir, 0o711);
  const daemon: Daemon = await startDaemon({
    dataDir,
    settingsToml: realFrpSettings(settings),
    env: { TUNNELWARD_BOOT_ID: 'real-frp-run-user-boot' },
  });
  const token = await daemon.login();
  t.teardown(() => disposeWithTunnels(daemon, token));
  return { daemon, token };
}

async function modifyProxy(daemon: Daemon, token: string, id: string, proxyInfo: object) {
  const res = await daemon.post('/tunnelAct/proxyMgr/modify', { instanceID: id, proxyInfo }, { token });
  if (!res.body.success) throw new Error(`modifying a proxy failed: ${res.status} ${res.body.message}`);
  return res.body.data as { applied: string };
}

/** Waits until bytes go through `port` (frpc's proxy comes up shortly after a reload). */
const reachable = (port: number, what: string) =>
  waitFor(
    () =>
      roundTrip(port, what, 2000).then(
        () => true,
        () => false,
      ),
    (ok) => ok,
  );

test.before(() => {
  if (process.getuid?.() !== 0) throw new Error('these tests run tunnels as another user: they need root');
  if (!runUser) throw new Error(`no ${RUN_USER} user on this system`);
});

test(`process mode: frpc as ${RUN_USER} connects through frps, and an edited proxy is applied by a hot reload`, async (t) => {
  const frps = await frpsFor(t);
  const { daemon, token } = await daemonFor(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const [first, moved, second] = [await freePort(), await freePort(), await freePort()];
  const { id, configPath } = await createTunnel(daemon, token, frps, 'ru_process', {}, { runUser: RUN_USER });
  t.deepEqual(await fileAccess(configPath), READABLE_BY_NOBODY, 'as created');
  await addProxy(daemon, token, id, tcpTo('echo', echo.port, first));
  t.deepEqual(await fileAccess(configPath), READABLE_BY_NOBODY, 'after an edit');

  await start(daemon, token, id);
  await statusUntil(daemon, token, id, (s) => s.connected === true && s.proxyStatus.running === 1, 5000);
  const [pid] = frpcPids(configPath);
  t.deepEqual(
    processIds(await readFile(`/proc/${pid}/status`, 'utf8')),
    { uid: runUser.uid, gid: runUser.gid },
    `frpc runs as ${RUN_USER}`,
  );
  await roundTrip(first, `through a tunnel run as ${RUN_USER}`);
  t.deepEqual(await fileAccess(configPath), READABLE_BY_NOBODY, 'a start changes nothing of it');

  // The file is replaced by each edit: frpc, as the run user, reads the new one at the reload.
  const edited = await modifyProxy(daemon, token, id, tcpTo('echo', echo.port, moved));
  t.is(edited.applied, 'reload');
  t.deepEqual(await fileAccess(configPath), READABLE_BY_NOBODY, 'after the edit of a running tunnel');
  await reachable(moved, 'through the proxy frpc moved at the reload');
  const added = await addProxy(daemon, token, id, tcpTo('second', echo.port, second));
  t.is(added.applied, 'reload');
  await statusUntil(daemon, token, id, (s) => s.connected === true && s.proxyStatus.running === 2, 5000);
  await reachable(second, 'through the proxy added by another reload');
  await roundTrip(moved, 'the edited proxy still carries bytes');
  t.deepEqual(frpcPids(configPath), [pid!], 'reloaded, never restarted');
});

test(`init.d: the script runs frpc as ${RUN_USER} with the real start-stop-daemon; connected, and hot reloads apply`, async (t) => {
  const frps = await frpsFor(t);
  const root = await tempDir('tunnelward-initd-');
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const dirs = { scripts: join(root, 'init.d'), run: join(root, 'run'), log: join(root, 'log') };
  for (const d of Object.values(dirs)) await mkdir(d);
  const { daemon, token } = await daemonFor(t, {
    InitSystem: 'init.d',
    'InitD.ScriptDir': dirs.scripts,
    'InitD.PidDir': dirs.run,
    'InitD.LogDir': dirs.log,
  });
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const [first, second] = [await freePort(), await freePort()];
  const { id, configPath } = await createTunnel(daemon, token, frps, 'ru_initd', {}, { runUser: RUN_USER });
  await addProxy(daemon, token, id, tcpTo('echo', echo.port, first));

  await start(daemon, token, id);
  await statusUntil(daemon, token, id, (s) => s.connected === true && s.proxyStatus.running === 1, 5000);
  t.like(await statusUntil(daemon, token, id, (s) => s.isRunning), { initSystem: 'init.d', state: 'running' });
  const pid = Number((await readFile(join(dirs.run, `tunnel_${id}.pid`), 'utf8')).trim());
  t.deepEqual(
    processIds(await readFile(`/proc/${pid}/status`, 'utf8')),
    { uid: runUser.uid, gid: runUser.gid },
    `frpc runs as ${RUN_USER}`,
  );
  await roundTrip(first, `through a tunnel an init script runs as ${RUN_USER}`);

  const added = await addProxy(daemon, token, id, tcpTo('second', echo.port, second));
  t.is(added.applied, 'reload');
  t.deepEqual(await fileAccess(configPath), READABLE_BY_NOBODY);
  await statusUntil(daemon, token, id, (s) => s.proxyStatus.running === 2, 5000);
  await reachable(second, 'through the proxy added by a reload');
  t.deepEqual(frpcPids(configPath), [pid], 'reloaded, never restarted');
});
