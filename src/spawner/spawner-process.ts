// The spawner: a small process of its own that starts tunnels for the daemon and is their parent. Forking the
// daemon (its WebAssembly database reserves gigabytes of address space) costs ~3-4 ms a tunnel; forking this
// process costs ~1 ms, so a thousand starts at once fork in about a second, away from the daemon's event loop.
// It imports nothing but Node's own modules. Protocol (Node's IPC channel, JSON):
//   daemon -> spawner  { type: 'spawn', ref, file, args, cwd, env, uid?, gid?, output }   (output: a named pipe)
//   spawner -> daemon  { type: 'spawned', ref, pid } | { type: 'failed', ref, code, message }
//                      | { type: 'exit', pid, code, signal }
//   daemon -> spawner  { type: 'keep', maxBytes, files }   (how the tunnels' logs rotate)
// Its one argument, if any, is the directory of the tunnels' pipes and logs. When the daemon goes (its channel
// closes) the tunnels, each in a process group of its own, keep running and the next daemon takes them over. Given
// that directory and told how the logs rotate, the spawner stays as their output's keeper until the next daemon
// finds it by that argument and sends it SIGTERM (src/spawner/output-keeper.ts); otherwise it goes.
import { spawn } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { setPriority } from 'node:os';
import { TUNNEL_NICE_VARIABLE } from '../system/priority.js';
import { keepOutput } from './output-keeper.js';

// The tunnels run at the priority the daemon was given, below the one it took (src/system/priority.ts): this thread,
// which forks them, goes back there first (raising a nice value needs no privilege).
const tunnelNice = Number(process.env[TUNNEL_NICE_VARIABLE]);
if (Number.isInteger(tunnelNice)) {
  try {
    setPriority(tunnelNice);
  } catch {
    // Left as it is: the tunnels then run at the daemon's priority.
  }
}

interface SpawnMessage {
  type: 'spawn';
  ref: number;
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  uid?: number;
  gid?: number;
  output: string;
}

// After the daemon has gone there is nobody to tell (and sending would throw).
const send = (message: object) => process.connected && process.send?.(message);

function start(m: SpawnMessage): void {
  let fd: number;
  try {
    // Read and write: the tunnel's writes never fail while nobody reads (the daemon away), as the daemon's own
    // spawns always did.
    fd = openSync(m.output, constants.O_RDWR);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    send({ type: 'failed', ref: m.ref, code: e.code ?? 'EIO', message: `cannot open ${m.output}: ${e.message}` });
    return;
  }
  try {
    const child = spawn(m.file, m.args, {
      detached: true,
      stdio: ['ignore', fd, fd],
      cwd: m.cwd,
      env: m.env,
      ...(m.uid !== undefined ? { uid: m.uid, gid: m.gid } : {}),
    });
    child.once('spawn', () => send({ type: 'spawned', ref: m.ref, pid: child.pid }));
    child.once('error', (err: NodeJS.ErrnoException) =>
      send({ type: 'failed', ref: m.ref, code: err.code ?? 'EIO', message: err.message }),
    );
    child.once('exit', (code, signal) => send({ type: 'exit', pid: child.pid, code, signal }));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    send({ type: 'failed', ref: m.ref, code: e.code ?? 'EIO', message: e.message });
  } finally {
    closeSync(fd);
  }
}

interface KeepMessage {
  type: 'keep';
  maxBytes: number;
  files: number;
}

/** Where the tunnels' output goes, if the spawner is to keep it while no daemon runs. */
const dir = process.argv[2];
let keep: KeepMessage | undefined;
let keeping = false;
// From the start, not only once keeping: a SIGTERM the moment the next daemon finds the spawner is a hand-over too
// (without a handler it would end the process at once, with what it had read and not yet written).
const handOver = new AbortController();
process.on('SIGTERM', () => (keeping ? handOver.abort() : process.exit(0)));

process.on('message', (m: SpawnMessage | KeepMessage) => {
  if (m?.type === 'spawn') start(m);
  else if (m?.type === 'keep') keep = m;
});
process.on('disconnect', () => {
  if (!dir || !keep) process.exit(0);
  keeping = true;
  void keepOutput(dir, { maxBytes: keep.maxBytes, files: keep.files }, handOver.signal).then(() => process.exit(0));
});
