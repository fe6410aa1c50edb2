// An apply of 100 instances cut off by a kill -9 of the daemon while it changes them: the next daemon stands each
// instance at its old revision or its new one, file and history alike, never between; an apply of the same desired
// state then converges, and one more changes nothing.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { dispose, startDaemon, type Daemon } from '../../helpers/daemon.js';
import { instanceSettings } from '../../helpers/instances.js';

const COUNT = 100;
const nameOf = (i: number) => `fleet-${String(i).padStart(3, '0')}`;

function desiredState(localPort: number) {
  return {
    instances: Array.from({ length: COUNT }, (_, i) => ({
      name: nameOf(i),
      labels: { fleet: 'a' },
      frpc: {
        serverAddr: '127.0.0.1',
        serverPort: 7400 + i,
        auth: { method: 'token', token: `token-${i}` },
        proxies: [{ name: 'ssh', type: 'tcp', localIP: '127.0.0.1', localPort, remotePort: 6000 + i }],
      },
    })),
  };
}

interface Seen {
  id: number;
  configPath: string;
  revision: number;
  text: string;
}

async function seen(daemon: Daemon, token: string): Promise<Map<string, Seen>> {
  const list = await daemon.get('/tunnelAct/instanceMgr/list', { token });
  const out = new Map<string, Seen>();
  for (const i of list.body.data as Array<{ instanceID: number; name: string }>) {
    const info = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${i.instanceID}`, { token });
    const { configPath, revision } = info.body.data;
    out.set(i.name, { id: i.instanceID, configPath, revision, text: await readFile(configPath, 'utf8') });
  }
  return out;
}

test('a kill -9 in the middle of an apply of 100 instances: each stands at its old or new revision, and a re-apply converges', async (t) => {
  t.timeout(300_000);
  const first = await startDaemon({ settingsToml: instanceSettings() });
  const dataDir = first.dataDir;
  t.teardown(() => dispose(first));
  let token = await first.login();
  const created = await first.post('/tunnelAct/instanceMgr/apply', desiredState(22), { token });
  t.true(created.body.success, created.body.message);
  t.is(created.body.data.counts.created, COUNT);
  const before = await seen(first, token);
  await first.stop('SIGKILL');

  // The daemon dies as the 50th instance's new file is written: others are at every step around it.
  const victim = nameOf(50);
  const crashing = await startDaemon({ dataDir, env: { TUNNELWARD_CRASH_AT: `change:written@${victim}` } });
  t.teardown(() => crashing.stop('SIGKILL'));
  token = await crashing.login();
  await crashing.post('/tunnelAct/instanceMgr/apply', desiredState(2222), { token }).then(
    (res) => t.fail(`the daemon answered ${res.status} ${res.body.message} instead of dying`),
    () => {},
  );
  t.like(await crashing.exited, { signal: 'SIGKILL' });

  const next = await startDaemon({ dataDir });
  t.teardown(() => next.stop('SIGKILL'));
  token = await next.login();
  const after = await seen(next, token);
  t.is(after.size, COUNT, 'no instance lost or doubled');
  let moved = 0;
  for (const [name, old] of before) {
    const now = after.get(name)!;
    const history = await next.get(`/tunnelAct/instanceMgr/history?instanceID=${now.id}`, { token });
    t.is(history.body.data.current, now.revision, `${name}: the history says where it stands`);
    if (now.text === old.text) {
      t.is(now.revision, old.revision, `${name}: the old file at the old revision`);
    } else {
      moved++;
      t.regex(now.text, /localPort = 2222/, `${name}: a changed file is the new one whole`);
      t.notRegex(now.text, /localPort = 22\n/, name);
      t.is(now.revision, old.revision + 1, `${name}: the new file at the new revision`);
    }
  }
  t.is(after.get(victim)!.text, before.get(victim)!.text, 'the instance cut off is back at its old file');
  t.true(moved > 0 && moved < COUNT, `the kill came in the middle (${moved} of ${COUNT} changed before it)`);

  const again = await next.post('/tunnelAct/instanceMgr/apply', desiredState(2222), { token });
  t.true(again.body.success, again.body.message);
  t.like(again.body.data.counts, { created: 0, changed: COUNT - moved, unchanged: moved, deleted: 0, failed: 0 });
  for (const [name, now] of await seen(next, token)) t.regex(now.text, /localPort = 2222/, name);
  const last = await next.post('/tunnelAct/instanceMgr/apply', desiredState(2222), { token });
  t.like(last.body.data.counts, { created: 0, changed: 0, unchanged: COUNT, failed: 0 });
});
