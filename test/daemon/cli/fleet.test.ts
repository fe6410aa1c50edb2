// Named contexts and the fleet view from the command line: three real daemons, a port nothing listens on, a key that
// was revoked and a host that takes the connection and never answers, all asked by one `tunnelward fleet`.
import { createServer, type Server, type Socket } from 'node:net';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { cli, type Run } from '../../helpers/cli.js';
import { disposeWithTunnels, startWithRoot, tempDir, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, waitFor } from '../../helpers/instances.js';
import { HEALTH_STATES } from '../../../src/instances/health.js';

interface Host {
  daemon: Daemon;
  root: string;
}

let hosts: Host[] = [];
/** A port that refuses: taken from the kernel, then let go. */
let closedUrl: string;
/** Accepts every connection and never says a word. */
let silent: Server;
let silentUrl: string;
const silentSockets = new Set<Socket>();
let silentConnections = 0;

const listen = (server: Server) =>
  new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
  );

test.before(async () => {
  hosts = await Promise.all([0, 1, 2].map(() => startWithRoot({ settingsToml: instanceSettings() })));
  const [a, b] = hosts;
  // Two hosts with tunnels, one of them running on each; the third has none.
  await createInstance(a!.daemon, a!.root, 'web');
  const aRunning = await createInstance(a!.daemon, a!.root, 'db');
  const bRunning = await createInstance(b!.daemon, b!.root, 'edge');
  for (const [host, id] of [
    [a!, aRunning.id],
    [b!, bRunning.id],
  ] as const) {
    const started = await host.daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: host.root });
    if (!started.body.success) throw new Error(started.body.message);
    await waitFor(
      async () => (await host.daemon.get('/tunnelAct/instanceMgr/list', { token: host.root })).body.data,
      (list: any[]) => list.find((i) => String(i.instanceID) === id)?.health?.state === 'up',
    );
  }
  const closed = createServer();
  closedUrl = `http://127.0.0.1:${await listen(closed)}`;
  await new Promise((resolve) => closed.close(resolve));
  silent = createServer((socket) => {
    silentConnections++;
    silentSockets.add(socket);
    socket.on('close', () => silentSockets.delete(socket));
  });
  silentUrl = `http://127.0.0.1:${await listen(silent)}`;
});

test.after.always(async () => {
  for (const socket of silentSockets) socket.destroy();
  await new Promise((resolve) => silent?.close(resolve));
  await Promise.all(hosts.map((h) => disposeWithTunnels(h.daemon, h.root)));
});

async function visitorKey(host: Host, name: string): Promise<string> {
  const res = await host.daemon.post('/apiKeyMgr/create', { name, role: 'visitor' }, { token: host.root });
  if (!res.body.success) throw new Error(res.body.message);
  return res.body.data.key;
}

/** A user of the CLI with a config dir of their own, and nothing in the environment choosing a server. */
const user = async (t: ExecutionContext) => ({
  XDG_CONFIG_HOME: await tempDir('tunnelward-cli-', t),
});

const ok = (t: ExecutionContext, run: Run) => t.is(run.code, 0, run.stdout + run.stderr);

/** Adds a context whose key is given in a file of its own (0600). */
async function addWithKeyFile(env: Record<string, string>, name: string, url: string, key: string) {
  const file = join(env.XDG_CONFIG_HOME!, `${name}.key`);
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  return cli(['context', 'add', name, '--url', url, '--api-key-file', file], env);
}

test('contexts: kept 0600 beside the logins, listed without their keys, chosen by use, --context or the environment', async (t) => {
  const env = await user(t);
  const [a, b] = hosts;
  const keyA = await visitorKey(a!, 'ctx-a');
  const keyB = await visitorKey(b!, 'ctx-b');

  const fromFile = await addWithKeyFile(env, 'alpha', a!.daemon.url, keyA);
  ok(t, fromFile);
  t.regex(fromFile.stdout, new RegExp(`^context alpha: ${a!.daemon.url}, with its API key$`, 'm'));
  const fromStdin = await cli(['context', 'add', 'bravo', '--url', b!.daemon.url, '--api-key', '-'], env, `${keyB}\n`);
  ok(t, fromStdin);
  for (const run of [fromFile, fromStdin]) {
    t.false(run.stdout.includes(keyA) || run.stderr.includes(keyA) || run.stdout.includes(keyB), 'no key echoed');
  }

  const dir = join(env.XDG_CONFIG_HOME, 'tunnelward');
  const file = join(dir, 'credentials.json');
  t.is((await stat(file)).mode & 0o777, 0o600);
  t.is((await stat(dir)).mode & 0o777, 0o700);
  t.deepEqual(JSON.parse(await readFile(file, 'utf8')).contexts, {
    alpha: { url: a!.daemon.url, key: keyA },
    bravo: { url: b!.daemon.url, key: keyB },
  });

  // A key on the command line is refused before anything is kept; so is a second context of the same name.
  const onLine = await cli(['context', 'add', 'charlie', '--url', a!.daemon.url, '--api-key', keyA], env);
  t.is(onLine.code, 2);
  t.regex(onLine.stderr, /seen by every user of this host/);
  t.false(onLine.stderr.includes(keyA), 'the refusal does not repeat the key');
  const twice = await addWithKeyFile(env, 'alpha', b!.daemon.url, keyB);
  t.is(twice.code, 1);
  t.regex(twice.stderr, /a context named alpha exists \(--replace replaces it\)/);
  // A key file others may read is taken, with a warning.
  const loose = join(env.XDG_CONFIG_HOME, 'loose.key');
  await writeFile(loose, keyB);
  await chmod(loose, 0o644);
  const warned = await cli(['context', 'add', 'loose', '--url', b!.daemon.url, '--api-key-file', loose], env);
  ok(t, warned);
  t.regex(warned.stderr, /loose\.key can be read by others than its owner/);

  const listed = await cli(['context', 'ls'], env);
  ok(t, listed);
  t.regex(listed.stdout, new RegExp(`^\\s+alpha\\s+${a!.daemon.url}\\s+API key$`, 'm'));
  t.false(listed.stdout.includes(keyA) || listed.stdout.includes(keyB));
  t.false((await cli(['context', 'ls', '--json'], env)).stdout.includes('twk_'), 'no key in the JSON either');

  // Nothing chosen: the default server. `context use` makes one current; --context and TUNNELWARD_CONTEXT pick others.
  const used = await cli(['context', 'use', 'bravo'], env);
  ok(t, used);
  t.regex((await cli(['context', 'ls'], env)).stdout, /^\*\s+bravo\s/m);
  const whoB = JSON.parse((await cli(['whoami', '--json'], env)).stdout);
  t.like(whoB, { url: b!.daemon.url, keyName: 'ctx-b', type: 'visitor' });
  const whoA = JSON.parse((await cli(['whoami', '--json', '--context', 'alpha'], env)).stdout);
  t.like(whoA, { url: a!.daemon.url, keyName: 'ctx-a' });
  const whoEnv = JSON.parse((await cli(['whoami', '--json'], { ...env, TUNNELWARD_CONTEXT: 'alpha' })).stdout);
  t.like(whoEnv, { url: a!.daemon.url, keyName: 'ctx-a' });
  // A context's own key goes to its server, whatever key the environment holds for another.
  const mixed = await cli(['whoami', '--json', '--context', 'alpha'], { ...env, TUNNELWARD_API_KEY: keyB });
  t.like(JSON.parse(mixed.stdout), { keyName: 'ctx-a' });

  const typo = await cli(['ls', '--context', 'alpa'], env);
  t.is(typo.code, 2);
  t.regex(typo.stderr, /no context named alpa \(did you mean alpha\?\)/);
  const unknownUse = await cli(['context', 'use', 'brave'], env);
  t.is(unknownUse.code, 1);
  t.regex(unknownUse.stderr, /no context named brave \(did you mean bravo\?\)/);
  t.is((await cli(['ls', '--context', 'alpha', '--url', a!.daemon.url], env)).code, 2, 'not both');

  const removed = await cli(['context', 'rm', 'bravo'], env);
  ok(t, removed);
  t.regex(removed.stdout, /context bravo removed/);
  const after = JSON.parse((await cli(['context', 'ls', '--json'], env)).stdout);
  t.deepEqual(
    after.map((c: any) => [c.name, c.current]),
    [
      ['alpha', false],
      ['loose', false],
    ],
  );
});

/** A user whose contexts are the whole fleet: three daemons and three hosts that cannot answer. */
let fleetUsers = 0;
async function fleetUser(t: ExecutionContext) {
  const env = await user(t);
  // Key names of their own: the tests run at once against the same daemons.
  const n = ++fleetUsers;
  const [a, b, c] = hosts;
  ok(t, await addWithKeyFile(env, 'alpha', a!.daemon.url, await visitorKey(a!, `fleet-a-${n}`)));
  ok(t, await addWithKeyFile(env, 'bravo', b!.daemon.url, await visitorKey(b!, `fleet-b-${n}`)));
  // charlie logs in with a password: its context has no key and uses the login kept for its URL.
  ok(t, await cli(['context', 'add', 'charlie', '--url', c!.daemon.url], env));
  const login = await cli(['login', '--url', c!.daemon.url, '--user', 'admin'], {
    ...env,
    TUNNELWARD_PASSWORD: 'Admin123!x',
  });
  ok(t, login);
  const revokedName = `revoked-${n}`;
  ok(t, await addWithKeyFile(env, 'delta', c!.daemon.url, await visitorKey(c!, revokedName)));
  const revoked = await c!.daemon.post('/apiKeyMgr/revoke', { name: revokedName }, { token: c!.root });
  t.true(revoked.body.success, revoked.body.message);
  const unknownKey = await keyFileFor(env);
  ok(t, await cli(['context', 'add', 'echo', '--url', closedUrl, '--api-key-file', unknownKey], env));
  ok(t, await cli(['context', 'add', 'foxtrot', '--url', silentUrl, '--api-key-file', unknownKey], env));
  return env;
}

/** A well-formed key that no server knows (the hosts it is given to never get to judge it). */
async function keyFileFor(env: Record<string, string>): Promise<string> {
  const file = join(env.XDG_CONFIG_HOME!, 'silent.key');
  await writeFile(file, `twk_${'0'.repeat(16)}_${'A'.repeat(43)}`, { mode: 0o600 });
  return file;
}

/** The rows of a table, each split into its cells (two spaces or more between them). */
const rowsOf = (stdout: string) =>
  stdout
    .trimEnd()
    .split('\n')
    .map((line) => line.split(/ {2,}/));

test('fleet ls: every instance of every host with its host first, a row for each host that did not answer, exit 3', async (t) => {
  const env = await fleetUser(t);
  const started = Date.now();
  const run = await cli(['fleet', 'ls', '--timeout', '1s'], env);
  const took = Date.now() - started;
  t.is(run.code, 3, run.stdout + run.stderr);
  t.regex(run.stderr, /^3 of 6 hosts did not answer$/m);

  const [header, ...rows] = rowsOf(run.stdout);
  t.deepEqual(header!.slice(0, 5), ['host', 'id', 'name', 'state', 'health']);
  t.is(header!.at(-1), 'why');
  const byHost = (host: string) => rows.filter((r) => r[0] === host);
  // Each daemon's rows are its own list, as its API gives it.
  for (const [host, { daemon, root }] of [
    ['alpha', hosts[0]!],
    ['bravo', hosts[1]!],
  ] as const) {
    const list = (await daemon.get('/tunnelAct/instanceMgr/list', { token: root })).body.data as any[];
    t.true(list.length > 0);
    t.deepEqual(
      byHost(host).map((r) => r.slice(1, 5)),
      list.map((i) => [String(i.instanceID), i.name, i.state, i.health.state]),
    );
  }
  t.deepEqual(
    byHost('charlie').map((r) => [r[3], r.at(-1)]),
    [['-', 'no instances']],
  );
  const [delta] = byHost('delta');
  t.is(delta![3], 'unauthorised');
  t.regex(delta!.at(-1)!, /API key/i);
  const [echo] = byHost('echo');
  t.is(echo![3], 'unreachable');
  t.regex(echo!.at(-1)!, /ECONNREFUSED/);
  const [foxtrot] = byHost('foxtrot');
  t.is(foxtrot![3], 'unreachable');
  t.regex(foxtrot!.at(-1)!, new RegExp(`no answer from ${silentUrl} within 1000 ms`));
  // The silent host never answers: the command ends because its time ran out, not before.
  t.true(took >= 1000, `took ${took} ms`);
  t.true(silentConnections > 0, 'the silent host was connected to');

  const everything = run.stdout + run.stderr;
  const stored = JSON.parse(await readFile(join(env.XDG_CONFIG_HOME, 'tunnelward', 'credentials.json'), 'utf8'));
  for (const context of Object.values(stored.contexts) as Array<{ key?: string }>) {
    if (context.key) t.false(everything.includes(context.key.slice(-43)), 'no key secret in the output');
  }

  // Selected by pattern across hosts: only the hosts with a match, and those that could not say.
  const picked = await cli(['fleet', 'ls', 'ed*', 'nothing-like-it', '--timeout', '1s'], env);
  t.is(picked.code, 3, picked.stderr);
  t.deepEqual(
    rowsOf(picked.stdout)
      .slice(1)
      .map((r) => [r[0], r[2], r[3]]),
    [
      ['bravo', 'edge', 'running'],
      ['delta', '-', 'unauthorised'],
      ['echo', '-', 'unreachable'],
      ['foxtrot', '-', 'unreachable'],
    ],
  );
  const byId = await cli(['fleet', 'ls', '#1'], env);
  t.is(byId.code, 2);
  t.regex(byId.stderr, /an id is one host's \(#1\)/);

  const json = await cli(['fleet', 'ls', '--timeout', '1s', '--json'], env);
  t.is(json.code, 3);
  const data = JSON.parse(json.stdout) as any[];
  t.deepEqual(
    data.map((h) => [h.host, h.answered, h.problem ?? null]),
    [
      ['alpha', true, null],
      ['bravo', true, null],
      ['charlie', true, null],
      ['delta', false, 'unauthorised'],
      ['echo', false, 'unreachable'],
      ['foxtrot', false, 'unreachable'],
    ],
  );
  t.deepEqual(
    data[0].instances.map((i: any) => i.name),
    byHost('alpha').map((r) => r[2]),
  );
  t.false(json.stdout.includes('twk_'), 'no key in the JSON');
});

test('fleet status: a line per host with its version, uptime and tunnels by health; the answered alone exit 0', async (t) => {
  const env = await fleetUser(t);
  const run = await cli(['fleet', 'status', '--timeout', '1s'], env);
  t.is(run.code, 3, run.stdout + run.stderr);
  const [header, ...rows] = rowsOf(run.stdout);
  t.deepEqual(header, ['host', 'daemon', 'version', 'uptime', ...HEALTH_STATES, 'why']);
  const info = (await hosts[0]!.daemon.get('/system/getSoftwareInfo')).body.data;
  for (const [i, host] of ['alpha', 'bravo', 'charlie'].entries()) {
    const { daemon, root } = hosts[i]!;
    const list = (await daemon.get('/tunnelAct/instanceMgr/list', { token: root })).body.data as any[];
    const row = rows.find((r) => r[0] === host)!;
    t.deepEqual(row.slice(1, 3), ['ok', info.Version]);
    t.regex(row[3]!, /^\d+[smhD]$/);
    t.deepEqual(
      row.slice(4, 4 + HEALTH_STATES.length),
      HEALTH_STATES.map((state) => String(list.filter((x) => x.health.state === state).length)),
    );
  }
  t.deepEqual(
    rows.filter((r) => r[1] !== 'ok').map((r) => [r[0], r[1]]),
    [
      ['delta', 'unauthorised'],
      ['echo', 'unreachable'],
      ['foxtrot', 'unreachable'],
    ],
  );

  // Once the hosts that cannot answer are gone, the fleet answers whole: exit 0, and no `why` column.
  for (const name of ['delta', 'echo', 'foxtrot']) ok(t, await cli(['context', 'rm', name], env));
  const whole = await cli(['fleet', 'status', '--json'], env);
  ok(t, whole);
  const data = JSON.parse(whole.stdout) as any[];
  t.deepEqual(
    data.map((h) => [h.host, h.answered, h.version]),
    [
      ['alpha', true, info.Version],
      ['bravo', true, info.Version],
      ['charlie', true, info.Version],
    ],
  );
  t.like(data[0].tunnels, { up: 1, stopped: 1 });
  // What the CLI shows is the daemon's answer (the helper holds it to the schema /openapi.json declares).
  const summary = await hosts[0]!.daemon.get('/system/summary', { token: hosts[0]!.root });
  t.deepEqual(summary.body.data.tunnels, data[0].tunnels);
  t.is(summary.body.data.startedAt, data[0].startedAt);
  t.true(data.every((h) => h.uptimeSecs >= 0 && !isNaN(Date.parse(h.startedAt))));
  const table = await cli(['fleet', 'status'], env);
  ok(t, table);
  t.notRegex(table.stdout, /why/);
});

test('fleet without contexts, or with a flag it does not take, says so', async (t) => {
  const env = await user(t);
  const none = await cli(['fleet', 'ls'], env);
  t.is(none.code, 1);
  t.regex(none.stderr, /no contexts to ask: tunnelward context add NAME --url URL/);
  const url = await cli(['fleet', 'ls', '--url', closedUrl], env);
  t.is(url.code, 2);
  t.regex(url.stderr, /fleet asks every context: it takes no --url/);
  const timeout = await cli(['fleet', 'ls', '--timeout', 'soon'], env);
  t.is(timeout.code, 2);
  t.regex(timeout.stderr, /--timeout takes a time above zero/);
});
