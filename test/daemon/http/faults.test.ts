import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, rmdir, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { dispose, startDaemon, tempDir, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf, waitFor } from '../../helpers/instances.js';
import { openStream, wsUrl } from '../../helpers/streams.js';

const run = promisify(execFile);

const checksOf = async (daemon: Daemon, token: string) => {
  const res = await daemon.get('/system/selfCheck', { token });
  return Object.fromEntries(res.body.data.checks.map((c: any) => [c.name, c]));
};

/** The daemon answers, and answers right, while a fault lasts. */
async function stillServing(t: any, daemon: Daemon, token: string) {
  t.is((await daemon.get('/system/getStatus')).body.data.Status, 'Online');
  t.true((await daemon.get('/tunnelAct/instanceMgr/list', { token })).body.success);
}

test('a full disk for the logs: output is dropped and reported, the tunnel and the daemon go on, writing resumes when space is back', async (t) => {
  const dataDir = await tempDir();
  const logs = join(dataDir, 'logs');
  await mkdir(logs);
  await run('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', logs]);
  let daemon: Daemon | undefined = undefined;
  t.teardown(async () => {
    if (daemon) await daemon.stop('SIGKILL');
    await run('umount', ['-l', logs]).catch(() => {});
    await rm(dataDir, { recursive: true, force: true });
  });
  daemon = await startDaemon({ dataDir, settingsToml: instanceSettings({ 'Log.MaxBytes': 1024 * 1024 }) });
  const token = await daemon.login();
  // About 100 bytes a line: the burst alone is several times what the filesystem holds.
  const { id } = await createInstance(daemon, token, 'fa_full', {
    metadatas: { 'fixture.logBurst': '3000', 'fixture.logEveryMs': '20' },
  });
  const stream = await openStream(wsUrl(daemon.url, `/tunnelAct/instanceMgr/logs?instanceID=${id}&token=${token}`));
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token })).body.success);
  await daemon.waitForOutput(/cannot write a tunnel log file/);

  await stillServing(t, daemon, token);
  t.is((await statusOf(daemon, token, id)).state, 'running');
  const failing = await checksOf(daemon, token);
  t.like(failing.instanceLogs, { ok: false });
  t.regex(failing.instanceLogs.message, new RegExp(`instance ${id}: ENOSPC, \\d+ bytes dropped`));
  // The live stream does not depend on the disk.
  const ticks = () => stream.messages.filter((e) => /fixture: tick \d+/.test(e.content)).length;
  const seen = ticks();
  await stream.waitFor(() => ticks() > seen + 5);

  // Space comes back: the next output is written again, and the loss is said.
  await truncate(join(logs, `tunnel_${id}.log`), 0);
  await daemon.waitForOutput(/"lostBytes":[1-9]\d*.*tunnel log file writable again/);
  await waitFor(
    () => checksOf(daemon!, token),
    (c) => c.instanceLogs.ok === true,
  );
  await waitFor(
    () => readFile(join(logs, `tunnel_${id}.log`), 'utf8'),
    (text) => /fixture: tick \d+/.test(text),
  );
  stream.ws.close();
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token });
});

test('a log file that cannot be written: a failed start still says why, and the fault is reported', async (t) => {
  // A start that fails is judged over 1.5 s: a Node fixture can take more than 0.3 s to boot on a loaded machine.
  const daemon = await startDaemon({ settingsToml: instanceSettings({ 'Instance.StartSecs': 1.5 }) });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const { id } = await createInstance(daemon, token, 'fa_tail', {
    metadatas: { 'fixture.exit': 'now', 'fixture.exitCode': '4' },
  });
  // A directory where the log file should be: the output cannot be written there.
  await mkdir(join(daemon.dataDir, 'logs', `tunnel_${id}.log`));
  const res = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
  t.is(res.status, 502);
  t.regex(res.body.message, /exited with code 4/);
  t.regex(res.body.message, /fixture: exiting with code 4/, "the run's own lines, kept apart from the file");
  t.not((await statusOf(daemon, token, id)).state, 'running', 'supervised as any exit: retried, then failed');
  await stillServing(t, daemon, token);
  t.regex((await checksOf(daemon, token)).instanceLogs.message, new RegExp(`instance ${id}: EISDIR`));
});

test('a database write that fails: the request says so, the daemon goes on, and the change is saved once writing works', async (t) => {
  // No journal: every write is the whole database (a journal that cannot be written: test/unit/storage/database.test.ts).
  const daemon = await startDaemon({ settingsToml: instanceSettings(), env: { TUNNELWARD_DB_JOURNAL_BYTES: '0' } });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const dbPath = join(daemon.dataDir, 'tunnelward.db');
  // A directory in its place makes every snapshot's rename fail, even for root.
  await rm(dbPath);
  await mkdir(dbPath);
  const res = await daemon.post(
    '/userMgr/create',
    { username: 'fa_user', passwd: 'Passw0rd!x', type: 'admin' },
    { token },
  );
  t.is(res.status, 500);
  t.regex(res.body.message, /not yet saved to disk \(EISDIR\); it is saved with the next write that succeeds/);
  await stillServing(t, daemon, token);
  t.like((await checksOf(daemon, token)).database, { ok: false });

  await rmdir(dbPath);
  const next = await daemon.post(
    '/userMgr/create',
    { username: 'fa_user2', passwd: 'Passw0rd!x', type: 'visitor' },
    { token },
  );
  t.true(next.body.success, next.body.message);
  t.like((await checksOf(daemon, token)).database, { ok: true });

  // Both users reached the disk: a daemon started on it knows them.
  await daemon.stop('SIGKILL');
  const again = await startDaemon({ dataDir: daemon.dataDir });
  t.teardown(() => again.stop('SIGKILL'));
  t.truthy(await again.login('fa_user', 'Passw0rd!x'));
  t.truthy(await again.login('fa_user2', 'Passw0rd!x'));
});
