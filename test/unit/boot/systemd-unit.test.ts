import { MALLOC_ENVIRONMENT, NODE_FLAGS } from '../../../src/system/node-flags.js';
import test, { type ExecutionContext } from 'ava';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  nextAfterRun,
  restartPolicy,
  tunnelUnit,
  tunnelwardUnit,
  type TunnelUnitOptions,
} from '../../../src/boot/systemd-unit.js';
import { defaultSettings } from '../../../src/settings/table.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';

// An executable that exists: systemd-analyze verify checks ExecStart's binary.
const FIXTURE = join(PACKAGE_ROOT, 'test/fixtures/frpc.mjs');

const TUNNEL: TunnelUnitOptions = {
  serviceName: 'tunnel_7',
  description: 'tunnelward tunnel web-1',
  runUser: 'root',
  tunnelPath: FIXTURE,
  configPath: '/var/lib/tunnelward/instances/tunnel_7.toml',
  restart: restartPolicy(defaultSettings('/var/lib/tunnelward'), 252),
};

type Entries = Array<[string, string]>;

// Sections in order, each with its key=value lines in order; anything else in the text fails the parse.
function parseUnit(text: string): Array<[string, Entries]> {
  const sections: Array<[string, Entries]> = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const header = /^\[([A-Za-z]+)\]$/.exec(line);
    if (header) {
      sections.push([header[1]!, []]);
      continue;
    }
    const entry = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (!entry || sections.length === 0) throw new Error(`unexpected unit line ${JSON.stringify(line)}`);
    sections.at(-1)![1].push([entry[1]!, entry[2]!]);
  }
  return sections;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: 15_000 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ code: err ? (err.code as number) : 0, stdout, stderr });
    });
  });
}

async function verify(t: ExecutionContext, fileName: string, text: string): Promise<Run> {
  const dir = await mkdtemp(join(tmpdir(), 'tw-unit-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, fileName);
  await writeFile(file, text);
  // No stderr filtering: on this machine (Debian 12, systemd 252, systemd not running) verify prints nothing
  // for a good unit. `--man=no`: the units have no Documentation= to check anyway.
  return run('systemd-analyze', ['verify', '--man=no', file]);
}

test('a memory cap: GOMEMLIMIT before the environment file (whose own wins), MemoryHigh at 90% and MemoryMax', (t) => {
  const [, [, service]] = parseUnit(
    tunnelUnit({ ...TUNNEL, environmentFile: '/etc/tw/env/7.env', memoryMaxMB: 100 }),
  ) as [unknown, [string, Array<[string, string]>]];
  const keys = service.map(([k]) => k);
  t.deepEqual(
    service.filter(([k]) => k.startsWith('Memory') || k.startsWith('Environment')),
    [
      ['Environment', 'GOMEMLIMIT=80MiB'],
      ['EnvironmentFile', '/etc/tw/env/7.env'],
      ['MemoryHigh', '90M'],
      ['MemoryMax', '100M'],
    ],
  );
  t.true(keys.indexOf('Environment') < keys.indexOf('EnvironmentFile'));
  const none = parseUnit(tunnelUnit({ ...TUNNEL, memoryMaxMB: 0 }))[1]![1];
  t.false(none.some(([k]) => k.startsWith('Memory') || k === 'Environment'));
});

test('tunnel unit has exactly the expected keys', (t) => {
  const text = tunnelUnit(TUNNEL);
  t.true(text.endsWith('\n'));
  t.deepEqual(parseUnit(text), [
    [
      'Unit',
      [
        ['Description', 'tunnelward tunnel web-1'],
        ['After', 'network-online.target'],
        ['Wants', 'network-online.target'],
        // Watchdog.StableSecs 60 + the backoff a crash loop goes through (1 + 2 + 4 + 8 s).
        ['StartLimitIntervalSec', '75'],
        ['StartLimitBurst', '5'],
      ],
    ],
    [
      'Service',
      [
        ['Type', 'simple'],
        ['User', 'root'],
        ['ExecStart', `${FIXTURE} -c /var/lib/tunnelward/instances/tunnel_7.toml`],
        ['Slice', 'tunnelward.slice'],
        ['Restart', 'on-failure'],
        ['RestartSec', '0.1s'],
        ['RestartPreventExitStatus', '1'],
        ['KillMode', 'control-group'],
        ['TimeoutStopSec', '10'],
      ],
    ],
    ['Install', [['WantedBy', 'multi-user.target']]],
  ]);
});

test('the restart policy follows the Watchdog settings and what the systemd version can say', (t) => {
  const settings = { ...defaultSettings('/x'), 'Watchdog.NoRetryExitCodes': [1, 78], 'Instance.StopTimeoutSecs': 2.5 };
  const old = restartPolicy(settings, 252);
  t.like(old, { restart: true, restartSec: 0.1, startLimitBurst: 5, stopTimeoutSec: 2.5 });
  t.is(old.steps, undefined, 'systemd before 254 has one fixed delay');
  const recent = restartPolicy(settings, 254);
  t.deepEqual(recent.steps, { count: 3, maxDelaySec: 8 }, 'from 254 the delay grows to the backoff at the limit');
  const unit = parseUnit(tunnelUnit({ ...TUNNEL, restart: recent }));
  const service = new Map(unit[1]![1]);
  t.is(service.get('RestartSteps'), '3');
  t.is(service.get('RestartMaxDelaySec'), '8');
  t.is(service.get('RestartPreventExitStatus'), '1 78');
  t.is(service.get('TimeoutStopSec'), '2.5s');
  const off = restartPolicy({ ...settings, 'Watchdog.Enabled': false }, 252);
  t.is(new Map(parseUnit(tunnelUnit({ ...TUNNEL, restart: off }))[1]![1]).get('Restart'), 'no');

  // What systemd does after a run, for tunnelward to expect: the same rules as the unit's.
  t.is(nextAfterRun(old, { success: true, code: 0 }), 'stop');
  t.is(nextAfterRun(old, { success: false, code: 2 }), 'restart');
  t.is(nextAfterRun(old, { success: false, code: null }), 'restart', 'killed by a signal');
  t.is(nextAfterRun(old, { success: false, code: 78 }), 'give-up', 'an exit status that prevents a restart');
  t.is(nextAfterRun(off, { success: false, code: 2 }), 'stop', 'restarts off: the unit just fails');
});

test('tunnelward unit has exactly the expected keys, with and without a user', (t) => {
  const options = {
    nodePath: '/usr/bin/node',
    cliPath: '/opt/tunnelward/dist/src/cli.js',
    dataDir: '/var/lib/tunnelward',
  };
  const service: Entries = [
    ['Type', 'simple'],
    [
      'ExecStart',
      `/usr/bin/node ${NODE_FLAGS.join(' ')} /opt/tunnelward/dist/src/cli.js serve --data-dir /var/lib/tunnelward`,
    ],
    ['ExecReload', '/bin/kill -HUP $MAINPID'],
    ['Environment', 'TUNNELWARD_SUPERVISED=systemd'],
    ['Environment', 'MALLOC_ARENA_MAX=2'],
    ['Environment', `GLIBC_TUNABLES=${MALLOC_ENVIRONMENT.GLIBC_TUNABLES}`],
    ['Restart', 'always'],
    ['RestartSec', '2'],
    ['KillMode', 'process'],
    ['LimitNOFILE', '65536'],
  ];
  const unit: Entries = [
    ['Description', 'tunnelward: supervisor of frp client tunnels'],
    ['After', 'network-online.target'],
    ['Wants', 'network-online.target'],
  ];
  const install: [string, Entries] = ['Install', [['WantedBy', 'multi-user.target']]];
  t.deepEqual(parseUnit(tunnelwardUnit(options)), [['Unit', unit], ['Service', service], install]);
  t.deepEqual(parseUnit(tunnelwardUnit({ ...options, user: 'tunnelward' })), [
    ['Unit', unit],
    ['Service', [service[0]!, ['User', 'tunnelward'], ...service.slice(1)]],
    install,
  ]);
});

test('systemd-analyze verify accepts every generated unit', async (t) => {
  const units: Array<[string, string]> = [
    ['tunnel_7.service', tunnelUnit(TUNNEL)],
    ['tunnel_123456789.service', tunnelUnit({ ...TUNNEL, serviceName: 'tunnel_123456789', description: 'x' })],
    ['tunnel_8.service', tunnelUnit({ ...TUNNEL, serviceName: 'tunnel_8', memoryMaxMB: 64 })],
    [
      'tunnelward.service',
      tunnelwardUnit({
        nodePath: process.execPath,
        cliPath: join(PACKAGE_ROOT, 'dist/src/cli.js'),
        dataDir: '/var/lib/tunnelward',
      }),
    ],
    [
      'tunnelward.service',
      tunnelwardUnit({ nodePath: process.execPath, cliPath: '/opt/tw/cli.js', dataDir: '/srv/tw', user: 'root' }),
    ],
  ];
  const results = await Promise.all(units.map(([name, text]) => verify(t, name, text)));
  results.forEach((result, i) => t.deepEqual(result, { code: 0, stdout: '', stderr: '' }, units[i]![0]));
});

test('systemd-analyze verify does catch a broken unit (the check above is not vacuous)', async (t) => {
  const result = await verify(t, 'tunnel_7.service', tunnelUnit({ ...TUNNEL, tunnelPath: '/nonexistent/frpc' }));
  t.not(result.code, 0);
  t.regex(result.stderr, /\/nonexistent\/frpc is not executable/);
});

const INJECTIONS: Array<[keyof TunnelUnitOptions, string[]]> = [
  ['serviceName', ['tunnel_1; rm -rf /', 'tunnel_1\nExecStartPre=/bin/sh', 'tunnel_%i', '../etc/passwd']],
  ['description', ['web\nExecStartPre=/bin/sh -c id', 'home %h', '$HOME', 'a\\', '"x"']],
  ['runUser', ['root\nUser=evil', '$(id)', '%u', 'root evil']],
  [
    'tunnelPath',
    [
      '/opt/my frp/frpc',
      '/opt/frpc\nExecStartPre=/bin/sh',
      '/home/%h/frpc',
      '/opt/$HOME/frpc',
      '/opt/"frpc"',
      "/opt/'frpc'",
      '/opt/frpc;id',
      'frpc',
    ],
  ],
  [
    'configPath',
    ['/etc/a b.toml', '/etc/a.toml\n[Service]', '/etc/%n.toml', '/etc/${X}.toml', '/etc/a.toml;id', 'a.toml'],
  ],
];

test('tunnelUnit refuses injection attempts, naming the field', (t) => {
  for (const [field, values] of INJECTIONS) {
    for (const value of values) {
      t.throws(
        () => tunnelUnit({ ...TUNNEL, [field]: value }),
        { message: new RegExp(`^${field} `) },
        `${field}=${JSON.stringify(value)}`,
      );
    }
  }
});

test('tunnelwardUnit refuses injection attempts, naming the field', (t) => {
  const good = { nodePath: '/usr/bin/node', cliPath: '/opt/tw/cli.js', dataDir: '/var/lib/tunnelward' };
  const paths = [
    '/opt/a b',
    '/opt/a\nKillMode=none',
    '/opt/%h',
    '/opt/$HOME',
    '/opt/"a"',
    "/opt/'a'",
    '/opt/a;id',
    'rel/a',
    '/opt/../a',
  ];
  for (const field of ['nodePath', 'cliPath', 'dataDir'] as const) {
    for (const value of paths) {
      t.throws(
        () => tunnelwardUnit({ ...good, [field]: value }),
        { message: new RegExp(`^${field} `) },
        `${field}=${JSON.stringify(value)}`,
      );
    }
  }
  for (const user of ['root\nUser=evil', '$(id)', '%u']) {
    t.throws(
      () => tunnelwardUnit({ ...good, user }),
      { message: /^user must be a system user name/ },
      JSON.stringify(user),
    );
  }
});
