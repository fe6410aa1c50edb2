// What an operator moving frpc tunnels in sees and keeps, with the real frpc and frps: `tunnelward proxies` with a
// failed proxy's error and where each proxy is reached, the visitors, an INI file frpc accepts (keys it ignores
// included), a lower-case environment placeholder that frpc fills, and a commented TOML file kept as written.
import test from 'ava';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { cli, loggedIn } from '../../helpers/cli.js';
import { tempDir, type Daemon } from '../../helpers/daemon.js';
import { echoServer, freePort, REAL_FRPC, roundTrip, type Frps } from '../../helpers/frp.js';
import {
  addProxy,
  adminEndpointOf,
  createTunnel,
  frpsFor,
  realFrpDaemon,
  httpTo,
  start,
  statusUntil,
  tcpTo,
} from '../../helpers/real-frp.js';

const daemonFor = realFrpDaemon;

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
    new RegExp(`held\\s+tcp\\s+127\\.0\\.0\\.1:${echo.port}\\s+127\\.0\\.0\\.1:${heldPort}\\s+stopped\\n`),
  );
  t.regex(before.stdout, /web\s+http\s+\S+\s+a\.tunnel\.test, b\.tunnel\.test\s+stopped\n/);

  await start(daemon, root, id);
  await statusUntil(daemon, root, id, (s) => s.proxyStatus['start error'] === 1 && s.proxyStatus.running === 2);
  const run = await cli(['proxies', 'vi_view'], env);
  t.is(run.code, 0, run.stderr);
  const lines = run.stdout.split('\n');
  t.regex(lines[0]!, /^name\s+type\s+local\s+remote\s+health\s+why$/);
  // The port a process of the host holds: frps's own words, and the remote the file asks for (not `:port`).
  t.regex(
    run.stdout,
    new RegExp(`held\\s+tcp\\s+\\S+\\s+127\\.0\\.0\\.1:${heldPort}\\s+down\\s+start error: port unavailable\\n`),
  );
  t.regex(run.stdout, new RegExp(`free\\s+tcp\\s+\\S+\\s+127\\.0\\.0\\.1:${free}\\s+up\\s+-\\n`));
  // frps reports each domain once per location: shown once each.
  const web = lines.find((line) => line.startsWith('web '))!;
  t.regex(web, new RegExp(`a\\.tunnel\\.test:${frps.vhostHTTPPort}, b\\.tunnel\\.test:${frps.vhostHTTPPort}\\s+up`));
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

test("frp's own environment example: placeholders in the address and bare as a port, filled by frpc; bytes flow and the values stay masked", async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const remote = await freePort();
  // As frp's README writes it (its address and port taken from the environment), plus the server's token.
  const content = [
    'serverAddr = "{{ .Envs.FRP_SERVER_ADDR }}"',
    `serverPort = ${frps.bindPort}`,
    `auth.token = "${frps.token}"`,
    '',
    '[[proxies]]',
    'name = "ssh"',
    'type = "tcp"',
    'localIP = "127.0.0.1"',
    `localPort = ${echo.port}`,
    'remotePort = {{ .Envs.FRP_SSH_REMOTE_PORT }}',
    '',
  ].join('\n');
  const res = await importFile(daemon, root, 'vi_frp_readme', content);
  t.true(res.body.success, res.body.message);
  const id = String(res.body.data.instanceID);
  const path = await configPathOf(daemon, root, Number(id));
  t.regex(
    await readFile(path, 'utf8'),
    /^remotePort = \{\{ \.Envs\.FRP_SSH_REMOTE_PORT \}\}$/m,
    'written bare, as read',
  );
  const env = { FRP_SERVER_ADDR: 'localhost', FRP_SSH_REMOTE_PORT: String(remote) };
  const set = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'environment', modifiedData: env },
    { token: root },
  );
  t.true(set.body.success, set.body.message);
  await start(daemon, root, id);
  await statusUntil(daemon, root, id, (s) => s.proxyStatus.running === 1);
  await roundTrip(remote, 'through the port the environment gave');

  // A change to the proxy keeps the placeholders; the list shows them, never what they render to.
  await daemon.post(
    '/tunnelAct/proxyMgr/modify',
    { instanceID: id, proxyName: 'ssh', proxyInfo: { 'transport.useCompression': true } },
    { token: root },
  );
  t.regex(await readFile(path, 'utf8'), /^remotePort = \{\{ \.Envs\.FRP_SSH_REMOTE_PORT \}\}$/m);
  const list = await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token: root });
  t.true(list.body.success, list.body.message);
  const status = await daemon.get(`/tunnelAct/instanceMgr/status?instanceID=${id}`, { token: root });
  const replies = JSON.stringify([list.body, status.body]);
  t.true(replies.includes('{{ .Envs.FRP_SSH_REMOTE_PORT }}'), replies);
  t.false(replies.includes(String(remote)), 'the rendered port is masked in every reply');
  const log = await readFile(join(daemon.dataDir, 'logs', `tunnel_${id}.log`), 'utf8');
  t.regex(log, /start proxy success/);
  t.false(log.includes(String(remote)), 'and in the log');
  await roundTrip(remote, 'still');
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
      'clientID = ...',
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

  // Later edits through the API change their lines and keep the operator's comments and layout around them.
  const id = String(res.body.data.instanceID);
  const edited = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: id, type: 'configFile', modifiedData: { 'log.level': 'info' } },
    { token: root },
  );
  t.true(edited.body.success, edited.body.message);
  await addProxy(daemon, root, id, { name: 'web', type: 'tcp', localPort: '80', remotePort: String(await freePort()) });
  const after = await readFile(path, 'utf8');
  for (const line of ['# office tunnels, moved from the old host', 'name = "ssh"  # the bastion', '# plain forwards'])
    t.true(after.includes(line), `${line} in\n${after}`);
  t.regex(after, /^level = "info" {2}# while moving$/m);
  t.regex(after, /^name = "web"$/m);
  t.true((await realVerify(path)).ok);
});

test("an imported file's own admin API is kept when it is safe (loopback, a password), replaced when not, and said", async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await daemonFor(t);
  const port = await freePort();
  const own = [
    ...server(frps),
    `auth.token = "${frps.token}"`,
    '# my admin UI',
    'webServer.addr = "127.0.0.1"',
    `webServer.port = ${port}`,
    'webServer.user = "me"',
    'webServer.password = "a-long-password"',
    '',
  ].join('\n');
  const kept = await importFile(daemon, root, 'vi_own_admin', own);
  t.true(kept.body.success, kept.body.message);
  t.regex(kept.body.message, /its webServer \(on loopback, with a password\) was kept/);
  const path = await configPathOf(daemon, root, kept.body.data.instanceID);
  const text = await readFile(path, 'utf8');
  t.true(text.startsWith(own.trimEnd()), text);
  // tunnelward reaches the tunnel through it: the tunnel's state comes from that admin API.
  await start(daemon, root, String(kept.body.data.instanceID));
  const status = await statusUntil(daemon, root, String(kept.body.data.instanceID), (s) => s.connected === true);
  t.true(status.connected);
  const answer = await fetch(`http://127.0.0.1:${port}/api/status`, {
    headers: { authorization: `Basic ${Buffer.from('me:a-long-password').toString('base64')}` },
  });
  t.is(answer.status, 200, "the operator's own credentials still open it");
  // The same file again: its port is the first one's now.
  const again = await importFile(daemon, root, 'vi_own_admin2', own);
  t.true(again.body.success, again.body.message);
  t.regex(again.body.message, new RegExp(`its webServer's port ${port} is held by another instance or program`));
  t.not((await adminEndpointOf(await configPathOf(daemon, root, again.body.data.instanceID))).port, port);

  // On every address, or without a real password: replaced, saying why.
  for (const [name, lines, why] of [
    [
      'vi_open_admin',
      [
        'webServer.addr = "0.0.0.0"',
        'webServer.port = 7400',
        'webServer.user = "admin"',
        'webServer.password = "a-long-password"',
      ],
      /listened on 0\.0\.0\.0, not on loopback/,
    ],
    [
      'vi_weak_admin',
      ['webServer.port = 7400', 'webServer.user = "admin"', 'webServer.password = "admin"'],
      /a password shorter than 8 characters/,
    ],
  ] as const) {
    const res = await importFile(daemon, root, name, [...server(frps), ...lines, ''].join('\n'));
    t.true(res.body.success, res.body.message);
    t.regex(res.body.message, why);
    const file = await readFile(await configPathOf(daemon, root, res.body.data.instanceID), 'utf8');
    t.regex(file, /webServer\.addr = "127\.0\.0\.1"|addr = "127\.0\.0\.1"/);
    t.false(file.includes('"admin"'), 'the old credentials are gone');
  }
});
