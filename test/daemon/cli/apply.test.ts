// `tunnelward apply` and `export --all` as an operator runs them: the real CLI against a real daemon (fixture frpc),
// real desired-state files. Convergence, idempotence, dry run, prune, a refused instance, secrets kept out of every
// answer, and the export of one host applied on a second, empty one.
import test, { type ExecutionContext } from 'ava';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { cli, loggedIn } from '../../helpers/cli.js';
import { disposeWithTunnels, startDaemon, tempDir, type Daemon } from '../../helpers/daemon.js';
import { instanceSettings, statusOf, waitFor } from '../../helpers/instances.js';

const TOKEN = 'apply-test-literal-token-4711';
const ENV_SECRET = 'apply-test-env-secret-0815';

interface Host {
  daemon: Daemon;
  token: string;
  env: Record<string, string>;
}

async function host(t: ExecutionContext): Promise<Host> {
  const daemon = await startDaemon({ settingsToml: instanceSettings() });
  const token = await daemon.login();
  t.teardown(() => disposeWithTunnels(daemon, token));
  return { daemon, token, env: await loggedIn(daemon, t) };
}

/** A desired-state file: `web` inline (a literal token), `db` from an frpc file of its own (a token by reference). */
function desired(port: number, options: { webLocalPort?: number; withDb?: boolean; webBroken?: boolean } = {}) {
  const web = [
    '  - name: web',
    '    state: running',
    '    bootAtStart: false',
    '    labels: { team: web, tier: front }',
    '    policy: { disconnectedSecs: 45 }',
    '    probes: false',
    '    frpc:',
    '      serverAddr: 127.0.0.1',
    `      serverPort: ${port}`,
    `      auth: { method: token, token: ${TOKEN} }`,
    '      proxies:',
    `        - { name: ssh, type: tcp, localIP: 127.0.0.1, localPort: ${options.webLocalPort ?? 22}, remotePort: 6022 }`,
    ...(options.webBroken
      ? ['        - { name: ssh, type: tcp, localIP: 127.0.0.1, localPort: 23, remotePort: 6023 }']
      : []),
  ];
  const db = ['  - name: db', '    env: [DB_TOKEN]', '    configFile: db-frpc.toml'];
  return ['instances:', ...web, ...(options.withDb === false ? [] : db)].join('\n') + '\n';
}

const DB_FRPC = (port: number) =>
  [
    'serverAddr = "127.0.0.1"',
    `serverPort = ${port}`,
    'auth.token = "{{ .Envs.DB_TOKEN }}"',
    '',
    '[[proxies]]',
    'name = "pg"',
    'type = "tcp"',
    'localIP = "127.0.0.1"',
    'localPort = 5432',
    'remotePort = 6432',
    '',
  ].join('\n');

async function files(t: ExecutionContext, port: number): Promise<string> {
  const dir = await tempDir('tunnelward-apply-', t);
  await writeFile(join(dir, 'db-frpc.toml'), DB_FRPC(port));
  return dir;
}

async function apply(h: Host, file: string, ...flags: string[]) {
  return cli(['apply', '-f', file, ...flags], { ...h.env, DB_TOKEN: ENV_SECRET });
}

async function applyJson(h: Host, file: string, ...flags: string[]) {
  const run = await apply(h, file, '--json', ...flags);
  return { ...run, data: JSON.parse(run.stdout) as ApplyData };
}

interface ApplyData {
  dryRun: boolean;
  counts: Record<string, number>;
  instances: Array<{
    name: string;
    instanceID: number | null;
    outcome: string;
    diff: string;
    changes: string[];
    message: string;
    plan: { action: string } | null;
    revision: number | null;
  }>;
}

const byName = (data: ApplyData, name: string) => data.instances.find((i) => i.name === name)!;

async function instances(h: Host): Promise<Array<{ instanceID: number; name: string; configPath: string }>> {
  const res = await h.daemon.get('/tunnelAct/instanceMgr/list', { token: h.token });
  return res.body.data;
}

async function fileOf(h: Host, name: string): Promise<{ id: string; text: string; revision: number }> {
  const found = (await instances(h)).find((i) => i.name === name)!;
  const info = await h.daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${found.instanceID}`, { token: h.token });
  return {
    id: String(found.instanceID),
    text: await readFile(info.body.data.configPath, 'utf8'),
    revision: info.body.data.revision,
  };
}

test('apply creates, a second apply changes nothing, a change goes through the pipeline with a masked diff, a dry run writes nothing', async (t) => {
  const h = await host(t);
  const dir = await files(t, 7301);
  const file = join(dir, 'hosts.yaml');
  await writeFile(file, desired(7301));

  const first = await applyJson(h, file);
  t.is(first.code, 0, first.stderr);
  t.deepEqual(first.data.counts, { created: 2, changed: 0, unchanged: 0, deleted: 0, failed: 0 });
  t.regex(byName(first.data, 'web').message, /started/);
  const web = await fileOf(h, 'web');
  t.regex(web.text, /name = "ssh"/);
  const info = await h.daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${web.id}`, { token: h.token });
  t.deepEqual(info.body.data.labels, { team: 'web', tier: 'front' });
  t.deepEqual(info.body.data.policy, { disconnectedSecs: 45 });
  await waitFor(
    () => statusOf(h.daemon, h.token, web.id),
    (s) => s.state === 'running',
  );
  const db = await fileOf(h, 'db');
  t.regex(db.text, /token = "\{\{ \.Envs\.DB_TOKEN \}\}"/, 'the reference is kept as it is');
  const dbInfo = await h.daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${db.id}`, { token: h.token });
  t.deepEqual(Object.keys(dbInfo.body.data.environment), ['DB_TOKEN']);
  t.false(first.stdout.includes(TOKEN) || first.stdout.includes(ENV_SECRET), 'no secret in the answer');

  // The same file again: nothing changes, and it says so.
  const second = await apply(h, file);
  t.is(second.code, 0, second.stderr);
  t.regex(second.stdout, /0 created, 0 changed, 2 unchanged, 0 deleted, 0 failed/);
  t.is((await fileOf(h, 'web')).revision, web.revision, 'no new revision');
  t.is((await fileOf(h, 'web')).text, web.text, 'the file byte for byte');

  // A proxy changed: a dry run says so and writes nothing.
  await writeFile(file, desired(7301, { webLocalPort: 2222 }));
  const dry = await apply(h, file, '--dry-run', '--diff');
  t.is(dry.code, 0, dry.stderr);
  t.regex(dry.stdout, /changed\s+web \[reload\]: would change/);
  t.regex(dry.stdout, /-localPort = 22\n.*\+localPort = 2222/s);
  t.regex(dry.stdout, /dry run, nothing written: 0 created, 1 changed, 1 unchanged/);
  t.is((await fileOf(h, 'web')).text, web.text, 'a dry run writes nothing');
  t.is((await fileOf(h, 'web')).revision, web.revision);

  const changed = await applyJson(h, file, '--diff');
  t.is(changed.code, 0, changed.stderr);
  t.is(byName(changed.data, 'web').outcome, 'changed');
  t.is(byName(changed.data, 'web').plan?.action, 'reload');
  t.is(byName(changed.data, 'web').revision, web.revision + 1);
  t.regex(byName(changed.data, 'web').diff, /\+localPort = 2222/);
  t.is(byName(changed.data, 'db').outcome, 'unchanged');
  t.regex((await fileOf(h, 'web')).text, /localPort = 2222/);
  t.false(changed.stdout.includes(TOKEN) || changed.stdout.includes(ENV_SECRET), 'no secret in the answer');

  // Attributes only: a label and the policy.
  await writeFile(file, desired(7301, { webLocalPort: 2222 }).replace('tier: front', 'tier: back'));
  const labelled = await apply(h, file, '--diff');
  t.regex(labelled.stdout, /changed\s+web: changed \(not its file\)\n\s+labels\.tier: front -> back/);
  t.regex((await apply(h, file)).stdout, /0 changed, 2 unchanged/);

  // A new value of the environment: changed, by name only.
  const envChanged = await cli(['apply', '-f', file, '--diff'], { ...h.env, DB_TOKEN: 'another-value-9' });
  t.regex(envChanged.stdout, /changed\s+db: changed \(not its file\)\n\s+env DB_TOKEN: changed/);
  t.false(envChanged.stdout.includes('another-value-9'));
  const logged = h.daemon.output.join('\n');
  for (const secret of [TOKEN, ENV_SECRET, 'another-value-9']) t.false(logged.includes(secret), 'no secret in the log');

  // Stopped by the file: the state converges too, and then stays.
  await writeFile(
    file,
    desired(7301, { webLocalPort: 2222 })
      .replace('tier: front', 'tier: back')
      .replace('state: running', 'state: stopped'),
  );
  t.regex(
    (await apply(h, file, '--diff')).stdout,
    /changed\s+web: changed \(not its file\); stopped\n\s+state: running -> stopped/,
  );
  t.is((await statusOf(h.daemon, h.token, web.id)).state, 'stopped');
  t.regex((await apply(h, file)).stdout, /0 changed, 2 unchanged/);
});

test('a refused instance changes nothing of itself, the others still apply, and the CLI ends with 1', async (t) => {
  const h = await host(t);
  const dir = await files(t, 7302);
  const file = join(dir, 'hosts.yaml');
  await writeFile(file, desired(7302));
  t.is((await apply(h, file)).code, 0);
  const web = await fileOf(h, 'web');
  const db = await fileOf(h, 'db');

  // web gets two proxies of one name (tunnelward refuses), db a key the fixture frpc's verify refuses.
  await writeFile(file, desired(7302, { webBroken: true }));
  await writeFile(
    join(dir, 'db-frpc.toml'),
    DB_FRPC(7302).replace('[[proxies]]', 'metadatas = { "fixture.nonsense" = "1" }\n\n[[proxies]]'),
  );
  const refused = await applyJson(h, file);
  t.is(refused.code, 1);
  t.is(byName(refused.data, 'web').outcome, 'failed');
  t.regex(byName(refused.data, 'web').message, /ssh/);
  t.is(byName(refused.data, 'db').outcome, 'failed');
  t.regex(byName(refused.data, 'db').message, /frpc verify refuses/);
  for (const [name, before] of [
    ['web', web],
    ['db', db],
  ] as const) {
    const now = await fileOf(h, name);
    t.is(now.text, before.text, `${name}: the file as it was`);
    t.is(now.revision, before.revision, `${name}: the revision as it was`);
  }

  // A run user that does not exist, with a label and a proxy changed: refused before anything of it changes.
  await writeFile(
    file,
    desired(7302, { webLocalPort: 2200 })
      .replace('tier: front', 'tier: back')
      .replace('probes: false', 'probes: false\n    runUser: no-such-user-x'),
  );
  const noUser = await applyJson(h, file);
  t.is(noUser.code, 1);
  t.regex(byName(noUser.data, 'web').message, /no-such-user-x/);
  t.is((await fileOf(h, 'web')).text, web.text);
  const webInfo = await h.daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${web.id}`, { token: h.token });
  t.deepEqual(webInfo.body.data.labels, { team: 'web', tier: 'front' }, 'the labels as they were');
  t.is(webInfo.body.data.runUser, 'root');

  // A label and a refused file: the label is put back.
  await writeFile(file, desired(7302, { webBroken: true }).replace('tier: front', 'tier: back'));
  t.is((await apply(h, file)).code, 1);
  const after = await h.daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${web.id}`, { token: h.token });
  t.deepEqual(after.body.data.labels, { team: 'web', tier: 'front' }, 'the label put back');
  t.is((await fileOf(h, 'web')).text, web.text);
  await writeFile(file, desired(7302, { webBroken: true }));

  // One refused, one good: the good one applies.
  await writeFile(join(dir, 'db-frpc.toml'), DB_FRPC(7302).replace('localPort = 5432', 'localPort = 5433'));
  const mixed = await applyJson(h, file);
  t.is(mixed.code, 1);
  t.is(byName(mixed.data, 'web').outcome, 'failed');
  t.is(byName(mixed.data, 'db').outcome, 'changed');
  t.regex((await fileOf(h, 'db')).text, /localPort = 5433/);
  t.is((await fileOf(h, 'web')).text, web.text);

  // A file that does not fit the schema is refused whole, before anything is sent.
  await writeFile(file, 'instances:\n  - name: x\n    bootAtStart: maybe\n');
  const bad = await apply(h, file);
  t.is(bad.code, 1);
  t.regex(bad.stderr, /instances\.0\.bootAtStart/);
  t.is((await instances(h)).length, 2);
});

test('prune deletes only with --prune, and only the instances the file does not name', async (t) => {
  const h = await host(t);
  const dir = await files(t, 7303);
  const file = join(dir, 'hosts.yaml');
  await writeFile(file, desired(7303));
  t.is((await apply(h, file)).code, 0);
  await writeFile(file, desired(7303, { withDb: false }));

  const kept = await apply(h, file);
  t.regex(kept.stdout, /0 deleted/);
  t.deepEqual((await instances(h)).map((i) => i.name).sort(), ['db', 'web']);

  const dry = await apply(h, file, '--prune', '--dry-run');
  t.regex(dry.stdout, /deleted\s+db: would be deleted/);
  t.deepEqual((await instances(h)).map((i) => i.name).sort(), ['db', 'web']);

  const pruned = await apply(h, file, '--prune');
  t.is(pruned.code, 0, pruned.stderr);
  t.regex(pruned.stdout, /0 changed, 1 unchanged, 1 deleted/);
  t.deepEqual(
    (await instances(h)).map((i) => i.name),
    ['web'],
  );
  t.regex((await apply(h, file, '--prune')).stdout, /0 created, 0 changed, 1 unchanged, 0 deleted/);
});

test('export --all of one host applied on an empty second host reproduces its instances; applied back, nothing changes', async (t) => {
  const a = await host(t);
  const dir = await files(t, 7304);
  const file = join(dir, 'hosts.yaml');
  await writeFile(file, desired(7304));
  t.is((await apply(a, file)).code, 0);

  const exported = join(dir, 'export.yaml');
  const out = await cli(['export', '--all', '-o', exported], a.env);
  t.is(out.code, 0, out.stderr);
  const text = await readFile(exported, 'utf8');
  const state = parseYaml(text) as { instances: Array<{ name: string; frpc: Record<string, unknown> }> };
  t.deepEqual(state.instances.map((i) => i.name).sort(), ['db', 'web']);
  t.false('webServer' in state.instances[0]!.frpc, "tunnelward's admin endpoint is not exported");
  t.false('clientID' in state.instances[0]!.frpc, 'the default clientID is not exported');
  t.true(text.includes(TOKEN), 'a superuser exports the secret as the file holds it');
  t.true(text.includes('{{ .Envs.DB_TOKEN }}'), 'a reference is exported as a reference');
  t.false(text.includes(ENV_SECRET), 'an environment value is never exported');

  t.regex(
    (await apply(a, exported)).stdout,
    /0 created, 0 changed, 2 unchanged/,
    'the export applied where it came from',
  );

  const b = await host(t);
  const created = await apply(b, exported);
  t.is(created.code, 0, created.stderr);
  t.regex(created.stdout, /2 created, 0 changed/);
  t.regex((await apply(b, exported)).stdout, /0 created, 0 changed, 2 unchanged/);
  const again = join(dir, 'again.toml');
  t.is((await cli(['export', '--all', '-o', again], b.env)).code, 0);
  t.regex((await apply(a, again)).stdout, /0 created, 0 changed, 2 unchanged/, 'TOML too');
  const fromB = await cli(['export', '--all'], b.env);
  t.deepEqual(parseYaml(fromB.stdout), state, 'both hosts export the same desired state');
});

test('an admin who may not read secrets exports references in their place, never the mask', async (t) => {
  const h = await host(t);
  const dir = await files(t, 7305);
  const file = join(dir, 'hosts.yaml');
  await writeFile(file, desired(7305));
  t.is((await apply(h, file)).code, 0);
  const made = await h.daemon.post(
    '/userMgr/create',
    { username: 'operator', passwd: 'Operator123!x', type: 'admin' },
    { token: h.token },
  );
  t.true(made.body.success, made.body.message);
  const env = await loggedIn(h.daemon, t, 'operator', 'Operator123!x');
  const out = await cli(['export', '--all'], env);
  t.is(out.code, 0, out.stderr);
  t.false(out.stdout.includes(TOKEN));
  t.false(out.stdout.includes('********'), 'the mask is never written as if it were the secret');
  t.regex(out.stdout, /token: "\{\{ \.Envs\.WEB_AUTH_TOKEN \}\}"/);
  t.regex(out.stderr, /web: secrets not exported .* set WEB_AUTH_TOKEN/);
  const state = parseYaml(out.stdout) as { instances: Array<{ name: string; env: string[] }> };
  t.deepEqual(state.instances.find((i) => i.name === 'web')!.env, ['WEB_AUTH_TOKEN']);
});

test('the example of docs/apply.md is a file apply reads and would apply', async (t) => {
  const h = await host(t);
  const example = join(PACKAGE_ROOT, 'examples', 'desired-state.yaml');
  const dry = await cli(['apply', '-f', example, '--dry-run', '--diff'], { ...h.env, FRP_TOKEN: 'example-token' });
  t.is(dry.code, 0, dry.stdout + dry.stderr);
  t.regex(dry.stdout, /created\s+web: would be created: 2 proxies, 0 visitors/);
  t.regex(dry.stdout, /created\s+db: would be created: 1 proxies, 0 visitors/);
  t.regex(dry.stdout, /policy\.memoryMaxMB: \(none\) -> 64/);
  t.is((await instances(h)).length, 0, 'a dry run creates nothing');
  const toml = join(await tempDir('tunnelward-apply-', t), 'state.toml');
  await writeFile(toml, '[[instances]]\nname = "web"\n\n[instances.frpc]\nserverAddr = "127.0.0.1"\n');
  t.regex((await cli(['apply', '-f', toml, '--dry-run'], h.env)).stdout, /1 created/, 'TOML reads the same');
});
