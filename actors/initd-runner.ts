import { readFile } from 'node:fs/promises';
import type { Logger } from '../src/log/logger.js';
import { procStat, type LiveProcess } from '../src/system/proc.js';
import { targetOfRequest, type InitdBootService } from './boot-services.js';
import { runCommand } from '../src/system/run-program.js';
import { PidWatcher, type ProcessExit } from './pid-watcher.js';
import { isSameProcess, type SpawnRequest, type TunnelProcess, type TunnelRunner } from './process-runner.js';

/**
 * Runs tunnels through their init.d scripts (start-stop-daemon). The tunnel is not tunnelward's child and init.d
 * tells nobody when it ends, so its exit is noticed by watching its pid; tunnelward is the restarter.
 */
export class InitdRunner implements TunnelRunner {
  readonly initSystem = 'init.d';
  readonly capturesOutput = false;
  private readonly watcher = new PidWatcher(500);

  constructor(
    private readonly boot: InitdBootService,
    private readonly log: Logger,
  ) {}

  async spawn(request: SpawnRequest): Promise<TunnelProcess> {
    const id = request.instanceId;
    await this.boot.prepare(targetOfRequest(request));
    await runCommand([this.boot.scriptPath(id), 'start']);
    const pid = Number((await readFile(this.boot.pidFile(id), 'utf8').catch(() => '')).trim());
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`the init script of instance ${id} started no process`);
    const startTicks = procStat(pid)?.startTicks ?? null;
    void this.watcher.watch(pid, startTicks);
    return { pid, startTicks };
  }

  /** The init script owns these processes: what runs is what their pid files say, found through the recorded pids. */
  async findRunning(): Promise<Map<string, LiveProcess[]>> {
    return new Map();
  }

  stopStray(): void {}

  adopt(pid: number, startTicks: number | null, configPath: string): boolean {
    if (this.watcher.has(pid)) return true;
    if (!isSameProcess(pid, startTicks, configPath)) return false;
    void this.watcher.watch(pid, startTicks);
    return true;
  }

  exitOf(pid: number): Promise<ProcessExit> {
    return this.watcher.exitOf(pid) ?? Promise.resolve({ code: null, signal: null });
  }

  forget(): void {}

  checkNow(pid: number): void {
    this.watcher.checkNow(pid);
  }

  /** The script's stop sends SIGTERM, then SIGKILL by its own timeout. */
  terminate(request: SpawnRequest): void {
    runCommand([this.boot.scriptPath(request.instanceId), 'stop']).catch((err) =>
      this.log.warn({ instanceID: request.instanceId, err }, 'stopping the service failed'),
    );
  }

  kill(_request: SpawnRequest, pid: number): void {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  close(): void {
    this.watcher.close();
  }
}
