import { chmod, mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { InitSystem } from '../src/boot/init-system.js';
import { initdScript } from '../src/boot/initd-script.js';
import { environmentFile } from '../src/boot/environment-file.js';
import { checkServiceName } from '../src/boot/names.js';
import { restartPolicy, tunnelUnit, type RestartPolicy } from '../src/boot/systemd-unit.js';
import { createTaskArgs, deleteTaskArgs } from '../src/boot/windows-task.js';
import { writeFileAtomic } from '../src/fs/atomic.js';
import type { Settings } from '../src/settings/table.js';
import { trustedProgram } from '../src/system/trusted-program.js';
import { batchedCommand } from '../src/util/batcher.js';
import { coalesce } from '../src/util/coalesce.js';
import { runProgram } from '../src/system/run-program.js';

/** What a boot service is made from: one instance, as it is now. */
export interface BootTarget {
  id: number;
  name: string;
  runUser: string;
  configPath: string;
  /** The instance's environment variables: an init system that runs the tunnel reads them from a file of its own. */
  env: Record<string, string>;
  /** Its own memory cap (MiB), over Instance.MemoryMaxMB. */
  memoryMaxMB?: number;
}

/** The boot target of a tunnel about to be started (what a runner that starts it through the init system prepares). */
export function targetOfRequest(request: {
  instanceId: number;
  name: string;
  runUser: string;
  configPath: string;
  env?: Record<string, string>;
  memoryMaxMB?: number;
}): BootTarget {
  const { instanceId: id, name, runUser, configPath, env, memoryMaxMB } = request;
  return { id, name, runUser, configPath, env: env ?? {}, ...(memoryMaxMB !== undefined ? { memoryMaxMB } : {}) };
}

/**
 * The operating-system side of an instance. `prepare` writes what the init system needs to run it at all (a unit
 * file, an init script); `enable`/`disable` switch its start at boot on and off; `remove` undoes everything.
 */
export interface BootService {
  readonly initSystem: InitSystem;
  prepare(target: BootTarget): Promise<void>;
  enable(target: BootTarget): Promise<void>;
  disable(target: BootTarget): Promise<void>;
  remove(target: BootTarget): Promise<void>;
  /** Brings what `prepare` wrote for these instances up to date with the settings (restart policy, binary). */
  refresh?(targets: readonly BootTarget[]): Promise<void>;
}

export const serviceNameOf = (id: number): string => checkServiceName(`tunnel_${id}`);

const describe = (t: BootTarget) => `tunnel ${t.name} (tunnelward instance ${t.id})`;

type SettingsSource = () => Readonly<Settings>;

/**
 * The instance's environment file in `dir` (mode 0700): written (0600, owned by tunnelward, root most often) when it
 * has variables and its text changed, removed when it has none. Its path, or undefined when there is none.
 */
async function writeEnvironmentFile(dir: string, t: BootTarget): Promise<string | undefined> {
  const path = join(dir, `${serviceNameOf(t.id)}.env`);
  const text = environmentFile(t.env);
  if (text === '') {
    await rm(path, { force: true });
    return undefined;
  }
  if ((await readFile(path, 'utf8').catch(() => undefined)) !== text) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(path, text, { mode: 0o600 });
  }
  return path;
}

const removeEnvironmentFile = (dir: string, t: BootTarget) =>
  rm(join(dir, `${serviceNameOf(t.id)}.env`), { force: true });

/** Process mode: tunnelward itself starts the `bootAtStart` instances when the host has booted. */
export class OwnBootService implements BootService {
  readonly initSystem = 'process' as const;
  async prepare(): Promise<void> {}
  async enable(): Promise<void> {}
  async disable(): Promise<void> {}
  async remove(): Promise<void> {}
}

export class SystemdBootService implements BootService {
  readonly initSystem = 'systemd' as const;
  private version: Promise<number> | undefined;
  /** Unit files were written or removed since systemd last read them (a daemon-reload). */
  private stale = false;
  /** Calls that come together (a thousand starts) share one daemon-reload. */
  private readonly reload = coalesce(async () => {
    await this.systemctl('daemon-reload');
  });
  /** Enables and disables that come together are one `systemctl enable|disable --no-reload a b c ...`. */
  private readonly enables = batchedCommand((units: string[]) => this.systemctl('enable', '--no-reload', ...units));
  private readonly disables = batchedCommand((units: string[]) => this.systemctl('disable', '--no-reload', ...units));

  constructor(
    private readonly settings: SettingsSource,
    /** Where the instances' environment files are kept. */
    private readonly envDir: string,
  ) {}

  unitPath(id: number): string {
    return join(this.settings()['Systemd.UnitDir'], `${serviceNameOf(id)}.service`);
  }

  private systemctl(...args: string[]) {
    return runProgram([this.settings()['Systemd.Systemctl'], ...args]);
  }

  /** systemd's version (Debian 12 has 252), read once: which restart settings a unit may use depends on it. */
  systemdVersion(): Promise<number> {
    this.version ??= this.systemctl('--version').then(
      ({ stdout }) => Number(/^systemd (\d+)/.exec(stdout)?.[1] ?? 0),
      () => 0,
    );
    return this.version;
  }

  /** How the units restart tunnels, from the current Watchdog settings. */
  async restartPolicy(): Promise<RestartPolicy> {
    return restartPolicy(this.settings(), await this.systemdVersion());
  }

  /** Writes the instance's unit when its text differs from what is there. */
  private async write(t: BootTarget): Promise<void> {
    const s = this.settings();
    const unit = tunnelUnit({
      serviceName: serviceNameOf(t.id),
      description: describe(t),
      runUser: t.runUser,
      tunnelPath: await trustedProgram(s.TunnelPath),
      configPath: t.configPath,
      restart: await this.restartPolicy(),
      environmentFile: await writeEnvironmentFile(this.envDir, t),
      memoryMaxMB: t.memoryMaxMB ?? s['Instance.MemoryMaxMB'],
    });
    const path = this.unitPath(t.id);
    if ((await readFile(path, 'utf8').catch(() => undefined)) === unit) return;
    await mkdir(s['Systemd.UnitDir'], { recursive: true });
    await writeFileAtomic(path, unit, { mode: 0o644 });
    this.stale = true;
  }

  /**
   * Makes systemd read the unit files written since it last did, before they are used (a start): one
   * daemon-reload for however many were written, however many starts wait for it.
   */
  async sync(): Promise<void> {
    if (!this.stale) return;
    this.stale = false;
    await this.reload().catch((err: unknown) => {
      this.stale = true;
      throw err;
    });
  }

  /** Writes the unit; systemd reads it at the next start (`sync`), so a burst of creations costs no reload. */
  async prepare(t: BootTarget): Promise<void> {
    await this.write(t);
  }

  /** A settings change reaches the running units too (their restart policy): systemd reads it now. */
  async refresh(targets: readonly BootTarget[]): Promise<void> {
    for (const t of targets) await this.write(t);
    await this.sync();
  }

  async enable(t: BootTarget): Promise<void> {
    await this.write(t);
    await this.enables(`${serviceNameOf(t.id)}.service`);
  }

  async disable(t: BootTarget): Promise<void> {
    await this.disables(`${serviceNameOf(t.id)}.service`);
  }

  async remove(t: BootTarget): Promise<void> {
    await this.disable(t);
    await rm(this.unitPath(t.id), { force: true });
    await removeEnvironmentFile(this.envDir, t);
    // systemd forgets the unit now (deletions that come together share the reload).
    this.stale = true;
    await this.sync();
  }
}

export class InitdBootService implements BootService {
  readonly initSystem = 'init.d' as const;
  constructor(
    private readonly settings: SettingsSource,
    /** Where the instances' environment files are kept. */
    private readonly envDir: string,
  ) {}

  scriptPath(id: number): string {
    return join(this.settings()['InitD.ScriptDir'], serviceNameOf(id));
  }

  pidFile(id: number): string {
    return join(this.settings()['InitD.PidDir'], `${serviceNameOf(id)}.pid`);
  }

  logFile(id: number): string {
    return join(this.settings()['InitD.LogDir'], `${serviceNameOf(id)}.log`);
  }

  async prepare(t: BootTarget): Promise<void> {
    const s = this.settings();
    const script = initdScript({
      serviceName: serviceNameOf(t.id),
      description: describe(t),
      runUser: t.runUser,
      tunnelPath: await trustedProgram(s.TunnelPath),
      configPath: t.configPath,
      pidFile: this.pidFile(t.id),
      logFile: this.logFile(t.id),
      environmentFile: await writeEnvironmentFile(this.envDir, t),
    });
    await mkdir(s['InitD.ScriptDir'], { recursive: true });
    await writeFileAtomic(this.scriptPath(t.id), script, { mode: 0o755 });
    await chmod(this.scriptPath(t.id), 0o755);
  }

  async enable(t: BootTarget): Promise<void> {
    await this.prepare(t);
    await runProgram([this.settings()['InitD.UpdateRcD'], serviceNameOf(t.id), 'defaults']);
  }

  async disable(t: BootTarget): Promise<void> {
    await runProgram([this.settings()['InitD.UpdateRcD'], '-f', serviceNameOf(t.id), 'remove']);
  }

  async remove(t: BootTarget): Promise<void> {
    await this.disable(t);
    await rm(this.scriptPath(t.id), { force: true });
    await removeEnvironmentFile(this.envDir, t);
  }
}

/** Windows: a scheduled task that runs the tunnel at boot (tunnels themselves run as hidden detached processes). */
export class WindowsBootService implements BootService {
  readonly initSystem = 'windows' as const;
  constructor(private readonly settings: SettingsSource) {}

  async prepare(): Promise<void> {}

  async enable(t: BootTarget): Promise<void> {
    const s = this.settings();
    await runProgram([
      s['Windows.Schtasks'],
      ...createTaskArgs({
        taskName: serviceNameOf(t.id),
        runUser: t.runUser,
        tunnelPath: s.TunnelPath,
        configPath: t.configPath,
      }),
    ]);
  }

  async disable(t: BootTarget): Promise<void> {
    await runProgram([this.settings()['Windows.Schtasks'], ...deleteTaskArgs(serviceNameOf(t.id))]);
  }

  async remove(t: BootTarget): Promise<void> {
    await this.disable(t);
  }
}

export function bootServiceFor(initSystem: InitSystem, settings: SettingsSource, envDir: string): BootService {
  switch (initSystem) {
    case 'systemd':
      return new SystemdBootService(settings, envDir);
    case 'init.d':
      return new InitdBootService(settings, envDir);
    case 'windows':
      return new WindowsBootService(settings);
    default:
      return new OwnBootService();
  }
}
