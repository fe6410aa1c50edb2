import { rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { dispose, programDir, startDaemon } from '../../helpers/daemon.js';
import { FIXTURE_FRPC, instanceSettings } from '../../helpers/instances.js';

test('selfCheck reports each check; admins only', async (t) => {
  const daemon = await startDaemon({ settingsToml: instanceSettings() });
  t.teardown(() => dispose(daemon));
  const root = await daemon.login();
  const visitor = await daemon.userWithToken(root, 'sc_visitor', 'visitor');
  t.is((await daemon.get('/system/selfCheck', { token: visitor.token })).status, 403);
  const res = await daemon.get('/system/selfCheck', { token: root });
  t.true(res.body.success);
  t.true(res.body.data.ok, JSON.stringify(res.body.data));
  const byName = Object.fromEntries(res.body.data.checks.map((c: any) => [c.name, c]));
  t.deepEqual(Object.keys(byName).sort(), [
    'bootAtStart',
    'daemonFiles',
    'dataDir',
    'database',
    'exposure',
    'failedTunnels',
    'instanceLogs',
    'instancePath',
    'settings',
    'tls',
    'tunnelFiles',
    'tunnelPath',
    'tunnelVersion',
    'tunnels',
  ]);
  t.like(res.body.data.counts, { tunnels: { up: 0, down: 0, failed: 0 }, proxies: { down: 0 } });
  t.is(byName.tunnelVersion.message, '0.71.0');
  t.regex(byName.tunnelPath.message, /frpc\.mjs is executable/);

  // A binary that goes away after it was set.
  const programs = await programDir();
  t.teardown(() => rm(programs, { recursive: true, force: true }));
  const frpc = join(programs, 'frpc');
  await symlink(FIXTURE_FRPC, frpc);
  t.true((await daemon.post('/settings/set', { TunnelPath: frpc }, { token: root })).body.success);
  // The daemon looks at the new one once on its own: that look is over before the file goes.
  await daemon.waitForOutput(new RegExp(`"tunnelPath":"${frpc}".*tunnel client found`));
  await rm(frpc);
  const broken = await daemon.get('/system/selfCheck', { token: root });
  t.false(broken.body.data.ok);
  const after = Object.fromEntries(broken.body.data.checks.map((c: any) => [c.name, c]));
  t.like(after.tunnelPath, { ok: false, message: `${frpc} is missing or not an executable file` });
  t.like(after.tunnelVersion, { ok: false });
  t.like(after.settings, { ok: true });
  t.regex(broken.body.message, /2 checks found a problem/);
});
