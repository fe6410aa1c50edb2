// What an operator coming from pm2 or supervisord expects on day one: pid, uptime, restarts and the last exit in
// every view; start, stop and restart of many instances in one request. Serial: `all: true` acts on every
// instance of the file's daemon.
import test from 'ava';
import { startWithRoot, disposeWithTunnels, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf, tunnelPids, waitFor } from '../../helpers/instances.js';

let daemon: Daemon;
let root: string;
test.before(async () => {
  // A backoff long enough to be seen: the first crash restarts at once, the second waits 2 s.
  ({ daemon, root } = await startWithRoot({
    // StartSecs 1.5: a start that fails is judged over a time a Node fixture boots in even on a loaded machine.
    settingsToml: instanceSettings({
      'Instance.StartSecs': 1.5,
      'Watchdog.BackoffSecs': 2,
      'Watchdog.BackoffMaxSecs': 4,
      'Watchdog.StartLimit': 5,
    }),
  }));
});
test.after.always(() => disposeWithTunnels(daemon, root));

const post = (path: string, body: unknown) => daemon.post(path, body, { token: root });
const listed = async (id: string) =>
  (await daemon.get('/tunnelAct/instanceMgr/list', { token: root })).body.data.find(
    (i: { instanceID: number }) => i.instanceID === Number(id),
  );
const isoNear = (text: string, ms: number, within: number) => Math.abs(Date.parse(text) - ms) <= within;

test.serial('pid, startedAt and uptime while running; restarts, lastExit and nextStartAt as it crashes', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'ov_fields');
  const idle = await statusOf(daemon, root, id);
  t.like(idle, { state: 'stopped', pid: null, restarts: 0, lastExit: null });
  t.false('startedAt' in idle || 'uptimeSecs' in idle || 'nextStartAt' in idle);

  const startedAround = Date.now();
  t.true((await post('/tunnelAct/instanceMgr/start', { instanceID: id })).body.success);
  const [pid] = await tunnelPids(configPath);
  const running = await statusOf(daemon, root, id);
  t.like(running, { state: 'running', pid, restarts: 0, lastExit: null });
  t.true(isoNear(running.startedAt, startedAround, 2000), `startedAt ${running.startedAt}`);
  t.true(running.uptimeSecs >= 0 && running.uptimeSecs <= 4, `uptime ${running.uptimeSecs} s right after a start`);
  t.like(await listed(id), { pid, startedAt: running.startedAt, restarts: 0, lastExit: null });
  const info = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root });
  t.like(info.body.data, { state: 'running', pid, startedAt: running.startedAt, restarts: 0 });

  // First crash: restarted at once, counted, its end kept.
  const killedAt = Date.now();
  process.kill(pid!, 'SIGKILL');
  const back = await waitFor(
    () => statusOf(daemon, root, id),
    (s) => s.state === 'running' && s.pid !== pid,
  );
  t.like(back, { restarts: 1, lastExit: { code: null, signal: 'SIGKILL' } });
  t.true(isoNear(back.lastExit.at, killedAt, 1000));
  t.true(Date.parse(back.startedAt) >= Date.parse(running.startedAt));

  // Second crash in a row: backoff, with the time of the next start.
  const crashedAt = Date.now();
  process.kill(back.pid, 'SIGKILL');
  const waiting = await waitFor(
    () => statusOf(daemon, root, id),
    (s) => s.state === 'backoff',
  );
  t.like(waiting, { pid: null, restarts: 1, lastExit: { signal: 'SIGKILL' } });
  t.true(isoNear(waiting.nextStartAt, crashedAt + 2000, 1000), `nextStartAt ${waiting.nextStartAt}`);
  t.like(await listed(id), { state: 'backoff', nextStartAt: waiting.nextStartAt });

  // The operator's stop, then start: a fresh count; the last exit stays what it was until another one.
  t.true((await post('/tunnelAct/instanceMgr/stop', { instanceID: id })).body.success);
  t.true((await post('/tunnelAct/instanceMgr/start', { instanceID: id })).body.success);
  t.like(await statusOf(daemon, root, id), { state: 'running', restarts: 0, lastExit: { signal: 'SIGKILL' } });
  t.true((await post('/tunnelAct/instanceMgr/stop', { instanceID: id })).body.success);
  const stopped = await statusOf(daemon, root, id);
  t.like(stopped, { state: 'stopped', pid: null, lastExit: { signal: 'SIGTERM' } });
});

test.serial('start, stop and restart of many instances in one request, each answered on its own', async (t) => {
  const a = await createInstance(daemon, root, 'ov_a');
  const b = await createInstance(daemon, root, 'ov_b');
  const bad = await createInstance(daemon, root, 'ov_bad', {
    metadatas: { 'fixture.exit': 'now', 'fixture.exitCode': '2' },
  });
  const start = await post('/tunnelAct/instanceMgr/start', {
    instanceIDs: [a.id, Number(b.id), bad.id, '99999', a.id],
  });
  t.is(start.status, 200);
  t.true(start.body.success, "a partial failure is the instances', not the request's");
  t.like(start.body.data, { ok: 2, failed: 2 });
  const byId = new Map(start.body.data.results.map((r: { instanceID: number }) => [r.instanceID, r]));
  t.is(byId.size, 4, 'an id named twice is one command');
  t.like(byId.get(Number(a.id)), { ok: true, state: 'running', message: 'started' });
  t.like(byId.get(Number(b.id)), { ok: true, state: 'running' });
  t.like(byId.get(Number(bad.id)), { ok: false });
  t.true(
    ['backoff', 'starting', 'failed'].includes((byId.get(Number(bad.id)) as { state: string }).state),
    'an exit during the start is supervised as any exit',
  );
  t.regex((byId.get(Number(bad.id)) as { message: string }).message, /exited with code 2/);
  t.like(byId.get(99999), { ok: false, state: null, message: 'instance 99999 not found' });
  for (const { configPath } of [a, b]) t.is((await tunnelPids(configPath)).length, 1);

  // all: every instance; one already running is as asked (a single start of it is refused with a 409).
  const all = await post('/tunnelAct/instanceMgr/start', { all: true });
  const allById = new Map(all.body.data.results.map((r: { instanceID: number }) => [r.instanceID, r]));
  t.like(allById.get(Number(a.id)), { ok: true, unchanged: true, state: 'running', message: 'already running' });
  t.true(all.body.data.results.length >= 3);

  const [pidA] = await tunnelPids(a.configPath);
  const restart = await post('/tunnelAct/instanceMgr/restart', { instanceIDs: [a.id, b.id] });
  t.like(restart.body.data, { ok: 2, failed: 0 });
  const [pidA2] = await tunnelPids(a.configPath);
  t.not(pidA2, pidA, 'restarted');

  const stop = await post('/tunnelAct/instanceMgr/stop', { all: true });
  t.is(stop.body.data.failed, 0);
  for (const { configPath } of [a, b, bad]) t.deepEqual(await tunnelPids(configPath), []);
  for (const r of stop.body.data.results) t.is(r.state, 'stopped');
});

test.serial(
  'delete of many instances in one request: each answered on its own, a running one stopped first',
  async (t) => {
    const a = await createInstance(daemon, root, 'ov_del_a');
    const b = await createInstance(daemon, root, 'ov_del_b');
    t.true((await post('/tunnelAct/instanceMgr/start', { instanceID: a.id })).body.success);
    const res = await post('/tunnelAct/instanceMgr/delete', { instanceIDs: [a.id, Number(b.id), '99999'] });
    t.true(res.body.success);
    t.is(res.body.message, 'delete: 2 of 3 instances ok, 1 failed');
    const byId = new Map(res.body.data.results.map((r: { instanceID: number }) => [r.instanceID, r]));
    t.like(byId.get(Number(a.id)), {
      name: 'ov_del_a',
      ok: true,
      state: null,
      message: 'deleted; its log is kept (purge removes it)',
    });
    t.like(byId.get(Number(b.id)), { name: 'ov_del_b', ok: true });
    t.like(byId.get(99999), { name: null, ok: false, state: null });
    t.deepEqual(await tunnelPids(a.configPath), [], 'its tunnel was stopped');
    t.is(await listed(a.id), undefined);
    t.is(await listed(b.id), undefined);

    for (const [body, message] of [
      [{ all: true }, /never all/],
      [{ instanceID: '1', instanceIDs: ['2'] }, /give one of instanceID, instanceIDs/],
      [{ instanceIDs: [] }, /instanceIDs must name at least one instance/],
    ] as const) {
      const refused = await post('/tunnelAct/instanceMgr/delete', body);
      t.is(refused.status, 400, JSON.stringify(body));
      t.regex(refused.body.message, message);
    }
  },
);

test.serial('bulk forms: one form per request, ids checked by name, visitors refused', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [{ instanceID: '1', all: true }, /give one of instanceID, instanceIDs or all, not instanceID and all/],
    [{ all: false }, /all must be true/],
    [{ all: 'yes' }, /all must be true/],
    [{ instanceIDs: [] }, /instanceIDs must name at least one instance/],
    [{ instanceIDs: '1,2' }, /instanceIDs must be an array/],
    [{ instanceIDs: ['1', 'x'] }, /instanceIDs\[1\] must be a positive integer/],
    [{ instanceIDs: [0] }, /instanceIDs\[0\] must be a positive integer/],
  ];
  for (const [body, message] of cases) {
    const res = await post('/tunnelAct/instanceMgr/stop', body);
    t.is(res.status, 400, JSON.stringify(body));
    t.regex(res.body.message, message);
  }
  const visitor = await daemon.userWithToken(root, 'ov_visitor', 'visitor');
  const refused = await daemon.post('/tunnelAct/instanceMgr/start', { all: true }, { token: visitor.token });
  t.is(refused.status, 403);
});

test.serial('ten users register from one address within a minute', async (t) => {
  const registered = [];
  for (let i = 0; i < 10; i++) {
    registered.push(await daemon.post('/register', { username: `ov_user${i}`, passwd: 'Passw0rd!x' }));
  }
  t.deepEqual(
    registered.map((r) => r.status),
    Array(10).fill(200),
  );
  t.true(registered.every((r) => r.body.data.type === 'visitor'));
});
