// The instance lifecycle with InitSystem = "systemd", under a real systemd (test/systemd/host.sh): each test boots
// a throwaway one and runs the daemon inside its namespaces, so units, journal and processes are that systemd's.
import test, { type ExecutionContext } from 'ava';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { startDaemon, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf, tunnelPids, waitFor } from '../../helpers/instances.js';
import { openStream, wsUrl } from '../../helpers/streams.js';
import { quietFor } from '../../helpers/until.js';
import { enteredChild, SystemdHost } from '../../helpers/systemd-host.js';

const BOOT_ID = 'systemd-test-boot';

interface Setup {
  host: SystemdHost;
  daemon: Daemon;
  token: string;
}

async function startInside(host: SystemdHost, settings: Record<string, string | number>, dataDir?: string) {
  return startDaemon({
    wrap: host.enter,
    dataDir,
    // An exit is known the moment systemd signals it; the time leaves room for a Node fixture slow to fail.
    settingsToml: dataDir
      ? undefined
      : instanceSettings({ InitSystem: 'systemd', 'Instance.StartSecs': 0.8, ...settings }) + 'Debug = true\n',
    env: { TUNNELWARD_BOOT_ID: BOOT_ID },
  });
}

/** Kills the daemon itself (not the nsenter in front of it) at once, as `kill -9` would. */
async function killDaemon(daemon: Daemon): Promise<void> {
  process.kill(await enteredChild(daemon.pid), 'SIGKILL');
  await daemon.exited;
}

async function setup(
  t: ExecutionContext,
  settings: Record<string, string | number> = {},
  boot: Parameters<typeof SystemdHost.boot>[0] = {},
): Promise<Setup> {
  const host = await SystemdHost.boot(boot);
  const daemon = await startInside(host, settings).catch(async (err: unknown) => {
    await host.shutdown();
    throw err;
  });
  t.teardown(async () => {
    // What the daemon said explains a failure here better than any assertion can.
    if (!t.passed) console.error(`${t.title}: daemon output\n${daemon.output.slice(-60).join('\n')}`);
    await killDaemon(daemon).catch(() => {});
    await host.shutdown();
    await rm(daemon.dataDir, { recursive: true, force: true });
  });
  return { host, daemon, token: await daemon.login() };
}

const unitOf = (id: string) => `tunnel_${id}.service`;

async function mainPid(host: SystemdHost, id: string): Promise<number> {
  return Number((await host.show(unitOf(id), 'MainPID')).MainPID);
}

/** Waits until the unit runs a main process other than `not`, and returns it. */
async function nextMainPid(host: SystemdHost, id: string, not: number, timeoutMs = 15_000): Promise<number> {
  return waitFor(
    () => mainPid(host, id),
    (pid) => pid > 0 && pid !== not,
    timeoutMs,
  );
}

const post = (s: Setup, path: string, body: unknown) => s.daemon.post(path, body, { token: s.token });

test('create, start, status, the journal on the log stream, a crash restarted by systemd alone, restart, stop, delete', async (t) => {
  const s = await setup(t);
  const { host, daemon, token } = s;
  const { id, configPath } = await createInstance(daemon, token, 'sd_life', {
    metadatas: { 'fixture.logEveryMs': '100' },
  });
  const unitFile = await host.readFile(`/etc/systemd/system/${unitOf(id)}`);
  t.regex(unitFile, /^Restart=on-failure$/m);
  t.regex(unitFile, /^RestartSec=0\.1s$/m, 'the first restart comes at once');
  t.regex(unitFile, /^StartLimitBurst=3$/m, 'from Watchdog.StartLimit');
  t.regex(unitFile, /^RestartPreventExitStatus=1$/m, 'from Watchdog.NoRetryExitCodes');
  t.regex(unitFile, /^Slice=tunnelward\.slice$/m);
  t.regex(unitFile, new RegExp(`^ExecStart=\\S+frpc\\.mjs -c ${configPath}$`, 'm'));

  const stream = await openStream(wsUrl(daemon.url, `/tunnelAct/instanceMgr/logs?instanceID=${id}&token=${token}`));
  const start = await post(s, '/tunnelAct/instanceMgr/start', { instanceID: id });
  t.true(start.body.success, start.body.message);
  t.like(await statusOf(daemon, token, id), { isRunning: true, initSystem: 'systemd', serviceName: `tunnel_${id}` });
  t.like(await host.show(unitOf(id), 'ActiveState', 'SubState'), { ActiveState: 'active', SubState: 'running' });
  const first = await mainPid(host, id);
  t.true(first > 0);
  t.is((await tunnelPids(configPath)).length, 1, 'one tunnel runs');
  const ticks = await stream.waitFor((m) => m.some((e) => /fixture: tick \d+/.test(e.content)));
  t.is(ticks.find((e) => /fixture: tick/.test(e.content)).level, 'INFO', 'entries come from the journal');

  // kill -9 of the main process: systemd restarts it (the one restarter), tunnelward takes the new process over.
  await host.run('kill', '-KILL', String(first));
  const second = await nextMainPid(host, id, first);
  const running = await waitFor(
    () => statusOf(daemon, token, id),
    (st) => st.isRunning && st.pid === second,
    15_000,
  );
  t.true(running.isRunning);
  t.is((await tunnelPids(configPath)).length, 1, 'exactly one new process');
  t.is(Number((await host.show(unitOf(id), 'NRestarts')).NRestarts), 1, 'systemd restarted it once');
  // The new run is followed too: its output reaches the stream.
  const before = stream.messages.length;
  await stream.waitFor((m) => m.slice(before).some((e) => /fixture: tick/.test(e.content)));
  // ...and its crash is seen like the first one.
  await host.run('kill', '-KILL', String(second));
  const third = await nextMainPid(host, id, second);
  // Running again as tunnelward sees it: the new process's pid, not a state read before the crash was heard of.
  await waitFor(
    () => statusOf(daemon, token, id),
    (st) => st.isRunning && st.pid === third,
    15_000,
  );
  t.is(Number((await host.show(unitOf(id), 'NRestarts')).NRestarts), 2);

  const restart = await post(s, '/tunnelAct/instanceMgr/restart', { instanceID: id });
  t.true(restart.body.success, restart.body.message);
  const fourth = await mainPid(host, id);
  t.true(fourth > 0 && fourth !== third, 'restart runs a new process');
  t.is((await tunnelPids(configPath)).length, 1);

  const stop = await post(s, '/tunnelAct/instanceMgr/stop', { instanceID: id });
  t.true(stop.body.success, stop.body.message);
  t.like(await host.show(unitOf(id), 'ActiveState', 'MainPID'), { ActiveState: 'inactive', MainPID: '0' });
  t.deepEqual(await tunnelPids(configPath), []);
  t.like(await statusOf(daemon, token, id), { isRunning: false, state: 'stopped' });

  const del = await post(s, '/tunnelAct/instanceMgr/delete', { instanceID: id });
  t.true(del.body.success, del.body.message);
  await t.throwsAsync(host.readFile(`/etc/systemd/system/${unitOf(id)}`), { code: 'ENOENT' });
  t.is((await host.show(unitOf(id), 'LoadState')).LoadState, 'not-found', 'systemd no longer knows the unit');
  stream.ws.close();
});

test('a crash loop ends in failed when systemd reaches the start limit; an operator start begins afresh', async (t) => {
  const s = await setup(t, { 'Instance.StartSecs': 0.5 });
  const { host, daemon, token } = s;
  const { id, configPath } = await createInstance(daemon, token, 'sd_loop', {
    metadatas: { 'fixture.crashAfterMs': '1000', 'fixture.exitCode': '3' },
  });
  const start = await post(s, '/tunnelAct/instanceMgr/start', { instanceID: id });
  t.true(start.body.success, start.body.message);
  const failed = await waitFor(
    () => statusOf(daemon, token, id),
    (st) => st.state === 'failed',
    20_000,
  );
  t.false(failed.isRunning);
  t.like(await host.show(unitOf(id), 'ActiveState', 'Result'), { ActiveState: 'failed', Result: 'exit-code' });
  // StartLimit 3: the start and two restarts ran; the third restart was refused (systemd counts it all the same).
  t.is(Number((await host.show(unitOf(id), 'NRestarts')).NRestarts), 3);
  t.deepEqual(await tunnelPids(configPath), []);

  // The operator's start resets systemd's count (reset-failed) as tunnelward's own.
  const again = await post(s, '/tunnelAct/instanceMgr/start', { instanceID: id });
  t.true(again.body.success, again.body.message);
  t.true((await mainPid(host, id)) > 0);
  await waitFor(
    () => statusOf(daemon, token, id),
    (st) => st.state === 'failed',
    20_000,
  );
});

test("a start that does not hold is answered with the exit (502) and left to systemd's restart, which gives up at its start limit", async (t) => {
  // Long enough that a Node fixture slow to boot on a loaded machine still dies within it.
  const s = await setup(t, { 'Instance.StartSecs': 2.5 });
  const { host, daemon, token } = s;
  const { id, configPath } = await createInstance(daemon, token, 'sd_bad', {
    metadatas: { 'fixture.crashAfterMs': '50', 'fixture.exitCode': '4' },
  });
  const start = await post(s, '/tunnelAct/instanceMgr/start', { instanceID: id });
  t.is(start.status, 502);
  t.regex(start.body.message, /code 4 before it was up .*; the init system starts it again/s);
  // Supervised as any exit: systemd restarts it, and past StartLimitBurst the unit fails, and so does the instance.
  await waitFor(
    () => statusOf(daemon, token, id),
    (status) => status.state === 'failed',
    60_000,
  );
  t.is((await host.show(unitOf(id), 'ActiveState')).ActiveState, 'failed');
  t.deepEqual(await tunnelPids(configPath), []);
});

test('bootAtStart enables and disables the unit; Watchdog settings reach every unit', async (t) => {
  const s = await setup(t);
  const { host, daemon, token } = s;
  const { id } = await createInstance(daemon, token, 'sd_boot', {}, { bootAtStart: true });
  t.is((await host.systemctl('is-enabled', unitOf(id))).stdout.trim(), 'enabled');
  const off = await post(s, '/tunnelAct/instanceMgr/modify', {
    instanceID: id,
    type: 'systemConfig',
    modifiedData: { bootAtStart: false },
  });
  t.true(off.body.success, off.body.message);
  t.is(off.body.data.bootServiceError, undefined);
  t.is((await host.systemctl('is-enabled', unitOf(id))).stdout.trim(), 'disabled');

  const set = await post(s, '/settings/set', {
    'Watchdog.Enabled': false,
    'Instance.StopTimeoutSecs': 3,
    'Instance.MemoryMaxMB': 64,
  });
  t.true(set.body.success, set.body.message);
  await waitFor(
    () => host.show(unitOf(id), 'Restart', 'TimeoutStopUSec', 'MemoryMax', 'MemoryHigh'),
    (p) =>
      p.Restart === 'no' &&
      p.TimeoutStopUSec === '3s' &&
      p.MemoryMax === String(64 * 1048576) &&
      p.MemoryHigh === String(57 * 1048576),
  );
  const unit = await host.readFile(`/etc/systemd/system/${unitOf(id)}`);
  t.regex(unit, /^Restart=no$/m);
  // The cap as systemd enforces it, and Go's soft limit below it for frpc.
  t.regex(unit, /^Environment=GOMEMLIMIT=51MiB$/m);
});

test('kill -9 of tunnelward, a crash while it is down: systemd restarts it, the next tunnelward re-attaches with no duplicate', async (t) => {
  const s = await setup(t);
  const { host, token } = s;
  let daemon = s.daemon;
  const created = [];
  for (const name of ['sd_a', 'sd_b', 'sd_c']) {
    const instance = await createInstance(daemon, token, name);
    const start = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: instance.id }, { token });
    t.true(start.body.success, start.body.message);
    created.push(instance);
  }
  const [a, b, c] = created as [(typeof created)[0], (typeof created)[0], (typeof created)[0]];
  const stop = await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: c.id }, { token });
  t.true(stop.body.success);

  await killDaemon(daemon);
  const crashed = await mainPid(host, a.id);
  await host.run('kill', '-KILL', String(crashed));
  const respawned = await nextMainPid(host, a.id, crashed);
  const untouched = await mainPid(host, b.id);

  daemon = await startInside(host, {}, daemon.dataDir);
  // The teardown kills whichever daemon runs last.
  t.teardown(() => killDaemon(daemon).catch(() => {}));
  const fresh = await daemon.login();
  for (const { id } of [a, b]) t.like(await statusOf(daemon, fresh, id), { isRunning: true, state: 'running' });
  t.like(await statusOf(daemon, fresh, c.id), { isRunning: false, state: 'stopped' });
  t.is(await mainPid(host, a.id), respawned, 'taken over as systemd runs it');
  t.is(await mainPid(host, b.id), untouched);
  for (const { configPath } of [a, b]) t.is((await tunnelPids(configPath)).length, 1, 'no duplicate');
  t.deepEqual(await tunnelPids(c.configPath), []);

  // The taken-over process is watched through the journal like one it started itself.
  await host.run('kill', '-KILL', String(untouched));
  await nextMainPid(host, b.id, untouched);
  await waitFor(
    () => statusOf(daemon, fresh, b.id),
    (st) => st.isRunning,
    15_000,
  );
  t.is((await tunnelPids(b.configPath)).length, 1);
  const journalctl = (await host.run('pgrep', '-c', '-x', 'journalctl')).stdout.trim();
  t.is(journalctl, '1', 'one journal follower for every unit');
});

test("PID 1 logging to its console only: crashes are still seen (systemd's signals), output still comes from the journal, and signals lost to a re-exec come back", async (t) => {
  // Three kills in a row: crashes, each restarted, never enough to give the tunnel up (the helper's limit is 3).
  const s = await setup(t, { 'Watchdog.StartLimit': 10 }, { logTarget: 'console' });
  const { host, daemon, token } = s;
  const { id, configPath } = await createInstance(daemon, token, 'sd_quiet', {
    metadatas: { 'fixture.logEveryMs': '100' },
  });
  const stream = await openStream(wsUrl(daemon.url, `/tunnelAct/instanceMgr/logs?instanceID=${id}&token=${token}`));
  const start = await post(s, '/tunnelAct/instanceMgr/start', { instanceID: id });
  t.true(start.body.success, start.body.message);
  await stream.waitFor((m) => m.some((e) => /fixture: tick \d+/.test(e.content)));

  const crashedAndBack = async (old: number) => {
    const next = await nextMainPid(host, id, old);
    await waitFor(
      () => statusOf(daemon, token, id),
      (st) => st.isRunning && st.pid === next,
      15_000,
    );
    return next;
  };
  const first = await mainPid(host, id);
  await host.run('kill', '-KILL', String(first));
  const second = await crashedAndBack(first);
  t.true(
    daemon.output.some((l) => l.includes(`"instanceID":${id},"from":"running","to":"backoff"`)),
    'the crash was seen as a crash',
  );
  const pid1 = await host.run('journalctl', '-q', '-o', 'cat', '_PID=1');
  t.false(pid1.stdout.includes(unitOf(id)), 'PID 1 wrote nothing about the unit to the journal');

  // A re-exec of systemd drops every connection to it; a crash right after it is seen all the same.
  await host.run('sh', '-c', `systemctl daemon-reexec && kill -KILL ${second}`);
  const third = await crashedAndBack(second);
  await host.run('kill', '-KILL', String(third));
  await crashedAndBack(third);
  t.is((await tunnelPids(configPath)).length, 1, 'one tunnel runs');
  t.true(daemon.output.some((l) => l.includes("lost systemd's signals")));
  const before = stream.messages.length;
  await stream.waitFor((m) => m.slice(before).some((e) => /fixture: tick/.test(e.content)));
  stream.ws.close();
});

test('a running instance deleted with purge: nothing of it comes back when its unit ends after the delete', async (t) => {
  const s = await setup(t);
  const { host, daemon, token } = s;
  const { id, configPath } = await createInstance(daemon, token, 'sd_gone');
  t.true((await post(s, '/tunnelAct/instanceMgr/start', { instanceID: id })).body.success);
  const del = await post(s, '/tunnelAct/instanceMgr/delete', { instanceID: id, purge: true });
  t.true(del.body.success, del.body.message);
  await quietFor(1500, "the unit's late end bringing back the instance's log");
  const logs = await readdir(join(daemon.dataDir, 'logs')).catch(() => [] as string[]);
  t.false(
    logs.some((name) => name.startsWith(`tunnel_${id}.log`)),
    `no log of instance ${id}: ${logs.join(', ')}`,
  );
  t.deepEqual(await tunnelPids(configPath), []);
  t.is((await host.show(unitOf(id), 'LoadState')).LoadState, 'not-found');
  t.false(
    daemon.output.some((l) => l.includes(`"instanceID":${id},`) && /"level":50/.test(l)),
    'no error after',
  );
});
