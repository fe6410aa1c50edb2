import { NODE_FLAGS } from '../../../src/system/node-flags.js';
import { DAEMON_NICE } from '../../../src/system/priority.js';
// Tunnels are started by the spawner, a small process of the daemon's: it is their parent (exit codes known),
// and losing it loses no tunnel.
import test from 'ava';
import { readdir, readFile, rm } from 'node:fs/promises';
import { getPriority } from 'node:os';
import { join } from 'node:path';
import { disposeWithTunnels, startWithRoot } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf, tunnelPids, waitFor } from '../../helpers/instances.js';
import { quietFor } from '../../helpers/until.js';

const parentOf = async (pid: number) => {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
};
const childrenOf = async (pid: number) =>
  (await readFile(`/proc/${pid}/task/${pid}/children`, 'latin1').catch(() => ''))
    .trim()
    .split(' ')
    .filter(Boolean)
    .map(Number);
const cmdline = (pid: number) => readFile(`/proc/${pid}/cmdline`, 'latin1').catch(() => '');

async function spawnerOf(daemonPid: number): Promise<number | undefined> {
  for (const child of await childrenOf(daemonPid))
    if ((await cmdline(child)).includes('spawner-process.js')) return child;
  return undefined;
}

test("the spawner is the tunnels' parent; when it dies they run on, are watched, and the next start has a new one", async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const a = await createInstance(daemon, root, 'sp_a');
  const b = await createInstance(daemon, root, 'sp_b', { metadatas: { 'fixture.crashAfterMs': '60000' } });
  t.is(await spawnerOf(daemon.pid), undefined, 'no spawner before a tunnel is started');
  for (const { id } of [a, b])
    t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root })).body.success);
  const spawner = (await spawnerOf(daemon.pid))!;
  t.truthy(spawner);
  const [pidA] = await tunnelPids(a.configPath);
  const [pidB] = await tunnelPids(b.configPath);
  t.is(await parentOf(pidA!), spawner);
  t.is(await parentOf(pidB!), spawner);
  t.false((await childrenOf(daemon.pid)).includes(pidA!), 'not a child of the daemon');
  t.deepEqual(
    (await cmdline(spawner)).split('\0').filter((arg) => NODE_FLAGS.includes(arg)),
    NODE_FLAGS,
    "the spawner runs with the daemon's Node options",
  );

  process.kill(spawner, 'SIGKILL');
  await quietFor(300, 'a tunnel ended with its spawner');
  for (const { id, configPath } of [a, b]) {
    t.like(await statusOf(daemon, root, id), { state: 'running' });
    t.is((await tunnelPids(configPath)).length, 1, 'the tunnel runs on');
  }
  t.deepEqual(await tunnelPids(a.configPath), [pidA!]);

  // A crash of a tunnel whose spawner is gone is still seen, and its restart brings a new spawner.
  process.kill(pidA!, 'SIGKILL');
  const [again] = await waitFor(
    () => tunnelPids(a.configPath),
    (pids) => pids.length === 1 && pids[0] !== pidA,
  );
  const fresh = await spawnerOf(daemon.pid);
  t.truthy(fresh);
  t.not(fresh, spawner);
  t.is(await parentOf(again!), fresh!);
  t.like(await statusOf(daemon, root, a.id), { restarts: 1, lastExit: { signal: null } });
  await waitFor(
    () => statusOf(daemon, root, a.id),
    (s) => s.state === 'running',
  );
});

test('the exit code of a tunnel the spawner started reaches the instance', async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const { id } = await createInstance(daemon, root, 'sp_code', {
    metadatas: { 'fixture.crashAfterMs': '600', 'fixture.exitCode': '7' },
  });
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root })).body.success);
  const crashed = await waitFor(
    () => statusOf(daemon, root, id),
    (s) => s.lastExit !== null,
  );
  t.like(crashed.lastExit, { code: 7, signal: null });
});

test('a spawner that stops answering: the start fails with a clear error within the timeout, the instance is not left busy, and the spawner is replaced', async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const a = await createInstance(daemon, root, 'sp_wedge_a');
  const b = await createInstance(daemon, root, 'sp_wedge_b');
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: a.id }, { token: root })).body.success);
  const wedged = (await spawnerOf(daemon.pid))!;
  const [pidA] = await tunnelPids(a.configPath);
  // Stopped, not dead: its channel stays open and it answers nothing.
  process.kill(wedged, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(wedged, 'SIGKILL');
    } catch {
      // replaced already
    }
  });

  const started = Date.now();
  const res = await Promise.race([
    daemon.post('/tunnelAct/instanceMgr/start', { instanceID: b.id }, { token: root }),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('the start got no answer within 40 s')), 40_000).unref(),
    ),
  ]);
  t.false(res.body.success);
  t.regex(res.body.message, /the spawner did not answer within \d+ s/);
  t.true(Date.now() - started < 40_000);
  t.like(await statusOf(daemon, root, b.id), { state: 'stopped', isRunning: false }, 'not left busy');
  t.deepEqual(await tunnelPids(b.configPath), []);

  // The wedged spawner is gone; its tunnel runs on, watched, and the next start has a new spawner.
  await waitFor(
    () => cmdline(wedged),
    (line) => !line.includes('spawner-process.js'),
  );
  t.like(await statusOf(daemon, root, a.id), { state: 'running', pid: pidA });
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: b.id }, { token: root })).body.success);
  const fresh = await spawnerOf(daemon.pid);
  t.truthy(fresh);
  t.not(fresh, wedged);
});

test("a tunnel's output pipe removed while it runs, then its spawner killed: the daemon runs on, says so, and still hears the tunnel's end", async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const a = await createInstance(daemon, root, 'sp_nopipe');
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: a.id }, { token: root })).body.success);
  const spawner = (await spawnerOf(daemon.pid))!;
  const [pid] = await tunnelPids(a.configPath);
  await rm(join(daemon.dataDir, 'logs', `tunnel_${a.id}.pipe`));

  process.kill(spawner, 'SIGKILL');
  await daemon.waitForOutput(/a tunnel taken over: its output pipe \S+ was missing/);
  t.like(await statusOf(daemon, root, a.id), { state: 'running', pid });

  // Its output is read through its own end of the pipe, so its end is still heard, and the restart makes the pipe again.
  process.kill(pid!, 'SIGKILL');
  await waitFor(
    () => tunnelPids(a.configPath),
    (pids) => pids.length === 1 && pids[0] !== pid,
  );
  t.like(await statusOf(daemon, root, a.id), { restarts: 1 });
});

/** The daemon's own priority, not the one the other tests start it with (test/helpers/daemon.ts). */
const DEFAULT_PRIORITY = { TUNNELWARD_DAEMON_NICE: '' };

/** The nice value of each thread of a process. */
const nicesOf = async (pid: number) => {
  const tids = (await readdir(`/proc/${pid}/task`)).map(Number);
  return Promise.all(
    tids.map(async (tid) => {
      const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'latin1');
      // Fields after the command: state is 3rd, nice the 19th of the file.
      return { tid, nice: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) };
    }),
  );
};

test('the daemon runs above its tunnels: its threads at DAEMON_NICE, the spawner that forks them and the tunnels at the priority it was given', async (t) => {
  t.is(getPriority(), 0, 'the tests run at the normal priority');
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings(), env: DEFAULT_PRIORITY });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const inst = await createInstance(daemon, root, 'sp_nice');
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: inst.id }, { token: root })).body.success);
  const daemonThreads = await nicesOf(daemon.pid);
  t.true(daemonThreads.length > 1);
  t.deepEqual(
    daemonThreads.filter((th) => th.nice !== DAEMON_NICE),
    [],
    'every thread of the daemon, those made after its start included',
  );
  const spawner = (await spawnerOf(daemon.pid))!;
  t.is((await nicesOf(spawner)).find((th) => th.tid === spawner)?.nice, 0, "the spawner's forking thread");
  const [tunnel] = await tunnelPids(inst.configPath);
  t.deepEqual(
    (await nicesOf(tunnel!)).map((th) => th.nice),
    (await nicesOf(tunnel!)).map(() => 0),
  );
});

test('a daemon that leads its session (as a service manager starts it) gives the session its priority: each tunnel leads one of its own, and the kernel weighs sessions against each other', async (t) => {
  const autogroup = (await readFile('/proc/sys/kernel/sched_autogroup_enabled', 'latin1').catch(() => '0')).trim();
  const { daemon, root } = await startWithRoot({
    settingsToml: instanceSettings(),
    ownSession: true,
    env: DEFAULT_PRIORITY,
  });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const inst = await createInstance(daemon, root, 'sp_session');
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: inst.id }, { token: root })).body.success);
  const [tunnel] = await tunnelPids(inst.configPath);
  const groupOf = (pid: number) => readFile(`/proc/${pid}/autogroup`, 'latin1').catch(() => '');
  if (autogroup !== '1') {
    t.log("kernel.sched_autogroup_enabled is not 1 here: only the threads' priority applies");
    t.deepEqual(
      (await nicesOf(daemon.pid)).filter((th) => th.nice !== DAEMON_NICE),
      [],
    );
    return;
  }
  t.regex(await groupOf(daemon.pid), new RegExp(`nice ${DAEMON_NICE}\\n?$`));
  t.regex(await groupOf(tunnel!), /nice 0\n?$/, "the tunnel's session keeps the normal weight");
  t.not((await groupOf(daemon.pid)).split(' ')[0], (await groupOf(tunnel!)).split(' ')[0]);
  // A daemon in the session of whoever started it leaves that session's weight alone. A process of the first
  // session (one that never called setsid, as under a container's init) is in the kernel's default autogroup, whose
  // file reads empty: the root group, at the normal weight, which no nice value can change.
  t.regex(await groupOf(process.pid), /^$|nice 0\n?$/);
});
