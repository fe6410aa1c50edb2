// The edit loop with the real frpc and frps: `tunnelward edit` adding a proxy to a running tunnel is applied by
// frpc's reload (the same process), and the new proxy carries bytes.
import { chmod, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { cli, loggedIn } from '../helpers/cli.js';
import { disposeWithTunnels, startWithRoot, tempDir } from '../helpers/daemon.js';
import { echoServer, freePort, roundTrip } from '../helpers/frp.js';
import { createTunnel, frpcPids, frpsFor, realFrpSettings, start, statusUntil } from '../helpers/real-frp.js';

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
