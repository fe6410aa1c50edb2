// The edit loop with the real frpc and frps: `tunnelward edit` adding a proxy to a running tunnel is applied by
// frpc's reload (the same process), and the new proxy carries bytes.
import { chmod, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { cli, loggedIn } from '../../helpers/cli.js';
import { disposeWithTunnels, startWithRoot, tempDir } from '../../helpers/daemon.js';
import { echoServer, freePort, roundTrip } from '../../helpers/frp.js';
import {
  addProxy,
  createTunnel,
  frpcPids,
  frpsFor,
  realFrpSettings,
  start,
  statusUntil,
  tcpTo,
} from '../../helpers/real-frp.js';

test('edit adds a proxy to a running tunnel: applied by reload, the same frpc, the new proxy running', async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await startWithRoot({
    settingsToml: realFrpSettings(),
    env: { TUNNELWARD_BOOT_ID: 'real-frp-boot' },
  });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const remote = await freePort();
  const { id, configPath } = await createTunnel(daemon, root, frps, 'rf_edit');
  await start(daemon, root, id);
  await statusUntil(daemon, root, id, (s) => s.connected === true, 10_000);
  const [pid] = frpcPids(configPath);
  t.truthy(pid);

  const dir = await tempDir('tunnelward-editor-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const editor = join(dir, 'editor.sh');
  const block = `\n[[proxies]]\nname = "echo"\ntype = "tcp"\nlocalIP = "127.0.0.1"\nlocalPort = ${echo.port}\nremotePort = ${remote}\n`;
  await writeFile(editor, `#!/bin/sh\nprintf '%s' '${block}' >> "$1"\n`);
  await chmod(editor, 0o700);
  const env = await loggedIn(daemon, t);
  const run = await cli(['edit', 'rf_edit'], { ...env, EDITOR: editor });
  t.is(run.code, 0, run.stdout + run.stderr);
  t.regex(run.stdout, /^\+name = "echo"$/m);
  t.regex(run.stdout, /rf_edit \(\d+\): config file of instance rf_edit replaced; applied by a reload/);

  await statusUntil(daemon, root, id, (s) => s.proxyStatus.running === 1, 10_000);
  t.deepEqual(frpcPids(configPath), [pid!], 'reloaded, not restarted');
  await roundTrip(remote, 'bytes through a proxy added by edit');
});

test('rollback of a breaking edit with the real frpc and frps: bytes flow before, stop after the edit, and flow again after the rollback', async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await startWithRoot({
    settingsToml: realFrpSettings(),
    env: { TUNNELWARD_BOOT_ID: 'real-frp-boot' },
  });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const remote = await freePort();
  const { id } = await createTunnel(daemon, root, frps, 'rf_rollback');
  await addProxy(daemon, root, id, tcpTo('echo', echo.port, remote));
  await start(daemon, root, id);
  await statusUntil(daemon, root, id, (s) => s.connected === true && s.proxyStatus.running === 1, 10_000);
  await roundTrip(remote, 'before the edit');
  const good = (await daemon.get(`/tunnelAct/instanceMgr/status?instanceID=${id}`, { token: root })).body.data.revision;

  // A breaking edit: the token frps does not take. frpc applies it by a restart and cannot log in again.
  const env = await loggedIn(daemon, t);
  const broken = await cli(['set', 'rf_rollback', 'auth.token=not-the-token'], env);
  t.is(broken.code, 0, broken.stdout + broken.stderr);
  t.regex(broken.stdout, /applied by a restart \(revision \d+\): top-level settings changed \(auth\)/);
  await statusUntil(daemon, root, id, (s) => s.connected === false, 15_000);
  await t.throwsAsync(roundTrip(remote, 'after the edit', 1500), undefined, 'nothing flows through a refused login');

  // The rollback: the file as it was, applied (a restart again), as a new revision; the traffic is back.
  const back = await cli(['rollback', 'rf_rollback', String(good)], env);
  t.is(back.code, 0, back.stdout + back.stderr);
  t.regex(back.stdout, new RegExp(`rolled back to revision ${good}; applied by a restart \\(revision ${good + 2}\\)`));
  await statusUntil(daemon, root, id, (s) => s.connected === true && s.proxyStatus.running === 1, 15_000);
  await roundTrip(remote, 'after the rollback');
  const history = await cli(['history', 'rf_rollback', '--json'], env);
  const revisions = JSON.parse(history.stdout).revisions as Array<{ kind: string; request: { to?: number } }>;
  t.like(revisions[0], { kind: 'rollback', request: { to: good } });
  t.like(revisions[1], { kind: 'config.set' });
  t.false(history.stdout.includes('not-the-token'));
});
