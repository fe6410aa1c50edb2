import { MALLOC_ENVIRONMENT, NODE_FLAGS } from '../system/node-flags.js';
import { goMemLimit, memoryDirectives } from '../instances/memory-cap.js';
// systemd unit files for a tunnel instance and for tunnelward itself. Pure text: installing them is someone else's job.
import { checkDescription, checkListenHost, checkPath, checkRunUser, checkServiceName } from './names.js';

export interface TunnelUnitOptions {
  serviceName: string;
  description: string;
  runUser: string;
  tunnelPath: string;
  configPath: string;
  /** Who restarts a crashed tunnel and how: systemd itself, from tunnelward's Watchdog settings. */
  restart: RestartPolicy;
  /** The instance's environment variables (see environment-file.ts), when it has any: systemd reads it as root. */
  environmentFile?: string;
  /** Instance.MemoryMaxMB: MemoryMax=, MemoryHigh= and GOMEMLIMIT (which the environment file may set otherwise). */
  memoryMaxMB?: number;
}

/** The slice every tunnel unit runs in: one journal match (`_SYSTEMD_SLICE=`) follows the output of them all. */
export const TUNNEL_SLICE = 'tunnelward.slice';

/**
 * How systemd restarts a tunnel unit: it is the one restarter of tunnels it runs, also while tunnelward is down,
 * so the unit carries tunnelward's Watchdog settings as far as systemd can express them.
 */
export interface RestartPolicy {
  /** Restart=on-failure (Watchdog.Enabled), else Restart=no. */
  restart: boolean;
  /** Delay before the first restart, in seconds. */
  restartSec: number;
  /** systemd 254 and later grow the delay in steps up to a cap (RestartSteps=, RestartMaxDelaySec=). */
  steps?: { count: number; maxDelaySec: number };
  /** Starts allowed within the interval: past them the unit fails (Watchdog.StartLimit). */
  startLimitBurst: number;
  startLimitIntervalSec: number;
  /** Exit codes after which systemd does not restart (Watchdog.NoRetryExitCodes). */
  preventExitStatus: readonly number[];
  /** SIGKILL this long after SIGTERM (Instance.StopTimeoutSecs). */
  stopTimeoutSec: number;
}

/** The Watchdog and Instance settings a restart policy is made from. */
export interface WatchdogSettings {
  'Watchdog.Enabled': boolean;
  'Watchdog.BackoffSecs': number;
  'Watchdog.BackoffMaxSecs': number;
  'Watchdog.StartLimit': number;
  'Watchdog.StableSecs': number;
  'Watchdog.NoRetryExitCodes': readonly number[];
  'Instance.StopTimeoutSecs': number;
}

/** systemd's smallest restart delay worth having: "at once", without spinning on a binary that cannot start. */
const FIRST_RESTART_SEC = 0.1;

/**
 * The unit's restart policy for tunnelward's Watchdog settings. The first restart comes at once, as in
 * process mode. Later ones: systemd 254+ grows the delay towards the backoff the watchdog would have reached by the
 * start limit; older systemd (Debian 12 has 252) has one fixed delay, so a crash loop reaches the start limit
 * sooner than in process mode. The start limit counts starts within one stable period plus the backoff delays,
 * so that a crash loop fails the unit after Watchdog.StartLimit crashes while occasional crashes never do.
 */
export function restartPolicy(s: WatchdogSettings, systemdVersion: number): RestartPolicy {
  const limit = s['Watchdog.StartLimit'];
  let delays = 0;
  for (let attempt = 2; attempt <= limit; attempt++)
    delays += Math.min(s['Watchdog.BackoffMaxSecs'], s['Watchdog.BackoffSecs'] * 2 ** (attempt - 2));
  const maxDelaySec = Math.min(s['Watchdog.BackoffMaxSecs'], s['Watchdog.BackoffSecs'] * 2 ** Math.max(0, limit - 2));
  return {
    restart: s['Watchdog.Enabled'],
    restartSec: FIRST_RESTART_SEC,
    ...(systemdVersion >= 254 && maxDelaySec > FIRST_RESTART_SEC
      ? { steps: { count: Math.max(1, limit - 2), maxDelaySec } }
      : {}),
    startLimitBurst: limit,
    startLimitIntervalSec: Math.ceil(s['Watchdog.StableSecs'] + delays),
    preventExitStatus: s['Watchdog.NoRetryExitCodes'],
    stopTimeoutSec: s['Instance.StopTimeoutSecs'],
  };
}

/** What systemd does after a run of a unit with this policy ended: restart it, give it up (failed), or let it stop. */
export function nextAfterRun(
  policy: RestartPolicy,
  run: { success: boolean; code: number | null },
): 'restart' | 'give-up' | 'stop' {
  if (run.success || !policy.restart) return 'stop';
  if (run.code !== null && policy.preventExitStatus.includes(run.code)) return 'give-up';
  return 'restart';
}

/** systemd takes seconds with a fraction ("0.1s"); whole ones are written as they are. */
const seconds = (value: number): string => (Number.isInteger(value) ? String(value) : `${value}s`);

export interface TunnelwardUnitOptions {
  nodePath: string;
  cliPath: string;
  dataDir: string;
  /** Where it listens; from settings.toml (ListenAddr, ListenPort) when omitted. */
  host?: string;
  port?: number;
  /** Runs as root when omitted. */
  user?: string;
}

type Section = [name: string, entries: Array<[key: string, value: string]>];

// Every value has been validated, so none needs quoting or escaping here.
function renderUnit(sections: Section[]): string {
  return sections
    .map(([name, entries]) => [`[${name}]`, ...entries.map(([key, value]) => `${key}=${value}`)].join('\n'))
    .join('\n\n')
    .concat('\n');
}

/** The unit `<serviceName>.service` that runs one tunnel client. */
export function tunnelUnit(options: TunnelUnitOptions): string {
  checkServiceName(options.serviceName); // not written into the unit, but it names the file, so it must be valid too
  const description = checkDescription(options.description);
  const runUser = checkRunUser(options.runUser);
  const tunnelPath = checkPath('tunnelPath', options.tunnelPath);
  const configPath = checkPath('configPath', options.configPath);
  const cap = options.memoryMaxMB ?? 0;
  const goLimit = goMemLimit(cap);
  // Set before the file: a variable of the file wins over Environment=.
  const environment: Array<[string, string]> = [
    ...(goLimit === undefined ? [] : ([['Environment', `GOMEMLIMIT=${goLimit}`]] as Array<[string, string]>)),
    ...(options.environmentFile === undefined
      ? []
      : ([['EnvironmentFile', checkPath('environmentFile', options.environmentFile)]] as Array<[string, string]>)),
  ];
  const policy = options.restart;
  const steps: Array<[string, string]> = policy.steps
    ? [
        ['RestartSteps', String(policy.steps.count)],
        ['RestartMaxDelaySec', seconds(policy.steps.maxDelaySec)],
      ]
    : [];
  const prevent: Array<[string, string]> =
    policy.preventExitStatus.length > 0 ? [['RestartPreventExitStatus', policy.preventExitStatus.join(' ')]] : [];
  return renderUnit([
    [
      'Unit',
      [
        ['Description', description],
        ['After', 'network-online.target'],
        ['Wants', 'network-online.target'],
        // Past this many starts in the interval the unit fails instead of hammering the server.
        ['StartLimitIntervalSec', String(policy.startLimitIntervalSec)],
        ['StartLimitBurst', String(policy.startLimitBurst)],
      ],
    ],
    [
      'Service',
      [
        ['Type', 'simple'],
        ['User', runUser],
        ...environment,
        ['ExecStart', `${tunnelPath} -c ${configPath}`],
        ['Slice', TUNNEL_SLICE],
        ...memoryDirectives(cap),
        ['Restart', policy.restart ? 'on-failure' : 'no'],
        ['RestartSec', seconds(policy.restartSec)],
        ...steps,
        ...prevent,
        ['KillMode', 'control-group'],
        ['TimeoutStopSec', seconds(policy.stopTimeoutSec)],
      ],
    ],
    ['Install', [['WantedBy', 'multi-user.target']]],
  ]);
}

/** The unit `tunnelward.service` that runs tunnelward itself (`tunnelward service install`). */
export function tunnelwardUnit(options: TunnelwardUnitOptions): string {
  const nodePath = checkPath('nodePath', options.nodePath);
  const cliPath = checkPath('cliPath', options.cliPath);
  const dataDir = checkPath('dataDir', options.dataDir);
  const user = options.user === undefined ? undefined : checkRunUser(options.user, 'user');
  const listen = [
    ...(options.host === undefined ? [] : ['--host', checkListenHost(options.host)]),
    ...(options.port === undefined ? [] : ['--port', String(Math.trunc(options.port))]),
  ];
  return renderUnit([
    [
      'Unit',
      [
        ['Description', 'tunnelward: supervisor of frp client tunnels'],
        ['After', 'network-online.target'],
        ['Wants', 'network-online.target'], // After= alone does not pull the target in
      ],
    ],
    [
      'Service',
      [
        ['Type', 'simple'],
        ...(user === undefined ? [] : [['User', user] as [string, string]]),
        ['ExecStart', [nodePath, ...NODE_FLAGS, cliPath, 'serve', '--data-dir', dataDir, ...listen].join(' ')],
        // `systemctl reload tunnelward` (an ACME client's deploy hook) re-reads the TLS certificate.
        ['ExecReload', '/bin/kill -HUP $MAINPID'],
        ['Environment', 'TUNNELWARD_SUPERVISED=systemd'],
        // The allocator set as `npm start` sets it: less memory held by a process that is mostly idle.
        ...Object.entries(MALLOC_ENVIRONMENT).map(([name, value]): [string, string] => [
          'Environment',
          `${name}=${value}`,
        ]),
        ['Restart', 'always'],
        ['RestartSec', '2'],
        // Tunnels run in process mode are tunnelward's children and share its cgroup: the default (control-group)
        // would kill every tunnel whenever tunnelward stops, restarts or is upgraded. Only tunnelward is signalled;
        // it stops its tunnels itself when asked to and adopts the survivors when it starts again.
        ['KillMode', 'process'],
        ['LimitNOFILE', '65536'],
      ],
    ],
    ['Install', [['WantedBy', 'multi-user.target']]],
  ]);
}
