import test, { type ExecutionContext } from 'ava';
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { environmentFile } from '../../../src/boot/environment-file.js';
import { initdScript, type InitdScriptOptions } from '../../../src/boot/initd-script.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';

const FIXTURE = join(PACKAGE_ROOT, 'test/fixtures/frpc.mjs');
const CONFIG_TEXT = 'serverAddr = "127.0.0.1"\nserverPort = 7000\n[log]\ndisablePrintColor = true\n';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env, timeout: 20_000 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ code: err ? (err.code as number) : 0, stdout, stderr });
    });
  });
}

/** A temp root with run/ and log/; every process whose command line names a file under it is killed on teardown. */
async function tempRoot(t: ExecutionContext): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'tw-initd-'));
  await mkdir(join(root, 'run'));
  await mkdir(join(root, 'log'));
  t.teardown(async () => {
    for (const pid of await processesNaming(root)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    await rm(root, { recursive: true, force: true });
  });
  return root;
}

function optionsIn(root: string): InitdScriptOptions {
  return {
    serviceName: 'tunnel_5',
    description: 'tunnelward tunnel web-5',
    runUser: 'root',
    tunnelPath: FIXTURE,
    configPath: join(root, 'tunnel_5.toml'),
    pidFile: join(root, 'run/tunnel_5.pid'),
    logFile: join(root, 'log/tunnel_5.log'),
  };
}

async function writeScript(root: string, options: InitdScriptOptions): Promise<string> {
  const file = join(root, options.serviceName);
  await writeFile(file, initdScript(options));
  await chmod(file, 0o755);
  return file;
}

/** Live (non-zombie) processes whose command line contains `needle`. */
async function processesNaming(needle: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes(needle) && (await isAlive(Number(entry)))) pids.push(Number(entry));
    } catch {
      /* exited meanwhile */
    }
  }
  return pids;
}

async function isAlive(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

test('sh -n accepts every generated script', async (t) => {
  const root = await tempRoot(t);
  const variants: InitdScriptOptions[] = [
    optionsIn(root),
    { ...optionsIn(root), serviceName: 'tunnel_123456789', runUser: 'svc-frp$', description: 'x' },
    {
      ...optionsIn(root),
      tunnelPath: '/opt/frp+1@2:3,4=5/frpc',
      configPath: '/etc/tunnelward/tunnel_5.toml',
      description: 'a (b) #c; d & e | f < g > h * ? ! ~ {x} [y]',
    },
  ];
  for (const [i, options] of variants.entries()) {
    const result = await run('sh', ['-n', await writeScript(root, { ...options, serviceName: `tunnel_${90 + i}` })]);
    t.deepEqual(result, { code: 0, stdout: '', stderr: '' });
  }
});

test('the LSB header describes the service', (t) => {
  const text = initdScript(optionsIn('/srv/tw'));
  t.true(text.startsWith('#!/bin/sh\n### BEGIN INIT INFO\n'));
  const header = text.slice(0, text.indexOf('### END INIT INFO'));
  const fields = Object.fromEntries([...header.matchAll(/^# ([A-Za-z-]+):\s+(.*)$/gm)].map((m) => [m[1], m[2]]));
  t.deepEqual(fields, {
    Provides: 'tunnel_5',
    'Required-Start': '$network $remote_fs',
    'Required-Stop': '$network $remote_fs',
    'Default-Start': '2 3 4 5',
    'Default-Stop': '0 1 6',
    'Short-Description': 'tunnelward tunnel web-5',
    Description: 'tunnelward tunnel web-5',
  });
});

test('values are embedded single-quoted and start-stop-daemon comes from PATH', (t) => {
  const text = initdScript(optionsIn('/srv/tw'));
  for (const line of [
    `NAME='tunnel_5'`,
    `RUN_USER='root'`,
    `TUNNEL='${FIXTURE}'`,
    `CONFIG='/srv/tw/tunnel_5.toml'`,
    `PIDFILE='/srv/tw/run/tunnel_5.pid'`,
    `LOGFILE='/srv/tw/log/tunnel_5.log'`,
  ]) {
    t.true(text.split('\n').includes(line), line);
  }
  t.notRegex(text, /\/s?bin\/start-stop-daemon/);
});

test('start, status, start again, stop, status, stop again: for real with start-stop-daemon', async (t) => {
  const root = await tempRoot(t);
  const options = optionsIn(root);
  await writeFile(options.configPath, CONFIG_TEXT);
  const script = await writeScript(root, options);
  const sh = (action: string) => run('sh', [script, action]);

  t.deepEqual(await sh('start'), { code: 0, stdout: 'tunnel_5 started\n', stderr: '' });
  await waitUntil(
    'the pid file names the tunnel',
    async () =>
      existsSync(options.pidFile) &&
      (
        await readFile(`/proc/${(await readFile(options.pidFile, 'utf8')).trim()}/cmdline`, 'utf8').catch(() => '')
      ).includes(options.configPath),
  );
  const pid = Number((await readFile(options.pidFile, 'utf8')).trim());
  t.deepEqual(await processesNaming(options.configPath), [pid]);

  t.deepEqual(await sh('status'), { code: 0, stdout: `tunnel_5 is running (pid ${pid})\n`, stderr: '' });
  t.deepEqual(await sh('start'), { code: 0, stdout: 'tunnel_5 is already running\n', stderr: '' });
  t.deepEqual(await processesNaming(options.configPath), [pid], 'still exactly one tunnel');
  await waitUntil('the tunnel logs its start line', async () =>
    (await readFile(options.logFile, 'utf8')).includes(`start frpc service for config file [${options.configPath}]`),
  );

  t.deepEqual(await sh('stop'), { code: 0, stdout: 'tunnel_5 stopped\n', stderr: '' });
  t.false(await isAlive(pid));
  t.false(existsSync(options.pidFile));
  t.deepEqual(await sh('status'), { code: 3, stdout: 'tunnel_5 is not running\n', stderr: '' });
  t.deepEqual(await sh('stop'), { code: 0, stdout: 'tunnel_5 is not running\n', stderr: '' });
});

test('restart and force-reload replace the running tunnel', async (t) => {
  const root = await tempRoot(t);
  const options = optionsIn(root);
  await writeFile(options.configPath, CONFIG_TEXT);
  const script = await writeScript(root, options);
  const pidOf = async () => Number((await readFile(options.pidFile, 'utf8')).trim());

  t.is((await run('sh', [script, 'restart'])).code, 0, 'restart of a stopped service starts it');
  await waitUntil('a pid file', async () => existsSync(options.pidFile));
  const first = await pidOf();
  t.deepEqual(await run('sh', [script, 'force-reload']), {
    code: 0,
    stdout: 'tunnel_5 stopped\ntunnel_5 started\n',
    stderr: '',
  });
  await waitUntil('a new pid file', async () => existsSync(options.pidFile) && (await pidOf()) !== first);
  t.false(await isAlive(first));
  await waitUntil('the new tunnel runs', async () => (await processesNaming(options.configPath)).length === 1);
  t.is((await run('sh', [script, 'stop'])).code, 0);
});

test('other actions print the usage and exit 3 (LSB: unimplemented)', async (t) => {
  const root = await tempRoot(t);
  const script = await writeScript(root, optionsIn(root));
  for (const args of [['reload'], ['bogus'], []]) {
    const result = await run('sh', [script, ...args]);
    t.is(result.code, 3);
    t.is(result.stdout, '');
    t.regex(result.stderr, /^Usage: .*tunnel_5 \{start\|stop\|restart\|force-reload\|status\}\n$/);
  }
});

// A recording stand-in put first in PATH: pins the exact arguments and how each exit code is reported.
async function withStandIn(t: ExecutionContext) {
  const root = await tempRoot(t);
  const options = optionsIn(root);
  const script = await writeScript(root, options);
  await mkdir(join(root, 'bin'));
  const record = join(root, 'calls');
  await writeFile(
    join(root, 'bin/start-stop-daemon'),
    '#!/bin/sh\nprintf \'%s\\n\' "$@" --- >> "$SSD_RECORD"\nexit "${SSD_RC:-0}"\n',
  );
  await chmod(join(root, 'bin/start-stop-daemon'), 0o755);
  const call = async (action: string, rc: number) => {
    await rm(record, { force: true });
    const result = await run('sh', [script, action], {
      ...process.env,
      PATH: `${join(root, 'bin')}:${process.env.PATH}`,
      SSD_RECORD: record,
      SSD_RC: String(rc),
    });
    const text = await readFile(record, 'utf8').catch(() => '');
    const calls = text
      .split('---\n')
      .filter(Boolean)
      .map((c) => c.trimEnd().split('\n'));
    return { ...result, calls };
  };
  return { options, call };
}

test('start-stop-daemon is called with exactly these arguments', async (t) => {
  const { options: o, call } = await withStandIn(t);
  const start = [
    '--start',
    '--quiet',
    '--background',
    '--make-pidfile',
    '--pidfile',
    o.pidFile,
    '--user',
    'root',
    '--chuid',
    'root',
    '--output',
    o.logFile,
    '--startas',
    FIXTURE,
    '--',
    '-c',
    o.configPath,
  ];
  const stop = [
    '--stop',
    '--quiet',
    '--pidfile',
    o.pidFile,
    '--user',
    'root',
    '--retry',
    'TERM/10/KILL/5',
    '--remove-pidfile',
  ];
  const status = ['--status', '--pidfile', o.pidFile, '--user', 'root'];
  t.deepEqual((await call('start', 0)).calls, [start]);
  t.deepEqual((await call('stop', 0)).calls, [stop]);
  t.deepEqual((await call('status', 3)).calls, [status]);
  t.deepEqual((await call('restart', 0)).calls, [stop, start]);
});

test('exit codes of start-stop-daemon map to LSB exit codes', async (t) => {
  const { options, call } = await withStandIn(t);
  await writeFile(options.pidFile, '4242\n');
  const cases: Array<[string, number, number, string, string]> = [
    ['start', 1, 0, 'tunnel_5 is already running\n', ''],
    ['start', 2, 1, '', 'tunnel_5 failed to start\n'],
    ['stop', 2, 1, '', 'tunnel_5 did not stop\n'],
    ['status', 0, 0, 'tunnel_5 is running (pid 4242)\n', ''],
    ['status', 1, 1, 'tunnel_5 is not running but its pid file exists\n', ''],
    ['status', 4, 4, 'tunnel_5 status is unknown\n', ''],
    ['restart', 2, 1, '', 'tunnel_5 did not stop\n'],
    ['stop', 1, 0, 'tunnel_5 is not running\n', ''], // last: it also removes the stale pid file
  ];
  for (const [action, rc, code, stdout, stderr] of cases) {
    const result = await call(action, rc);
    t.deepEqual(
      { code: result.code, stdout: result.stdout, stderr: result.stderr },
      { code, stdout, stderr },
      `${action} with start-stop-daemon exiting ${rc}`,
    );
  }
  t.false(existsSync(options.pidFile));
});

test('initdScript refuses injection attempts, naming the field', (t) => {
  const good = optionsIn('/srv/tw');
  const paths = [
    '/opt/a b',
    '/opt/a\n-c /etc/shadow',
    '/opt/%h',
    '/opt/$HOME',
    '/opt/$(id)',
    '/opt/"a"',
    "/opt/'a'",
    '/opt/a;id',
    '/opt/a&id',
    '/opt/a|id',
    '/opt/`id`',
    '/opt/a\\b',
    'rel/a',
    '/opt/../a',
  ];
  const cases: Array<[keyof InitdScriptOptions, string[]]> = [
    ['serviceName', ['tunnel_1; rm -rf /', 'tunnel_1\nExecStartPre=/bin/sh', "tunnel_1'", 'tunnel_$(id)']],
    ['description', ['web\n### END INIT INFO\nrm -rf /', "it's", '$(id)', '`id`', 'a\\']],
    ['runUser', ['root\nUser=evil', '$(id)', "root'", 'root;id']],
    ['tunnelPath', paths],
    ['configPath', paths],
    ['pidFile', paths],
    ['logFile', paths],
  ];
  for (const [field, values] of cases) {
    for (const value of values) {
      t.throws(
        () => initdScript({ ...good, [field]: value }),
        { message: new RegExp(`^${field} `) },
        `${field}=${JSON.stringify(value)}`,
      );
    }
  }
});

test('with an environment file: the tunnel started by start-stop-daemon gets exactly its variables', async (t) => {
  const root = await tempRoot(t);
  const options = optionsIn(root);
  await writeFile(options.configPath, CONFIG_TEXT);
  const env = { FRP_TOKEN: 'tok-$HOME-`id`-"q"-\\n-\'s\'-\t-ü', PLAIN: 'x y' };
  const envFile = join(root, 'tunnel_5.env');
  await writeFile(envFile, environmentFile(env), { mode: 0o600 });
  const script = await writeScript(root, { ...options, environmentFile: envFile });
  t.regex(await readFile(script, 'utf8'), new RegExp(`^ENVFILE='${envFile}'$`, 'm'));
  const started = await run(script, ['start']);
  t.is(started.code, 0, started.stderr);
  const pid = Number((await readFile(options.pidFile, 'utf8')).trim());
  const environ = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
  t.true(environ.includes(`FRP_TOKEN=${env.FRP_TOKEN}`));
  t.true(environ.includes(`PLAIN=${env.PLAIN}`));
  t.is((await run(script, ['stop'])).code, 0);
  t.false(/ENVFILE='[^']/.test(initdScript(options)), 'no file named without variables');
});
