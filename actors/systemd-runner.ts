import { constants } from 'node:os';
import { Subject } from '../src/util/rx.js';
import { nextAfterRun, restartPolicy } from '../src/boot/systemd-unit.js';
import { parseUnitStatuses, restartStateOf, UNIT_PROPERTIES, type UnitStatus } from '../src/boot/unit-status.js';
import type { UnitEvent } from '../src/boot/unit-signals.js';
import type { Logger } from '../src/log/logger.js';
import type { Settings } from '../src/settings/table.js';
import { procStat, type LiveProcess } from '../src/system/proc.js';
import { serviceNameOf, targetOfRequest, type SystemdBootService } from './boot-services.js';
import { runProgram } from '../src/system/run-program.js';
import type { ProcessExit } from './pid-watcher.js';
import {
  type InitSystemEvent,
  type RunTarget,
  type SpawnRequest,
  type TunnelProcess,
  type TunnelRunner,
} from './process-runner.js';
import type { SystemdBus } from '../src/boot/systemd-bus.js';

const unitOf = (id: number) => `${serviceNameOf(id)}.service`;

/** Units asked about in one `systemctl show` (its command line stays short). */
const SHOW_BATCH = 500;

/** Runs that ended with nobody watching, kept for a watcher that comes late (a start that has not returned yet). */
const UNWATCHED_ENDS_KEPT = 1024;

/**
 * What systemd said of one run of a unit (one invocation), kept until a watcher asks: news of a run may be read
 * before the start that made it returns, and news of an earlier run may come after a later run began.
 */
interface Run {
  id: number;
  invocation: string;
  ended?: ProcessExit;
  /** The run's end, once someone watches it (made once per run, however many times it is taken over). */
  exited?: Promise<ProcessExit>;
  watcher?: (exit: ProcessExit) => void;
}

/**
 * Runs tunnels as systemd units `tunnel_<id>.service`. systemd is the one restarter of a crashed tunnel (the unit
 * carries the Watchdog settings), whether tunnelward is up or not; tunnelward observes. Nothing is polled: what
 * happens to the units is pushed by systemd's own signals (exits, systemd's restarts and give-ups), units are
 * started and stopped with systemd's own methods on the same connection, and systemd is asked (`systemctl show`)
 * only at start-up, after the signals were lost, and of a unit no signal has told of yet: for all the units
 * concerned in one call.
 */
export class SystemdRunner implements TunnelRunner {
  readonly initSystem = 'systemd';
  readonly capturesOutput = false;
  readonly initEvents$ = new Subject<InitSystemEvent>();
  /** By invocation id. */
  private readonly runs = new Map<string, Run>();
  private readonly exits = new Map<number, Promise<ProcessExit>>();
  /** The units as they were at start-up (`findRunning`), for taking them over. */
  private found = new Map<number, UnitStatus>();
  private readonly log: Logger;
  private readonly subscriptions;

  constructor(
    private readonly boot: SystemdBootService,
    private readonly settings: () => Readonly<Settings>,
    private readonly bus: SystemdBus,
    log: Logger,
  ) {
    this.log = log.child({ component: 'systemd' });
    this.subscriptions = [
      bus.events$.subscribe((event) => this.onUnitEvent(event)),
      bus.resync$.subscribe(() => {
        this.resync().catch((err) => this.log.warn({ err }, 'cannot ask systemd how the watched units stand'));
      }),
    ];
  }

  private systemctl(...args: string[]) {
    return runProgram([this.settings()['Systemd.Systemctl'], ...args]);
  }

  /**
   * The units as they are now: as systemd's signals left them, asking systemd (`systemctl show`) only of those no
   * signal has told of since the signals began.
   */
  private async current(ids: readonly number[]): Promise<Map<number, UnitStatus>> {
    const known = new Map<number, UnitStatus>();
    const unknown: number[] = [];
    for (const id of ids) {
      const picture = this.bus.picture(id);
      if (picture) known.set(id, picture);
      else unknown.push(id);
    }
    if (unknown.length > 0) for (const [id, status] of await this.statuses(unknown)) known.set(id, status);
    return known;
  }

  /** What systemd says of these units now, in as few calls as their number allows. */
  private async statuses(ids: readonly number[]): Promise<Map<number, UnitStatus>> {
    const statuses = new Map<number, UnitStatus>();
    for (let i = 0; i < ids.length; i += SHOW_BATCH) {
      const batch = ids.slice(i, i + SHOW_BATCH);
      const { stdout } = await this.systemctl('show', `--property=${UNIT_PROPERTIES.join(',')}`, ...batch.map(unitOf));
      for (const status of parseUnitStatuses(stdout)) {
        const id = Number(/^tunnel_(\d+)\.service$/.exec(status.unit)?.[1]);
        if (Number.isInteger(id)) statuses.set(id, status);
      }
    }
    return statuses;
  }

  /**
   * Starts the unit: systemd reads the unit files written since it last did (one reload for a burst of them), an
   * operator's start begins a fresh count of crashes (reset-failed, in systemd's start limit as in tunnelward's),
   * and the start's job is followed to its end. A thousand starts at once are a thousand calls on one connection,
   * with no command run for any of them.
   */
  async spawn(request: SpawnRequest): Promise<TunnelProcess> {
    const id = request.instanceId;
    const unit = unitOf(id);
    await this.boot.prepare(targetOfRequest(request));
    // A stop asked for without waiting may not have run yet (a restart whose exit was seen before its stop
    // landed): a start now would merge with it. It is waited for first.
    if (this.stopAsked.delete(id)) await this.bus.stopUnit(unit, true).catch(() => {});
    await this.boot.sync();
    await this.bus.resetFailed(unit);
    const job = await this.bus.startUnit(unit);
    const status = (await this.current([id])).get(id);
    if (!status || status.mainPid <= 0) {
      // It ended at once: systemd may be about to restart it, which this failed start must not leave behind.
      this.stopUnit(id);
      const how = status ? `it is ${status.activeState} (${status.subState}), result ${status.result}` : 'no status';
      const error = job === 'done' ? '' : ` (its start ended with "${job}")`;
      throw new Error(`${unit} did not start: ${how}${error}${await this.lastLines(unit)}`);
    }
    return this.watch(id, status.mainPid, status.invocation);
  }

  /**
   * The tunnel's last lines in the journal, to explain a start that failed. systemd's own lines about the unit
   * (`tunnel_1.service: Failed ...`, which the state already says) are left out: they can crowd out what the tunnel
   * said.
   */
  private async lastLines(unit: string): Promise<string> {
    const journalctl = this.settings()['Systemd.Journalctl'];
    const lines = await runProgram([journalctl, '-u', unit, '-n', '50', '-o', 'cat', '--no-pager', '-q']).then(
      ({ stdout }) =>
        stdout
          .split('\n')
          .filter((line) => line.trim() !== '' && !line.startsWith(`${unit}: `))
          .slice(-5)
          .join('\n'),
      () => '',
    );
    return lines ? `; last log lines:\n${lines}` : '';
  }

  /**
   * Where systemd's restart of the unit stands: its new main process (taken over: watched from now on), `failed`
   * when systemd gave the unit up, undefined while it is still to come.
   */
  async afterRestart(id: number): Promise<TunnelProcess | 'failed' | undefined> {
    const status = (await this.current([id])).get(id);
    if (!status) return undefined;
    if (status.mainPid > 0) return this.watch(id, status.mainPid, status.invocation);
    return restartStateOf(status) === 'failed' ? 'failed' : undefined;
  }

  private runOf(id: number, invocation: string): Run {
    let run = this.runs.get(invocation);
    if (!run) {
      run = { id, invocation };
      this.runs.set(invocation, run);
    }
    return run;
  }

  private watch(id: number, pid: number, invocation: string): TunnelProcess {
    const run = this.runOf(id, invocation);
    run.exited ??= new Promise<ProcessExit>((resolve) => {
      if (run.ended) resolve(run.ended);
      else run.watcher = resolve;
    });
    if (run.ended) this.runs.delete(invocation);
    this.exits.set(pid, run.exited);
    this.log.debug({ instanceID: id, pid, invocation }, "watching the unit's main process");
    return { pid, startTicks: procStat(pid)?.startTicks ?? null };
  }

  private onUnitEvent(event: UnitEvent): void {
    const { id, invocation } = event;
    this.log.debug({ instanceID: id, ...event }, 'unit event');
    if (event.kind === 'started') {
      if (!this.runs.get(invocation)?.watcher) this.initEvents$.next({ type: 'started', instanceId: id });
      return;
    }
    if (event.kind === 'startFailed') {
      this.initEvents$.next({ type: 'gaveUp', instanceId: id });
      return;
    }
    this.ended(this.runOf(id, invocation), event);
  }

  private ended(run: Run, how: { success: boolean; code: number | null; signal: string | null }): void {
    if (run.ended) return;
    // Which exits systemd restarts depends only on the settings, not on systemd's version.
    const policy = restartPolicy(this.settings(), 0);
    run.ended = { code: how.code, signal: how.signal, next: nextAfterRun(policy, how) };
    if (run.watcher) {
      run.watcher(run.ended);
      this.runs.delete(run.invocation);
    } else this.pruneUnwatched();
  }

  /**
   * After systemd's signals were lost for a while: the watched runs that are no longer what their unit runs ended
   * meanwhile (how, the signals would have said; systemd's restart, if any, is already under way).
   */
  private async resync(): Promise<void> {
    const watched = [...this.runs].filter(([, run]) => run.watcher && !run.ended);
    if (watched.length === 0) return;
    const statuses = await this.statuses([...new Set(watched.map(([, run]) => run.id))]);
    for (const [invocation, run] of watched) {
      const status = statuses.get(run.id);
      if (status && status.invocation === invocation && status.mainPid > 0) continue;
      this.log.info({ instanceID: run.id, invocation }, 'the run ended while systemd could not be heard');
      this.ended(run, { success: false, code: null, signal: null });
    }
  }

  private pruneUnwatched(): void {
    if (this.runs.size <= UNWATCHED_ENDS_KEPT) return;
    for (const [invocation, run] of this.runs) {
      if (this.runs.size <= UNWATCHED_ENDS_KEPT) break;
      if (run.ended && !run.watcher) this.runs.delete(invocation);
    }
  }

  /** The units of these instances as systemd has them now: their main processes are what runs. */
  async findRunning(targets: readonly RunTarget[]): Promise<Map<string, LiveProcess[]>> {
    this.found = await this.statuses(targets.map((t) => t.id));
    const running = new Map<string, LiveProcess[]>();
    for (const { id, configPath } of targets) {
      const status = this.found.get(id);
      if (status && status.mainPid > 0) {
        const startTicks = procStat(status.mainPid)?.startTicks;
        if (startTicks !== undefined) running.set(configPath, [{ pid: status.mainPid, startTicks }]);
      }
    }
    return running;
  }

  adopt(pid: number): boolean {
    for (const [id, status] of this.found) {
      if (status.mainPid === pid) {
        this.watch(id, pid, status.invocation);
        return true;
      }
    }
    return false;
  }

  restartStateOf(id: number): 'backoff' | 'failed' | undefined {
    const status = this.found.get(id);
    return status ? restartStateOf(status) : undefined;
  }

  /** systemd runs one main process per unit: there is never a second copy to end. */
  stopStray(): void {}

  exitOf(pid: number): Promise<ProcessExit> {
    return this.exits.get(pid) ?? Promise.resolve({ code: null, signal: null });
  }

  checkNow(): void {}

  forget(pid: number): void {
    this.exits.delete(pid);
  }

  removed(id: number): void {
    this.stopAsked.delete(id);
  }

  /** Units a stop was asked of since their last start. */
  private readonly stopAsked = new Set<number>();

  private stopUnit(id: number): void {
    this.stopAsked.add(id);
    this.bus.stopUnit(unitOf(id)).catch((err) => this.log.warn({ instanceID: id, err }, 'stopping the unit failed'));
  }

  /** systemd sends SIGTERM, then SIGKILL after the unit's TimeoutStopSec (Instance.StopTimeoutSecs). */
  terminate(request: SpawnRequest): void {
    this.stopUnit(request.instanceId);
  }

  kill(request: SpawnRequest): void {
    this.bus
      .killUnit(unitOf(request.instanceId), constants.signals.SIGKILL)
      .catch((err) => this.log.warn({ instanceID: request.instanceId, err }, 'killing the unit failed'));
  }

  /** A stop while systemd waits to restart the unit calls the restart off. */
  cancelRestart(request: SpawnRequest): void {
    this.stopUnit(request.instanceId);
  }

  close(): void {
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    this.initEvents$.complete();
  }
}
