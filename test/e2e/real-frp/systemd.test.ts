// The real frpc run as systemd units (InitSystem "systemd") under a throwaway real systemd (test/systemd/host.sh),
// against a real frps on the host's loopback (the network is shared): bytes through the tunnels, the status and
// alerts read from the journal, a lost server, and tunnels that outlive a killed daemon.
import test, { type ExecutionContext } from 'ava';
import { chmod, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startDaemon, tempDir, type Daemon } from '../../helpers/daemon.js';
import { echoServer, EchoConnection, freePort, httpGet, httpServer, roundTrip } from '../../helpers/frp.js';
import { fileAccess, processIds, READABLE_BY_NOBODY, statusOf, waitFor } from '../../helpers/instances.js';
import {
  addProxy,
  alertsOf,
  createTunnel,
  frpsFor,
  httpTo,
  realFrpSettings,
  start,
  statusUntil,
  tcpTo,
} from '../../helpers/real-frp.js';
import { enteredChild, SystemdHost } from '../../helpers/systemd-host.js';
import { lookupOsUser } from '../../../src/system/os-users.js';

const BOOT = { TUNNELWARD_BOOT_ID: 'real-frp-systemd-boot' };
// Each test boots a systemd of its own: one at a time.
const serial = test.serial;

// journald tells followers of new entries every 250 ms: a start is confirmed well after that.
const SETTINGS = realFrpSettings({ InitSystem: 'systemd', 'Instance.StartSecs': 0.8 });

/** A daemon inside `host`: on a new data dir, or on `dataDir` as it stands. */
async function startInside(host: SystemdHost, dataDir?: string): Promise<Daemon> {
  return startDaemon({ wrap: host.enter, dataDir, settingsToml: dataDir ? undefined : SETTINGS, env: BOOT });
}

async function killDaemon(daemon: Daemon): Promise<void> {
  process.kill(await enteredChild(daemon.pid), 'SIGKILL');
  await daemon.exited;
}

async function setup(t: ExecutionContext, dataDir?: string) {
  const host = await SystemdHost.boot();
  const daemons: Daemon[] = [];
  t.teardown(async () => {
    if (!t.passed) console.error(`${t.title}: daemon output\n${daemons.at(-1)?.output.slice(-40).join('\n')}`);
    for (const d of daemons) await killDaemon(d).catch(() => {});
    await host.shutdown();
    for (const d of daemons) await rm(d.dataDir, { recursive: true, force: true });
  });
  const daemon = await startInside(host, dataDir);
  daemons.push(daemon);
  return { host, daemon, daemons, token: await daemon.login() };
}

const mainPid = async (host: SystemdHost, id: string) =>
  Number((await host.show(`tunnel_${id}.service`, 'MainPID')).MainPID);

serial(
  'systemd units of the real frpc: tcp and http through frps, connected from the journal, a lost server and back',
  async (t) => {
    t.timeout(120_000);
    const frps = await frpsFor(t);
    const { host, daemon, token } = await setup(t);
    const echo = await echoServer();
    const site = await httpServer('unit-site');
    t.teardown(() => Promise.all([echo.close(), site.close()]));
    const remote = await freePort();
    const { id } = await createTunnel(daemon, token, frps, 'rfs_unit');
    await addProxy(daemon, token, id, tcpTo('echo', echo.port, remote));
    await addProxy(daemon, token, id, httpTo('web', site.port, 'unit.tunnel.test'));
    const { next, alerts } = await alertsOf(t, daemon, token);

    const began = Date.now();
    await start(daemon, token, id);
    await statusUntil(daemon, token, id, (s) => s.connected === true && s.proxyStatus.running === 2, 2000);
    t.log(`connected with both proxies running ${Date.now() - began} ms after the start was asked`);
    t.like(await statusOf(daemon, token, id), { initSystem: 'systemd', state: 'running' });
    const pid = await mainPid(host, id);
    t.true(pid > 0);
    await roundTrip(remote, 'through a unit');
    t.deepEqual(await httpGet(frps.vhostHTTPPort, 'unit.tunnel.test', '/x'), {
      status: 200,
      body: 'unit-site unit.tunnel.test /x',
    });

    const lost = Date.now();
    await frps.down();
    await statusUntil(daemon, token, id, (s) => s.connected === false, 2000);
    t.like(await next(id, 'instance.disconnected'), { to: 'disconnected' });
    t.true(Date.now() - lost >= 1000, 'after the debounce');
    t.like(await next(id, 'proxy.down', 'echo'), { to: 'disconnected' });
    t.is(await mainPid(host, id), pid, 'the unit runs on');
    const before = alerts(id).length;
    await frps.up();
    await statusUntil(daemon, token, id, (s) => s.connected === true && s.proxyStatus.running === 2, 30_000);
    await next(id, 'instance.connected', undefined, before);
    await next(id, 'proxy.up', 'web', before);
    await roundTrip(remote, 'through the unit again');
  },
);

serial('the daemon killed while units carry bytes: they carry on, and the next daemon takes them over', async (t) => {
  t.timeout(120_000);
  const frps = await frpsFor(t);
  const { host, daemon, daemons, token } = await setup(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const remote = await freePort();
  const { id } = await createTunnel(daemon, token, frps, 'rfs_kept');
  await addProxy(daemon, token, id, tcpTo('echo', echo.port, remote));
  await start(daemon, token, id);
  await statusUntil(daemon, token, id, (s) => s.connected === true, 2000);
  const pid = await mainPid(host, id);
  const conn = await EchoConnection.open(remote);
  t.teardown(() => conn.close());
  await conn.exchange('before');

  await killDaemon(daemon);
  for (let i = 0; i < 20; i++) await conn.exchange(`away ${i}`);
  await roundTrip(remote, 'a new connection while the daemon is away');

  const second = await startInside(host, daemon.dataDir);
  daemons.push(second);
  const token2 = await second.login();
  await statusUntil(second, token2, id, (s) => s.state === 'running' && s.pid === pid && s.connected === true, 5000);
  t.is(await mainPid(host, id), pid, 'the same unit process, not started again');
  await conn.exchange('after the new daemon took over');
  t.false(conn.closed);

  // Stopped through the new daemon: the unit stops, frpc dies of SIGTERM, which is a clean stop.
  const stop = await second.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token: token2 });
  t.true(stop.body.success, stop.body.message);
  t.like(await host.show(`tunnel_${id}.service`, 'ActiveState'), { ActiveState: 'inactive' });
  await waitFor(
    () => statusOf(second, token2, id),
    (s) => s.state === 'stopped',
  );
});

serial(
  'a unit with User=nobody: an unreachable config file refused at the start, then connected, hot reloads applied',
  async (t) => {
    t.timeout(120_000);
    const runUser = lookupOsUser('nobody')!;
    const frps = await frpsFor(t);
    // The test's data dir is 0700: nobody cannot pass through it (a dir tunnelward makes itself is 0711).
    const dataDir = await tempDir();
    await writeFile(join(dataDir, 'settings.toml'), SETTINGS);
    const { host, daemon, token } = await setup(t, dataDir);
    const echo = await echoServer();
    t.teardown(() => echo.close());
    const [first, second] = [await freePort(), await freePort()];
    const { id, configPath } = await createTunnel(daemon, token, frps, 'rfs_nobody', {}, { runUser: 'nobody' });
    await addProxy(daemon, token, id, tcpTo('echo', echo.port, first));
    // Through an ACL entry: nobody's group, nogroup, is other users' too.
    const readable = READABLE_BY_NOBODY;
    t.deepEqual(await fileAccess(configPath), readable);

    const refused = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
    t.is(refused.status, 400);
    t.is(
      refused.body.message,
      `runUser nobody cannot reach ${configPath}: ${dataDir} is not searchable by it (chmod o+x ${dataDir})`,
    );
    t.like(await statusOf(daemon, token, id), { state: 'stopped' });

    await chmod(dataDir, 0o711);
    await start(daemon, token, id);
    await statusUntil(daemon, token, id, (s) => s.connected === true && s.proxyStatus.running === 1, 5000);
    t.like(await statusOf(daemon, token, id), { initSystem: 'systemd', state: 'running' });
    const pid = await mainPid(host, id);
    t.like(await host.show(`tunnel_${id}.service`, 'User'), { User: 'nobody' });
    t.deepEqual(processIds(await host.readFile(`/proc/${pid}/status`)), { uid: runUser.uid, gid: runUser.gid });
    await roundTrip(first, 'through a unit run as nobody');

    const added = await addProxy(daemon, token, id, tcpTo('second', echo.port, second));
    t.is(added.applied, 'reload');
    t.deepEqual(await fileAccess(configPath), readable, 'the rewritten file is readable by nobody too');
    await statusUntil(daemon, token, id, (s) => s.proxyStatus.running === 2, 5000);
    await roundTrip(second, 'through the proxy added by the reload');
    t.is(await mainPid(host, id), pid, 'reloaded, not restarted');
  },
);

serial(
  'a unit whose auth.token is {{ .Envs.FRP_TOKEN }}: the value reaches frpc through a 0600 environment file, never a log, and a new value applies at the restart',
  async (t) => {
    t.timeout(120_000);
    const frps = await frpsFor(t);
    const { host, daemon, token } = await setup(t);
    const echo = await echoServer();
    t.teardown(() => echo.close());
    const remote = await freePort();
    const { id } = await createTunnel(daemon, token, frps, 'rfs_env', { 'auth.token': '{{ .Envs.FRP_TOKEN }}' });
    await addProxy(daemon, token, id, tcpTo('echo', echo.port, remote));
    const setEnv = (value: string) =>
      daemon.post(
        '/tunnelAct/instanceMgr/modify',
        { instanceID: id, type: 'environment', modifiedData: { FRP_TOKEN: value } },
        { token },
      );
    t.true((await setEnv(frps.token)).body.success);

    await start(daemon, token, id);
    await statusUntil(daemon, token, id, (s) => s.connected === true && s.proxyStatus.running === 1, 5000);
    await roundTrip(remote, 'through a unit that read its token from the environment');
    const envFile = join(daemon.dataDir, 'boot-env', `tunnel_${id}.env`);
    t.deepEqual(await fileAccess(envFile), { uid: 0, gid: 0, mode: 0o600 });
    t.like(await host.show(`tunnel_${id}.service`, 'EnvironmentFiles'), {
      EnvironmentFiles: `${envFile} (ignore_errors=no)`,
    });
    const pid = await mainPid(host, id);
    t.true((await host.readFile(`/proc/${pid}/environ`)).split('\0').includes(`FRP_TOKEN=${frps.token}`));

    // A wrong value, applied at the restart: frps refuses the login, so the tunnel is not connected.
    t.true((await setEnv('not-the-token')).body.success);
    t.true(
      (await daemon.post('/tunnelAct/instanceMgr/restart', { instanceID: id }, { token })).body.success,
      'restarted',
    );
    await statusUntil(daemon, token, id, (s) => s.state === 'running' && s.connected !== true, 10_000);
    t.not(await mainPid(host, id), pid);
    t.true((await setEnv(frps.token)).body.success);
    t.true((await daemon.post('/tunnelAct/instanceMgr/restart', { instanceID: id }, { token })).body.success);
    await statusUntil(daemon, token, id, (s) => s.connected === true, 10_000);

    // The value never reached the journal, the daemon's output or the instance log.
    const journal = await host.run('journalctl', '--no-pager', '-o', 'cat');
    t.false(journal.stdout.includes(frps.token), 'not in the journal');
    t.false(daemon.output.join('\n').includes(frps.token), "not in the daemon's output");
    const log = await daemon.get(`/tunnelAct/instanceMgr/status?instanceID=${id}`, { token });
    t.false(JSON.stringify(log.body).includes(frps.token));

    // Deleted with the instance.
    t.true((await daemon.post('/tunnelAct/instanceMgr/delete', { instanceID: id }, { token })).body.success);
    await t.throwsAsync(fileAccess(envFile));
  },
);
