import test from 'ava';
import { cli, loggedIn } from '../../helpers/cli.js';
import { rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { disposeWithTunnels, programDir, startWithRoot, tempDir } from '../../helpers/daemon.js';
import { createInstance, FIXTURE_FRPC, instanceSettings, statusOf, waitFor } from '../../helpers/instances.js';

test("doctor shows the daemon's self-check, a line per check, and exits 1 only on a failure", async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const env = await loggedIn(daemon, t);

  const healthy = await cli(['doctor'], env);
  t.is(healthy.code, 0, healthy.stderr);
  const lines = healthy.stdout.trimEnd().split('\n');
  t.regex(lines[0]!, /^\s+check\s+found$/);
  t.regex(healthy.stdout, /^ok\s+tunnelVersion\s+0\.71\.0$/m);
  t.regex(healthy.stdout, /^ok\s+tunnelPath\s+\S+frpc\.mjs is executable$/m);
  t.is(
    lines.length,
    1 + 14 + 2,
    "a header, fourteen checks (ten of the daemon, four of the tunnels'), the counts, a verdict",
  );
  t.is(lines.at(-2), 'tunnels: none; proxies: none');
  t.is(lines.at(-1), `ok: 0 failed, 0 warned, 14 ok (at ${daemon.url})`);

  // A tunnel client that goes away after it was set.
  const programs = await programDir();
  t.teardown(() => rm(programs, { recursive: true, force: true }));
  const frpc = join(programs, 'frpc');
  await symlink(FIXTURE_FRPC, frpc);
  t.true((await daemon.post('/settings/set', { TunnelPath: frpc }, { token: root })).body.success);
  await daemon.waitForOutput(new RegExp(`"tunnelPath":"${frpc}".*tunnel client found`));
  await rm(frpc);
  const broken = await cli(['doctor'], env);
  t.is(broken.code, 1);
  t.true(broken.stdout.includes(`${frpc} is missing or not an executable file`), broken.stdout);
  t.regex(broken.stdout, /^fail\s+tunnelPath\s/m);
  t.regex(broken.stdout, /^fail\s+tunnelVersion\s+no tunnel client to ask$/m);
  t.regex(broken.stdout, /^fail: 2 failed, 0 warned, 12 ok/m);

  const json = await cli(['doctor', '--json'], env);
  t.is(json.code, 1);
  const data = JSON.parse(json.stdout);
  t.false(data.ok);
  t.like(
    data.checks.find((c: any) => c.name === 'tunnelPath'),
    { ok: false, severity: 'fail' },
  );
  t.is(
    (await cli(['doctor'], { XDG_CONFIG_HOME: env.XDG_CONFIG_HOME!, TUNNELWARD_URL: 'http://127.0.0.1:1' })).code,
    4,
  );
});

test('doctor passes with warnings: plain HTTP beyond loopback warns, and the exit is still 0', async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings(), args: ['--host', '0.0.0.0'] });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const env = await loggedIn(daemon, t);
  const run = await cli(['doctor'], env);
  t.regex(run.stdout, /^warn\s+exposure\s+open to whoever reaches the port: plain HTTP on a non-loopback address/m);
  t.is(run.code, 0, run.stdout);
  t.regex(run.stdout, /^ok: 0 failed, 1 warned, 13 ok/m);
});

test("doctor names a failed tunnel with its last exit's cause, and start at boot that tunnelward.service cannot give", async (t) => {
  // No tunnelward.service where the settings say units live: tunnelward itself does not start at boot.
  const unitDir = await tempDir('doctor-units-', t);
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings({ 'Systemd.UnitDir': unitDir }) });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const env = await loggedIn(daemon, t);
  // frpc's exit 1 is a config error: no retry, failed at once.
  const { id } = await createInstance(
    daemon,
    root,
    'dr_failed',
    { metadatas: { 'fixture.exit': 'now', 'fixture.exitCode': '1' } },
    { bootAtStart: true },
  );
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
  await waitFor(
    () => statusOf(daemon, root, id),
    (s) => s.state === 'failed',
  );

  const run = await cli(['doctor'], env);
  t.is(run.code, 1, 'a failed tunnel fails the doctor');
  t.regex(
    run.stdout,
    /^fail\s+failedTunnels\s+1 tunnel failed \(the watchdog gave up; start one to try again\): 1 exited with code 1: fixture: exiting with code 1 right after start \(fixture\.exit = "now"\) \(dr_failed\)$/m,
  );
  t.regex(run.stdout, /^ok\s+tunnels\s+none down or degraded \(1 failed\)$/m);
  t.regex(
    run.stdout,
    new RegExp(
      `^warn\\s+bootAtStart\\s+1 instance set to start at boot \\(dr_failed\\), but tunnelward itself does not start at boot: tunnelward\\.service is not installed \\(no ${unitDir}/tunnelward\\.service: tunnelward service install\\)`,
      'm',
    ),
  );
  t.regex(run.stdout, /^ok\s+tunnelFiles\s+the TunnelPath frpc \(0\.71\.0\) accepts every config file \(1\)$/m);
  t.regex(run.stdout, /^tunnels: 1 failed; proxies: none$/m);
  t.regex(run.stdout, /^fail: 1 failed, 1 warned, 12 ok/m);

  // Installed (the unit file there) but not enabled, or systemd cannot say here: still a warning, saying which.
  await writeFile(join(unitDir, 'tunnelward.service'), '[Unit]\n');
  const { checks } = JSON.parse((await cli(['doctor', '--json'], env)).stdout);
  const boot = checks.find((c: { name: string }) => c.name === 'bootAtStart');
  t.is(boot.severity, 'warn');
  t.regex(
    boot.message,
    /tunnelward\.service is installed but not enabled|whether tunnelward\.service is enabled is not known/,
  );
});
