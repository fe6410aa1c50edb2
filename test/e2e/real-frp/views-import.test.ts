// What an operator moving frpc tunnels in sees and keeps, with the real frpc and frps: `tunnelward proxies` with a
// failed proxy's error and where each proxy is reached, the visitors, an INI file frpc accepts (keys it ignores
// included), a lower-case environment placeholder that frpc fills, and a commented TOML file kept as written.
import test, { type ExecutionContext } from 'ava';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { cli, loggedIn } from '../../helpers/cli.js';
import { disposeWithTunnels, startWithRoot, tempDir, type Daemon } from '../../helpers/daemon.js';
import { echoServer, freePort, REAL_FRPC, type Frps } from '../../helpers/frp.js';
import {
  addProxy,
  createTunnel,
  frpsFor,
  httpTo,
  realFrpSettings,
  start,
  statusUntil,
  tcpTo,
} from '../../helpers/real-frp.js';

async function daemonFor(t: ExecutionContext) {
  const { daemon, root } = await startWithRoot({ settingsToml: realFrpSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  return { daemon, root };
}

function realVerify(path: string): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(REAL_FRPC, ['verify', '-c', path], (err, stdout, stderr) =>
      resolve({ ok: err === null && stdout.includes('syntax is ok'), output: `${stdout}${stderr}`.trim() }),
    );
  });
}

const importFile = (daemon: Daemon, root: string, name: string, content: string, format?: string) =>
  daemon.post('/tunnelAct/instanceMgr/import', { name, content, ...(format ? { format } : {}) }, { token: root });

const configPathOf = async (daemon: Daemon, root: string, id: number) =>
  (await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root })).body.data.configPath as string;

const server = (frps: Frps) => [`serverAddr = "127.0.0.1"`, `serverPort = ${frps.bindPort}`];

test("proxies: a failed proxy's error and configured remote, a running one's reported remote, domains once, visitors", async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const env = await loggedIn(daemon, t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const held = createServer();
  const heldPort = await new Promise<number>((resolve) =>
    held.listen(0, '127.0.0.1', () => resolve((held.address() as { port: number }).port)),
  );
  t.teardown(() => new Promise<void>((resolve) => held.close(() => resolve())));
  const [free, bind] = [await freePort(), await freePort()];
  const { id } = await createTunnel(daemon, root, frps, 'vi_view');
  await addProxy(daemon, root, id, tcpTo('held', echo.port, heldPort));
  await addProxy(daemon, root, id, tcpTo('free', echo.port, free));
  await addProxy(daemon, root, id, {
    ...httpTo('web', echo.port, 'a.tunnel.test'),
    customDomains: ['a.tunnel.test', 'b.tunnel.test'],
    locations: ['/', '/static'],
  });
  const configPath = await configPathOf(daemon, root, Number(id));
  // A visitor, as an operator's file holds one (the API lists visitors read-only).
  await writeFile(
    configPath,
    `${await readFile(configPath, 'utf8')}\n[[visitors]]\nname = "db_visitor"\ntype = "stcp"\nserverName = "db"\nsecretKey = "vs-secret"\nbindPort = ${bind}\n`,
  );

  const before = await cli(['proxies', 'vi_view'], env);
  t.is(before.code, 0, before.stderr);
  // Not running: where the file asks to be reached.
  t.regex(
    before.stdout,
    new RegExp(`held\\s+tcp\\s+127\\.0\\.0\\.1:${echo.port}\\s+127\\.0\\.0\\.1:${heldPort}\\s+-\\n`),
  );
  t.regex(before.stdout, /web\s+http\s+\S+\s+a\.tunnel\.test, b\.tunnel\.test\s+-\n/);

  await start(daemon, root, id);
  await statusUntil(daemon, root, id, (s) => s.proxyStatus['start error'] === 1 && s.proxyStatus.running === 2);
  const run = await cli(['proxies', 'vi_view'], env);
  t.is(run.code, 0, run.stderr);
  const lines = run.stdout.split('\n');
  t.regex(lines[0]!, /^name\s+type\s+local\s+remote\s+status\s+error$/);
  // The port a process of the host holds: frps's own words, and the remote the file asks for (not `:port`).
  t.regex(
    run.stdout,
    new RegExp(`held\\s+tcp\\s+\\S+\\s+127\\.0\\.0\\.1:${heldPort}\\s+start error\\s+port unavailable\\n`),
  );
  t.regex(run.stdout, new RegExp(`free\\s+tcp\\s+\\S+\\s+127\\.0\\.0\\.1:${free}\\s+running\\s+-\\n`));
  // frps reports each domain once per location: shown once each.
  const web = lines.find((line) => line.startsWith('web '))!;
  t.regex(
    web,
    new RegExp(`a\\.tunnel\\.test:${frps.vhostHTTPPort}, b\\.tunnel\\.test:${frps.vhostHTTPPort}\\s+running`),
  );
  t.is(web.match(/a\.tunnel\.test/g)!.length, 1);
  t.regex(
    run.stdout,
    new RegExp(
      `\\n\\nvisitor\\s+type\\s+server name\\s+bind\\s+enabled\\ndb_visitor\\s+stcp\\s+db\\s+127\\.0\\.0\\.1:${bind}\\s+enabled\\n$`,
    ),
  );
  t.false(run.stdout.includes('vs-secret'));
});

test('INI: [common] use_encryption is accepted as frpc accepts it (and ignores it); a refused key names its section', async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const dir = await tempDir('vi-ini-', t);
  const remote = await freePort();
  const ini = [
    '[common]',
    'server_addr = 127.0.0.1',
    `server_port = ${frps.bindPort}`,
    `token = ${frps.token}`,
    'use_encryption = true',
    'use_compression = true',
    '',
    '[ssh]',
    'type = tcp',
    'local_port = 22',
    `remote_port = ${remote}`,
    '',
  ].join('\n');
  const path = join(dir, 'frpc.ini');
  await writeFile(path, ini);
  const verified = await realVerify(path);
  t.true(verified.ok, verified.output);

  const res = await importFile(daemon, root, 'vi_ini', ini);
  t.true(res.body.success, res.body.message);
  t.regex(
    res.body.message,
    /frpc's INI reader ignores these keys, so they were left out: \[common\] use_encryption, use_compression/,
  );
  t.regex(res.body.message, /use_encryption, use_compression in \[common\] set nothing/);
  const file = await readFile(await configPathOf(daemon, root, res.body.data.instanceID), 'utf8');
  t.false(/useEncryption|use_encryption/.test(file), 'frpc ignores it there, so it sets nothing here either');

  const refused = await importFile(
    daemon,
    root,
    'vi_ini_bad',
    ini.replace(`remote_port = ${remote}`, 'remote_port = 99999'),
  );
  t.is(refused.status, 400);
  t.regex(refused.body.message, /^\[ssh\]: remotePort/);
  const badToml = await importFile(
    daemon,
    root,
    'vi_toml_bad',
    [
      ...server(frps),
      'colour = "red"',
      '[[proxies]]',
      'name = "ssh"',
      'type = "tcp"',
      'localPort = 22',
      'remotPort = 1',
      '',
    ].join('\n'),
  );
  t.is(badToml.status, 400);
  t.regex(badToml.body.message, /^top level: Unknown config key: colour; proxies\[0\] \(name ssh\): .*remotPort/);
});

test('a lower-case {{ .Envs.frp_token }} is accepted at import and filled by frpc at start', async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const content = [...server(frps), 'auth.token = "{{ .Envs.frp_token }}"', ''].join('\n');
  const res = await importFile(daemon, root, 'vi_env', content, 'toml');
  t.true(res.body.success, res.body.message);
  const id = String(res.body.data.instanceID);
  const set = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'environment', modifiedData: { frp_token: frps.token } },
    { token: root },
  );
  t.true(set.body.success, set.body.message);
  await start(daemon, root, id);
  // frps requires the token: a login means frpc read it from the variable.
  const status = await statusUntil(daemon, root, id, (s) => s.connected === true);
  t.true(status.connected);
});

test("a commented TOML file is kept as written: only tunnelward's lines are added", async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const remote = await freePort();
  const original = [
    '# office tunnels, moved from the old host',
    ...server(frps),
    `auth.token = "${frps.token}"   # the server's token`,
    'transport.tls.enable = true',
    '',
    '# plain forwards',
    '[[proxies]]',
    'name = "ssh"  # the bastion',
    'type = "tcp"',
    'localPort = 22',
    `remotePort = ${remote}`,
    'transport.useEncryption = true',
    '',
    '[log]',
    'level = "debug"  # while moving',
    '',
  ].join('\n');
  const res = await importFile(daemon, root, 'vi_kept', original);
  t.true(res.body.success, res.body.message);
  const path = await configPathOf(daemon, root, res.body.data.instanceID);
  const written = (await readFile(path, 'utf8')).split('\n');
  // Every line of the original, in order and unchanged; the others are tunnelward's additions and nothing else.
  const added: string[] = [];
  let next = 0;
  const lines = original.split('\n');
  for (const line of written) {
    if (next < lines.length && line === lines[next]) next++;
    else added.push(line);
  }
  t.is(next, lines.length, written.join('\n'));
  t.deepEqual(
    added.map((line) => line.replace(/=.*/, '= ...')),
    [
      'loginFailExit = ...',
      'webServer.addr = ...',
      'webServer.port = ...',
      'webServer.user = ...',
      'webServer.password = ...',
      'localIP = ...',
      'disablePrintColor = ...',
    ],
  );
  const verified = await realVerify(path);
  t.true(verified.ok, verified.output);

  // A later edit through the API writes the file afresh: the settings stay, the comments go.
  const edited = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: String(res.body.data.instanceID), type: 'configFile', modifiedData: { 'log.level': 'info' } },
    { token: root },
  );
  t.true(edited.body.success, edited.body.message);
  t.false((await readFile(path, 'utf8')).includes('# office tunnels'));
});
