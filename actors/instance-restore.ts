import type { ExitInfo } from '../machines/instance.machine.js';
import { readTunnelConfigText } from '../src/config/tunnel-config.js';
import { hasExpired } from '../src/instances/expiry.js';
import type { InstanceRecord, InstanceStore } from '../src/instances/instance-store.js';
import type { Logger } from '../src/log/logger.js';
import type { Database } from '../src/storage/database.js';
import { getMeta, setMeta } from '../src/storage/meta.js';
import type { LiveProcess } from '../src/system/proc.js';
import type { InstanceLogs } from './instance-logs.js';
import type { SpawnRequest, TunnelRunner } from './process-runner.js';

/** What the restore needs of the lifecycle: the instance's actor put where the tunnel is found. */
export interface RestoreHost {
  /** The instance's live process is taken over: its actor runs it. */
  adopt(record: InstanceRecord, pid: number): void;
  /**
   * The instance rests where the init system has it (backoff, failed), or failed as it was before tunnelward
   * restarted (with the exit on record: `exit` given, null when none).
   */
  resume(record: InstanceRecord, state: 'backoff' | 'failed', exit?: ExitInfo | null): void;
  knowSecrets(record: InstanceRecord, text: string): void;
  requestFor(record: InstanceRecord): SpawnRequest;
  outputProblem(instanceID: number, pid: number, problem: string): void;
}

/** What the restore found, and what it leaves to commands. */
export interface Restored {
  adopted: number;
  failed: number;
  /** Instances to start (they should run and do not), and to stop (a stop cut off). */
  toStart: number[];
  toStop: number[];
  sameBoot: boolean;
}

/**
 * Start-up after the housekeeping: every tunnel that still runs is taken over (the recorded process, or one found
 * running its config file), a second copy of one is ended, and the rest is brought to its desired state: after a
 * restart of tunnelward alone what should run is started again and a stop that was cut off finished; after a new
 * boot of the host the `bootAtStart` instances are started.
 */
export class InstanceRestore {
  private readonly db: Database;
  private readonly store: InstanceStore;
  private readonly runner: TunnelRunner;
  private readonly logs: InstanceLogs;
  private readonly host: RestoreHost;
  private readonly log: Logger;

  constructor(deps: {
    db: Database;
    store: InstanceStore;
    runner: TunnelRunner;
    logs: InstanceLogs;
    host: RestoreHost;
    log: Logger;
  }) {
    ({ db: this.db, store: this.store, runner: this.runner, logs: this.logs, host: this.host, log: this.log } = deps);
  }

  /**
   * Takes over the processes that still run and brings the rest to their desired state: after a restart of
   * tunnelward alone, what should run is started again and a stop that was cut off is finished; after a new boot
   * of the host, the `bootAtStart` instances are started.
   */
  async restore(bootId: string): Promise<Restored> {
    await this.runner.takeOverOutput?.();
    const sameBoot = getMeta(this.db, 'boot_id') === bootId;
    const toStart: number[] = [];
    const toStop: number[] = [];
    let adopted = 0;
    let failed = 0;
    // Tunnels are found by what they run, not only by the pids on record: a crash can come between a spawn and
    // the saving of its pid, and a tunnel found so is taken over instead of being started a second time.
    const running = await this.runner.findRunning(
      this.store.all().map((r) => ({ id: r.id, configPath: r.configPath })),
    );
    // What runs on may print its secrets: they are known before its output is read.
    await Promise.all(
      this.store
        .all()
        .filter((r) => r.pid !== null || (running.get(r.configPath)?.length ?? 0) > 0)
        .map(async (r) => this.host.knowSecrets(r, await readTunnelConfigText(r.configPath).catch(() => ''))),
    );
    const toCancel: InstanceRecord[] = [];
    const now = Date.now();
    this.db.transaction(() => {
      for (const record of this.store.all()) {
        const pid = this.adoptOne(record, running.get(record.configPath) ?? []);
        if (pid !== null) {
          adopted++;
          // A stop that was cut off: it was meant, so it is finished.
          if (record.desired === 'stopped') toStop.push(record.id);
          continue;
        }
        if (record.pid !== null) this.store.setProcess(record.id, null, null);
        // An init system that restarts tunnels itself may be about to restart this one, or may have given it up.
        const restart = this.runner.restartStateOf?.(record.id);
        if (restart === 'backoff' && record.desired === 'stopped') toCancel.push(record);
        else if (restart) {
          this.host.resume(record, restart);
          if (restart === 'failed') this.store.setDesired(record.id, 'stopped');
          continue;
        }
        // One whose expiry passed while we were away is not started again: the expiry stops it (see InstanceExpiry).
        const shouldRun = (sameBoot ? record.desired === 'running' : record.bootAtStart) && !hasExpired(record, now);
        if (!sameBoot) this.store.setDesired(record.id, record.bootAtStart ? 'running' : 'stopped');
        if (shouldRun) toStart.push(record.id);
        else if (record.failed) {
          // Failed before we restarted: it rests there, as it was, until an operator starts it.
          const exit = record.lastExit && { code: record.lastExit.code, signal: record.lastExit.signal, tail: [] };
          this.host.resume(record, 'failed', exit);
          failed++;
        }
      }
      setMeta(this.db, 'boot_id', bootId);
    });
    await this.db.persist();
    for (const record of toCancel) this.runner.cancelRestart?.(this.host.requestFor(record));
    return { adopted, failed, toStart, toStop, sameBoot };
  }

  /**
   * Takes over the instance's live process: the recorded one if it still runs, else the newest found running its
   * config file. Any other process for the same file is a second copy (a restart cut off by a crash) and is ended.
   * Returns the pid taken over, or null.
   */
  private adoptOne(record: InstanceRecord, found: LiveProcess[]): number | null {
    const recorded =
      record.pid !== null && this.runner.adopt(record.pid, record.startTicks, record.configPath) ? record.pid : null;
    const candidates = found.filter((p) => p.pid !== recorded).sort((a, b) => b.startTicks - a.startTicks);
    let pid = recorded;
    if (pid === null) {
      const newest = candidates.shift();
      if (newest && this.runner.adopt(newest.pid, newest.startTicks, record.configPath)) {
        pid = newest.pid;
        this.store.setProcess(record.id, newest.pid, newest.startTicks);
        this.log.warn({ instanceID: record.id, pid }, 'found a tunnel running whose pid was not recorded; taken over');
      }
    }
    for (const stray of candidates) {
      this.log.warn(
        { instanceID: record.id, pid: stray.pid },
        'found a second tunnel for the same config file; stopping it',
      );
      this.runner.stopStray(stray.pid);
    }
    if (pid === null) return null;
    // Drain what it wrote while we were away, then follow it. Output that cannot be read is this instance's
    // trouble alone: it is said, and the tunnel is taken over all the same.
    const adoptedPid = pid;
    const problem = this.logs.channel(record.id).readTakenOver(pid, () => this.runner.checkNow(adoptedPid));
    if (problem) this.host.outputProblem(record.id, pid, problem);
    this.host.adopt(record, pid);
    return pid;
  }

  /** Ends every process found running the config files of these instances (being undone or removed). */
  async stopStrays(records: readonly InstanceRecord[]): Promise<void> {
    const targets = records.map((r) => ({ id: r.id, configPath: r.configPath }));
    for (const found of (await this.runner.findRunning(targets)).values())
      for (const p of found) this.runner.stopStray(p.pid);
  }
}
