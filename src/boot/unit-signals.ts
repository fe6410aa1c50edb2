// What systemd's own D-Bus signals say of tunnel units: a run of a unit that is up, a run that ended (and how), a
// start that failed. Pure: the connection that receives the signals is in src/boot/systemd-bus.ts.
//
// systemd (once a client has called Manager.Subscribe) sends, for each unit whose state changed, PropertiesChanged
// for its type's interface (org.freedesktop.systemd1.Service: MainPID, Result, ExecMainCode, ExecMainStatus) and
// then for org.freedesktop.systemd1.Unit (ActiveState, SubState, InvocationID), each with every property that
// emits changes, so each signal is a whole picture of its interface. A run of a Type=exec unit, as systemd 252
// sends it:
//   start:  inactive/dead (new invocation, MainPID set) -> activating/start -> active/running; JobRemoved "done"
//   crash:  failed/failed (MainPID 0, ExecMainCode/Status of the exit) -> activating/auto-restart -> the next run
//   stop:   deactivating/stop-sigterm -> inactive/dead (MainPID 0)
//   limit:  a restart past the start limit: inactive/dead -> failed/failed; JobRemoved "failed"
// Pictures may be merged when the unit changes faster than systemd sends them: a run whose end was not seen ends
// when the next invocation shows up (its exit then unknown).
import { constants } from 'node:os';
import type { UnitStatus } from './unit-status.js';

export type UnitEvent =
  /** A run of the unit is up (an operator's start or systemd's own restart). */
  | { kind: 'started'; id: number; invocation: string }
  /** The run ended: cleanly (`success`) or failed with systemd's result (`exit-code`, `signal`, `timeout`, ...). */
  | {
      kind: 'ended';
      id: number;
      invocation: string;
      success: boolean;
      result: string;
      code: number | null;
      signal: string | null;
    }
  /** A start of the unit failed without a run: systemd's start limit, for one. */
  | { kind: 'startFailed'; id: number; invocation: string };

/** A signal as the D-Bus connection delivers it (body values plain: variants unwrapped, dicts as objects). */
export interface BusSignal {
  path?: string;
  interface?: string;
  member?: string;
  body?: unknown[];
}

export const SYSTEMD_PATH = '/org/freedesktop/systemd1';
export const MANAGER_INTERFACE = 'org.freedesktop.systemd1.Manager';

const SERVICE_INTERFACE = 'org.freedesktop.systemd1.Service';
const UNIT_INTERFACE = 'org.freedesktop.systemd1.Unit';
/** A tunnel unit's object path: `tunnel_12.service` is escaped to `tunnel_5f12_2eservice`. */
const TUNNEL_UNIT_PATH = /^\/org\/freedesktop\/systemd1\/unit\/tunnel_5f([0-9]{1,9})_2eservice$/;
const TUNNEL_UNIT = /^tunnel_([0-9]{1,9})\.service$/;

// How the main process ended (siginfo's si_code, as ExecMainCode carries it).
const CLD_EXITED = 1;

const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, number]) => [number, name]));

/** A signal number as Node names it (`9` -> `SIGKILL`). */
export const signalName = (signal: number): string => SIGNAL_NAMES.get(signal) ?? `SIG${signal}`;

/** What the Service interface last said of a unit. */
interface ServicePicture {
  mainPid: number;
  result: string;
  execCode: number;
  execStatus: number;
}

/** One unit's current run as the signals tell it. */
interface Track {
  invocation: string;
  activeState: string;
  subState: string;
  /** The run was seen up (or was up before the signals began): its end is news. */
  began: boolean;
  startedSent: boolean;
  ended: boolean;
  service: ServicePicture | undefined;
}

const num = (value: unknown): number => (typeof value === 'number' ? value : Number(value ?? 0)) || 0;
const str = (value: unknown): string => (typeof value === 'string' ? value : '');

/** InvocationID comes as 16 bytes; all zeros (no run yet) reads as ''. */
function invocationOf(value: unknown): string {
  const bytes = Buffer.isBuffer(value) ? value : Array.isArray(value) ? Buffer.from(value as number[]) : undefined;
  if (!bytes || bytes.every((b) => b === 0)) return '';
  return bytes.toString('hex');
}

/**
 * Reads systemd's signals into unit events, one tunnel unit at a time. Each run (invocation) ends once and is
 * reported up once, however many times systemd repeats a picture.
 */
export class UnitSignals {
  private readonly units = new Map<number, Track>();

  read(signal: BusSignal): UnitEvent[] {
    const body = signal.body ?? [];
    if (signal.member === 'JobRemoved' && signal.interface === MANAGER_INTERFACE) {
      // JobRemoved(u id, o job, s unit, s result)
      const id = Number(TUNNEL_UNIT.exec(str(body[2]))?.[1]);
      if (!Number.isInteger(id) || str(body[3]) !== 'failed') return [];
      return [{ kind: 'startFailed', id, invocation: this.units.get(id)?.invocation ?? '' }];
    }
    if (signal.member === 'UnitRemoved' && signal.interface === MANAGER_INTERFACE) {
      // Unloaded (deleted, or stopped and no longer referenced): nothing is kept of it; a later load starts afresh.
      const removed = Number(TUNNEL_UNIT.exec(str(body[0]))?.[1]);
      if (Number.isInteger(removed)) this.units.delete(removed);
      return [];
    }
    if (signal.member !== 'PropertiesChanged') return [];
    const id = Number(TUNNEL_UNIT_PATH.exec(signal.path ?? '')?.[1]);
    if (!Number.isInteger(id)) return [];
    const props = (body[1] ?? {}) as Record<string, unknown>;
    if (body[0] === SERVICE_INTERFACE) {
      this.trackOf(id).service = {
        mainPid: num(props.MainPID),
        result: str(props.Result),
        execCode: num(props.ExecMainCode),
        execStatus: num(props.ExecMainStatus),
      };
      return [];
    }
    if (body[0] !== UNIT_INTERFACE) return [];
    return this.onUnit(id, str(props.ActiveState), str(props.SubState), invocationOf(props.InvocationID));
  }

  private trackOf(id: number): Track {
    let track = this.units.get(id);
    if (!track) {
      track = {
        invocation: '',
        activeState: '',
        subState: '',
        began: false,
        startedSent: false,
        ended: true,
        service: undefined,
      };
      this.units.set(id, track);
    }
    return track;
  }

  private onUnit(id: number, active: string, sub: string, invocation: string): UnitEvent[] {
    if (invocation === '') return [];
    const track = this.trackOf(id);
    track.activeState = active;
    track.subState = sub;
    const service = track.service;
    const mainPid = service?.mainPid ?? 0;
    const events: UnitEvent[] = [];
    if (track.invocation !== invocation) {
      // A new run: the one before it ended, whether or not its end was seen.
      if (track.invocation !== '' && track.began && !track.ended)
        events.push({ ...this.ending(id, track.invocation, undefined), success: false, result: 'unknown' });
      // A run first seen in its preamble (inactive/dead or activating/start with its process already made) is
      // beginning now; one first seen otherwise was up before the signals began.
      const preamble = (active === 'inactive' && mainPid > 0) || (active === 'activating' && sub === 'start');
      Object.assign(track, { invocation, began: !preamble, startedSent: false, ended: false });
    }
    if (track.ended) return events;
    const down = mainPid === 0 && (active === 'inactive' || active === 'failed' || sub === 'auto-restart');
    if (down) {
      if (track.began) events.push(this.ending(id, invocation, service));
      track.ended = true;
      return events;
    }
    if (active === 'activating' || active === 'active') track.began = true;
    if (active === 'active' && !track.startedSent) {
      track.startedSent = true;
      events.push({ kind: 'started', id, invocation });
    }
    return events;
  }

  private ending(id: number, invocation: string, service: ServicePicture | undefined): UnitEvent & { kind: 'ended' } {
    const exited = service?.execCode === CLD_EXITED;
    const killed = service !== undefined && service.execCode > CLD_EXITED;
    return {
      kind: 'ended',
      id,
      invocation,
      success: service?.result === 'success',
      result: service?.result ?? 'unknown',
      code: exited ? service.execStatus : null,
      signal: killed ? signalName(service.execStatus) : null,
    };
  }

  /**
   * The unit as systemd's last signals about it left it; undefined when none has come since the signals began.
   * Current once the signals before a reply are read: systemd sends a unit's pending change before the end of its
   * job (JobRemoved).
   */
  picture(id: number): UnitStatus | undefined {
    const track = this.units.get(id);
    if (!track || track.invocation === '' || !track.service) return undefined;
    return {
      unit: `tunnel_${id}.service`,
      loaded: true,
      activeState: track.activeState,
      subState: track.subState,
      result: track.service.result,
      mainPid: track.service.mainPid,
      invocation: track.invocation,
    };
  }
}
