import test from 'ava';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startDaemon, dispose, type Daemon } from '../../helpers/daemon.js';
import {
  createInstance,
  instanceSettings,
  killTunnelsUnder,
  logBytes,
  statusOf,
  tunnelPids,
  waitFor,
} from '../../helpers/instances.js';

const BOOT = { TUNNELWARD_BOOT_ID: 'boot-a' };

async function startAll(daemon: Daemon, token: string, ids: string[]) {
  for (const id of ids) {
    const res = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
    if (!res.body.success) throw new Error(res.body.message);
  }
}

test('kill -9 of the daemon leaves three tunnels running; the next daemon re-adopts them', async (t) => {
  const first = await startDaemon({ settingsToml: instanceSettings({ 'Watchdog.BackoffSecs': 0.2 }), env: BOOT });
  t.teardown(() => dispose(first));
  const token = await first.login();
  const made = await Promise.all(['ra_a', 'ra_b', 'ra_c'].map((n) => createInstance(first, token, n)));
  await startAll(
    first,
    token,
    made.map((m) => m.id),
  );
  const pids = await Promise.all(made.map((m) => tunnelPids(m.configPath)));
  t.true(pids.every((p) => p.length === 1));

  await first.stop('SIGKILL');
  const survivors = await Promise.all(made.map((m) => tunnelPids(m.configPath)));
  t.deepEqual(survivors, pids, 'the tunnels outlive the daemon');

  const second = await startDaemon({ dataDir: first.dataDir, env: BOOT });
  t.teardown(() => second.stop('SIGKILL'));
  const token2 = await second.login();
  for (const m of made) t.like(await statusOf(second, token2, m.id), { isRunning: true, state: 'running' });
  t.deepEqual(await Promise.all(made.map((m) => tunnelPids(m.configPath))), pids, 'adopted, not started again');
  await second.waitForOutput(/"adopted":3/);

  // stop works on an adopted tunnel
  const stop = await second.post('/tunnelAct/instanceMgr/stop', { instanceID: made[0]!.id }, { token: token2 });
  t.true(stop.body.success);
  t.deepEqual(await tunnelPids(made[0]!.configPath), []);

  // a crash of an adopted tunnel is noticed and the watchdog restarts it
  process.kill(pids[1]![0]!, 'SIGKILL');
  const restarted = await waitFor(
    () => tunnelPids(made[1]!.configPath),
    (p) => p.length === 1 && p[0] !== pids[1]![0],
  );
  t.not(restarted[0], pids[1]![0]);
  await second.waitForOutput(new RegExp(`"instanceID":${made[1]!.id},.*restarting after a delay`));
  await waitFor(
    () => statusOf(second, token2, made[1]!.id),
    (s) => s.state === 'running',
  );

  // SIGTERM of the daemon leaves them running too
  await second.stop('SIGTERM');
  t.is((await tunnelPids(made[2]!.configPath)).length, 1);
  const third = await startDaemon({ dataDir: first.dataDir, env: BOOT });
  t.teardown(async () => {
    const tok = await third.login();
    for (const m of made) await third.post('/tunnelAct/instanceMgr/stop', { instanceID: m.id }, { token: tok });
    await third.stop('SIGKILL');
  });
  const token3 = await third.login();
  t.like(await statusOf(third, token3, made[2]!.id), { isRunning: true });
  t.like(await statusOf(third, token3, made[0]!.id), { isRunning: false }, 'what was stopped stays stopped');
});

test('desired state and boots: same boot restores what should run; a new boot starts the bootAtStart ones', async (t) => {
  const daemon = await startDaemon({ settingsToml: instanceSettings(), env: BOOT });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const wanted = await createInstance(daemon, token, 'ds_wanted');
  const atBoot = await createInstance(daemon, token, 'ds_boot', {}, { bootAtStart: true });
  const idle = await createInstance(daemon, token, 'ds_idle');
  await startAll(daemon, token, [wanted.id]);
  await daemon.stop('SIGKILL');
  // The tunnel dies while tunnelward is away.
  for (const pid of await tunnelPids(wanted.configPath)) process.kill(pid, 'SIGKILL');
  await waitFor(
    () => tunnelPids(wanted.configPath),
    (p) => p.length === 0,
  );

  const sameBoot = await startDaemon({ dataDir: daemon.dataDir, env: BOOT });
  const token2 = await sameBoot.login();
  await waitFor(
    () => statusOf(sameBoot, token2, wanted.id),
    (s) => s.isRunning,
  );
  t.false((await statusOf(sameBoot, token2, atBoot.id)).isRunning, 'bootAtStart does not matter within a boot');
  t.false((await statusOf(sameBoot, token2, idle.id)).isRunning);
  await sameBoot.stop('SIGKILL');
  for (const pid of await tunnelPids(wanted.configPath)) process.kill(pid, 'SIGKILL');
  await waitFor(
    () => tunnelPids(wanted.configPath),
    (p) => p.length === 0,
  );

  const newBoot = await startDaemon({ dataDir: daemon.dataDir, env: { TUNNELWARD_BOOT_ID: 'boot-b' } });
  t.teardown(async () => {
    const tok = await newBoot.login();
    for (const m of [wanted, atBoot, idle])
      await newBoot.post('/tunnelAct/instanceMgr/stop', { instanceID: m.id }, { token: tok });
    await newBoot.stop('SIGKILL');
  });
  const token3 = await newBoot.login();
  await waitFor(
    () => statusOf(newBoot, token3, atBoot.id),
    (s) => s.isRunning,
  );
  t.false((await statusOf(newBoot, token3, wanted.id)).isRunning, 'after a reboot only bootAtStart instances start');
  t.false((await statusOf(newBoot, token3, idle.id)).isRunning);
});

test("one tunnel's output pipe removed while the daemon was away: the next daemon starts, takes every tunnel over, and says what is wrong with that one", async (t) => {
  const first = await startDaemon({ settingsToml: instanceSettings(), env: BOOT });
  t.teardown(async () => {
    await killTunnelsUnder(first.dataDir);
    await dispose(first);
  });
  const token = await first.login();
  // Each writes a line every 50 ms: whether its output is still read shows in its log file.
  const ticking = { metadatas: { 'fixture.logEveryMs': '50' } };
  const made = await Promise.all(['rp_kept', 'rp_lost'].map((n) => createInstance(first, token, n, ticking)));
  await startAll(
    first,
    token,
    made.map((m) => m.id),
  );
  const pids = await Promise.all(made.map((m) => tunnelPids(m.configPath)));
  await first.stop('SIGKILL');
  const lost = made[1]!;
  await rm(join(first.dataDir, 'logs', `tunnel_${lost.id}.pipe`));

  const second = await startDaemon({ dataDir: first.dataDir, env: BOOT });
  t.teardown(() => second.stop('SIGKILL'));
  const token2 = await second.login();
  for (const [i, m] of made.entries())
    t.like(await statusOf(second, token2, m.id), { state: 'running', pid: pids[i]![0] }, 'taken over');
  await second.waitForOutput(
    new RegExp(`"instanceID":${lost.id},.*its output pipe \\S+tunnel_${lost.id}\\.pipe was missing`),
  );
  // Its output is still read (through the tunnel's own end of the pipe), and so is the other's.
  for (const m of made) {
    const before = await logBytes(first.dataDir, m.id);
    await waitFor(
      () => logBytes(first.dataDir, m.id),
      (bytes) => bytes > before,
    );
  }
  // A restart gives it a new pipe.
  t.true(
    (await second.post('/tunnelAct/instanceMgr/restart', { instanceID: lost.id }, { token: token2 })).body.success,
  );
  t.like(await statusOf(second, token2, lost.id), { state: 'running' });
  t.true((await stat(join(first.dataDir, 'logs', `tunnel_${lost.id}.pipe`))).isFIFO());
});

test('a tunnel taken over at start-up has the secrets of its config file masked from the first line read', async (t) => {
  const first = await startDaemon({ settingsToml: instanceSettings(), env: BOOT });
  t.teardown(() => dispose(first));
  // Whatever happens, no tunnel outlives the test.
  t.teardown(() => killTunnelsUnder(first.dataDir));
  const token = await first.login();
  // A token that frpc will print: the address it dials, which is no secret but here holds the same value.
  const secret = '127.45.67.91';
  const control = join(first.dataDir, 'control.json');
  await writeFile(control, JSON.stringify({ server: 'up' }));
  const { id } = await createInstance(first, token, 'ra_secret', {
    'auth.token': secret,
    metadatas: { 'fixture.control': control, 'fixture.secondMs': '50' },
  });
  const set = await first.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'configFile', modifiedData: { serverAddr: secret } },
    { token },
  );
  t.true(set.body.success, set.body.message);
  await startAll(first, token, [id]);
  await first.stop('SIGKILL');

  const second = await startDaemon({ dataDir: first.dataDir, env: BOOT });
  t.teardown(() => second.stop('SIGKILL'));
  await second.waitForOutput(/"adopted":1/);
  // The server lost: frpc says where it dials, again and again.
  await writeFile(control, JSON.stringify({ server: 'down' }));
  const logFile = join(first.dataDir, 'logs', `tunnel_${id}.log`);
  const said = await waitFor(
    () => readFile(logFile, 'utf8').catch(() => ''),
    (text) => /connect to server error: dial tcp \*\*\*:\d+/.test(text),
  );
  t.false(said.includes(secret), said);
});
