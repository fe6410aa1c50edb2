// What `systemctl show` says of tunnel units, read into what tunnelward needs. Pure: the commands are run in actors/.

/** The properties asked of each unit (`systemctl show -p ...`). */
export const UNIT_PROPERTIES = ['Id', 'LoadState', 'ActiveState', 'SubState', 'Result', 'MainPID', 'InvocationID'];

export interface UnitStatus {
  unit: string;
  loaded: boolean;
  activeState: string;
  subState: string;
  result: string;
  /** 0 when no main process runs. */
  mainPid: number;
  /** The current run of the unit (every start, systemd's own restarts included, gets a new one). */
  invocation: string;
}

/** Parses `systemctl show` output for one or more units: blocks of Key=Value lines separated by a blank line. */
export function parseUnitStatuses(stdout: string): UnitStatus[] {
  return stdout
    .split(/\n\s*\n/)
    .map((block) => {
      const props = new Map<string, string>();
      for (const line of block.split('\n')) {
        const at = line.indexOf('=');
        if (at > 0) props.set(line.slice(0, at), line.slice(at + 1));
      }
      return props;
    })
    .filter((props) => props.has('Id'))
    .map((props) => ({
      unit: props.get('Id')!,
      loaded: props.get('LoadState') === 'loaded',
      activeState: props.get('ActiveState') ?? '',
      subState: props.get('SubState') ?? '',
      result: props.get('Result') ?? '',
      mainPid: Number(props.get('MainPID') ?? 0) || 0,
      invocation: props.get('InvocationID') ?? '',
    }));
}

/**
 * Where a unit that runs no process stands in systemd's restart: waiting to restart it (`backoff`), given up
 * (`failed`), or neither.
 */
export function restartStateOf(status: UnitStatus): 'backoff' | 'failed' | undefined {
  if (status.mainPid > 0) return undefined;
  if (status.activeState === 'activating' && status.subState === 'auto-restart') return 'backoff';
  if (status.activeState === 'failed') return 'failed';
  return undefined;
}
