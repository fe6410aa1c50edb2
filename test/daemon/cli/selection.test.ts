// Selection and the list at scale from the command line: labels, patterns, bulk commands in one request, the logs of
// several tunnels at once, and what ls shows of each.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import test from 'ava';
import { cli, loggedIn } from '../../helpers/cli.js';
import { CLI, dispose, disposeWithTunnels, startDaemon, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, waitFor } from '../../helpers/instances.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';

let daemon: Daemon;
let root: string;
test.before(async () => {
  // A start holds for 1.5 s: a Node fixture made to exit at once may take longer than the usual 0.3 s to start and
  // exit on a loaded machine, and would then count as started.
  ({ daemon, root } = await startWithRoot({ settingsToml: instanceSettings({ 'Instance.StartSecs': 1.5 }) }));
});
test.after.always(() => disposeWithTunnels(daemon, root));

const listOf = async () => (await daemon.get('/tunnelAct/instanceMgr/list', { token: root })).body.data as any[];
const listed = async (name: string) => (await listOf()).find((i) => i.name === name);
const start = (id: string) => daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
/** The instances of the list whose names start with `prefix`, by name: what a test made, whatever the others did. */
const statesOf = async (prefix: string) =>
  Object.fromEntries((await listOf()).filter((i) => i.name.startsWith(prefix)).map((i) => [i.name, i.state as string]));
/** The names a `--json` listing holds, sorted. */
const namesIn = (stdout: string) => (JSON.parse(stdout) as any[]).map((i) => i.name).sort();

// Serial: --all acts on every instance, which the other tests' must not be yet.
test.serial(
  'start --all with some failing: a line per instance saying what happened, with the counts of the server, exit 1',
  async (t) => {
    const env = await loggedIn(daemon, t);
    await createInstance(daemon, root, 'all_good1');
    const running = await createInstance(daemon, root, 'all_good2');
    t.true((await start(running.id)).body.success);
    // The fixture made to fail as a config error would: it exits at once with frpc's code.
    await createInstance(daemon, root, 'all_bad1', { metadatas: { 'fixture.exit': 'now', 'fixture.exitCode': '1' } });
    await createInstance(daemon, root, 'all_bad2', { metadatas: { 'fixture.exit': 'now', 'fixture.exitCode': '1' } });

    const run = await cli(['start', '--all'], env);
    t.is(run.code, 1, run.stdout + run.stderr);
    t.regex(run.stdout, /^ok\s+all_good1 \(\d+\): started$/m);
    t.regex(run.stdout, /^ok\s+all_good2 \(\d+\): already running$/m);
    t.regex(run.stdout, /^failed\s+all_bad1 \(\d+\): could not start: the tunnel exited with code 1/m);
    t.regex(run.stdout, /^failed\s+all_bad2 \(\d+\): could not start: the tunnel exited with code 1/m);
    t.regex(run.stdout, /; now (stopped|failed)$/m);
    // The summary is the server's, made of the same results the lines show.
    t.regex(run.stdout, /^start: 2 of 4 instances ok \(1 already running\), 2 failed$/m);
    const json = JSON.parse((await cli(['start', '--all', '--json'], env)).stdout);
    t.like(json, { ok: 2, failed: 2, unchanged: 2 });

    const stop = await cli(['stop', '--all'], env);
    t.is(stop.code, 0, stop.stdout + stop.stderr);
    t.regex(stop.stdout, /^ok\s+all_bad1 \(\d+\): already stopped( \(it had failed\))?$/m);
    t.regex(stop.stdout, /^stop: 4 of 4 instances ok \(2 already stopped\), 0 failed$/m);
    const removed = await cli(['rm', 'all_*'], env);
    t.is(removed.code, 0, removed.stdout + removed.stderr);
  },
);

test('labels: set at create and import, changed and removed later, shown in ls --json and getInfo, checked', async (t) => {
  const env = await loggedIn(daemon, t);
  const made = await cli(
    ['create', 'lab_web', '--server', '127.0.0.1:7000', '--label', 'env=prod', '--label', 'example.com/team=web'],
    env,
  );
  t.is(made.code, 0, made.stderr);
  const imported = await cli(
    ['import', join(PACKAGE_ROOT, 'test', 'fixtures', 'configs', 'current.toml'), '--name', 'lab_imp', '-l', 'env=dev'],
    env,
  );
  t.is(imported.code, 0, imported.stderr);
  t.deepEqual((await listed('lab_web')).labels, { env: 'prod', 'example.com/team': 'web' });
  t.deepEqual((await listed('lab_imp')).labels, { env: 'dev' });

  const changed = await cli(['label', 'lab_web', 'env=staging', 'example.com/team-', 'tier=front'], env);
  t.is(changed.code, 0, changed.stderr);
  t.regex(changed.stdout, /^ok\s+lab_web \(\d+\): labels of instance lab_web changed$/m);
  const ls = JSON.parse((await cli(['ls', 'lab_web', '--json'], env)).stdout) as any[];
  t.deepEqual(ls[0].labels, { env: 'staging', tier: 'front' });
  const info = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${ls[0].instanceID}`, { token: root });
  t.deepEqual(info.body.data.labels, { env: 'staging', tier: 'front' });
  const shown = await cli(['label', 'lab_web'], env);
  t.is(shown.stdout, 'env=staging\ntier=front\n');

  // Kubernetes' rules, on the command line and at the server, each refusal naming what is wrong.
  const badKey = await cli(['label', 'lab_web', '-bad=x'], env);
  t.is(badKey.code, 2);
  const badValue = await cli(['create', 'lab_bad', '--server', '127.0.0.1:7000', '--label', 'env=no spaces'], env);
  t.is(badValue.code, 2);
  t.regex(badValue.stderr, /label env: its value "no spaces" must be empty or 1-63 characters/);
  const api = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: ls[0].instanceID, type: 'labels', modifiedData: { 'Bad/key': 'x' } },
    { token: root },
  );
  t.is(api.status, 400);
  t.regex(api.body.message, /label key "Bad\/key": its prefix must be a DNS subdomain/);
  const long = await daemon.post(
    '/tunnelAct/instanceMgr/create',
    {
      instanceInfo: { name: 'lab_long', serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' },
      labels: { env: 'x'.repeat(64) },
    },
    { token: root },
  );
  t.is(long.status, 400);
  t.regex(long.body.message, /label env: its value/);
  t.is(await listed('lab_long'), undefined, 'nothing is created');
});

test('labels survive a restart of the daemon', async (t) => {
  const own = await startDaemon({ settingsToml: instanceSettings() });
  try {
    const token = await own.login();
    const made = await createInstance(own, token, 'lab_kept', {}, { labels: { env: 'prod', team: '' } });
    await own.stop();
    const again = await startDaemon({ dataDir: own.dataDir });
    try {
      const after = await again.get('/tunnelAct/instanceMgr/list', { token: await again.login() });
      t.deepEqual(after.body.data.find((i: any) => String(i.instanceID) === made.id).labels, { env: 'prod', team: '' });
    } finally {
      await dispose(again);
    }
  } finally {
    await dispose(own);
  }
});

test('patterns and labels select what ls, start, restart, stop and rm act on; one that finds nothing fails', async (t) => {
  const env = await loggedIn(daemon, t);
  for (const [name, env_] of [
    ['sel-web-1', 'prod'],
    ['sel-web-2', 'dev'],
    ['sel-db-1', 'prod'],
    ['sel-db-22', 'prod'],
  ])
    await createInstance(daemon, root, name!, {}, { labels: { env: env_, app: name!.split('-')[1] } });

  t.deepEqual(namesIn((await cli(['ls', 'sel-web-*', '--json'], env)).stdout), ['sel-web-1', 'sel-web-2']);
  t.deepEqual(namesIn((await cli(['ls', 'sel-db-?', '--json'], env)).stdout), ['sel-db-1']);
  t.deepEqual(
    namesIn((await cli(['ls', '--label', 'env=prod', '--json'], env)).stdout).filter((n) => n.startsWith('sel-')),
    ['sel-db-1', 'sel-db-22', 'sel-web-1'],
  );
  // Several labels must all match; a pattern and a label, both.
  t.deepEqual(namesIn((await cli(['ls', '-l', 'env=prod', '-l', 'app=web', '--json'], env)).stdout), ['sel-web-1']);
  t.deepEqual(namesIn((await cli(['ls', 'sel-db-*', '-l', 'env=prod', '--json'], env)).stdout), [
    'sel-db-1',
    'sel-db-22',
  ]);

  const started = await cli(['start', 'sel-web-*'], env);
  t.is(started.code, 0, started.stdout + started.stderr);
  t.regex(started.stdout, /^start: 2 of 2 instances ok, 0 failed$/m);
  t.deepEqual(await statesOf('sel-'), {
    'sel-web-1': 'running',
    'sel-web-2': 'running',
    'sel-db-1': 'stopped',
    'sel-db-22': 'stopped',
  });
  const before = (await listed('sel-web-1')).pid;
  const restarted = await cli(['restart', '--label', 'env=prod', '--label', 'app=web'], env);
  t.is(restarted.code, 0, restarted.stdout + restarted.stderr);
  t.regex(restarted.stdout, /^ok\s+sel-web-1 \(\d+\): restarted$/m);
  t.notRegex(restarted.stdout, /sel-web-2/);
  t.not((await listed('sel-web-1')).pid, before);
  const stopped = await cli(['stop', 'sel-web-[12]'], env);
  t.is(stopped.code, 0, stopped.stdout + stopped.stderr);
  t.deepEqual(Object.values(await statesOf('sel-web-')), ['stopped', 'stopped']);

  // Nothing found: exit 1 and why, and nothing done.
  for (const [args, why] of [
    [['ls', 'nope-*'], /no instance matches nope-\*/],
    [['start', 'nope-?'], /no instance matches nope-\?/],
    [['stop', '--label', 'env=nowhere'], /no instance has labels env=nowhere/],
    [['restart', 'sel-web-*', '--label', 'env=nowhere'], /none of the instances named has labels env=nowhere/],
    [['rm', 'nope-*'], /no instance matches nope-\*/],
    [['logs', '--label', 'env=nowhere'], /no instance has labels env=nowhere/],
  ] as const) {
    const run = await cli([...args], env);
    t.is(run.code, 1, args.join(' '));
    t.regex(run.stderr, why, args.join(' '));
  }
  // Part found: the rest is done, the pattern that found nothing reported, exit 1.
  const part = await cli(['start', 'sel-db-1', 'nope-*'], env);
  t.is(part.code, 1);
  t.regex(part.stdout, /^ok\s+sel-db-1 \(\d+\): started$/m);
  t.regex(part.stdout, /^failed\s+nope-\*: no instance matches nope-\*$/m);

  const removed = await cli(['rm', '--yes', 'sel-db-*', '-l', 'env=prod'], env);
  t.is(removed.code, 0, removed.stdout + removed.stderr);
  t.deepEqual(Object.keys(await statesOf('sel-')).sort(), ['sel-web-1', 'sel-web-2']);
  t.is((await cli(['rm', 'sel-web-*'], env)).code, 0);
});

test('rm of many sends one delete request; running ones need --yes; logs are kept', async (t) => {
  // A user of its own: the audit trail's delete entries of this user are this test's.
  const admin = await daemon.userWithToken(root, 'sel_rm', 'admin');
  const env = await loggedIn(daemon, t, 'sel_rm', 'Passw0rd!x');
  const made = [];
  // Its own instances: an admin deletes those it created (see may).
  for (let i = 0; i < 12; i++) made.push(await createInstance(daemon, admin.token, `rmmany-${i}`));
  t.true((await start(made[0]!.id)).body.success);

  // No terminal and no --yes: the running one stays, the others go, in one request.
  const first = await cli(['rm', 'rmmany-*'], env);
  t.is(first.code, 1, first.stdout + first.stderr);
  t.regex(first.stdout, /^failed\s+rmmany-0 \(\d+\): not deleted: it is running, and there is no terminal/m);
  t.regex(first.stdout, /^ok\s+rmmany-11 \(\d+\): deleted; its log is kept \(purge removes it\)$/m);
  t.regex(first.stdout, /^delete: 11 of 11 instances ok, 0 failed$/m);
  t.deepEqual(Object.keys(await statesOf('rmmany-')), ['rmmany-0']);
  const audit = await daemon.get('/system/audit?action=instance.delete&user=sel_rm&limit=1000', { token: root });
  t.is(audit.body.data.entries.length, 1, 'one delete request for eleven instances');

  const yes = await cli(['rm', '--yes', 'rmmany-*'], env);
  t.is(yes.code, 0, yes.stdout + yes.stderr);
  t.is(await listed('rmmany-0'), undefined);
});

test('logs -f of several instances: every line prefixed by its instance, until interrupted', async (t) => {
  const env = await loggedIn(daemon, t);
  const a = await createInstance(daemon, root, 'flog-a', {}, { labels: { svc: 'flog' } });
  const b = await createInstance(daemon, root, 'flog-bb', {}, { labels: { svc: 'flog' } });
  for (const { id } of [a, b]) t.true((await start(id)).body.success);

  const follow = spawn(process.execPath, [CLI, 'logs', '-f', '-n', '1', 'flog-*'], {
    env: { ...process.env, ...env, NO_COLOR: '1' },
  });
  let seen = '';
  follow.stdout.on('data', (chunk: Buffer) => (seen += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => follow.on('close', resolve));
  // One earlier line of each says both streams are open; a restart of each then logs its start again.
  await waitFor(
    async () => seen,
    (text) => /^flog-a {2}\| /m.test(text) && /^flog-bb \| /m.test(text),
  );
  await daemon.post('/tunnelAct/instanceMgr/restart', { instanceIDs: [a.id, b.id] }, { token: root });
  const text = await waitFor(
    async () => seen,
    (s) => /^flog-a {2}\| .*start frpc service/m.test(s) && /^flog-bb \| .*start frpc service/m.test(s),
  );
  for (const line of text.trimEnd().split('\n'))
    t.regex(line, /^(flog-a |flog-bb) \| \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO|WARN|ERROR)\s/);
  follow.kill('SIGINT');
  t.is(await exited, 0);

  // Without -f: the last lines of each, one instance after the other; by label as by pattern.
  const tail = await cli(['logs', '-n', '2', '--label', 'svc=flog'], env);
  t.is(tail.code, 0, tail.stderr);
  const prefixes = tail.stdout
    .trimEnd()
    .split('\n')
    .map((l) => l.split(' | ')[0]!.trim());
  t.deepEqual(prefixes, ['flog-a', 'flog-a', 'flog-bb', 'flog-bb']);
});

test('ls shows boot, CPU and memory of running tunnels, dashes for stopped ones', async (t) => {
  const env = await loggedIn(daemon, t);
  const up = await createInstance(daemon, root, 'lscol_up', {}, { bootAtStart: true });
  await createInstance(daemon, root, 'lscol_down');
  t.true((await start(up.id)).body.success);

  const table = await cli(['ls', 'lscol_*'], env);
  t.is(table.code, 0, table.stderr);
  const lines = table.stdout.trimEnd().split('\n');
  t.regex(lines[0]!, /^id\s+name\s+state\s+health\s+boot\s+pid\s+uptime\s+cpu\s+mem\s+restarts\s+proxies(\s+why)?$/);
  const rowOf = (name: string) => lines.find((line) => line.split(/\s+/)[1] === name)!.split(/\s+/);
  t.is(rowOf('lscol_up')[2], 'running');
  t.is(rowOf('lscol_up')[4], 'yes');
  t.regex(rowOf('lscol_up')[7]!, /^\d+\.\d%$/);
  t.regex(rowOf('lscol_up')[8]!, /^\d+(\.\d)?[KMG]$/);
  t.deepEqual(rowOf('lscol_down').slice(2, 11), ['stopped', 'stopped', 'no', '-', '-', '-', '-', '0', '-']);

  const json = JSON.parse((await cli(['ls', 'lscol_*', '--json'], env)).stdout) as any[];
  const running = json.find((i) => i.name === 'lscol_up');
  t.true(running.bootAtStart);
  t.true(running.cpuPercent >= 0 && running.rssBytes > 1024 * 1024, JSON.stringify(running));
  const stopped = json.find((i) => i.name === 'lscol_down');
  t.false('cpuPercent' in stopped || 'rssBytes' in stopped);
});
