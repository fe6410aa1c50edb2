// The memory cap in process mode: a tunnel whose RSS stays over Instance.MemoryMaxMB is restarted by the health
// policy (counted apart from crashes), one under it is left alone, and each runs with GOMEMLIMIT below the cap.
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
