import { readFile, writeFile } from 'node:fs/promises';
import test from 'ava';
import { dispose, startDaemon, tempDir, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf, waitFor } from '../../helpers/instances.js';

/** A daemon on `dataDir`, disposed with the test (the data dir stays: the test owns it). */
async function daemonOn(t: { teardown(fn: () => Promise<void>): void }, dataDir: string): Promise<Daemon> {
  const daemon = await startDaemon({ dataDir, settingsToml: instanceSettings() });
  t.teardown(() => dispose(daemon));
  return daemon;
}

for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
  test(`a failed instance stays failed, with its last exit, across a restart of tunnelward (${signal}); a start leaves it`, async (t) => {
    const dataDir = await tempDir('failed-state-', t);
    const first = await daemonOn(t, dataDir);
    const root = await first.login();
    // frpc's exit 1 is a config error: no retry, failed at once.
    const { id, configPath } = await createInstance(first, root, 'fs_broken', {
      metadatas: { 'fixture.exit': 'now', 'fixture.exitCode': '1' },
    });
    // Refused when the exit comes within Instance.StartSecs; on a slow machine it may come just after: failed either way.
    await first.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
    const before = await waitFor(
      () => statusOf(first, root, id),
      (s) => s.state === 'failed',
    );
    t.like(before, { state: 'failed', pid: null, lastExit: { code: 1, signal: null } });
    await first.stop(signal);

    const second = await daemonOn(t, dataDir);
    const token = await second.login();
    const after = await statusOf(second, token, id);
    t.like(after, { state: 'failed', isRunning: false, pid: null, lastExit: before.lastExit });
    const listed = (await second.get('/tunnelAct/instanceMgr/list', { token })).body.data;
    t.like(
      listed.find((i: { instanceID: number }) => String(i.instanceID) === id),
      { state: 'failed', lastExit: before.lastExit },
    );
    t.false(
      second.output.some((line) => line.includes('the watchdog gives up')),
      'no new failure is announced: it is the one on record',
    );
    const stop = await second.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token });
    t.is(stop.body.message, `instance ${id} already stopped (it had failed)`);

    // The config error fixed, a start from failed works.
    const text = await readFile(configPath, 'utf8');
    await writeFile(configPath, text.replace(/^"fixture\.exit" = "now"\n/m, ''));
    const started = await second.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
    t.true(started.body.success, started.body.message);
    t.like(await statusOf(second, token, id), { state: 'running' });
    await second.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token });
  });
}

test('when the watchdog gives up it says why: a spawn refused (a variable gone) is the cause, not an earlier SIGKILL', async (t) => {
  const daemon = await daemonOn(t, await tempDir('failed-why-', t));
  const root = await daemon.login();
  const { id } = await createInstance(daemon, root, 'fs_why', { 'auth.token': '{{ .Envs.T }}' });
  const modify = (type: string, modifiedData: unknown) =>
    daemon.post('/tunnelAct/instanceMgr/modify', { instanceID: id, type, modifiedData }, { token: root });
  t.true((await modify('environment', { T: 'tok' })).body.success);
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root })).body.success);
  const { pid } = await statusOf(daemon, root, id);
  // The variable goes while it runs; then the tunnel is killed: every restart is refused before a process exists.
  t.true((await modify('environment', { T: null })).body.success);
  process.kill(pid, 'SIGKILL');
  const failed = await waitFor(
    () => statusOf(daemon, root, id),
    (s) => s.state === 'failed',
  );
  t.regex(failed.lastError, /reads \{\{ \.Envs\.T \}\}, but instance \d+ has no environment variable T/);
  t.is(failed.lastExit, null, 'no process ended: the SIGKILL before is not the cause');
  const line = await daemon.waitForOutput(/instance failed: the watchdog gives up/);
  t.regex(line.input!, /"reason":"the config file reads \{\{ \.Envs\.T \}\}/);
  t.false(line.input!.includes('"exitCode":null,"signal":null,"msg"'), 'a reason, not empty codes');
});
