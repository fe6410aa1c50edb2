// The memory cap in process mode: a tunnel whose RSS stays over Instance.MemoryMaxMB (or its own cap) is restarted
// by the health policy (counted apart from crashes), one under it is left alone, and each runs with GOMEMLIMIT below
// the cap.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { disposeWithTunnels, startWithRoot } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf, waitFor } from '../../helpers/instances.js';
import { openStream, wsUrl } from '../../helpers/streams.js';

const environOf = async (pid: number) =>
  new Map(
    (await readFile(`/proc/${pid}/environ`, 'utf8'))
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as const),
  );

test('a tunnel growing past Instance.MemoryMaxMB is restarted with why, counted apart; one under it is not', async (t) => {
  t.timeout(90_000);
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings({ 'Instance.MemoryMaxMB': 200 }) });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const events = await openStream(wsUrl(daemon.url, `/system/events?token=${root}`));
  t.teardown(() => events.ws.close());
  const post = (path: string, body: unknown) => daemon.post(path, body, { token: root });
  const { id: leaky } = await createInstance(daemon, root, 'mem_leaky', {
    metadatas: { 'fixture.growMBPerSec': '40' },
  });
  const { id: steady } = await createInstance(daemon, root, 'mem_steady');
  for (const id of [leaky, steady])
    t.true((await post('/tunnelAct/instanceMgr/start', { instanceID: id })).body.success);
  const first = await statusOf(daemon, root, leaky);
  // frpc is told of the cap first: Go's collector works harder from 80% of it.
  t.is((await environOf(first.pid)).get('GOMEMLIMIT'), '160MiB');

  const restarted = await events.waitFor(
    (m) => m.some((e) => e.event === 'instance.healthRestart' && e.instanceID === Number(leaky)),
    60_000,
  );
  const event = restarted.find((e) => e.event === 'instance.healthRestart');
  t.regex(
    event.message,
    /^memory: RSS \d+(\.\d)? MiB over the cap of 200 MiB \(Instance\.MemoryMaxMB\): restarted by the health policy$/,
  );
  const after = await waitFor(
    () => statusOf(daemon, root, leaky),
    (s) => s.state === 'running' && s.pid !== first.pid && s.healthRestarts >= 1,
    20_000,
  );
  t.is(after.restarts, 0, 'not counted as a crash');
  const calm = await statusOf(daemon, root, steady);
  t.is(calm.healthRestarts, 0, 'the tunnel under its cap is left alone');
  t.is(calm.state, 'running');

  // No cap: no GOMEMLIMIT given, and nothing restarted for its memory.
  t.true((await post('/settings/set', { 'Instance.MemoryMaxMB': 0 })).body.success);
  t.true((await post('/tunnelAct/instanceMgr/restart', { instanceID: steady })).body.success);
  const uncapped = await statusOf(daemon, root, steady);
  t.false((await environOf(uncapped.pid)).has('GOMEMLIMIT'));
});

test("an instance's own cap over the setting (systemConfig policy): applied at its next start, null goes back to the setting; bad figures refused", async (t) => {
  t.timeout(90_000);
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings({ 'Instance.MemoryMaxMB': 0 }) });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const post = (path: string, body: unknown) => daemon.post(path, body, { token: root });
  const policy = (id: string, value: unknown) =>
    post('/tunnelAct/instanceMgr/modify', { instanceID: id, type: 'systemConfig', modifiedData: { policy: value } });
  const { id } = await createInstance(daemon, root, 'mem_own', { metadatas: { 'fixture.growMBPerSec': '40' } });
  for (const [bad, message] of [
    [{ memoryMaxMB: -1 }, /memoryMaxMB/],
    [{ memoryMaxMB: 1.5 }, /memoryMaxMB/],
    [{ disconnectedSecs: 'soon' }, /disconnectedSecs/],
    [{ restartEvery: 5 }, /restartEvery/],
  ] as const) {
    const refused = await policy(id, bad);
    t.is(refused.status, 400, JSON.stringify(bad));
    t.regex(refused.body.message, message);
  }
  const info = async () =>
    (await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root })).body.data;
  t.deepEqual((await info()).policy, {}, 'nothing changed by a refusal');

  const set = await policy(id, { memoryMaxMB: 200, disconnectedSecs: 60 });
  t.true(set.body.success, set.body.message);
  t.deepEqual(set.body.data.policy, { memoryMaxMB: 200, disconnectedSecs: 60 });
  t.true((await post('/tunnelAct/instanceMgr/start', { instanceID: id })).body.success);
  const first = await statusOf(daemon, root, id);
  t.is((await environOf(first.pid)).get('GOMEMLIMIT'), '160MiB', 'its own cap, the setting being none');
  await waitFor(
    () => statusOf(daemon, root, id),
    (s) => s.healthRestarts >= 1 && s.state === 'running' && s.pid !== first.pid,
    60_000,
  );

  const back = await policy(id, { memoryMaxMB: null });
  t.deepEqual(back.body.data.policy, { disconnectedSecs: 60 });
  t.deepEqual((await info()).policy, { disconnectedSecs: 60 });
  t.true((await post('/tunnelAct/instanceMgr/restart', { instanceID: id })).body.success);
  t.false((await environOf((await statusOf(daemon, root, id)).pid)).has('GOMEMLIMIT'), "the setting's: none");
});
