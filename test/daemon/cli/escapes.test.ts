// Text that others write (a username tried at /login, a tunnel's output, what the frp server answers, names) reaches
// an operator's terminal through the CLI: no control character of it may act on the terminal, on a TTY or in a pipe.
// The tunnels are the real frpc, clients of a real frps whose server plugin answers with such text.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { WebSocketServer } from 'ws';
import { cli, loggedIn } from '../../helpers/cli.js';
import { CLI, disposeWithTunnels, startWithRoot, tempDir, type Daemon } from '../../helpers/daemon.js';
import { freePort } from '../../helpers/frp.js';
import { waitFor } from '../../helpers/instances.js';
import { addProxy, createTunnel, frpsFor, httpTo, realFrpSettings, start, tcpTo } from '../../helpers/real-frp.js';

/** Raw control characters other than tab and newline: none may reach the CLI's output. */
const RAW_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

const TITLE = '\x1b]0;pwned\x07';
const CLIPBOARD = '\x1b]52;c;cHduZWQ=\x07';
const DCS = '\x1bPq#0;2;0;0;0\x1b\\';
const C1_CSI = '\x9b2J';
/** What the frp server answers to a proxy it refuses: every kind of sequence, and bare controls. */
const REFUSAL = `refused ${TITLE} ${C1_CSI} ${DCS} ${CLIPBOARD} bell\x07 nul\x00 del\x7f nel\x85 end`;
/** The custom domain the server gives an http proxy instead of its own. */
const EVIL_DOMAIN = `evil${CLIPBOARD}.example`;

let daemon: Daemon;
let root: string;
test.before(async () => {
  ({ daemon, root } = await startWithRoot({ settingsToml: realFrpSettings() }));
});
test.after.always(() => disposeWithTunnels(daemon, root));

/** An frps server plugin (NewProxy) that refuses the proxy `refused` and rewrites each http proxy's domain. */
async function hostilePlugin(t: ExecutionContext): Promise<number> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const { content } = JSON.parse(body);
      res.setHeader('Content-Type', 'application/json');
      if (content.proxy_name === 'refused') res.end(JSON.stringify({ reject: true, reject_reason: REFUSAL }));
      else if (content.proxy_type === 'http')
        res.end(
          JSON.stringify({ reject: false, unchange: false, content: { ...content, custom_domains: [EVIL_DOMAIN] } }),
        );
      else res.end(JSON.stringify({ reject: false, unchange: true }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

/** The text as the CLI is to show it: each control character but tab and newline as `\xNN`. */
const shown = (text: string) =>
  text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);

function assertNoRawControl(t: ExecutionContext, run: { stdout: string; stderr: string }, what: string) {
  const raw = RAW_CONTROL.exec(run.stdout + run.stderr);
  t.is(raw, null, `${what}: raw ${JSON.stringify(raw?.[0])} in ${JSON.stringify(run.stdout + run.stderr)}`);
}

test('logs --system: a username tried at /login without a token comes back without its control sequences', async (t) => {
  const env = await loggedIn(daemon, t);
  const username = `${TITLE}${CLIPBOARD}${C1_CSI}x`;
  t.is((await daemon.post('/login', { username, passwd: 'Whatever1!x' })).status, 401);
  for (const json of [false, true]) {
    const args = ['logs', '--system', '-n', '100', ...(json ? ['--json'] : [])];
    const run = await waitFor(
      () => cli(args, env),
      (r) => /login: failed/.test(r.stdout),
    );
    t.is(run.code, 0, run.stderr);
    assertNoRawControl(t, run, args.join(' '));
  }
});

test('logs and proxies show what the tunnel wrote and the frp server answered without its control sequences', async (t) => {
  const pluginPort = await hostilePlugin(t);
  const frps = await frpsFor(t, {
    token: 'escapes-token',
    extra: `[[httpPlugins]]\nname = "hostile"\naddr = "127.0.0.1:${pluginPort}"\npath = "/handler"\nops = ["NewProxy"]`,
  });
  const { id } = await createTunnel(daemon, root, frps, 'cli_escapes');
  await addProxy(daemon, root, id, tcpTo('refused', 22, await freePort()));
  await addProxy(daemon, root, id, httpTo('web', 80, 'ok.example'));
  const env = await loggedIn(daemon, t);
  await start(daemon, root, id);

  // The tunnel's own output: frpc logs the server's refusal as it came.
  const logs = await waitFor(
    () => cli(['logs', '-n', '100', 'cli_escapes'], env),
    (r) => /\[refused\] start error: refused/.test(r.stdout),
  );
  assertNoRawControl(t, logs, 'logs');
  t.regex(logs.stdout, /\[refused\] start error: refused .*bell nul del nel end\n/);
  const json = await cli(['logs', '-n', '100', 'cli_escapes', '--json'], env);
  assertNoRawControl(t, json, 'logs --json');

  // What frpc reports of each proxy, from the server: the address shown visibly, the JSON exact.
  const proxies = await waitFor(
    () => cli(['proxies', 'cli_escapes'], env),
    (r) => /\nweb .*\bup\b/.test(r.stdout) && /\nrefused .*start error/.test(r.stdout),
  );
  assertNoRawControl(t, proxies, 'proxies');
  t.true(proxies.stdout.includes(`${shown(EVIL_DOMAIN)}:${frps.vhostHTTPPort}`), proxies.stdout);
  const listed = await cli(['proxies', 'cli_escapes', '--json'], env);
  assertNoRawControl(t, listed, 'proxies --json');
  const parsed = JSON.parse(listed.stdout) as Array<Record<string, string>>;
  t.is(parsed.find((p) => p.name === 'refused')!.err, REFUSAL, 'JSON keeps the text exactly');
  t.is(parsed.find((p) => p.name === 'web')!.remoteAddr, `${EVIL_DOMAIN}:${frps.vhostHTTPPort}`);
});

/** A server that answers like tunnelward with whatever text it likes: names, states, messages, dates. */
async function anyServer(t: ExecutionContext, text: string): Promise<string> {
  const data: Record<string, unknown> = {
    '/login': { token: 'stub-token', username: text, type: 'superuser' },
    '/whoami': { userID: 1, username: text, type: text, expireAt: text },
    '/tunnelAct/instanceMgr/list': [
      {
        instanceID: 1,
        name: text,
        state: 'running',
        pid: 7,
        uptimeSecs: 5,
        restarts: 0,
        connected: true,
        proxyStatus: {},
      },
      {
        instanceID: 2,
        name: 'plain',
        state: text,
        pid: null,
        restarts: 0,
        connected: null,
        proxyStatus: { [text]: 1 },
      },
    ],
    '/tunnelAct/instanceMgr/getInfo': { instanceID: 1, name: text, state: 'running', message: text, nested: { text } },
    '/tunnelAct/instanceMgr/start': { results: [{ instanceID: 1, name: text, ok: false, state: text, message: text }] },
    '/userMgr/list': [{ UserID: 1, Username: text, Type: text, CreatedAt: text }],
    '/settings/get': { [text]: text },
  };
  const server = createServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ success: path in data, message: text, data: data[path] }));
  });
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws) => {
    ws.send(JSON.stringify({ event: 'events.start', seq: 0 }));
    ws.send(
      JSON.stringify({ event: 'instance.state', seq: 1, at: text, instanceID: 1, name: text, from: text, to: text }),
    );
    ws.send(JSON.stringify({ event: text, seq: 2, at: text, instanceID: 1, name: text, message: text }));
    ws.close(1000);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    wss.close();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The command run on a terminal (a pty of `script`), with colours on. */
function onTerminal(args: string[], env: Record<string, string>): Promise<{ stdout: string; stderr: string }> {
  const command = [process.execPath, CLI, ...args].map((arg) => `'${arg}'`).join(' ');
  const proc = spawn('script', ['-qec', command, '/dev/null'], {
    env: { ...process.env, ...env, TERM: 'xterm-256color', NO_COLOR: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  proc.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  return new Promise((resolve) => proc.on('close', () => resolve({ stdout, stderr: '' })));
}

test('names, states and messages a server sends are shown visibly by every command, on a terminal too', async (t) => {
  const text = `x${TITLE}${C1_CSI}${DCS}\x01\x7f\x85y`;
  const url = await anyServer(t, text);
  const home = await tempDir('tunnelward-cli-');
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const env = { XDG_CONFIG_HOME: home, TUNNELWARD_URL: url, TUNNELWARD_PASSWORD: 'x' };
  const runs: Array<[string[], boolean]> = [
    [['login', '--user', 'someone'], true],
    [['whoami'], true],
    [['ls'], true],
    [['status', '#1'], true],
    [['start', '#1'], true],
    [['users'], true],
    [['settings', 'get'], true],
    [['events'], true],
    [['ls', '--json'], false],
    [['events', '--json'], false],
    [['rm', '#1', '--yes'], true],
  ];
  for (const [args, showsText] of runs) {
    const run = await cli(args, env);
    assertNoRawControl(t, run, args.join(' '));
    if (showsText) t.true((run.stdout + run.stderr).includes(shown(text)), `${args.join(' ')}: ${run.stdout}`);
  }
  // The list's columns line up when a name is shown escaped.
  const ls = (await cli(['ls'], env)).stdout.split('\n');
  t.is(ls[1]!.indexOf('running'), ls[0]!.indexOf('state'), ls.join('\n'));
  t.is(JSON.parse((await cli(['ls', '--json'], env)).stdout)[0].name, text, 'JSON keeps the text exactly');

  // On a terminal: the CLI's own colours, and nothing else.
  for (const args of [['ls'], ['events'], ['start', '#1']]) {
    const run = await onTerminal(args, env);
    t.regex(run.stdout, /\x1b\[(1|3[1-4]|90)m/, `${args.join(' ')} in colour`);
    const withoutOwnColours = run.stdout.replace(/\x1b\[(0|1|3[1-4]|90)m/g, '').replace(/\r\n/g, '\n');
    assertNoRawControl(t, { stdout: withoutOwnColours, stderr: '' }, `${args.join(' ')} on a terminal`);
    t.true(withoutOwnColours.includes(shown(text)), withoutOwnColours);
  }
});

test('what a user typed is echoed back visibly in a failure', async (t) => {
  const env = await loggedIn(daemon, t);
  const run = await cli(['stop', `nope${TITLE}${C1_CSI}`], env);
  t.is(run.code, 1);
  assertNoRawControl(t, run, 'stop');
  t.true(run.stderr.includes('no instance named nope\\x1b]0;pwned\\x07\\x9b2J'), run.stderr);
});
