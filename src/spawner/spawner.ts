import { fork, type ChildProcess } from 'node:child_process';
import { NODE_FLAGS } from '../system/node-flags.js';
import { TUNNEL_NICE_VARIABLE, tunnelNice } from '../system/priority.js';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../log/logger.js';
import { SPAWNER_SCRIPT } from './output-keeper.js';

const SPAWNER_MAIN = fileURLToPath(new URL(`./${SPAWNER_SCRIPT}`, import.meta.url));

/** How long the spawner stays once it has no tunnel and nothing to start: it costs a process while it lives. */
const IDLE_MS = 30_000;

/**
 * How long a spawn may wait for the spawner's answer. A fork takes ~1 ms, so even a thousand starts at once answer
 * well within it; a spawner silent this long is wedged: the spawn fails and the spawner is replaced.
 */
export const SPAWN_TIMEOUT_MS = 10_000;

export interface SpawnOrder {
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  uid?: number;
  gid?: number;
  /** The named pipe the tunnel writes its output into. */
  output: string;
}

/** A spawn the spawner could not do: `code` is the error's (ENOENT, EACCES, ...). */
export class SpawnError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** How a tunnel ended: the spawner, its parent, knows the code and the signal. */
export interface SpawnedExit {
  code: number | null;
  signal: string | null;
}

/** A tunnel the spawner started, with its end (known from the moment it is spawned: it may end at once). */
export interface Spawned {
  pid: number;
  exited: Promise<SpawnedExit>;
}

/**
 * The spawner went away while this tunnel is still its child: it runs on, and its end must be learnt some other
 * way; `ended` settles its `exited`.
 */
export type Orphaned = (pid: number, ended: (exit: SpawnedExit) => void) => void;

/** Where the tunnels' output goes: the spawner keeps it flowing there while no daemon reads it. */
export interface OutputPlace {
  dir: string;
  maxBytes: number;
  files: number;
}

/**
 * The daemon's side of the spawner (src/spawner/spawner-process.ts): started when the first tunnel is (or taken over),
 * and let go once no tunnel runs and nothing is waiting to start. While any tunnel runs it is there, told where
 * their output goes: if the daemon goes, it keeps their pipes drained until the next one (src/spawner/output-keeper.ts).
 */
export class Spawner {
  private child: ChildProcess | undefined;
  /** Spawns sent and not yet answered, with the spawner each was sent to. */
  private readonly pending = new Map<number, Pending>();
  /** Tunnels a spawner started that have not exited, with their spawner and what settles their end. */
  private readonly running = new Map<number, { child: ChildProcess; ended: (exit: SpawnedExit) => void }>();
  /** Spawns given up on (no answer in time), with their spawner: a tunnel it may still report is ended at once. */
  private readonly givenUp = new Map<number, ChildProcess>();
  private refs = 0;
  private idle: NodeJS.Timeout | undefined;

  constructor(
    private readonly orphaned: Orphaned,
    private readonly log: Logger,
    /** Where the tunnels' output goes, if it is to be kept while the daemon is away. */
    private readonly output?: () => OutputPlace,
    /** Tunnels that run but are not the spawner's own children (taken over): they keep it too. */
    private readonly othersRunning: () => boolean = () => false,
    private readonly nodeArgs: readonly string[] = NODE_FLAGS,
  ) {}

  /** Starts the spawner for tunnels that run without it (taken over at start-up): their output needs a keeper. */
  stayForTunnels(): void {
    if (this.output) this.ensure();
  }

  /** Tells the spawner the current place of the tunnels' output (the rotation settings changed). */
  outputChanged(): void {
    if (this.child?.connected) this.sendKeep(this.child);
  }

  private sendKeep(child: ChildProcess): void {
    if (!this.output) return;
    const { maxBytes, files } = this.output();
    child.send({ type: 'keep', maxBytes, files });
  }

  /** The spawner's pid, while there is one. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  spawn(order: SpawnOrder): Promise<Spawned> {
    const child = this.ensure();
    clearTimeout(this.idle);
    const ref = ++this.refs;
    return new Promise<Spawned>((resolve, reject) => {
      const timer = setTimeout(() => this.noAnswer(ref), SPAWN_TIMEOUT_MS);
      timer.unref();
      this.pending.set(ref, { child, resolve, reject, timer });
      child.send({ type: 'spawn', ref, ...order });
    });
  }

  /** A spawn the spawner did not answer in time: it fails, and the spawner, wedged, is replaced. */
  private noAnswer(ref: number): void {
    const waiter = this.pending.get(ref);
    if (!waiter) return;
    const { child } = waiter;
    this.log.error(
      { spawnerPid: child.pid, timeoutMs: SPAWN_TIMEOUT_MS },
      'the spawner did not answer a spawn in time; it is replaced',
    );
    // Every spawn sent to it fails now, each once; the next goes to a new spawner.
    for (const [other, w] of this.pending) {
      if (w.child !== child) continue;
      this.settle(other)?.reject(
        new SpawnError('ETIMEDOUT', `the spawner did not answer within ${SPAWN_TIMEOUT_MS / 1000} s; it is replaced`),
      );
      this.givenUp.set(other, child);
    }
    if (this.child === child) this.child = undefined;
    child.kill('SIGKILL');
  }

  private settle(ref: number): Pending | undefined {
    const waiter = this.pending.get(ref);
    if (!waiter) return undefined;
    clearTimeout(waiter.timer);
    this.pending.delete(ref);
    return waiter;
  }

  private ensure(): ChildProcess {
    if (this.child) return this.child;
    // The output's directory is its argument: what the next daemon knows it by, should it become the keeper.
    const child = fork(SPAWNER_MAIN, this.output ? [this.output().dir] : [], {
      execArgv: [...this.nodeArgs],
      // A clean environment: the daemon's own may hold secrets, and each tunnel gets its environment per spawn.
      env: {
        PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
        // The tunnels' priority, below the daemon's (src/system/priority.ts).
        [TUNNEL_NICE_VARIABLE]: String(tunnelNice()),
      },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    this.child = child;
    this.sendKeep(child);
    child.on('message', (m: SpawnerMessage) => this.onMessage(child, m));
    child.on('error', (err) => this.log.error({ err }, 'spawner error'));
    child.once('exit', (code, signal) => this.onExit(child, code, signal));
    this.log.info({ spawnerPid: child.pid }, 'spawner started');
    return child;
  }

  private onMessage(child: ChildProcess, m: SpawnerMessage): void {
    if (m.type === 'exit') {
      this.running.get(m.pid)?.ended({ code: m.code, signal: m.signal });
      this.running.delete(m.pid);
      this.idleCheck();
      return;
    }
    if (this.givenUp.delete(m.ref)) {
      // Its start has already failed: a tunnel it brought after all must not run on unknown.
      if (m.type === 'spawned') killGroup(m.pid);
      return;
    }
    const waiter = this.settle(m.ref);
    if (!waiter) return;
    if (m.type === 'spawned') {
      // Its end is awaited from now on: the exit may be the very next message.
      const exited = new Promise<SpawnedExit>((resolve) => this.running.set(m.pid, { child, ended: resolve }));
      waiter.resolve({ pid: m.pid, exited });
    } else {
      waiter.reject(new SpawnError(m.code, m.message));
      this.idleCheck();
    }
  }

  /** Lets the spawner go a while after the last tunnel ended (call again when a tunnel it did not start ends). */
  idleCheck(): void {
    if (this.busy() || !this.child) return;
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.letGo(), IDLE_MS);
    this.idle.unref();
  }

  private busy(): boolean {
    return this.running.size > 0 || this.pending.size > 0 || this.othersRunning();
  }

  /** Closes the channel: the spawner exits by itself. */
  private letGo(): void {
    if (this.busy()) return;
    const child = this.child;
    this.child = undefined;
    if (child?.connected) child.disconnect();
  }

  private onExit(child: ChildProcess, code: number | null, signal: string | null): void {
    if (this.child === child) this.child = undefined;
    for (const [ref, gone] of this.givenUp) if (gone === child) this.givenUp.delete(ref);
    for (const [ref, waiter] of this.pending)
      if (waiter.child === child) this.settle(ref)?.reject(new SpawnError('EIO', 'the spawner process ended'));
    const orphans = [...this.running].filter(([, r]) => r.child === child);
    if (orphans.length > 0) {
      this.log.warn({ code, signal, tunnels: orphans.length }, 'the spawner ended; its tunnels run on');
      for (const [pid, { ended }] of orphans) {
        this.running.delete(pid);
        this.orphaned(pid, ended);
      }
    }
  }

  close(): void {
    clearTimeout(this.idle);
    for (const ref of [...this.pending.keys()])
      this.settle(ref)?.reject(new SpawnError('ECANCELED', 'tunnelward is stopping'));
    const child = this.child;
    this.child = undefined;
    if (child?.connected) child.disconnect();
  }
}

interface Pending {
  child: ChildProcess;
  resolve: (spawned: Spawned) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/** Ends a tunnel and its process group. */
function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone already
  }
}

type SpawnerMessage =
  | { type: 'spawned'; ref: number; pid: number }
  | { type: 'failed'; ref: number; code: string; message: string }
  | { type: 'exit'; pid: number; code: number | null; signal: string | null };
