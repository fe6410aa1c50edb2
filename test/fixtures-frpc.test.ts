// Tests for the frpc stand-in (test/fixtures/frpc.mjs): the supervisor's tests trust it to behave like the
// real frpc v0.71.0 (test/real-frp/differential.test.ts holds the two side by side), so each behaviour they rely on,
// and each of its fault-injection controls, is pinned here against real processes and real files.
import test, { type ExecutionContext } from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'smol-toml';
import { merged, PROXY_EXAMPLES } from './config/proxy-examples.js';

const FIXTURE = fileURLToPath(new URL('../../test/fixtures/frpc.mjs', import.meta.url));
const ANSI = /\x1b\[[0-9;]*m/g;
const STAMP = String.raw`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}`;
const RUN_ID = /login to server success, get run id \[([0-9a-f]{16})\]/;

const VALID = `serverAddr = "127.0.0.1"
serverPort = 7000
auth.method = "token"
auth.token = "secret"
`;
const TCP_PROXY = `
[[proxies]]
name = "ssh"
type = "tcp"
localIP = "127.0.0.1"
localPort = 22
remotePort = 6000
`;
const NO_COLOUR = 'log.disablePrintColor = true\n';

async function writeConfig(t: ExecutionContext, text: string, name = 'frpc.toml'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tw-frpc-fixture-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

interface Running {
  child: ChildProcess;
  output: () => string;
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>;
  exited: Promise<Exit>;
}

function start(t: ExecutionContext, args: string[], env: Record<string, string | undefined> = {}): Running {
  const child = spawn(FIXTURE, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    for (const check of waiters) check();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<Exit>((resolve) => {
    child.on('close', (code, signal) => {
      for (const check of waiters) check();
      resolve({ code, signal, stdout, stderr });
    });
  });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const waitFor = (pattern: RegExp, timeoutMs = 15_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`timed out waiting for ${pattern}; output so far:\n${stdout}${stderr}`));
      }, timeoutMs);
      function check(): void {
        const match = stdout.replace(ANSI, '').match(pattern);
        if (match) {
          clearTimeout(timer);
          waiters.delete(check);
          resolve(match);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          clearTimeout(timer);
          waiters.delete(check);
          reject(
            new Error(`fixture exited (${child.exitCode ?? child.signalCode}) before ${pattern}:\n${stdout}${stderr}`),
          );
        }
      }
      waiters.add(check);
      check();
    });
  return { child, output: () => stdout, waitFor, exited };
}

// A file that starts after all would run until signalled: ended after 15 s, so that the test fails, not hangs.
const run = (t: ExecutionContext, args: string[]): Promise<Exit> => {
  const running = start(t, args);
  const timer = setTimeout(() => running.child.kill('SIGKILL'), 15_000);
  return running.exited.finally(() => clearTimeout(timer));
};

const plainLines = (text: string): string[] =>
  text
    .replace(ANSI, '')
    .split('\n')
    .filter((line) => line !== '');

test('-v and --version print 0.71.0 and exit 0', async (t) => {
  for (const flag of ['-v', '--version']) {
    const result = await run(t, [flag]);
    t.is(result.code, 0, flag);
    t.is(result.stdout, '0.71.0\n', flag);
  }
});

test('verify accepts a valid file in every -c spelling', async (t) => {
  const file = await writeConfig(t, VALID + TCP_PROXY);
  for (const args of [
    ['verify', '-c', file],
    ['verify', `--config=${file}`],
    ['verify', `-c=${file}`],
    ['-c', file, 'verify'],
  ]) {
    const result = await run(t, args);
    t.is(result.code, 0, args.join(' '));
    t.is(result.stdout, `frpc: the configuration file ${file} syntax is ok\n`, args.join(' '));
  }
});

test('verify rejects an invalid file with the error and exit 1', async (t) => {
  const file = await writeConfig(t, 'server_addr = "127.0.0.1"\n');
  const result = await run(t, ['verify', '-c', file]);
  t.is(result.code, 1);
  t.is(result.stdout, 'json: unknown field "server_addr"\n');
});

test('no -c, a missing file and an unknown flag all exit 1', async (t) => {
  const none = await run(t, []);
  t.is(none.code, 1);
  t.regex(none.stdout, /no config file given/);

  const missing = await run(t, ['-c', '/nonexistent/tw-frpc.toml']);
  t.is(missing.code, 1);
  t.is(missing.stdout, 'open /nonexistent/tw-frpc.toml: no such file or directory\n');

  const flag = await run(t, ['--bogus']);
  t.is(flag.code, 1);
  t.is(flag.stderr, 'Error: unknown flag: --bogus\n');
});

const rejections: Array<[string, string, RegExp]> = [
  [
    'a [common] table (INI reader)',
    '[common]\nserver_addr = "127.0.0.1"\nserver_port = 7000\n',
    /\[common\] section: frpc would read it with its deprecated INI reader/,
  ],
  [
    'a snake_case top-level key',
    'server_addr = "127.0.0.1"\nserverPort = 7000\n',
    /^json: unknown field "server_addr"$/m,
  ],
  ['a snake_case auth key', 'auth_method = "token"\n', /^json: unknown field "auth_method"$/m],
  [
    'a snake_case proxy key',
    `${VALID}[[proxies]]\nname = "ssh"\ntype = "tcp"\nlocal_port = 22\n`,
    /^decode proxy at index 0: unmarshal ProxyConfig error: json: unknown field "local_port"$/m,
  ],
  ['an unknown top-level key', `${VALID}colour = "blue"\n`, /^json: unknown field "colour"$/m],
  ['an unknown nested key', `${VALID}transport.bogus = 1\n`, /^json: unknown field "bogus"$/m],
  [
    'remotePort on an http proxy',
    `${VALID}[[proxies]]\nname = "web"\ntype = "http"\nlocalPort = 80\nremotePort = 8080\n`,
    /unknown field "remotePort"/,
  ],
  [
    'a string serverPort',
    'serverAddr = "127.0.0.1"\nserverPort = "7000"\n',
    /^field "ClientCommonConfig.serverPort": cannot unmarshal string into int$/m,
  ],
  [
    'a string localPort',
    `${VALID}[[proxies]]\nname = "ssh"\ntype = "tcp"\nlocalPort = "22"\n`,
    /cannot unmarshal string into Go struct field TCPProxyConfig\.ProxyBaseConfig\.ProxyBackend\.localPort of type int/,
  ],
  [
    'a local port out of range',
    `${VALID}[[proxies]]\nname = "ssh"\ntype = "tcp"\nlocalPort = 70000\nremotePort = 6000\n`,
    /^proxy ssh: localPort: localPort: port number 70000 must be in the range 0\.\.65535$/m,
  ],
  [
    'a string webServer.port',
    `${VALID}webServer.port = "7400"\n`,
    /^field "ClientCommonConfig.webServer.port": cannot unmarshal string into int$/m,
  ],
  [
    'an unsupported auth.method',
    'serverAddr = "127.0.0.1"\nauth.method = "password"\n',
    /^invalid auth method, optional values are \[token oidc\]$/m,
  ],
  [
    'a duplicate proxy name',
    `${VALID}${TCP_PROXY}${TCP_PROXY.replace('6000', '6001')}`,
    /^proxy name \[ssh\] is duplicated$/m,
  ],
  [
    'a proxy without a name',
    `${VALID}[[proxies]]\ntype = "tcp"\nlocalPort = 22\n`,
    /^failed to set config source: proxy name cannot be empty$/m,
  ],
  [
    'a proxy without a type',
    `${VALID}[[proxies]]\nname = "ssh"\nlocalPort = 22\n`,
    /^decode proxy at index 0: unknown proxy type: $/m,
  ],
  [
    'an unknown proxy type',
    `${VALID}[[proxies]]\nname = "ssh"\ntype = "ftp"\n`,
    /^decode proxy at index 0: unknown proxy type: ftp$/m,
  ],
  [
    'a non-boolean enabled',
    `${VALID}${TCP_PROXY}enabled = "false"\n`,
    /cannot unmarshal string into Go struct field TCPProxyConfig\.ProxyBaseConfig\.enabled of type bool/,
  ],
  [
    'a non-string metadatas value',
    `${VALID}metadatas.owner = 42\n`,
    /^field "ClientCommonConfig.metadatas": cannot unmarshal number into string$/m,
  ],
  [
    'an unknown log.level',
    `${VALID}log.level = "verbose"\n`,
    /^invalid log level, optional values are \[trace debug info warn error\]$/m,
  ],
  ['a TOML syntax error', 'serverAddr = \n', /^toml: line 1, column \d+: /m],
  [
    'a misspelt fixture control',
    `${VALID}metadatas."fixture.exitNow" = "true"\n`,
    /unknown control metadatas\."fixture\.exitNow"/,
  ],
  [
    'secretKey on a tcp proxy',
    `${VALID}${TCP_PROXY}secretKey = "k"\n`,
    /^decode proxy at index 0: unmarshal ProxyConfig error: json: unknown field "secretKey"$/m,
  ],
  [
    'an unknown transport key on a proxy',
    `${VALID}${TCP_PROXY}transport.useEncrypt = true\n`,
    /json: unknown field "useEncrypt"$/m,
  ],
  [
    'a string useEncryption',
    `${VALID}${TCP_PROXY}transport.useEncryption = "true"\n`,
    /cannot unmarshal string into Go struct field ProxyTransport\.ProxyBaseConfig\.transport\.useEncryption of type bool/,
  ],
  [
    'an unknown plugin type',
    `${VALID}${TCP_PROXY}plugin.type = "ftp"\n`,
    /^decode proxy at index 0: unmarshal ProxyConfig error: unknown plugin type: ftp$/m,
  ],
  [
    'a plugin without a type',
    `${VALID}${TCP_PROXY}plugin.unixPath = "/x"\n`,
    /^decode proxy at index 0: unmarshal ProxyConfig error: plugin type is empty$/m,
  ],
  [
    'an option of another plugin',
    `${VALID}${TCP_PROXY}plugin.type = "socks5"\nplugin.unixPath = "/x"\n`,
    /^decode proxy at index 0: unmarshal proxy plugin error: unmarshal ClientPluginOptions error: json: unknown field "unixPath"$/m,
  ],
  [
    'a non-boolean plugin enableHTTP2',
    `${VALID}${TCP_PROXY}plugin.type = "https2http"\nplugin.localAddr = "a:1"\nplugin.enableHTTP2 = "no"\n`,
    /cannot unmarshal string into Go struct field HTTPS2HTTPPluginOptions\.enableHTTP2 of type bool/,
  ],
  [
    'a plugin without its required option',
    `${VALID}${TCP_PROXY}plugin.type = "https2http"\n`,
    /^proxy ssh: plugin https2http: localAddr is required$/m,
  ],
  [
    'an unknown field in a health check header',
    `${VALID}${TCP_PROXY}healthCheck.type = "tcp"\nhealthCheck.httpHeaders = [{ name = "a", val = "b" }]\n`,
    /json: unknown field "val"$/m,
  ],
  [
    'an http health check without a path',
    `${VALID}${TCP_PROXY}healthCheck.type = "http"\n`,
    /^proxy ssh: health check path should not be empty$/m,
  ],
  [
    'an unknown proxy protocol version',
    `${VALID}${TCP_PROXY}transport.proxyProtocolVersion = "v3"\n`,
    /^proxy ssh: not support proxy protocol version: v3$/m,
  ],
  [
    'a bandwidth limit in GB',
    `${VALID}${TCP_PROXY}transport.bandwidthLimit = "1GB"\n`,
    /^decode proxy at index 0: unmarshal ProxyConfig error: unit not support$/m,
  ],
  [
    'an http proxy without domains',
    `${VALID}[[proxies]]\nname = "web"\ntype = "http"\nlocalPort = 80\n`,
    /^proxy web: subdomain and custom domains should not be both empty$/m,
  ],
  [
    'a tcpmux proxy without its multiplexer',
    `${VALID}[[proxies]]\nname = "mux"\ntype = "tcpmux"\nlocalPort = 80\nsubdomain = "m"\n`,
    /^proxy mux: not support multiplexer: $/m,
  ],
  [
    'a template action other than .Envs',
    `${VALID}user = "{{ env "HOME" }}"\n`,
    /^template: frp:5: a Go template action other than \{\{ \.Envs\.NAME \}\}/m,
  ],
];

// One at a time: thirty-odd processes spawned together at the start of the suite slowed every file beside them.
for (const [what, text, message] of rejections) {
  test.serial(`rejects ${what} with exit 1 before starting`, async (t) => {
    const file = await writeConfig(t, text);
    const result = await run(t, ['-c', file]);
    t.is(result.code, 1);
    t.regex(result.stdout, message);
    t.notRegex(result.stdout, /start frpc service/);
  });
}

async function runWithEnv(args: string[], env: Record<string, string | undefined>): Promise<Exit> {
  const child = spawn(FIXTURE, args, { env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

test('{{ .Envs.NAME }} is rendered from the environment before the TOML is parsed; an unset one prints <no value>', async (t) => {
  const file = await writeConfig(
    t,
    `serverAddr = "127.0.0.1"
serverPort = {{ .Envs.TW_FIXTURE_PORT }}
auth.token = "{{.Envs.TW_FIXTURE_TOKEN}}"
${NO_COLOUR}
[[proxies]]
name = "{{  .Envs.TW_FIXTURE_NAME  }}"
type = "tcp"
localPort = 22
remotePort = 6000

[[proxies]]
name = "x{{ .Envs.TW_FIXTURE_UNSET }}"
type = "tcp"
localPort = 23
remotePort = 6001
`,
  );
  const env = {
    TW_FIXTURE_PORT: '7000',
    TW_FIXTURE_TOKEN: 't',
    TW_FIXTURE_NAME: 'from_env',
    TW_FIXTURE_UNSET: undefined,
  };
  const verify = await runWithEnv(['verify', '-c', file], env);
  t.is(verify.code, 0, verify.stdout);
  const unsetPort = await runWithEnv(['verify', '-c', file], { ...env, TW_FIXTURE_PORT: undefined });
  t.is(unsetPort.code, 1, 'serverPort = <no value> is not TOML');
  t.regex(unsetPort.stdout, /^toml: line 2, /m);
  const fixture = start(t, ['-c', file], env);
  // Go's text/template prints a missing map key as "<no value>" unless told otherwise, and frpc does not tell it.
  await fixture.waitFor(/proxy added: \[from_env x<no value>\]\n/);
  await fixture.waitFor(/\[from_env\] start proxy success\n/);
  t.regex(fixture.output(), /\[from_env\] start proxy success\n/);
  fixture.child.kill('SIGTERM');
  await fixture.exited;
});

test('any other template action is refused before parsing, and the environment does not reach the output', async (t) => {
  for (const action of [
    '{{ env "TW_FIXTURE_SECRET" }}',
    '{{ .Envs.TW_FIXTURE_SECRET | printf "%s" }}',
    '{{- .Envs.TW_FIXTURE_SECRET }}',
    '{{{ .Envs.TW_FIXTURE_SECRET }}',
  ]) {
    const file = await writeConfig(t, `${VALID}user = "${action.replace(/"/g, '\\"')}"\n`);
    const result = await runWithEnv(['verify', '-c', file], { TW_FIXTURE_SECRET: 'leaked-value' });
    t.is(result.code, 1, action);
    t.regex(result.stdout, /^template: frp:5: a Go template action other than/m, action);
    t.notRegex(result.stdout, /leaked-value/, action);
  }
});

test('verify accepts every proxy type and plugin with all the keys frpc 0.71 knows for it', async (t) => {
  const proxies = PROXY_EXAMPLES.map((example) => example.file);
  const file = await writeConfig(t, `${VALID}${stringify({ proxies })}`);
  const result = await run(t, ['verify', '-c', file]);
  t.is(result.code, 0, result.stdout);
  for (const example of PROXY_EXAMPLES) {
    const modified = await writeConfig(
      t,
      `${VALID}${stringify({ proxies: [merged(example.file, example.modified)] })}`,
    );
    const after = await run(t, ['verify', '-c', modified]);
    t.is(after.code, 0, `${example.file.name}: ${after.stdout}`);
  }
});

test('a valid file logs the frpc start lines in colour, wrapping each line like frpc', async (t) => {
  const file = await writeConfig(t, VALID + TCP_PROXY);
  const fixture = start(t, ['-c', file]);
  await fixture.waitFor(/\[ssh\] start proxy success\n/);
  const raw = fixture.output();
  const lines = plainLines(raw);
  const runId = RUN_ID.exec(raw.replace(ANSI, ''))?.[1];
  if (runId === undefined) return t.fail('no run id in the login line');
  t.deepEqual(
    lines.map((line) => line.replace(new RegExp(`^${STAMP} `), '')),
    [
      `[I] [sub/root.go:194] start frpc service for config file [${file}] with aggregated configuration`,
      '[I] [client/service.go:312] try to connect to server...',
      `[I] [client/service.go:332] [${runId}] login to server success, get run id [${runId}]`,
      `[I] [proxy/proxy_manager.go:183] [${runId}] proxy added: [ssh]`,
      `[I] [client/control.go:174] [${runId}] [ssh] start proxy success`,
    ],
  );
  for (const line of lines) t.regex(line, new RegExp(`^${STAMP} \\[I\\] `));
  // frpc's console writer colours the whole line including "\n", so the reset opens the next line.
  t.true(raw.startsWith('\x1b[1;34m'));
  t.true(raw.endsWith('\n\x1b[0m'));
  t.is(raw.split('\x1b[1;34m').length - 1, lines.length);
  t.is(raw.split('\n\x1b[0m').length - 1, lines.length);
  fixture.child.kill('SIGTERM');
  await fixture.exited;
});

test('log.disablePrintColor = true prints plain lines', async (t) => {
  const file = await writeConfig(t, VALID + NO_COLOUR + TCP_PROXY);
  const fixture = start(t, ['-c', file]);
  await fixture.waitFor(/start proxy success\n/);
  const raw = fixture.output();
  t.false(raw.includes('\x1b'));
  t.regex(
    raw,
    new RegExp(
      `^${STAMP} \\[I\\] \\[sub/root\\.go:194\\] start frpc service for config file \\[.+\\] with aggregated configuration\n`,
    ),
  );
  fixture.child.kill('SIGTERM');
  await fixture.exited;
});

test('SIGTERM kills it by the signal with no last line, and SIGINT likewise', async (t) => {
  const file = await writeConfig(t, VALID + NO_COLOUR + TCP_PROXY);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const fixture = start(t, ['-c', file]);
    await fixture.waitFor(/start proxy success\n/);
    const before = fixture.output();
    fixture.child.kill(signal);
    const result = await fixture.exited;
    t.is(result.code, null, signal);
    t.is(result.signal, signal);
    t.is(result.stdout, before, `${signal}: nothing printed after the signal`);
  }
});

test('fixture.ignoreSigterm logs and survives SIGTERM, so only SIGKILL stops it', async (t) => {
  const file = await writeConfig(t, `${VALID}${NO_COLOUR}metadatas."fixture.ignoreSigterm" = "true"\n${TCP_PROXY}`);
  const fixture = start(t, ['-c', file]);
  await fixture.waitFor(/start proxy success\n/);
  fixture.child.kill('SIGTERM');
  await fixture.waitFor(new RegExp(`${STAMP} \\[W\\] \\[[^\\]]+\\] fixture: ignoring SIGTERM\n`));
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.is(fixture.child.exitCode, null);
  t.is(fixture.child.signalCode, null);
  fixture.child.kill('SIGKILL');
  const result = await fixture.exited;
  t.is(result.signal, 'SIGKILL');
});

test('a proxy with enabled = false is neither added nor started', async (t) => {
  const proxies = ['a', 'b', 'c']
    .map(
      (name, i) => `
[[proxies]]
name = "${name}"
type = "tcp"
localPort = ${100 + i}
remotePort = ${6100 + i}
${name === 'b' ? 'enabled = false\n' : ''}`,
    )
    .join('');
  const file = await writeConfig(t, VALID + NO_COLOUR + proxies);
  const fixture = start(t, ['-c', file]);
  await fixture.waitFor(/\[c\] start proxy success\n/);
  const out = fixture.output();
  t.regex(out, /proxy added: \[a c\]\n/);
  t.regex(out, /\[a\] start proxy success/);
  t.notRegex(out, /\[b\]/);
  fixture.child.kill('SIGTERM');
  await fixture.exited;
});

test('fixture.exit = "now" logs an [E] line and exits 1', async (t) => {
  const file = await writeConfig(t, `${VALID}${NO_COLOUR}metadatas."fixture.exit" = "now"\n${TCP_PROXY}`);
  const result = await run(t, ['-c', file]);
  t.is(result.code, 1);
  t.regex(result.stdout, new RegExp(`^${STAMP} \\[E\\] \\[[^\\]]+\\] fixture: exiting with code 1`, 'm'));
  t.notRegex(result.stdout, /start proxy success/);
});

test('fixture.crashAfterMs exits with fixture.exitCode after running for that long', async (t) => {
  const file = await writeConfig(
    t,
    `${VALID}${NO_COLOUR}metadatas."fixture.crashAfterMs" = "300"
metadatas."fixture.exitCode" = "7"
${TCP_PROXY}`,
  );
  const fixture = start(t, ['-c', file]);
  await fixture.waitFor(/start proxy success\n/);
  t.is(fixture.child.exitCode, null, 'still running once started');
  const result = await fixture.exited;
  t.is(result.code, 7);
  const last = plainLines(result.stdout).at(-1) ?? '';
  t.regex(last, new RegExp(`^${STAMP} \\[E\\] .*fixture: crashing after 300 ms with exit code 7$`));
});

test('fixture.logBurst prints that many numbered lines at start', async (t) => {
  const file = await writeConfig(t, `${VALID}${NO_COLOUR}metadatas."fixture.logBurst" = "500"\n`);
  const fixture = start(t, ['-c', file]);
  await fixture.waitFor(/burst line 500\n/);
  const numbers = plainLines(fixture.output())
    .map((line) => /^\S+ \S+ \[I\] \[[^\]]+\] \[[0-9a-f]{16}\] burst line (\d+)$/.exec(line)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number);
  t.deepEqual(
    numbers,
    Array.from({ length: 500 }, (_, i) => i + 1),
  );
  fixture.child.kill('SIGTERM');
  await fixture.exited;
});

test('fixture.logEveryMs ticks steadily; logLevelCycle colours each level differently', async (t) => {
  const file = await writeConfig(
    t,
    `${VALID}log.level = "debug"
metadatas."fixture.logEveryMs" = "20"
metadatas."fixture.logLevelCycle" = "true"
`,
  );
  const fixture = start(t, ['-c', file]);
  await fixture.waitFor(/fixture: tick 4\n/);
  const raw = fixture.output();
  fixture.child.kill('SIGTERM');
  await fixture.exited;
  const colours: Record<string, string> = { D: '1;36', I: '1;34', W: '1;33', E: '1;31' };
  ['D', 'I', 'W', 'E'].forEach((level, i) => {
    t.true(raw.includes(`\x1b[${colours[level]}m`), `${level} colour`);
    t.regex(
      raw,
      new RegExp(
        `\x1b\\[${colours[level]}m${STAMP} \\[${level}\\] \\[[^\\]]+\\] \\[[0-9a-f]{16}\\] fixture: tick ${i + 1}\n\x1b\\[0m`,
      ),
    );
  });
});

test('log.level filters lower levels; trace lines are uncoloured as in frpc', async (t) => {
  const controls = 'metadatas."fixture.logEveryMs" = "15"\nmetadatas."fixture.logLevelCycle" = "true"\n';
  const warnFile = await writeConfig(t, `${VALID}log.level = "warn"\n${controls}${TCP_PROXY}`);
  const warn = start(t, ['-c', warnFile]);
  await warn.waitFor(/fixture: tick 8\n/);
  warn.child.kill('SIGTERM');
  const warnLevels = plainLines((await warn.exited).stdout).map((line) => / \[([TDIWE])\] /.exec(line)?.[1]);
  t.true(warnLevels.length >= 4);
  t.true(
    warnLevels.every((level) => level === 'W' || level === 'E'),
    warnLevels.join(''),
  );

  const infoFile = await writeConfig(t, `${VALID}${NO_COLOUR}${TCP_PROXY}`);
  const info = start(t, ['-c', infoFile]);
  await info.waitFor(/start proxy success\n/);
  await new Promise((resolve) => setTimeout(resolve, 50));
  info.child.kill('SIGTERM');
  t.notRegex((await info.exited).stdout, /\[[TD]\]/);

  // Heartbeats (debug lines) only without the tcp multiplexer, as in frpc.
  const traceFile = await writeConfig(t, `${VALID}log.level = "trace"\ntransport.tcpMux = false\n${TCP_PROXY}`);
  const trace = start(t, ['-c', traceFile]);
  await trace.waitFor(/receive heartbeat from server\n/);
  trace.child.kill('SIGTERM');
  const traceOut = (await trace.exited).stdout;
  t.regex(
    traceOut,
    new RegExp(`(^|\x1b\\[0m)${STAMP} \\[T\\] .*\\[ssh\\] change status from \\[new\\] to \\[wait start\\]\n`, 'm'),
    'a trace line has no colour',
  );
  t.regex(traceOut, new RegExp(`\x1b\\[1;36m${STAMP} \\[D\\] .*send heartbeat to server\n`));
});

test('log.to sends the lines to that file, uncoloured, instead of stdout', async (t) => {
  const file = await writeConfig(t, `${VALID}log.to = "frpc-out.log"\n${TCP_PROXY}`);
  const logFile = join(file, '..', 'frpc-out.log');
  const child = spawn(FIXTURE, ['-c', file], { cwd: join(file, '..') });
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  const deadline = Date.now() + 15_000;
  let text = '';
  while (!text.includes('start proxy success') && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    text = await readFile(logFile, 'utf8').catch(() => '');
  }
  t.regex(text, new RegExp(`^${STAMP} \\[I\\] \\[sub/root\\.go:194\\] start frpc service`));
  t.regex(text, /\[ssh\] start proxy success\n$/);
  t.false(text.includes('\x1b'));
  t.is(stdout, '');
});

// ---- the admin API (webServer) and the imaginary server (metadatas "fixture.control") ----

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

test('admin API: Basic auth, /api/status by type and name, start errors, a lost server, reload keeping what did not change', async (t) => {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'tw-frpc-admin-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const control = join(dir, 'control.json');
  await writeFile(control, JSON.stringify({ server: 'up', portsTaken: [6001] }));
  const web = `webServer.port = ${port}\nwebServer.user = "tw"\nwebServer.password = "pw"\nloginFailExit = false\n`;
  // frpc's second 20 ms long: the retry of a start error (30 s) and the login backoff (2 s, 4 s, ...) are quick.
  const controlKey = `metadatas."fixture.control" = ${JSON.stringify(control)}\nmetadatas."fixture.secondMs" = "20"\n`;
  const proxy = (name: string, remotePort: number) =>
    `\n[[proxies]]\nname = "${name}"\ntype = "tcp"\nlocalPort = 22\nremotePort = ${remotePort}\n`;
  const file = join(dir, 'frpc.toml');
  await writeFile(file, VALID + NO_COLOUR + web + controlKey + proxy('web', 6001) + proxy('ssh', 6000));
  const frpc = start(t, ['-c', file]);
  await frpc.waitFor(/admin server listen on 127\.0\.0\.1:\d+/);
  const api = async (path: string, auth = 'tw:pw', method = 'GET') => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { Authorization: `Basic ${Buffer.from(auth).toString('base64')}` },
    });
    const text = await res.text();
    return { status: res.status, text, json: () => JSON.parse(text) };
  };
  t.is((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200, 'healthz needs no credentials');
  const refused = await api('/api/status', 'tw:wrong');
  t.is(refused.status, 401);
  t.is(refused.text, 'Unauthorized\n');
  t.deepEqual((await api('/api/status')).json(), {
    tcp: [
      {
        name: 'ssh',
        type: 'tcp',
        status: 'running',
        err: '',
        local_addr: '127.0.0.1:22',
        plugin: '',
        remote_addr: '127.0.0.1:6000',
      },
      {
        name: 'web',
        type: 'tcp',
        status: 'start error',
        err: 'port already used',
        local_addr: '127.0.0.1:22',
        plugin: '',
        remote_addr: '',
      },
    ],
  });
  await frpc.waitFor(/\[web\] start error: port already used/);

  // The port given back: the start error is asked again 30 (fixture) seconds after it, and the proxy runs.
  await writeFile(control, JSON.stringify({ server: 'up', portsTaken: [] }));
  await frpc.waitFor(/\[web\] start proxy success/);
  t.like((await api('/api/status')).json().tcp[1], { name: 'web', status: 'running', remote_addr: '127.0.0.1:6001' });

  // The server lost: no status at all until frpc logs in again, then every proxy is registered anew.
  await writeFile(control, JSON.stringify({ server: 'down' }));
  await frpc.waitFor(
    /\[[0-9a-f]{16}\] try to connect to server\.\.\.\n.*\[[0-9a-f]{16}\] connect to server error: dial tcp 127\.0\.0\.1:7000: connect: connection refused\n/,
  );
  t.deepEqual((await api('/api/status')).json(), {});
  await writeFile(control, JSON.stringify({ server: 'up' }));
  await frpc.waitFor(/login to server success[^\n]*\n(?:.*\n)*.*login to server success/);
  t.is((await api('/api/status')).json().tcp.length, 2);

  // Reload: web removed, db added; ssh, unchanged, is not started again.
  const before = plainLines(frpc.output()).filter((l) => l.includes('[ssh] start proxy success')).length;
  await writeFile(file, VALID + NO_COLOUR + web + controlKey + proxy('ssh', 6000) + proxy('db', 6002));
  const reload = await api('/api/reload?strictConfig=true');
  t.is(reload.status, 200);
  t.deepEqual(
    (await api('/api/status')).json().tcp.map((p: { name: string }) => p.name),
    ['db', 'ssh'],
  );
  t.is(plainLines(frpc.output()).filter((l) => l.includes('[ssh] start proxy success')).length, before);
  t.regex(frpc.output(), /proxy removed: \[web\]/);

  // An invalid file is refused with frpc's JSON error, and nothing changes; so is what the control file refuses.
  await writeFile(file, VALID + NO_COLOUR + web + controlKey + proxy('ssh', 6000) + 'bogus = 1\n');
  const invalid = await api('/api/reload?strictConfig=true');
  t.is(invalid.status, 400);
  t.deepEqual(invalid.json(), {
    Code: 400,
    Msg: 'invalid argument: decode proxy at index 0: unmarshal ProxyConfig error: json: unknown field "bogus"',
  });
  t.is((await api('/api/status')).json().tcp.length, 2);
  await writeFile(control, JSON.stringify({ server: 'up', refuseReload: 'proxy [x]: port not allowed' }));
  t.deepEqual((await api('/api/reload?strictConfig=true')).json(), {
    Code: 400,
    Msg: 'invalid argument: proxy [x]: port not allowed',
  });

  // /api/stop: frpc closes and exits 0, its last line saying so.
  t.is((await api('/api/stop', 'tw:pw', 'POST')).status, 200);
  const exit = await frpc.exited;
  t.is(exit.code, 0);
  t.regex(plainLines(exit.stdout).at(-1)!, /\] frpc service for config file \[.+\] stopped$/);
});

test('control portsBusy: a remote port another program holds on the server is "port unavailable"', async (t) => {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'tw-frpc-busy-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const control = join(dir, 'control.json');
  await writeFile(control, JSON.stringify({ server: 'up', portsBusy: [6000] }));
  const file = join(dir, 'frpc.toml');
  await writeFile(
    file,
    `${VALID}${NO_COLOUR}webServer.port = ${port}\nmetadatas."fixture.control" = ${JSON.stringify(control)}\n${TCP_PROXY}`,
  );
  const frpc = start(t, ['-c', file]);
  await frpc.waitFor(/\[W\] \[client\/control\.go:172\] \[[0-9a-f]{16}\] \[ssh\] start error: port unavailable\n/);
  const status = (await (await fetch(`http://127.0.0.1:${port}/api/status`)).json()) as { tcp: object[] };
  t.like(status.tcp[0], { name: 'ssh', status: 'start error', err: 'port unavailable', remote_addr: '' });
});

test('a server that cannot be reached at the first login: exit 1 with loginFailExit, retries without', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tw-frpc-login-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const control = join(dir, 'control.json');
  await writeFile(control, JSON.stringify({ server: 'down' }));
  const controlKey = `metadatas."fixture.control" = ${JSON.stringify(control)}\n`;
  const failing = await writeConfig(t, VALID + NO_COLOUR + controlKey);
  const exit = await run(t, ['-c', failing]);
  t.is(exit.code, 1);
  t.regex(exit.stdout, /login to the server failed: dial tcp 127\.0\.0\.1:7000: connect: connection refused/);

  t.deepEqual(
    plainLines(exit.stdout).map((line) => line.replace(new RegExp(`^${STAMP} `), '')),
    [
      `[I] [sub/root.go:194] start frpc service for config file [${failing}] with aggregated configuration`,
      '[I] [client/service.go:312] try to connect to server...',
      '[W] [client/service.go:323] connect to server error: dial tcp 127.0.0.1:7000: connect: connection refused',
      `[I] [sub/root.go:211] frpc service for config file [${failing}] stopped`,
      'login to the server failed: dial tcp 127.0.0.1:7000: connect: connection refused. With loginFailExit enabled, no additional retries will be attempted',
    ],
  );

  // Without loginFailExit it tries again after 2, 4, 8 seconds... (of 50 ms here) until the server is there.
  const patient = await writeConfig(
    t,
    `${VALID}${NO_COLOUR}${controlKey}loginFailExit = false\nmetadatas."fixture.secondMs" = "50"\n`,
  );
  const frpc = start(t, ['-c', patient]);
  await frpc.waitFor(/(?:connect to server error[^\n]*\n[^]*?){3}/);
  const times = plainLines(frpc.output())
    .filter((line) => line.endsWith('try to connect to server...'))
    .map((line) => Date.parse(line.slice(0, 23).replace(' ', 'T')));
  t.true(times[1]! - times[0]! >= 95, `second try ${times[1]! - times[0]!} ms after the first`);
  t.true(times[2]! - times[1]! >= 190, `third try ${times[2]! - times[1]!} ms after the second`);
  await writeFile(control, JSON.stringify({ server: 'up' }));
  await frpc.waitFor(/login to server success/);
});
