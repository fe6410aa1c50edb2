import { readFile } from 'node:fs/promises';
import type { Logger } from '../src/log/logger.js';
import type { Settings } from '../src/settings/defaults.js';
import { procStat, type LiveProcess } from '../src/system/proc.js';
import type { BootTarget, InitdBootService, SystemdBootService } from './boot-services.js';
import { serviceNameOf } from './boot-services.js';
import { runCommand } from './commands.js';
import { PidWatcher, type ProcessExit } from './pid-watcher.js';
import { isSameProcess, type SpawnRequest, type TunnelProcess, type TunnelRunner } from './process-runner.js';

const targetOf = (r: SpawnRequest): BootTarget => ({
  id: r.instanceId,
  name: r.name,
  runUser: r.runUser,
  configPath: r.configPath,
});

/**
 * Runs tunnels through the init system: `systemctl start/stop` of `tunnel_<id>.service`, or the instance's init.d
 * script. The tunnel is the init system's child, so its exit is noticed by watching its pid.
 */
export class ServiceRunner implements TunnelRunner {
  readonly capturesOutput = false;
  private readonly watcher = new PidWatcher(500);

  constructor(
    private readonly boot: SystemdBootService | InitdBootService,
    private readonly settings: () => Readonly<Settings>,
    private readonly log: Logger,
  ) {}

  get initSystem(): string {
    return this.boot.initSystem;
  }

  private systemctl(...args: string[]) {
    return runCommand([this.settings()['Systemd.Systemctl'], ...args]);
  }

  async spawn(request: SpawnRequest): Promise<TunnelProcess> {
    if (request.env && Object.keys(request.env).length > 0) {
      // A unit or a script would have to hold them in a file of its own; for now they go only where we spawn.
      throw new Error(
        'environment variables reach a tunnel only when tunnelward runs it itself (InitSystem = "process")',
      );
    }
    const unit = `${serviceNameOf(request.instanceId)}.service`;
    await this.boot.prepare(targetOf(request));
    let pid: number;
    if (this.boot.initSystem === 'systemd') {
      await this.systemctl('start', unit);
      pid = Number((await this.systemctl('show', '-p', 'MainPID', '--value', unit)).stdout.trim());
    } else {
      const initd = this.boot as InitdBootService;
      await runCommand([initd.scriptPath(request.instanceId), 'start']);
      pid = Number((await readFile(initd.pidFile(request.instanceId), 'utf8').catch(() => '')).trim());
    }
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`${unit} did not start: it has no main process`);
    const startTicks = procStat(pid)?.startTicks ?? null;
    void this.watcher.watch(pid, startTicks);
    return { pid, startTicks };
  }

  /** The init system owns these processes: what runs is what its units say, found through the recorded pids. */
  findRunning(): Map<string, LiveProcess[]> {
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

  /** Asks the init system to stop it; it sends SIGTERM and then SIGKILL by its own timeout. */
  terminate(request: SpawnRequest): void {
    const stop =
      this.boot.initSystem === 'systemd'
        ? this.systemctl('stop', '--no-block', `${serviceNameOf(request.instanceId)}.service`)
        : runCommand([(this.boot as InitdBootService).scriptPath(request.instanceId), 'stop']);
    stop.catch((err) => this.log.warn({ instanceID: request.instanceId, err }, 'stopping the service failed'));
  }

  kill(request: SpawnRequest, pid: number): void {
    if (this.boot.initSystem === 'systemd') {
      this.systemctl('kill', '-s', 'KILL', `${serviceNameOf(request.instanceId)}.service`).catch((err) =>
        this.log.warn({ instanceID: request.instanceId, err }, 'killing the service failed'),
      );
      return;
    }
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
