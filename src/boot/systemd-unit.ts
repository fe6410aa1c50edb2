// systemd unit files for a tunnel instance and for tunnelward itself. Pure text: installing them is someone else's job.
import { checkDescription, checkPath, checkRunUser, checkServiceName } from './names.js';

export interface TunnelUnitOptions {
  serviceName: string;
  description: string;
  runUser: string;
  tunnelPath: string;
  configPath: string;
}

export interface TunnelwardUnitOptions {
  nodePath: string;
  cliPath: string;
  dataDir: string;
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
  return renderUnit([
    [
      'Unit',
      [
        ['Description', description],
        ['After', 'network-online.target'],
        ['Wants', 'network-online.target'],
        // At most 5 starts in 5 minutes, then the unit fails instead of hammering the server.
        ['StartLimitIntervalSec', '300'],
        ['StartLimitBurst', '5'],
      ],
    ],
    [
      'Service',
      [
        ['Type', 'simple'],
        ['User', runUser],
        ['ExecStart', `${tunnelPath} -c ${configPath}`],
        ['Restart', 'on-failure'],
        ['RestartSec', '5'],
        ['KillMode', 'control-group'],
        ['TimeoutStopSec', '10'],
      ],
    ],
    ['Install', [['WantedBy', 'multi-user.target']]],
  ]);
}

/** Node options tunnelward runs with (see package.json "start"): a small young generation keeps its memory low. */
export const NODE_FLAGS = ['--max-semi-space-size=1'];

/** The unit `tunnelward.service` that runs tunnelward itself (`tunnelward service install`). */
export function tunnelwardUnit(options: TunnelwardUnitOptions): string {
  const nodePath = checkPath('nodePath', options.nodePath);
  const cliPath = checkPath('cliPath', options.cliPath);
  const dataDir = checkPath('dataDir', options.dataDir);
  const user = options.user === undefined ? undefined : checkRunUser(options.user, 'user');
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
        ['ExecStart', [nodePath, ...NODE_FLAGS, cliPath, 'serve', '--data-dir', dataDir].join(' ')],
        ['Environment', 'TUNNELWARD_SUPERVISED=systemd'],
        // Fewer malloc arenas: less memory held by a process that is mostly idle.
        ['Environment', 'MALLOC_ARENA_MAX=2'],
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
