import { spawn } from 'node:child_process';
import { closeSync } from 'node:fs';
import { chown, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../src/log/logger.js';
import { currentOsUser, lookupOsUser } from '../src/system/os-users.js';
import { pidExists, procCmdline, procStat } from '../src/system/proc.js';

export interface SpawnRequest {
  instanceId: number;
  tunnelPath: string;
  configPath: string;
  runUser: string;
  /** Descriptor for the tunnel's stdout and stderr; closed here once the tunnel has it. */
  output: number;
}

export interface TunnelProcess {
  pid: number;
  /** Start time in clock ticks after boot (Linux), which tells this process from a later one with its pid. */
  startTicks: number | null;
}

/** How long spawns may hold the event loop before they let it serve other work. */
const SPAWN_SLICE_MS = 15;
/** Every this many polls, adopted processes are also checked for zombies and pid reuse (a costlier read). */
const DEEP_CHECK_EVERY = 10;

/** How a process ended, as far as we can know it: an adopted process is not our child, so only that it ended. */
export interface ProcessExit {
  code: number | null;
  signal: string | null;
}

/** The first directory from the root down to `dir` that a user may not pass through, if any. */
async function unsearchableDir(dir: string, who: { uid: number; gid: number }): Promise<string | undefined> {
  const parts = dir.split('/').filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const path = '/' + parts.slice(0, i).join('/');
    const info = await stat(path);
    const mode = info.mode;
    const searchable =
      info.uid === who.uid ? (mode & 0o100) !== 0 : info.gid === who.gid ? (mode & 0o010) !== 0 : (mode & 0o001) !== 0;
    if (!searchable) return path;
  }
  return undefined;
}

interface Watched {
  exited: Promise<ProcessExit>;
  /** Set for adopted processes, which are not our children and are polled. */
  adopted?: { startTicks: number | null; resolve: (exit: ProcessExit) => void };
}

/**
 * Runs tunnel clients as detached processes, each in its own process group with its output appended to its log
 * file, so they outlive tunnelward. Children are watched through their exit event; processes adopted from an
 * earlier tunnelward are polled.
 */
export class ProcessRunner {
  private readonly watched = new Map<number, Watched>();
  /** Spawns take turns (see `turn`). */
  private queue: Promise<void> = Promise.resolve();
  private sliceStarted = 0;
  private poller: NodeJS.Timeout | undefined;
  private polls = 0;

  constructor(
    private readonly log: Logger,
    private readonly pollMs = 1000,
  ) {}

  async spawn(request: SpawnRequest): Promise<TunnelProcess> {
    try {
      return await this.spawnWith(request);
    } finally {
      closeSync(request.output);
    }
  }

  /**
   * A spawn forks the daemon, which holds the event loop for a millisecond or two. A thousand starts at once would
   * hold it for seconds in one stretch, so spawns take turns and give the loop back every few milliseconds:
   * requests, timers and output are served in between.
   */
  private turn(): Promise<void> {
    const mine = this.queue.then(async () => {
      if (performance.now() - this.sliceStarted < SPAWN_SLICE_MS) return;
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.sliceStarted = performance.now();
    });
    this.queue = mine;
    return mine;
  }

  private async spawnWith(request: SpawnRequest): Promise<TunnelProcess> {
    await this.turn();
    const executable = request.tunnelPath;
    const identity = this.identityFor(request.runUser, request.instanceId);
    if (identity) {
      const blocked = await unsearchableDir(dirname(request.configPath), identity);
      if (blocked) {
        throw new Error(
          `runUser ${request.runUser} cannot reach ${request.configPath}: ${blocked} is not searchable by it (chmod o+x ${blocked})`,
        );
      }
      await chown(request.configPath, identity.uid, identity.gid);
    }
    const child = spawn(executable, ['-c', request.configPath], {
      detached: true,
      stdio: ['ignore', request.output, request.output],
      cwd: dirname(request.configPath),
      env: this.environmentFor(request.runUser),
      ...(identity ? { uid: identity.uid, gid: identity.gid } : {}),
    });
    const exited = new Promise<ProcessExit>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      // The binary is checked by trying it, not beforehand: one exec instead of a stat, an access and an exec.
      child.once('error', (err: NodeJS.ErrnoException) => {
        const where = executable.includes('/') ? executable : `${executable} on PATH`;
        reject(
          new Error(
            err.code === 'ENOENT' || err.code === 'EACCES'
              ? `${where} is missing or not an executable file`
              : `cannot start ${executable}: ${err.message}`,
          ),
        );
      });
    });
    child.unref();
    const pid = child.pid!;
    this.watched.set(pid, { exited });
    return { pid, startTicks: procStat(pid)?.startTicks ?? null };
  }

  /** Who the tunnel runs as: undefined for tunnelward's own user, else the uid/gid to switch to. */
  private identityFor(runUser: string, instanceId: number): { uid: number; gid: number } | undefined {
    const me = currentOsUser();
    if (runUser === me.name) return undefined;
    const user = lookupOsUser(runUser);
    if (!user) throw new Error(`runUser ${runUser} is not a user on this system`);
    if (user.uid === me.uid) return undefined;
    if (me.uid !== 0) {
      throw new Error(
        `tunnelward runs as ${me.name}, not root, so it cannot run instance ${instanceId} as ${runUser}; ` +
          `set runUser to ${me.name} or run tunnelward as root`,
      );
    }
    return { uid: user.uid, gid: user.gid };
  }

  /** A small, clean environment: tunnelward's own (which may hold secrets) is not passed on. */
  private environmentFor(runUser: string): NodeJS.ProcessEnv {
    const home = lookupOsUser(runUser)?.home ?? '/';
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
    if (this.watched.has(pid)) return true;
    const stat = procStat(pid);
    if (stat) {
      if (stat.state === 'Z') return false;
      if (startTicks !== null && stat.startTicks !== startTicks) return false;
      if (!procCmdline(pid)?.includes(configPath)) return false;
    } else if (!pidExists(pid)) {
      return false;
    }
    let resolve!: (exit: ProcessExit) => void;
    const exited = new Promise<ProcessExit>((r) => (resolve = r));
    this.watched.set(pid, { exited, adopted: { startTicks: stat?.startTicks ?? startTicks, resolve } });
    this.poller ??= setInterval(() => this.poll(), this.pollMs).unref();
    return true;
  }

  private poll(): void {
    const deep = ++this.polls % DEEP_CHECK_EVERY === 0;
    let adopted = 0;
    for (const [pid, watched] of this.watched) {
      if (!watched.adopted) continue;
      adopted++;
      let gone = !pidExists(pid);
      if (!gone && deep) {
        const stat = procStat(pid);
        gone = !stat || stat.state === 'Z' || (watched.adopted.startTicks !== null && stat.startTicks !== watched.adopted.startTicks);
      }
      if (gone) {
        this.watched.delete(pid);
        // Not our child: its exit status went to its new parent, so only the fact of the exit is known.
        watched.adopted.resolve({ code: null, signal: null });
      }
    }
    if (adopted === 0 && this.poller) {
      clearInterval(this.poller);
      this.poller = undefined;
    }
  }

  /** Drops what is kept of a process once its exit has been handled. */
  forget(pid: number): void {
    this.watched.delete(pid);
  }

  /** Resolves when the process exits; at once when it is not one we watch. */
  exitOf(pid: number): Promise<ProcessExit> {
    return this.watched.get(pid)?.exited ?? Promise.resolve({ code: null, signal: null });
  }

  /** Signals the whole process group of the tunnel (it leads its group). */
  signal(pid: number, signal: NodeJS.Signals): void {
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
    if (this.poller) clearInterval(this.poller);
    this.poller = undefined;
  }
}
