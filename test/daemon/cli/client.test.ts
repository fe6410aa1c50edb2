import { spawn } from 'node:child_process';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { parse } from 'smol-toml';
import { cli, loggedIn as loggedInAs } from '../../helpers/cli.js';
import { ADMIN, CLI, disposeWithTunnels, startWithRoot, tempDir, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, waitFor } from '../../helpers/instances.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';

const CONFIGS = join(PACKAGE_ROOT, 'test', 'fixtures', 'configs');

let daemon: Daemon;
let root: string;
test.before(async () => {
  ({ daemon, root } = await startWithRoot({ settingsToml: instanceSettings() }));
});
test.after.always(() => disposeWithTunnels(daemon, root));

/** A user of the CLI, logged in to the test daemon. */
const loggedIn = (t: ExecutionContext, username?: string, passwd?: string) => loggedInAs(daemon, t, username, passwd);

const listOf = async () => (await daemon.get('/tunnelAct/instanceMgr/list', { token: root })).body.data as any[];

test('login keeps the token in a 0600 file under XDG_CONFIG_HOME; whoami and logout use it', async (t) => {
  const home = await tempDir('tunnelward-cli-', t);
  const env = { XDG_CONFIG_HOME: home };
  // The password read from standard input when it is not a terminal.
  const login = await cli(['login', '--url', daemon.url, '--user', ADMIN.username], env, `${ADMIN.passwd}\n`);
  t.is(login.code, 0, login.stderr);
  t.regex(login.stdout, /logged in to http:\/\/127\.0\.0\.1:\d+ as admin \(superuser\)/);
  const file = join(home, 'tunnelward', 'credentials.json');
  t.is((await stat(file)).mode & 0o777, 0o600);
  t.is((await stat(join(home, 'tunnelward'))).mode & 0o777, 0o700);
  const stored = JSON.parse(await readFile(file, 'utf8'));
  const token = stored.servers[daemon.url].token as string;
  t.is(stored.current, daemon.url, 'the server logged in to is the one used next');
  t.false(login.stdout.includes(token) || login.stderr.includes(token), 'the token is never printed');

  // No --url: the last server logged in to.
  const who = await cli(['whoami', '--json'], env);
  t.is(who.code, 0, who.stderr);
  const me = JSON.parse(who.stdout);
  t.like(me, { username: 'admin', type: 'superuser', url: daemon.url });
  const sessions = (await daemon.get('/sessionMgr/list', { token: root })).body.data as any[];
  t.true(
    sessions.some((s) => s.ID === me.sessionID && s.ExpireAt === me.expireAt),
    'its own session, as listed',
  );

  const out = await cli(['logout'], env);
  t.is(out.code, 0, out.stderr);
  t.is((await daemon.get('/userMgr/list', { token })).status, 401, 'the session is ended on the server');
  const after = await cli(['whoami'], env);
  t.is(after.code, 4);
  t.regex(after.stderr, /not logged in to .* run tunnelward login/);
});

test('exit codes: 2 for usage, 3 for a daemon not reachable, 4 for a wrong password or an ended session, 1 for a failure', async (t) => {
  const home = { XDG_CONFIG_HOME: await tempDir('tunnelward-cli-', t) };
  const usage = await cli(['ls', '--bogus'], home);
  t.is(usage.code, 2);
  t.regex(usage.stderr, /unknown flag --bogus/);
  t.is((await cli(['frobnicate'], home)).code, 2);
  const slip = await cli(['key', 'ls'], home);
  t.is(slip.code, 2);
  t.regex(slip.stderr, /^tunnelward: unknown command key \(did you mean keys\?\)/);
  t.is((await cli(['start'], home)).code, 2, 'start needs names or --all');

  const unreachable = await cli(['login', '--url', 'http://127.0.0.1:1', '--user', 'admin'], {
    ...home,
    TUNNELWARD_PASSWORD: 'x',
  });
  t.is(unreachable.code, 3);
  t.regex(unreachable.stderr, /cannot reach tunnelward at http:\/\/127\.0\.0\.1:1/);

  const wrong = await cli(['login', '--url', daemon.url, '--user', 'admin'], {
    ...home,
    TUNNELWARD_PASSWORD: 'Wrong123!x',
  });
  t.is(wrong.code, 4);

  await daemon.userWithToken(root, 'cli_expiry', 'admin');
  const env = await loggedIn(t, 'cli_expiry', 'Passw0rd!x');
  // The session behind the CLI's token ends (as when it expires): the next command says how to log in again.
  const sessions = await daemon.get('/sessionMgr/list', { token: root });
  for (const session of (sessions.body.data as any[]).filter((s) => s.Username === 'cli_expiry')) {
    t.true((await daemon.post('/sessionMgr/remove', { sessionID: session.ID }, { token: root })).body.success);
  }
  const ended = await cli(['ls'], env);
  t.is(ended.code, 4);
  t.regex(ended.stderr, /Invalid token.*log in again: tunnelward login/);

  const env2 = await loggedIn(t);
  const missing = await cli(['stop', 'no-such-instance'], env2);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /no instance named no-such-instance/);
  const json = await cli(['stop', 'no-such-instance', '--json'], env2);
  t.like(JSON.parse(json.stdout), { success: false, exitCode: 1 });
});

test('ls prints a table like pm2 ls, and --json the list the API serves', async (t) => {
  const env = await loggedIn(t);
  const a = await createInstance(daemon, root, 'cli_ls_a');
  const b = await createInstance(daemon, root, 'cli_ls_b');
  t.is((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: a.id }, { token: root })).status, 200);

  const table = await cli(['ls'], env);
  t.is(table.code, 0, table.stderr);
  const lines = table.stdout.trimEnd().split('\n');
  // A last column says why an instance is not up, when any shown is not.
  t.regex(lines[0]!, /^id\s+name\s+state\s+health\s+boot\s+pid\s+uptime\s+cpu\s+mem\s+restarts\s+proxies(\s+why)?$/);
  const rowOf = (name: string) => lines.find((line) => line.split(/\s+/)[1] === name)!.split(/\s+/);
  const listedA = (await listOf()).find((i) => i.name === 'cli_ls_a');
  t.deepEqual(rowOf('cli_ls_a').slice(0, 6), [
    a.id,
    'cli_ls_a',
    'running',
    listedA.health.state,
    'no',
    String(listedA.pid),
  ]);
  t.regex(rowOf('cli_ls_a')[6]!, /^\d+s$/);
  t.deepEqual(rowOf('cli_ls_b').slice(0, 10), [b.id, 'cli_ls_b', 'stopped', 'stopped', 'no', '-', '-', '-', '-', '0']);

  const json = await cli(['ls', '--json'], env);
  t.is(json.code, 0, json.stderr);
  const listed = JSON.parse(json.stdout) as any[];
  // Other tests create instances meanwhile: every instance the CLI listed is one the API lists.
  const api = new Map((await listOf()).map((i) => [i.instanceID, i.name]));
  t.true(listed.length > 0 && listed.every((i) => api.get(i.instanceID) === i.name));
  t.deepEqual(
    listed
      .filter((i) => i.name.startsWith('cli_ls_'))
      .map((i) => i.name)
      .sort(),
    ['cli_ls_a', 'cli_ls_b'],
  );
  t.is(listed.find((i) => i.name === 'cli_ls_a').state, 'running');
});

// Serial: --all acts on every instance, which the other tests' must not be yet.
test.serial('start and stop one instance by name, then every instance with --all, in one request each', async (t) => {
  const env = await loggedIn(t);
  const one = await createInstance(daemon, root, 'cli_one');
  await createInstance(daemon, root, 'cli_two');

  const start = await cli(['start', 'cli_one'], env);
  t.is(start.code, 0, start.stderr);
  t.regex(start.stdout, /ok\s+cli_one \(\d+\): started/);
  t.is((await listOf()).find((i) => i.name === 'cli_one').state, 'running');

  const all = await cli(['start', '--all', '--json'], env);
  t.is(all.code, 0, all.stdout + all.stderr);
  const result = JSON.parse(all.stdout);
  t.like(result, { ok: 2, failed: 0, unchanged: 1 }, 'the server counts the one already running as ok, unchanged');
  t.regex(all.stdout, /already running/);
  t.true((await listOf()).every((i) => i.state === 'running'));

  const stop = await cli(['stop', `#${one.id}`], env);
  t.is(stop.code, 0, stop.stderr);
  t.is((await listOf()).find((i) => i.name === 'cli_one').state, 'stopped');
  const stopAll = await cli(['stop', '--all'], env);
  t.is(stopAll.code, 0, stopAll.stderr);
  t.regex(stopAll.stdout, /stop: (\d+) of \1 instances ok/);
  t.true((await listOf()).every((i) => i.state === 'stopped'));
});

test('logs -n prints the last lines; logs -f keeps receiving them until interrupted', async (t) => {
  const env = await loggedIn(t);
  const inst = await createInstance(daemon, root, 'cli_logs');
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: inst.id }, { token: root });

  const tail = await waitFor(
    () => cli(['logs', '-n', '2', 'cli_logs'], env),
    (run) => run.stdout.split('\n').filter(Boolean).length === 2,
  );
  t.is(tail.code, 0, tail.stderr);
  for (const line of tail.stdout.trimEnd().split('\n')) {
    t.regex(line, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO|WARN|ERROR)\s/);
  }

  const follow = spawn(process.execPath, [CLI, 'logs', '-f', '-n', '1', 'cli_logs'], {
    env: { ...process.env, ...env, NO_COLOR: '1' },
  });
  let seen = '';
  follow.stdout.on('data', (chunk: Buffer) => (seen += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => follow.on('close', resolve));
  // The one earlier line says the stream is open; a restart then makes the tunnel log its start again.
  const connected = await waitFor(
    async () => seen,
    (text) => text.includes('\n'),
  );
  t.is(connected.trimEnd().split('\n').length, 1, '-n 1: one earlier line');
  await daemon.post('/tunnelAct/instanceMgr/restart', { instanceID: inst.id }, { token: root });
  await waitFor(
    async () => seen.slice(connected.length),
    (text) => /start frpc service for config file/.test(text),
  );
  follow.kill('SIGINT');
  t.is(await exited, 0);
});

test('events follows state changes as they happen', async (t) => {
  const env = await loggedIn(t);
  const inst = await createInstance(daemon, root, 'cli_events');
  const follow = spawn(process.execPath, [CLI, 'events', '--json'], { env: { ...process.env, ...env } });
  let seen = '';
  follow.stdout.on('data', (chunk: Buffer) => (seen += chunk.toString()));
  await waitFor(
    async () => seen,
    (text) => text.includes('events.start'),
  );
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: inst.id }, { token: root });
  const text = await waitFor(
    async () => seen,
    (s) => s.includes('"to":"running"'),
  );
  const events = text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  t.true(events.some((e) => e.event === 'instance.state' && e.name === 'cli_events' && e.to === 'starting'));
  follow.kill('SIGINT');
  await new Promise((resolve) => follow.on('close', resolve));
});

test('create, proxies, settings and users from the command line', async (t) => {
  const env = await loggedIn(t);
  const created = await cli(
    [
      'create',
      'cli_made',
      '--server',
      '127.0.0.1:7000',
      '--set',
      'auth.token=s3cret',
      '--set',
      'transport.poolCount=2',
    ],
    env,
  );
  t.is(created.code, 0, created.stderr);
  const made = (await listOf()).find((i) => i.name === 'cli_made');
  const info = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${made.instanceID}`, { token: root });
  const file = parse(await readFile(info.body.data.configPath, 'utf8')) as any;
  t.is(file.auth.token, 's3cret');
  t.is(file.transport.poolCount, 2, 'a value that reads as JSON is typed');

  await daemon.post(
    '/tunnelAct/proxyMgr/create',
    {
      instanceID: String(made.instanceID),
      proxyInfo: { name: 'ssh', type: 'tcp', localIP: '127.0.0.1', localPort: '22', remotePort: '6022' },
    },
    { token: root },
  );
  const proxies = await cli(['proxies', 'cli_made'], env);
  t.is(proxies.code, 0, proxies.stderr);
  t.regex(proxies.stdout, /^name\s+type\s+local\s+remote\s+health\n/);
  // Not running: where the file asks to be reached, on its server.
  t.regex(proxies.stdout, /ssh\s+tcp\s+127\.0\.0\.1:22\s+127\.0\.0\.1:6022\s+stopped/);

  const set = await cli(['settings', 'set', 'Instance.StopTimeoutSecs=3', 'Debug=false'], env);
  t.is(set.code, 0, set.stderr);
  const got = await cli(['settings', 'get', 'Instance.StopTimeoutSecs'], env);
  t.is(got.stdout.trim(), '3');
  const bad = await cli(['settings', 'set', 'Instance.StopTimeoutSecs=soon'], env);
  t.is(bad.code, 1);
  // The CLI asks for the strict form: a typo is refused with the key meant, and nothing changes.
  const typo = await cli(['settings', 'set', 'Instance.StopTimeoutSecs=4', 'Watchdog.Enable=false'], env);
  t.is(typo.code, 1);
  t.regex(typo.stderr, /Watchdog\.Enable \(did you mean Watchdog\.Enabled\?\); nothing was changed/);
  t.is((await cli(['settings', 'get', 'Instance.StopTimeoutSecs'], env)).stdout.trim(), '3');
  const missing = await cli(['settings', 'set', 'TunnelPath=/nonexistent/frpc'], env);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /TunnelPath \/nonexistent\/frpc is missing or not an executable file/);

  const users = await cli(['users', '--json'], env);
  t.true((JSON.parse(users.stdout) as any[]).some((u) => u.Username === 'admin' && u.Passwd === ''));

  const removed = await cli(['rm', 'cli_made'], env);
  t.is(removed.code, 0, removed.stderr);
  t.false((await listOf()).some((i) => i.name === 'cli_made'));
});

test('import brings in TOML, INI with [common], YAML and JSON files; export writes the file back', async (t) => {
  const env = await loggedIn(t);
  for (const file of ['current.toml', 'legacy.ini', 'sample.yaml', 'sample.json']) {
    const name = `cli_imp_${file.replace('.', '_')}`;
    const run = await cli(['import', join(CONFIGS, file), '--name', name, '--json'], env);
    t.is(run.code, 0, `${file}: ${run.stderr}`);
    const data = JSON.parse(run.stdout);
    t.true(data.proxyCount >= 3, `${file}: several proxies`);
    const proxies = await cli(['proxies', name, '--json'], env);
    t.is((JSON.parse(proxies.stdout) as any[]).length, data.proxyCount);
  }

  const out = join(await tempDir('tunnelward-cli-', t), 'exported.toml');
  const exported = await cli(['export', 'cli_imp_legacy_ini', '-o', out], env);
  t.is(exported.code, 0, exported.stderr);
  t.is((await stat(out)).mode & 0o777, 0o600);
  const proxiesOf = async (name: string) =>
    JSON.parse((await cli(['proxies', name, '--json'], env)).stdout).map((p: any) => [p.name, p.type]);
  const before = await proxiesOf('cli_imp_legacy_ini');
  // The same proxies on the same server cannot be held twice: the original goes before its copy comes in.
  t.is((await cli(['rm', 'cli_imp_legacy_ini'], env)).code, 0);
  const again = await cli(['import', out, '--name', 'cli_imp_again'], env);
  t.is(again.code, 0, again.stderr);
  t.deepEqual(await proxiesOf('cli_imp_again'), before);

  const unreadable = await cli(['import', join(CONFIGS, 'no-such-file.toml')], env);
  t.is(unreadable.code, 1);
  t.regex(unreadable.stderr, /cannot read .*no-such-file\.toml: ENOENT/);
});

test('import of a conf.d layout: the proxies and visitors of the files includes names come into the one file', async (t) => {
  const env = await loggedIn(t);
  const dir = await tempDir('tunnelward-cli-', t);
  await mkdir(join(dir, 'confd'));
  await writeFile(
    join(dir, 'frpc.toml'),
    '# main\nserverAddr = "inc.example.com"\nserverPort = 7000\nincludes = ["./confd/*.toml"]\n\n[[proxies]]\nname = "main_ssh"\ntype = "tcp"\nlocalPort = 22\nremotePort = 6200\n',
  );
  await writeFile(
    join(dir, 'confd', 'a.toml'),
    '[[proxies]]\nname = "a_web"\ntype = "tcp"\nlocalPort = 80\nremotePort = 6201\n',
  );
  await writeFile(
    join(dir, 'confd', 'b.toml'),
    'user = "ignored"\n[[visitors]]\nname = "b_visit"\ntype = "stcp"\nserverName = "x"\nsecretKey = "sk-12345"\nbindPort = 16200\n',
  );
  await writeFile(join(dir, 'confd', 'not-included.yaml'), 'proxies: []\n');
  const run = await cli(['import', join(dir, 'frpc.toml'), '--name', 'cli_confd'], env);
  t.is(run.code, 0, run.stderr);
  t.regex(run.stdout, /includes: the 2 proxies and visitors of a\.toml, b\.toml were brought into the file/);
  t.regex(run.stdout, /settings in b\.toml were left out: frpc reads only proxies and visitors from an included file/);
  const proxies = JSON.parse((await cli(['proxies', 'cli_confd', '--json'], env)).stdout) as Array<{ name: string }>;
  t.deepEqual(
    proxies.map((p) => p.name),
    ['main_ssh', 'a_web'],
  );
  const exported = (await cli(['export', 'cli_confd'], env)).stdout;
  t.regex(exported, /name = "b_visit"/);
  t.notRegex(exported, /includes/);
  const made = (await listOf()).find((i) => i.name === 'cli_confd');
  const info = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${made.instanceID}`, { token: root });
  const configPath = info.body.data.configPath as string;
  t.regex(await readFile(configPath, 'utf8'), /^# main$/m, 'the file keeps its comments');

  // A pattern's directory that is not there is said, and nothing is created.
  await writeFile(join(dir, 'broken.toml'), 'serverAddr = "inc.example.com"\nincludes = ["./nowhere/*.toml"]\n');
  const broken = await cli(['import', join(dir, 'broken.toml')], env);
  t.is(broken.code, 1);
  t.regex(broken.stderr, /includes: cannot read the directory .*nowhere: ENOENT/);
});

test('--help (or -h) on any command explains it and exits 0, without a daemon or a login', async (t) => {
  const { CLIENT_COMMANDS } = await import('../../../src/client/commands.js');
  const env = { TUNNELWARD_URL: 'http://127.0.0.1:9' };
  for (const [name, command] of Object.entries(CLIENT_COMMANDS)) {
    const run = await cli([name, name.length % 2 ? '--help' : '-h'], env);
    t.is(run.code, 0, `${name}: ${run.stderr}`);
    t.is(run.stdout, `usage: tunnelward ${command.usage}\n  ${command.summary}\n`);
  }
  for (const args of [['--help'], ['-h'], ['serve', '--help'], ['service', 'install', '--help']]) {
    const run = await cli(args);
    t.is(run.code, 0, args.join(' '));
    t.regex(run.stdout, /^usage: tunnelward \[command\] \[flags\]/);
  }
  // After `--`, it is an argument like any other.
  t.not((await cli(['status', '--', '--help'], env)).code, 0);
});
