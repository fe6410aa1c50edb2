// The frpc stand-in (test/fixtures/frpc.mjs) against the real frpc v0.71.0: the same files, the same server events,
// the same admin API calls, and what tunnelward reads of them (exit codes, first error lines, log lines, status)
// compared after normalising only what must differ: timestamps, run ids, the caller `[file.go:NN]`, the admin port.
// The fixture's server is imaginary (its control file); the real frpc talks to a real frps on loopback.
// The fixture runs on frpc's own clock here (no `fixture.secondMs`): its backoff is timed against the real one.
import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { COMMON_KEYS, VISITOR_KEYS, type KeySpec } from '../../../src/config/frpc-keys.js';
import { loginFailedAtStart, parseStatus, readLogLine, withoutStatusReads } from '../../../src/config/proxy-status.js';
import { parseFrpcLine } from '../../../src/log/log-entries.js';
import { PROXY_EXAMPLES } from '../../config/proxy-examples.js';
import {
  echoServer,
  freePort,
  Frps,
  frpVersion,
  httpGet,
  httpServer,
  REAL_FRPC,
  roundTrip,
} from '../../helpers/frp.js';
import { FIXTURE_FRPC } from '../../helpers/instances.js';
import { frpsFor } from '../../helpers/real-frp.js';
import { until } from '../../helpers/until.js';

type Side = 'real' | 'fixture';
const BIN: Record<Side, string> = { real: REAL_FRPC, fixture: FIXTURE_FRPC };
const SIDES: Side[] = ['real', 'fixture'];

const ANSI = /\x1b\[[0-9;]*m/g;
const STAMPED = /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \[([TDIWE])\] \[[\w./-]+:\d+\] (.*)$/;

async function tempDir(t: ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tw-frp-diff-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A started frpc (real or fixture) and every line it printed, colour codes stripped. */
class Program {
  readonly lines: string[] = [];
  readonly exited: Promise<Exit>;
  private readonly proc;

  constructor(t: ExecutionContext, bin: string, args: string[], env: Record<string, string | undefined> = {}) {
    this.proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    for (const stream of [this.proc.stdout, this.proc.stderr]) {
      let rest = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const parts = (rest + chunk).split('\n');
        rest = parts.pop()!;
        this.lines.push(...parts.map((line) => line.replace(ANSI, '')));
      });
      stream.on('end', () => {
        if (rest) this.lines.push(rest.replace(ANSI, ''));
      });
    }
    this.exited = new Promise((resolve) => this.proc.on('close', (code, signal) => resolve({ code, signal })));
    t.teardown(() => {
      if (this.running) this.proc.kill('SIGKILL');
      return this.exited;
    });
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  kill(signal: NodeJS.Signals): void {
    this.proc.kill(signal);
  }

  /** Waits until a line from index `from` on matches; returns its index. */
  async waitFor(pattern: RegExp, from = 0, timeoutMs = 20_000): Promise<number> {
    const found = () => this.lines.findIndex((line, i) => i >= from && pattern.test(line));
    const at = await until(found, (i) => i >= 0 || !this.running, {
      timeoutMs,
      everyMs: 20,
      what: `a line matching ${pattern}`,
    }).catch(() => -1);
    if (at >= 0) return at;
    throw new Error(`no line matched ${pattern} (${this.running ? 'timed out' : 'exited'}):\n${this.lines.join('\n')}`);
  }
}

/** Runs to its end (killed after `timeoutMs`): the exit and the output's lines. */
async function runToEnd(
  t: ExecutionContext,
  side: Side,
  args: string[],
  env: Record<string, string | undefined> = {},
  timeoutMs = 15_000,
): Promise<Exit & { lines: string[] }> {
  const program = new Program(t, BIN[side], args, env);
  const timer = setTimeout(() => program.kill('SIGKILL'), timeoutMs);
  const exit = await program.exited;
  clearTimeout(timer);
  return { ...exit, lines: program.lines.filter((l) => l !== '') };
}

/** A line without what must differ: its time, its caller, run ids, and the given words (ports, paths). */
function normalise(line: string, words: Record<string, string | number> = {}): string {
  let out = line.replace(STAMPED, '[$2] $3').replace(/\b[0-9a-f]{16}\b/g, 'RUNID');
  for (const [name, value] of Object.entries(words)) out = out.split(String(value)).join(name);
  // frpc lists removed proxies in its map's order: any order is right.
  return out.replace(
    /proxy removed: \[([^\]]*)\]/,
    (_, names: string) => `proxy removed: [${names.split(' ').sort().join(' ')}]`,
  );
}

/** At most `n` processes at once: the table's hundreds of runs share two cores with other work. */
function limiter(n: number): <T>(job: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: Array<() => void> = [];
  return async (job) => {
    // A finished job hands its place to the next in line, so no newcomer slips in between.
    if (active >= n) await new Promise<void>((resolve) => queue.push(resolve));
    else active++;
    try {
      return await job();
    } finally {
      const next = queue.shift();
      if (next) next();
      else active--;
    }
  };
}
const oneOfFour = limiter(4);

const LEVELS: Record<string, string> = { T: 'DEBUG', D: 'DEBUG', I: 'INFO', W: 'WARN', E: 'ERROR' };

// Every log line tunnelward's readers take from a real frpc, kept for the check at the end, and the tests that
// gave them (the check needs them all: a run of a few tests by --match skips it).
const realLines: string[] = [];
const contributors = new Set<string>();

/** What tunnelward reads of a real line: parseFrpcLine must take every stamped line with its level. */
function readByProduct(t: ExecutionContext, lines: string[]): void {
  contributors.add(t.title);
  for (const line of lines) {
    realLines.push(line);
    const stamped = STAMPED.exec(line);
    const entry = parseFrpcLine(line, 0);
    if (!stamped || !entry) continue;
    t.is(entry.content, stamped[3]!, line);
    t.is(entry.level as string, LEVELS[stamped[2]!]!, line);
  }
}

test('-v: both say 0.71.0', async (t) => {
  t.is(await frpVersion(), '0.71.0');
  for (const side of SIDES) t.deepEqual((await runToEnd(t, side, ['-v'])).lines, ['0.71.0'], side);
});

test('no such file, an unknown flag, an unknown command: the same exit and first line', async (t) => {
  for (const args of [
    ['-c', '/nonexistent/tw-frpc.toml'],
    ['verify', '-c', '/nonexistent/tw-frpc.toml'],
    ['--bogus'],
    ['bogus'],
  ]) {
    const [real, fixture] = await Promise.all([runToEnd(t, 'real', args), runToEnd(t, 'fixture', args)]);
    t.is(fixture.code, real.code, args.join(' '));
    t.is(fixture.lines[0], real.lines[0], args.join(' '));
  }
});

// ---- config files: `frpc verify -c F` and `frpc -c F` (whose server cannot be reached: frpc 0.71's default
// loginFailExit ends it with code 1 after one try) ----

interface FileCase {
  what: string;
  /** The file; SERVER_PORT, CONTROL and DIR are replaced. */
  text: string;
  env?: Record<string, string | undefined>;
  /** More files in the case's directory (for `includes`). */
  more?: Record<string, string>;
  /**
   * Where the fixture says less than frpc, by design: a TOML syntax error (another parser's words after the same
   * `toml: line L, column C: `... or none of them), a Go template action other than {{ .Envs.NAME }} (frpc's Go
   * template error, or frpc runs it), a [common] section (frpc's old INI reader). Only the code and the prefix
   * are compared; the fixture says why in its message.
   */
  differs?: 'toml' | 'template' | 'ini';
}

const HEAD = `serverAddr = "127.0.0.1"
serverPort = SERVER_PORT
log.disablePrintColor = true
metadatas."fixture.control" = "CONTROL"
`;
const proxy = (name: string, extra = '', type = 'tcp') =>
  `\n[[proxies]]\nname = "${name}"\ntype = "${type}"\nlocalIP = "127.0.0.1"\n${extra}`;
const TCP = proxy('ssh', 'localPort = 22\nremotePort = 6000\n');
const WEB = proxy('web', 'localPort = 80\ncustomDomains = ["web.example.com"]\n', 'http');

const FILES: FileCase[] = [
  // valid
  { what: 'a tcp and an http proxy', text: HEAD + TCP + WEB },
  { what: 'no proxies', text: HEAD },
  {
    what: 'frp 0.71 keys: clientID, transport.wireProtocol',
    text: `${HEAD}clientID = "c1"\ntransport.wireProtocol = "v2"\n${TCP}`,
  },
  {
    what: 'keys matched without regard to case, as Go does',
    text: `${HEAD}User = "u"\n${proxy('ssh', 'LocalPort = 22\nTransport.UseEncryption = true\n')}`,
  },
  {
    what: 'a disabled proxy is not validated',
    text: `${HEAD}${TCP}${proxy('web', 'localPort = 80\nenabled = false\n', 'http')}`,
  },
  {
    what: '`start` leaves the others out of validation',
    text: `${HEAD}start = ["ssh"]\n${TCP}${proxy('web', 'localPort = 80\n', 'http')}`,
  },
  { what: 'remotePort 70000 (for frps to refuse)', text: HEAD + proxy('ssh', 'localPort = 22\nremotePort = 70000\n') },
  { what: 'localPort 70000 behind a plugin', text: HEAD + proxy('p', 'localPort = 70000\nplugin.type = "socks5"\n') },
  { what: 'serverPort 70000: refused at the dial', text: HEAD.replace('SERVER_PORT', '70000') + TCP },
  {
    what: 'a tls file while tls is off: a warning',
    text: `${HEAD}transport.tls.enable = false\ntransport.tls.certFile = "/x.crt"\n${TCP}`,
  },
  {
    what: 'includes: a directory with proxies',
    text: `${HEAD}includes = ["DIR/inc/*.toml"]\n${TCP}`,
    more: { 'inc/a.toml': proxy('inc', 'localPort = 23\n') },
  },
  {
    what: 'a bandwidth of " 1.5MB "',
    text: HEAD + proxy('ssh', 'localPort = 22\ntransport.bandwidthLimit = " 1.5MB "\n'),
  },
  // the template rule
  {
    what: '{{ .Envs.NAME }} from the environment; an unset one is "<no value>"',
    text: `${HEAD}user = "{{ .Envs.TW_DIFF_USER }}"\n${proxy('x{{ .Envs.TW_DIFF_UNSET }}', 'localPort = 22\n')}`,
    env: { TW_DIFF_USER: 'bob', TW_DIFF_UNSET: undefined },
  },
  {
    what: 'an unset {{ .Envs.NAME }} where a number goes',
    text: HEAD.replace('SERVER_PORT', '{{ .Envs.TW_DIFF_UNSET }}'),
    env: { TW_DIFF_UNSET: undefined },
    differs: 'toml',
  },
  { what: 'a template function', text: `${HEAD}user = "{{ env "HOME" }}"\n`, differs: 'template' },
  { what: 'a broken template action', text: `${HEAD}user = "{{ .Envs.X "\n`, differs: 'template' },
  // unknown keys
  { what: 'an unknown top-level key', text: `${HEAD}colour = "blue"\n` },
  { what: 'a snake_case key', text: `${HEAD}server_addr = "127.0.0.1"\n` },
  { what: 'an unknown nested key', text: `${HEAD}transport.tls.bogus = 1\n` },
  { what: 'an unknown proxy key', text: HEAD + proxy('ssh', 'localPort = 22\nlocal_port = 22\n') },
  {
    what: 'remotePort on an http proxy',
    text: HEAD + proxy('web', 'localPort = 80\nremotePort = 8080\ncustomDomains = ["a.b"]\n', 'http'),
  },
  { what: 'secretKey on a tcp proxy', text: HEAD + proxy('ssh', 'localPort = 22\nsecretKey = "k"\n') },
  { what: 'an unknown key in a plugin', text: HEAD + proxy('p', 'plugin.type = "http_proxy"\nplugin.bogus = "x"\n') },
  { what: "another plugin's option", text: HEAD + proxy('p', 'plugin.type = "socks5"\nplugin.unixPath = "/x"\n') },
  { what: 'an unknown plugin type', text: HEAD + proxy('p', 'plugin.type = "ftp"\n') },
  { what: 'a plugin without a type', text: HEAD + proxy('p', 'plugin.unixPath = "/x"\n') },
  {
    what: 'an unknown key in a health check header',
    text:
      HEAD +
      proxy('ssh', 'localPort = 22\nhealthCheck.type = "tcp"\nhealthCheck.httpHeaders = [{ name = "a", val = "b" }]\n'),
  },
  {
    what: 'an unknown visitor key',
    text: `${HEAD}\n[[visitors]]\nname = "v"\ntype = "stcp"\nserverName = "s"\nbindPort = 9000\nbogus = 1\n`,
  },
  {
    what: 'an earlier unknown key loses to a plugin type error',
    text:
      HEAD + proxy('p', 'aaa = 1\nplugin.type = "https2http"\nplugin.localAddr = "a:1"\nplugin.enableHTTP2 = "no"\n'),
  },
  {
    what: 'an earlier unknown key loses to a bad bandwidth',
    text: HEAD + proxy('ssh', 'aaa = 1\nlocalPort = 22\ntransport.bandwidthLimit = "1GB"\n'),
  },
  {
    what: 'an unknown key in an included file',
    text: `${HEAD}includes = ["DIR/inc/*.toml"]\n`,
    more: { 'inc/a.toml': proxy('inc', 'bogus = 1\n') },
  },
  // wrong types
  { what: 'a string serverPort', text: HEAD.replace('SERVER_PORT', '"7000"') },
  { what: 'a fractional serverPort', text: HEAD.replace('SERVER_PORT', '1.5') },
  { what: 'a string webServer.port', text: `${HEAD}webServer.port = "7400"\n` },
  { what: 'a number in metadatas', text: `${HEAD}metadatas.owner = 42\n` },
  { what: 'a number in start', text: `${HEAD}start = ["a", 1]\n` },
  { what: 'a number for auth.method', text: `${HEAD}auth.method = 5\n` },
  { what: 'a number for transport', text: `${HEAD}transport = 1\n` },
  { what: 'a number for a tls file', text: `${HEAD}transport.tls.certFile = 5\n` },
  { what: 'proxies that are not a list', text: `${HEAD}proxies = 1\n` },
  { what: 'a proxy that is not a table', text: `${HEAD}proxies = [1]\n` },
  { what: 'a visitor that is not a table', text: `${HEAD}visitors = ["v"]\n` },
  { what: 'a number for a proxy type', text: `${HEAD}\n[[proxies]]\nname = "a"\ntype = 5\n` },
  { what: 'a string localPort', text: HEAD + proxy('ssh', 'localPort = "22"\n') },
  { what: 'a string enabled', text: HEAD + proxy('ssh', 'localPort = 22\nenabled = "false"\n') },
  { what: 'a string useEncryption', text: HEAD + proxy('ssh', 'localPort = 22\ntransport.useEncryption = "true"\n') },
  { what: 'a number in proxy metadatas', text: HEAD + proxy('ssh', 'localPort = 22\nmetadatas.a = 1\n') },
  { what: 'a string customDomains', text: HEAD + proxy('web', 'localPort = 80\ncustomDomains = "a.b"\n', 'http') },
  {
    what: 'a number in a request header',
    text: HEAD + proxy('web', 'localPort = 80\ncustomDomains = ["a.b"]\nrequestHeaders.set.x = 5\n', 'http'),
  },
  {
    what: 'a string health check header list',
    text: HEAD + proxy('ssh', 'localPort = 22\nhealthCheck.httpHeaders = "x"\n'),
  },
  { what: 'a number bandwidth', text: HEAD + proxy('ssh', 'localPort = 22\ntransport.bandwidthLimit = 5\n') },
  { what: 'a string plugin', text: HEAD + proxy('p', 'plugin = "x"\n') },
  { what: 'a number plugin type', text: HEAD + proxy('p', 'plugin.type = 5\n') },
  {
    what: 'a string plugin enableHTTP2',
    text: HEAD + proxy('p', 'plugin.type = "https2http"\nplugin.localAddr = "a:1"\nplugin.enableHTTP2 = "no"\n'),
  },
  {
    what: 'a string xtcp natTraversal flag',
    text: HEAD + proxy('x', 'localPort = 22\nnatTraversal.disableAssistedAddrs = "y"\n', 'xtcp'),
  },
  // bad ports
  { what: 'localPort 70000', text: HEAD + proxy('ssh', 'localPort = 70000\n') },
  { what: 'localPort -1', text: HEAD + proxy('ssh', 'localPort = -1\n') },
  { what: 'webServer.port 70000', text: `${HEAD}webServer.port = 70000\n` },
  // names
  { what: 'a duplicate proxy name', text: HEAD + TCP + TCP.replace('6000', '6001') },
  {
    what: 'two proxies without a name',
    text: `${HEAD}\n[[proxies]]\ntype = "tcp"\nlocalPort = 22\n\n[[proxies]]\ntype = "tcp"\nlocalPort = 23\n`,
  },
  {
    what: 'a proxy without a name (verify and start word it differently)',
    text: `${HEAD}\n[[proxies]]\ntype = "tcp"\nlocalPort = 22\n`,
  },
  {
    what: 'a duplicate visitor name',
    text: `${HEAD}${'\n[[visitors]]\nname = "v"\ntype = "stcp"\nserverName = "s"\nbindPort = 9000\n'.repeat(2)}`,
  },
  { what: 'a proxy without a type', text: `${HEAD}\n[[proxies]]\nname = "ssh"\nlocalPort = 22\n` },
  { what: 'an unknown proxy type', text: `${HEAD}\n[[proxies]]\nname = "ssh"\ntype = "ftp"\n` },
  // validation
  {
    what: 'an unknown auth.method and log.level: both said',
    text: `${HEAD}auth.method = "password"\nlog.level = "verbose"\n`,
  },
  {
    what: 'a heartbeat timeout below its interval',
    text: `${HEAD}transport.heartbeatInterval = 30\ntransport.heartbeatTimeout = 10\n`,
  },
  { what: 'an unknown transport.protocol', text: `${HEAD}transport.protocol = "udp"\n` },
  { what: 'an unknown feature gate', text: `${HEAD}featureGates.Foo = true\n` },
  {
    what: 'both auth.token and auth.tokenSource',
    text: `${HEAD}auth.token = "a"\nauth.tokenSource.type = "file"\nauth.tokenSource.file.path = "/nonexistent/token"\n`,
  },
  {
    what: 'an auth.tokenSource file that is missing (at start only)',
    text: `${HEAD}auth.tokenSource.type = "file"\nauth.tokenSource.file.path = "/nonexistent/token"\n`,
  },
  { what: 'webServer.tls without a key', text: `${HEAD}webServer.tls.certFile = "/x.crt"\n` },
  { what: 'an http proxy without domains', text: HEAD + proxy('web', 'localPort = 80\n', 'http') },
  {
    what: 'a tcpmux proxy without its multiplexer',
    text: HEAD + proxy('mux', 'localPort = 80\nsubdomain = "m"\n', 'tcpmux'),
  },
  {
    what: 'an http health check without a path',
    text: HEAD + proxy('ssh', 'localPort = 22\nhealthCheck.type = "http"\n'),
  },
  {
    what: 'an unknown proxy protocol version',
    text: HEAD + proxy('ssh', 'localPort = 22\ntransport.proxyProtocolVersion = "v3"\n'),
  },
  { what: 'a bandwidth in GB', text: HEAD + proxy('ssh', 'localPort = 22\ntransport.bandwidthLimit = "1GB"\n') },
  {
    what: 'a bandwidth that is not a number',
    text: HEAD + proxy('ssh', 'localPort = 22\ntransport.bandwidthLimit = "1.xMB"\n'),
  },
  { what: 'a plugin without its required option', text: HEAD + proxy('p', 'plugin.type = "https2http"\n') },
  { what: 'an invalid annotation key', text: HEAD + proxy('ssh', 'localPort = 22\nannotations."bad key!" = "x"\n') },
  {
    what: 'a visitor without a bind port',
    text: `${HEAD}\n[[visitors]]\nname = "v"\ntype = "stcp"\nserverName = "s"\n`,
  },
  {
    what: 'two invalid proxies: verify names the first in the file, a start the first by name',
    text:
      HEAD +
      proxy('zz', 'localPort = 22\nhealthCheck.type = "udp"\n') +
      proxy('aa', 'localPort = 22\ntransport.proxyProtocolVersion = "v9"\n'),
  },
  { what: 'an included directory that does not exist', text: `${HEAD}includes = ["/nonexistent/tw-frp/*.toml"]\n` },
  // not modelled
  { what: 'a TOML syntax error', text: 'serverAddr = \n', differs: 'toml' },
  { what: 'a key given twice', text: `${HEAD}serverAddr = "b"\n`, differs: 'toml' },
  {
    what: 'a [common] section',
    text: '[common]\nserver_addr = "127.0.0.1"\nserver_port = SERVER_PORT\n',
    differs: 'ini',
  },
];

/** Both programs on one file, verify and start; the results side by side. */
async function bothOn(t: ExecutionContext, c: FileCase) {
  const dir = await tempDir(t);
  const control = join(dir, 'control.json');
  await writeFile(control, JSON.stringify({ server: 'down' }));
  // Nothing listens on port 1 of loopback (a port picked free now could be another test's by the time frpc dials
  // it): the real frpc's login is refused there like the fixture's (control: down).
  const port = 1;
  const fill = (text: string) =>
    text.replaceAll('SERVER_PORT', String(port)).replaceAll('CONTROL', control).replaceAll('DIR', dir);
  for (const [name, text] of Object.entries(c.more ?? {})) {
    await mkdir(join(dir, name, '..'), { recursive: true });
    await writeFile(join(dir, name), fill(text));
  }
  const file = join(dir, 'frpc.toml');
  await writeFile(file, fill(c.text));
  const run = (side: Side, args: string[]) => oneOfFour(() => runToEnd(t, side, args, c.env));
  const [verifyReal, verifyFixture, startReal, startFixture] = await Promise.all([
    run('real', ['verify', '-c', file]),
    run('fixture', ['verify', '-c', file]),
    run('real', ['-c', file]),
    run('fixture', ['-c', file]),
  ]);
  readByProduct(t, [...verifyReal.lines, ...startReal.lines]);
  const plain = (r: Exit & { lines: string[] }) => ({
    code: r.code,
    signal: r.signal,
    lines: r.lines.map((l) => normalise(l)),
  });
  return {
    verifyReal: plain(verifyReal),
    verifyFixture: plain(verifyFixture),
    startReal: plain(startReal),
    startFixture: plain(startFixture),
    file,
  };
}

// Each file is its own test, four processes at a time across them.
for (const c of FILES) {
  test(`file: ${c.what}`, async (t) => {
    const { verifyReal, verifyFixture, startReal, startFixture, file } = await bothOn(t, c);
    if (!c.differs) {
      t.deepEqual(verifyFixture, verifyReal, 'verify');
      t.deepEqual(startFixture, startReal, 'start');
      return;
    }
    const prefix = { toml: /^toml: /, template: /^template: frp:\d+: /, ini: /^WARNING: ini format is deprecated/ }[
      c.differs
    ];
    const firstOf = (r: { lines: string[] }) => r.lines.find((l) => prefix.test(l))?.match(prefix)?.[0];
    if (c.differs === 'ini') {
      // frpc reads it with its INI reader; the fixture says it does not model that.
      t.is(verifyReal.code, 0);
      t.is(verifyReal.lines.at(-1), `frpc: the configuration file ${file} syntax is ok`);
      t.is(verifyFixture.code, 1);
      t.regex(verifyFixture.lines.join('\n'), /the fixture rejects it/);
      return;
    }
    for (const [fixture, real, what] of [
      [verifyFixture, verifyReal, 'verify'],
      [startFixture, startReal, 'start'],
    ] as const) {
      t.is(real.code, 1, what);
      t.is(fixture.code, 1, what);
      t.truthy(firstOf(real), `${what}: ${real.lines.join(' | ')}`);
      t.is(firstOf(fixture), firstOf(real), `${what}: ${fixture.lines.join(' | ')}`);
    }
  });
}

test('file: every proxy type and plugin tunnelward writes, with every key it knows for them', async (t) => {
  const proxies = PROXY_EXAMPLES.map((example) => example.file);
  const text = `${HEAD}${stringify({ proxies })}`;
  const { verifyReal, verifyFixture } = await bothOn(t, { what: 'examples', text });
  t.is(verifyReal.code, 0, verifyReal.lines.join('\n'));
  t.deepEqual(verifyFixture, verifyReal);
});

test('file: every top-level and visitor key tunnelward lets through, each with a value of its kind', async (t) => {
  // Keys whose value must name something that exists (files, included directories) or needs more keys are left out.
  const skip = /^(includes|virtualNet\.address|webServer\.tls\.|transport\.tls\.(?!enable)|auth\.oidc\.clientID)/;
  const valueOf = (key: string, spec: KeySpec): unknown => {
    if (spec.oneOf) return spec.kind === 'strings' ? [spec.oneOf[0]] : spec.oneOf[0];
    const kinds: Record<KeySpec['kind'], unknown> = {
      string: /Addr$|IP$/.test(key) ? '127.0.0.1' : 'x',
      port: 7000,
      integer: 5,
      boolean: true,
      strings: ['a'],
      stringMap: { a: 'b' },
      booleanMap: {},
      nameValues: [{ name: 'a', value: 'b' }],
    };
    return kinds[spec.kind];
  };
  const tree = (keys: Record<string, KeySpec>) => {
    const out: Record<string, any> = {};
    for (const [key, spec] of Object.entries(keys)) {
      if (skip.test(key)) continue;
      const path = key.split('.');
      let at = out;
      for (const part of path.slice(0, -1)) at = at[part] ??= {};
      at[path.at(-1)!] = valueOf(key, spec);
    }
    return out;
  };
  const common = tree(COMMON_KEYS);
  common.transport.heartbeatInterval = 30;
  common.transport.heartbeatTimeout = 90;
  common.metadatas['fixture.control'] = 'CONTROL';
  common.webServer.port = 7400; // serverPort's 7000 is the one the server's port replaces
  const visitors = [{ ...tree(VISITOR_KEYS), type: 'xtcp' }];
  const text = stringify({ ...common, serverAddr: '127.0.0.1', serverPort: 7000, visitors });
  const { verifyReal, verifyFixture } = await bothOn(t, { what: 'keys', text: text.replace('7000', 'SERVER_PORT') });
  t.is(verifyReal.code, 0, verifyReal.lines.join('\n'));
  t.deepEqual(verifyFixture, verifyReal);
});

// ---- the connection's life, the admin API and the log, against a real frps ----

/** The server a side's frpc logs in to: a real frps, or the fixture's control file. */
interface World {
  side: Side;
  /** Lines the config file needs on this side (the fixture's control). */
  control: string;
  down(): Promise<void>;
  up(): Promise<void>;
}

const realWorld = (frps: Frps): World => ({ side: 'real', control: '', down: () => frps.down(), up: () => frps.up() });

async function fixtureWorld(t: ExecutionContext, server: Record<string, unknown>): Promise<World> {
  const file = join(await tempDir(t), 'control.json');
  const write = (state: string) => writeFile(file, JSON.stringify({ ...server, server: state }));
  await write('down');
  return {
    side: 'fixture',
    control: `metadatas."fixture.control" = ${JSON.stringify(file)}\n`,
    down: () => write('down'),
    up: () => write('up'),
  };
}

/** An admin API call; a logged route's response line is awaited, so that it belongs to this step. */
async function api(
  program: Program,
  port: number,
  path: string,
  options: { method?: string; auth?: string | null; logged?: boolean } = {},
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  const auth = options.auth === undefined ? 'tw:pw' : options.auth;
  const from = program.lines.length;
  const res = await new Promise<{
    status: number;
    body: string;
    headers: Record<string, string | string[] | undefined>;
  }>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        agent: false,
        headers: auth === null ? {} : { Authorization: `Basic ${Buffer.from(auth).toString('base64')}` },
      },
      (r) => {
        let body = '';
        r.setEncoding('utf8');
        r.on('data', (c: string) => (body += c));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body, headers: r.headers }));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer to ${path}`)));
    req.on('error', reject);
    req.end();
  });
  const logged = options.logged ?? res.status !== 401;
  if (logged) await program.waitFor(new RegExp(`http response \\[${pathOf(path)}\\]: code \\[${res.status}\\]`), from);
  return res;
}

const pathOf = (path: string) => path.split('?')[0]!.replace(/[/[\]]/g, (c) => `\\${c}`);

/** Steps of a run: each its normalised lines, sorted (frpc's goroutines order some of them at random). */
class Transcript {
  readonly steps: Array<[string, string[]]> = [];
  private mark = 0;
  constructor(
    private readonly program: Program,
    private readonly words: Record<string, string | number>,
  ) {}

  /** Ends a step: the lines since the last, retries of a login counted once (their number is timing). */
  step(name: string): void {
    const lines = this.program.lines.slice(this.mark).filter((l) => l !== '');
    this.mark = this.program.lines.length;
    const seen = new Set<string>();
    const kept = lines
      .map((l) => normalise(l, this.words))
      // An attempt that meets frps while it closes fails with what the closing connection says (session shutdown,
      // connection reset by peer); the fixture's server is gone at once, so only its dial errors are compared.
      .filter((l) => !/connect to server error: (?!dial tcp)/.test(l))
      .filter((l) => {
        const retry = /try to connect to server|connect to server error/.test(l);
        if (retry && seen.has(l)) return false;
        seen.add(l);
        return true;
      });
    this.steps.push([name, kept.sort()]);
  }
}

/** The times (ms) of each login attempt in the lines. */
const attempts = (lines: string[]) =>
  lines
    .filter((l) => /try to connect to server\.\.\.$/.test(l))
    .map((l) => Date.parse(STAMPED.exec(l)![1]!.replace(' ', 'T')));

test('first login while the server is down (loginFailExit = false): status {}, retried after about 2 s, then in', async (t) => {
  t.timeout(90_000);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const frps = await frpsFor(t, {});
  await frps.down();
  const remotePort = await freePort();
  const fixture = await fixtureWorld(t, {});

  const runSide = async (world: World) => {
    const dir = await tempDir(t);
    const adminPort = await freePort();
    const file = join(dir, 'frpc.toml');
    await writeFile(
      file,
      `serverAddr = "127.0.0.1"
serverPort = ${frps.bindPort}
loginFailExit = false
log.disablePrintColor = true
webServer.port = ${adminPort}
webServer.user = "tw"
webServer.password = "pw"
${world.control}${proxy('ssh', `localPort = ${echo.port}\nremotePort = ${remotePort}\n`)}`,
    );
    const program = new Program(t, BIN[world.side], ['-c', file]);
    const transcript = new Transcript(program, {
      ADMIN: adminPort,
      BIND: frps.bindPort,
      REMOTE: remotePort,
      FILE: file,
    });
    await program.waitFor(/admin server listen on/);
    const second = await program.waitFor(
      /connect to server error/,
      (await program.waitFor(/connect to server error/)) + 1,
    );
    const before = await api(program, adminPort, '/api/status');
    transcript.step('down');
    await world.up();
    await program.waitFor(/\[ssh\] start proxy success/, second);
    const after = await api(program, adminPort, '/api/status');
    transcript.step('up');
    program.kill('SIGTERM');
    const exit = await program.exited;
    transcript.step('SIGTERM');
    return { program, transcript, before, after, exit };
  };
  // The real side's world is its frps, shared with nothing else: its ports are this test's.
  const [real, fake] = await Promise.all([runSide(realWorld(frps)), runSide(fixture)]);
  readByProduct(t, real.program.lines);

  t.deepEqual(fake.transcript.steps, real.transcript.steps);
  for (const { before, after, exit, program } of [real, fake]) {
    t.is(before.body, '{}\n');
    t.deepEqual(JSON.parse(after.body), {
      tcp: [
        {
          name: 'ssh',
          type: 'tcp',
          status: 'running',
          err: '',
          local_addr: `127.0.0.1:${echo.port}`,
          plugin: '',
          remote_addr: `127.0.0.1:${remotePort}`,
        },
      ],
    });
    t.deepEqual(exit, { code: null, signal: 'SIGTERM' }, 'over tcp, SIGTERM kills it');
    // frpc's first login backoff: 1 s doubled, with up to 10% jitter.
    const [first, second] = attempts(program.lines);
    t.true(
      second! - first! >= 1900 && second! - first! <= 3500,
      `second attempt ${second! - first!} ms after the first`,
    );
  }
  t.is(parseStatus(real.before.body).size, 0);
});

test('a life: proxies up, a port taken on frps, the admin API, reloads, the server lost and back, /api/stop', async (t) => {
  t.timeout(120_000);
  const [echo, web] = await Promise.all([echoServer(), httpServer('web')]);
  t.teardown(() => Promise.all([echo.close(), web.close()]));
  const frps = await frpsFor(t, {});
  const ports = {
    SSH: await freePort(),
    TAKEN: await freePort(),
    BUSY: await freePort(),
    TMPL: await freePort(),
    DB: await freePort(),
  };

  // On frps: TAKEN held by another client of it, BUSY by a program beside it.
  const holderDir = await tempDir(t);
  await writeFile(
    join(holderDir, 'holder.toml'),
    `serverAddr = "127.0.0.1"\nserverPort = ${frps.bindPort}\nlog.disablePrintColor = true\n${proxy('holder', `localPort = ${echo.port}\nremotePort = ${ports.TAKEN}\n`)}`,
  );
  const holder = new Program(t, REAL_FRPC, ['-c', join(holderDir, 'holder.toml')]);
  await holder.waitFor(/\[holder\] start proxy success/);
  const busy: Server = createServer();
  await new Promise<void>((resolve) => busy.listen(ports.BUSY, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => busy.close(() => resolve())));
  const fixture = await fixtureWorld(t, {
    portsTaken: [ports.TAKEN],
    portsBusy: [ports.BUSY],
    vhostHTTPPort: frps.vhostHTTPPort,
  });
  await fixture.up();

  const proxies = (changed = false) =>
    proxy(
      'ssh',
      `localPort = ${echo.port}\nremotePort = ${ports.SSH}\n${changed ? 'transport.useCompression = true\n' : ''}`,
    ) +
    proxy('web', `localPort = ${web.port}\ncustomDomains = ["web.example.com"]\n`, 'http') +
    proxy('{{ .Envs.TW_DIFF_NAME }}', `localPort = ${echo.port}\nremotePort = ${ports.TMPL}\n`);
  const env = { TW_DIFF_NAME: 'tmpl' };

  const runSide = async (world: World) => {
    const dir = await tempDir(t);
    const adminPort = await freePort();
    const file = join(dir, 'frpc.toml');
    const head = `serverAddr = "127.0.0.1"
serverPort = ${frps.bindPort}
loginFailExit = false
webServer.port = ${adminPort}
webServer.user = "tw"
webServer.password = "pw"
${world.control}`;
    await writeFile(
      file,
      head +
        proxies() +
        proxy('taken', `localPort = ${echo.port}\nremotePort = ${ports.TAKEN}\n`) +
        proxy('busy', `localPort = ${echo.port}\nremotePort = ${ports.BUSY}\n`),
    );
    const program = new Program(t, BIN[world.side], ['-c', file], env);
    const words = {
      ...ports,
      ADMIN: adminPort,
      BIND: frps.bindPort,
      VHOST: frps.vhostHTTPPort,
      FILE: file,
      ECHO: echo.port,
      HTTPD: web.port,
    };
    const transcript = new Transcript(program, words);
    // What each call answered: its status and body (the headers carry dates), and the 401's challenge.
    const out: Record<string, { status: number; body: string; challenge?: unknown }> = {};
    const call = async (key: string, path: string, options?: Parameters<typeof api>[3]) => {
      const res = await api(program, adminPort, path, options);
      out[key] = { status: res.status, body: res.body };
      return res;
    };

    // Colour on (the default): the lines still read the same once the codes are stripped.
    for (const name of ['ssh', 'web', 'tmpl']) await program.waitFor(new RegExp(`\\[${name}\\] start proxy success`));
    for (const name of ['taken', 'busy']) await program.waitFor(new RegExp(`\\[${name}\\] start error`));
    await program.waitFor(/admin server listen on/);
    transcript.step('start');
    await call('status', '/api/status');
    if (world.side === 'real') {
      await roundTrip(ports.SSH, 'through the tunnel');
      t.like(await httpGet(frps.vhostHTTPPort, 'web.example.com', '/x'), {
        status: 200,
        body: 'web web.example.com /x',
      });
    }
    transcript.step('/api/status');

    const unauthorised = await call('unauthorised', '/api/status', { auth: null });
    out.unauthorised!.challenge = unauthorised.headers['www-authenticate'];
    await call('wrongPassword', '/api/status', { auth: 'tw:guess' });
    await call('healthz', '/healthz', { auth: null, logged: false });
    await call('notFound', '/api/nothing', { logged: false });
    await call('wrongMethod', '/api/status', { method: 'POST', logged: false });
    await call('proxyConfig', '/api/proxy/nope/config');
    const sshConfig = JSON.parse((await call('sshConfig', '/api/proxy/ssh/config')).body);
    out.sshConfig = { status: 200, body: JSON.stringify([sshConfig.name, sshConfig.type, sshConfig.tcp?.remotePort]) };
    transcript.step('admin API');

    // Refused reloads: the file is wrong; nothing changes.
    await writeFile(file, head + proxies() + proxies());
    await call('duplicate', '/api/reload?strictConfig=true');
    await writeFile(file, head + proxies() + 'bogus = 1\n');
    await call('unknown', '/api/reload?strictConfig=true');
    await call('unchanged', '/api/status');
    transcript.step('refused reloads');

    // A reload: taken and busy go, ssh changes (closed and added again), db is new; web and tmpl run on.
    const from = program.lines.length;
    await writeFile(file, head + proxies(true) + proxy('db', `localPort = ${echo.port}\nremotePort = ${ports.DB}\n`));
    await call('reload', '/api/reload?strictConfig=true');
    for (const name of ['ssh', 'db']) await program.waitFor(new RegExp(`\\[${name}\\] start proxy success`), from);
    await call('reloaded', '/api/status');
    transcript.step('reload');

    // The server lost: frpc tries again at once, and after its backoff; back when the server is.
    const lost = program.lines.length;
    await world.down();
    await program.waitFor(/connect to server error: dial tcp .*: connect: connection refused/, lost);
    await call('lost', '/api/status');
    transcript.step('server lost');
    await world.up();
    for (const name of ['ssh', 'web', 'tmpl', 'db'])
      await program.waitFor(new RegExp(`\\[${name}\\] start proxy success`), lost);
    await call('back', '/api/status');
    transcript.step('server back');

    await call('stop', '/api/stop', { method: 'POST' });
    const exit = await program.exited;
    transcript.step('/api/stop');
    return { program, transcript, out, exit, file };
  };
  const [real, fake] = await Promise.all([runSide(realWorld(frps)), runSide(fixture)]);
  readByProduct(t, real.program.lines);

  // What the real one said, as tunnelward depends on it.
  const status = parseStatus(real.out.status!.body);
  t.like(status.get('taken'), { status: 'start error', err: 'port already used', remoteAddr: '' });
  t.like(status.get('busy'), { status: 'start error', err: 'port unavailable', remoteAddr: '' });
  t.like(status.get('web'), { status: 'running', remoteAddr: `web.example.com:${frps.vhostHTTPPort}` });
  t.like(status.get('ssh'), { status: 'running', remoteAddr: `127.0.0.1:${ports.SSH}` });
  t.is(real.out.duplicate!.body, '{"Code":400,"Msg":"invalid argument: proxy name [ssh] is duplicated"}\n');
  t.is(real.out.lost!.body, '{}\n');
  t.deepEqual(real.exit, { code: 0, signal: null });
  const last = real.program.lines.filter((l) => l !== '').at(-1);
  t.is(last?.replace(STAMPED, '$3'), `frpc service for config file [${real.file}] stopped`);

  // The fixture said the same.
  for (const key of Object.keys(real.out)) t.deepEqual(fake.out[key], real.out[key], key);
  t.deepEqual(fake.exit, real.exit, 'exit');
  for (let i = 0; i < real.transcript.steps.length; i++)
    t.deepEqual(fake.transcript.steps[i], real.transcript.steps[i], `step ${real.transcript.steps[i]![0]}`);
  t.is(holder.running, true);
});

test('real only: the lines of a health check and of a heartbeat timeout, which the fixture does not print', async (t) => {
  t.timeout(90_000);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  // Heartbeats are off while the tcp multiplexer runs (the default), and both ends must agree on it.
  const frps = await frpsFor(t, { extra: 'transport.tcpMux = false' });
  t.teardown(() => {
    if (frps.pid && frps.running) process.kill(frps.pid, 'SIGCONT');
  });
  const dir = await tempDir(t);
  const adminPort = await freePort();
  const file = join(dir, 'frpc.toml');
  await writeFile(
    file,
    `serverAddr = "127.0.0.1"
serverPort = ${frps.bindPort}
loginFailExit = false
log.disablePrintColor = true
transport.tcpMux = false
transport.heartbeatInterval = 1
transport.heartbeatTimeout = 2
webServer.port = ${adminPort}
${proxy('checked', `localPort = ${echo.port}\nremotePort = ${await freePort()}\nhealthCheck.type = "tcp"\nhealthCheck.intervalSeconds = 1\n`)}`,
  );
  const program = new Program(t, REAL_FRPC, ['-c', file]);
  await program.waitFor(/\[checked\] health check status change to success/);
  await echo.close();
  await program.waitFor(/\[checked\] health check status change to failed/);
  const failed = await api(program, adminPort, '/api/status', { auth: null });
  t.like(parseStatus(failed.body).get('checked'), { status: 'check failed' });
  // A server that stops answering without closing: only the heartbeat notices.
  process.kill(frps.pid!, 'SIGSTOP');
  const from = await program.waitFor(/heartbeat timeout/);
  process.kill(frps.pid!, 'SIGCONT');
  await program.waitFor(/login to server success/, from);
  readByProduct(t, program.lines);
});

// Each pattern tunnelward reads in frpc's log (src/config/proxy-status.ts), with what it must read of it; every one
// must be in some line the real frpc printed in the tests above.
const READ: Array<[RegExp, ReturnType<typeof readLogLine>]> = [
  [/login to server success/, { connected: true, lookAgain: true }],
  [/try to connect to server/, { connected: false, lookAgain: false }],
  [/connect to server error/, { connected: false, lookAgain: false }],
  [/heartbeat timeout/, { connected: false, lookAgain: false }],
  [/^login to the server failed: /, { connected: false, lookAgain: false }],
  [/start proxy success/, { lookAgain: true }],
  [/start error/, { lookAgain: true }],
  [/proxy added/, { lookAgain: true }],
  [/proxy removed/, { lookAgain: true }],
  [/success reload/, { lookAgain: true }],
  [/health check status change/, { lookAgain: true }],
];

test.after('every line tunnelward reads in the log is one the real frpc prints, and is read as meant', (t) => {
  if (contributors.size < FILES.length + 5) {
    t.log(`not checked: ${contributors.size} of ${FILES.length + 5} tests that read real lines ran`);
    return;
  }
  const contents = realLines.map((line) => parseFrpcLine(line, 0)?.content ?? '');
  for (const [pattern, meaning] of READ) {
    const seen = contents.filter((c) => pattern.test(c));
    t.true(seen.length > 0, `no real line matches ${pattern}`);
    for (const content of seen) {
      // A disconnect line that gives an error also says why, in words (login refused / server unreachable / lost).
      const { reason, ...read } = readLogLine(content);
      t.deepEqual(read, meaning, content);
      if (meaning.connected === false && !/try to connect to server/.test(content))
        t.regex(reason ?? '', /^(login refused|server unreachable|server lost): /, content);
      else t.is(reason, undefined, content);
    }
  }
  // Lines that say nothing of the connection are not read as if they did.
  for (const content of contents.filter((c) => !READ.some(([p]) => p.test(c))))
    t.is(readLogLine(content).connected, undefined, content);
  const tail = realLines.filter((l) => l.startsWith('login to the server failed:'));
  t.true(tail.length > 0 && loginFailedAtStart(tail), 'a failed first login is recognised');
  const statusReads = realLines.filter((l) => /\[\/api\/status\]/.test(l) && /code \[200\]|http request/.test(l));
  t.true(statusReads.length > 0);
  t.is(withoutStatusReads(statusReads.join('\n')), '', 'our own status reads are left out of the log');
});
