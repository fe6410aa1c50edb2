import { Subject, type Observable } from '../src/util/rx.js';
import { dirname } from 'node:path';
import type { Logger } from '../src/log/logger.js';
import { currentOsUser, lookupOsUser } from '../src/system/os-users.js';
import {
  configPathOf,
  pidExists,
  procArgs,
  processesByConfigPath,
  procStat,
  type LiveProcess,
} from '../src/system/proc.js';
import { PidWatcher, type ProcessExit } from './pid-watcher.js';
import { stopKeeper } from '../src/spawner/output-keeper.js';
import { Spawner, SpawnError, type OutputPlace, type Spawned } from '../src/spawner/spawner.js';

export type { ProcessExit } from './pid-watcher.js';

/** True when `pid` is alive (not a zombie), was started at the recorded time, and runs this config file. */
export function isSameProcess(pid: number, startTicks: number | null, configPath: string): boolean {
  const stat = procStat(pid);
  if (!stat) return pidExists(pid);
  if (stat.state === 'Z') return false;
  if (startTicks !== null && stat.startTicks !== startTicks) return false;
  const args = procArgs(pid);
  return args !== undefined && configPathOf(args) === configPath;
}

export interface SpawnRequest {
  instanceId: number;
  name: string;
  tunnelPath: string;
  configPath: string;
  runUser: string;
  /** The named pipe for the tunnel's stdout and stderr (runners that capture output). */
  output?: string;
  /** The instance's own environment variables, on top of the small one every tunnel gets. */
  env?: Record<string, string>;
  /** Its memory cap in MiB (0: none), for an init system that enforces one. */
  memoryMaxMB?: number;
}

/** An instance as a runner looks for its process. */
export interface RunTarget {
  id: number;
  configPath: string;
}

/** What an init system that restarts tunnels itself did on its own: started a unit again, or gave it up. */
export interface InitSystemEvent {
  type: 'started' | 'gaveUp';
  instanceId: number;
}

/** How tunnels are run: by tunnelward itself, or through an init system. The instance machine's I/O goes here. */
export interface TunnelRunner {
  readonly initSystem: string;
  /** True when the tunnel's output comes through the pipe handed over in `SpawnRequest.output`. */
  readonly capturesOutput: boolean;
  spawn(request: SpawnRequest): Promise<TunnelProcess>;
  /** Takes over a process found running at start-up; false when it is gone or is someone else. */
  adopt(pid: number, startTicks: number | null, configPath: string): boolean;
  /**
   * The live processes that run each of these config files, found by what they are rather than by a recorded pid
   * (a crash can come between a spawn and the saving of its pid). Empty where the init system owns the processes.
   */
  findRunning(targets: readonly RunTarget[]): Promise<Map<string, LiveProcess[]>>;
  /** Ends a process that must not run (a second one for the same config file, or one whose instance is gone). */
  stopStray(pid: number): void;
  exitOf(pid: number): Promise<ProcessExit>;
  /** A hint that a watched process may have ended (its output pipe reported end-of-file). */
  checkNow(pid: number): void;
  forget(pid: number): void;
  /** The instance is deleted: what the runner kept of it goes (optional: a runner that keeps nothing has none). */
  removed?(id: number): void;
  terminate(request: SpawnRequest, pid: number): void;
  kill(request: SpawnRequest, pid: number): void;
  close(): void;
  /**
   * Where the init system is the restarter (systemd): news of its own restarts and give-ups, what its units stand
   * in after `findRunning` (waiting to restart, or given up), where a restart stands now (its new process, taken
   * over; or given up), and calling off a restart it has pending.
   */
  readonly initEvents$?: Observable<InitSystemEvent>;
  /** Before anything is read of the tunnels' output: whoever kept it flowing while no daemon ran lets it go. */
  takeOverOutput?(): Promise<void>;
  /** Tunnels that lost their parent (the spawner went away) and are watched by polling from now on. */
  readonly orphaned$?: Observable<number>;
  restartStateOf?(id: number): 'backoff' | 'failed' | undefined;
  afterRestart?(id: number): Promise<TunnelProcess | 'failed' | undefined>;
  cancelRestart?(request: SpawnRequest): void;
}

export interface TunnelProcess {
  pid: number;
  /** Start time in clock ticks after boot (Linux), which tells this process from a later one with its pid. */
  startTicks: number | null;
}

/**
 * Runs tunnel clients as detached processes, each in its own process group with its output going into its named
 * pipe, so they outlive tunnelward. They are started by the spawner (a small process of its own, their parent:
 * their exits come with code and signal); processes adopted from an earlier tunnelward, or left behind by a
 * spawner that went away, are polled.
 */
export class ProcessRunner implements TunnelRunner {
  readonly initSystem = 'process';
  readonly capturesOutput = true;
  readonly orphaned$ = new Subject<number>();
  /** Exits of the tunnels the spawner started, as it reports them. */
  private readonly children = new Map<number, Promise<ProcessExit>>();
  private readonly adopted: PidWatcher;
  private readonly spawner: Spawner;

  constructor(
    private readonly log: Logger,
    /** Where the tunnels' output pipes and log files are: kept flowing by the spawner while the daemon is away. */
    private readonly output?: () => OutputPlace,
    pollMs = 1000,
  ) {
    this.adopted = new PidWatcher(pollMs);
    // A tunnel whose spawner went away runs on, nobody's child: watched like one taken over at start-up.
    this.spawner = new Spawner(
      (pid, ended) => {
        void this.watchAdopted(pid, procStat(pid)?.startTicks ?? null).then(ended);
        this.orphaned$.next(pid);
      },
      log.child({ part: 'spawner' }),
      output,
      () => this.adopted.size > 0,
    );
  }

  /**
   * Before any pipe is read: the keeper an earlier daemon left (its spawner, draining the pipes while nobody else
   * did) writes what it read and goes.
   */
  async takeOverOutput(): Promise<void> {
    if (!this.output) return;
    for (const pid of await stopKeeper(this.output().dir, this.spawner.pid))
      this.log.info({ keeperPid: pid }, "took the tunnels' output over from the keeper");
  }

  /** The rotation settings changed: the keeper is told. */
  outputChanged(): void {
    this.spawner.outputChanged();
  }

  private watchAdopted(pid: number, startTicks: number | null): Promise<ProcessExit> {
    const exited = this.adopted.watch(pid, startTicks);
    this.spawner.stayForTunnels();
    // The last tunnel the spawner did not start has ended: it need not stay for them any longer.
    void exited.then(() => this.spawner.idleCheck());
    return exited;
  }

  async spawn(request: SpawnRequest): Promise<TunnelProcess> {
    const executable = request.tunnelPath;
    if (request.output === undefined) throw new Error('a tunnel needs its output pipe');
    // Whether the run user can open its config file was checked before the spawn (the lifecycle's `unstartable`).
    const { home, switchTo } = this.identityFor(request.runUser, request.instanceId);
    let spawned: Spawned;
    try {
      spawned = await this.spawner.spawn({
        file: executable,
        args: ['-c', request.configPath],
        cwd: dirname(request.configPath),
        env: { ...this.environmentFor(request.runUser, home), ...request.env },
        ...(switchTo ?? {}),
        output: request.output,
      });
    } catch (err) {
      // The binary was found trustworthy just before (trustedProgram); it can still vanish in between.
      const code = err instanceof SpawnError ? err.code : undefined;
      const where = executable.includes('/') ? executable : `${executable} on PATH`;
      throw new Error(
        code === 'ENOENT' || code === 'EACCES'
          ? `${where} is missing or not an executable file`
          : `cannot start ${executable}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const { pid, exited } = spawned;
    this.children.set(pid, exited);
    return { pid, startTicks: procStat(pid)?.startTicks ?? null };
  }

  /**
   * Who the tunnel runs as, looked up once: the user (for its home) and, when it is not tunnelward's own user,
   * the uid/gid to switch to.
   */
  private identityFor(runUser: string, instanceId: number): { home: string; switchTo?: { uid: number; gid: number } } {
    const me = currentOsUser();
    if (runUser === me.name) return { home: me.home };
    const user = lookupOsUser(runUser);
    if (!user) throw new Error(`runUser ${runUser} is not a user on this system`);
    if (user.uid === me.uid) return { home: user.home };
    if (me.uid !== 0) {
      throw new Error(
        `tunnelward runs as ${me.name}, not root, so it cannot run instance ${instanceId} as ${runUser}; ` +
          `set runUser to ${me.name} or run tunnelward as root`,
      );
    }
    return { home: user.home, switchTo: { uid: user.uid, gid: user.gid } };
  }

  /** A small, clean environment: tunnelward's own (which may hold secrets) is not passed on. */
  private environmentFor(runUser: string, home: string): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: home,
      USER: runUser,
      LOGNAME: runUser,
      LANG: process.env.LANG ?? 'C.UTF-8',
      ...(process.env.TZ ? { TZ: process.env.TZ } : {}),
    };
  }

  /**
   * Takes over a process an earlier tunnelward started: only when the pid is alive, was started at the recorded
   * time, and runs this config file. Returns false when it is not there (or is someone else).
   */
  adopt(pid: number, startTicks: number | null, configPath: string): boolean {
    if (this.children.has(pid) || this.adopted.has(pid)) return true;
    if (!isSameProcess(pid, startTicks, configPath)) return false;
    void this.watchAdopted(pid, procStat(pid)?.startTicks ?? startTicks);
    return true;
  }

  checkNow(pid: number): void {
    this.adopted.checkNow(pid);
  }

  async findRunning(targets: readonly RunTarget[]): Promise<Map<string, LiveProcess[]>> {
    return processesByConfigPath(new Set(targets.map((t) => t.configPath)));
  }

  stopStray(pid: number): void {
    this.signal(pid, 'SIGKILL');
  }

  /** Drops what is kept of a process once its exit has been handled. */
  forget(pid: number): void {
    this.children.delete(pid);
  }

  /** Resolves when the process exits; at once when it is not one we watch. */
  exitOf(pid: number): Promise<ProcessExit> {
    return this.children.get(pid) ?? this.adopted.exitOf(pid) ?? Promise.resolve({ code: null, signal: null });
  }

  terminate(_request: SpawnRequest, pid: number): void {
    this.signal(pid, 'SIGTERM');
  }

  kill(_request: SpawnRequest, pid: number): void {
    this.signal(pid, 'SIGKILL');
  }

  /** Signals the whole process group of the tunnel (it leads its group). */
  private signal(pid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(-pid, signal);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') {
        this.log.warn({ pid, signal, err }, 'cannot signal the process group');
      }
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    }
  }

  close(): void {
    this.spawner.close();
    this.orphaned$.complete();
    this.adopted.close();
  }
}
