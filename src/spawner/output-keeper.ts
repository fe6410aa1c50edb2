// The keeper of the tunnels' output while no daemon reads it. A tunnel writes into its named pipe; the daemon reads
// the pipe into the tunnel's log file. When the daemon goes (stopped, or killed), the spawner process, which stays,
// becomes the keeper: it reads every pipe into its log file the same way (rotation included), so a tunnel never
// blocks on output nobody reads (frpc writes its log synchronously: a full pipe would stall its connections). The
// next daemon stops the keeper before it reads the pipes itself; whatever the keeper had not read is still in them.
// Imports nothing of the daemon's but the file writer and /proc readers: it runs in the spawner, which must stay small.
import { closeSync, constants, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { readdir, readFile, readlink, rm } from 'node:fs/promises';
import { Socket, type SocketConstructorOpts } from 'node:net';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { Logger } from '../log/logger.js';
import { liveProcesses, pidExists, procArgs, procStat } from '../system/proc.js';
import { stripControls } from '../util/terminal-text.js';
import { LogFileWriter, type RotationPolicy } from '../log/log-file-writer.js';

const PIPE = /^tunnel_(\d+)\.pipe$/;

/**
 * The spawner's script. A spawner that may keep the output is run with the directory it keeps as its one argument:
 * that is how the next daemon finds it, and never another data dir's.
 */
export const SPAWNER_SCRIPT = 'spawner-process.js';

/** The pid file a keeper of an earlier version wrote (it was run without its directory). */
const EARLIER_PID_FILE = 'keeper.pid';

/** How long the daemon waits for a keeper to write what it read and go, before it kills it. */
const HANDOVER_MS = 5000;

/** Messages of the keeper: there is nobody to read them but the spawner's standard error. */
const stderrLog = (() => {
  const say = (fields: object, msg?: string) =>
    process.stderr.write(`tunnelward output keeper: ${msg ?? ''} ${JSON.stringify(fields)}\n`);
  return { error: say, warn: say, info: say, debug: () => {}, child: () => stderrLog } as unknown as Logger;
})();

interface Kept {
  reader: Socket | undefined;
  decoder: StringDecoder;
  partial: string;
  file: LogFileWriter;
}

/** Whole lines go to the file, without control sequences as the daemon keeps them; the rest waits for its end. */
function onText(k: Kept, chunk: string): void {
  const text = k.partial + chunk;
  const end = text.lastIndexOf('\n');
  k.partial = end < 0 ? text : text.slice(end + 1);
  if (end >= 0) k.file.append(stripControls(text.slice(0, end + 1)));
}

/** Reads what a pipe holds now, and whether anyone still writes to it (a read of 0 bytes: nobody does). */
function drainNow(fd: number): { bytes: Buffer; writer: boolean } {
  const buffer = Buffer.allocUnsafe(64 * 1024);
  const chunks: Buffer[] = [];
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, buffer);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      return { bytes: Buffer.concat(chunks), writer: true };
    }
    if (n === 0) return { bytes: Buffer.concat(chunks), writer: false };
    chunks.push(Buffer.from(buffer.subarray(0, n)));
  }
}

/** The tunnels' pipes in `dir`, by id; none if the directory cannot be read. */
function pipesIn(dir: string): [id: string, path: string][] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    stderrLog.warn({ dir, err: (err as Error).message }, 'cannot read the directory of the tunnel output pipes');
    return [];
  }
  return names.flatMap((name) => {
    const id = PIPE.exec(name)?.[1];
    const path = join(dir, name);
    return id && isFifo(path) ? [[id, path] as [string, string]] : [];
  });
}

/**
 * Reads every tunnel's pipe in `dir` into `tunnel_<id>.log` until each tunnel is gone (end of file: its last
 * writer closed) or `stop` is aborted (SIGTERM: the next daemon takes over). Resolves when it is done; never throws:
 * a pipe that cannot be read is passed over (and said so on standard error), the others are kept.
 */
export function keepOutput(dir: string, policy: RotationPolicy, stop: AbortSignal): Promise<void> {
  const kept = new Set<Kept>();
  const files: LogFileWriter[] = [];
  let finishing: Promise<void> | undefined;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  // Done once every pipe is let go and what was read from them is written.
  const finish = () => (finishing ??= Promise.all(files.map((f) => f.idle())).then(() => done()));
  const release = (k: Kept, endOfFile: boolean) => {
    if (!kept.delete(k)) return;
    const rest = k.partial + k.decoder.end();
    // At end of file the last line is complete; handed over, the next daemon appends the rest of it.
    if (rest) k.file.append(stripControls(endOfFile ? `${rest}\n` : rest));
    k.reader?.destroy();
    if (kept.size === 0 && !opening) void finish();
  };
  const follow = (id: string, path: string) => {
    const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    let now: { bytes: Buffer; writer: boolean };
    try {
      // A pipe with no writer (its tunnel is stopped) reads as end of file, but a poll would never say so (it had no
      // writer when it was opened): each pipe is read once here, and only one with a writer is followed.
      now = drainNow(fd);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    if (!now.writer && now.bytes.length === 0) return closeSync(fd);
    const k: Kept = {
      reader: undefined,
      decoder: new StringDecoder('utf8'),
      partial: '',
      file: new LogFileWriter(join(dir, `tunnel_${id}.log`), () => policy, stderrLog, {
        pressure: (paused) => (paused ? k.reader?.pause() : k.reader?.resume()),
        faulted: () => {},
        recovered: () => {},
      }),
    };
    kept.add(k);
    files.push(k.file);
    onText(k, k.decoder.write(now.bytes));
    if (!now.writer) {
      closeSync(fd);
      return release(k, true);
    }
    const reader = new Socket({ fd, readable: true, writable: false } as SocketConstructorOpts);
    k.reader = reader;
    reader.on('data', (chunk: Buffer) => onText(k, k.decoder.write(chunk)));
    reader.on('end', () => release(k, true));
    reader.on('error', () => release(k, true));
  };

  let opening = true;
  for (const [id, path] of pipesIn(dir)) {
    try {
      follow(id, path);
    } catch (err) {
      stderrLog.warn({ path, err: (err as Error).message }, 'cannot read a tunnel output pipe');
    }
  }
  opening = false;
  const handOver = () => {
    for (const k of [...kept]) release(k, false);
    void finish();
  };
  if (stop.aborted) handOver();
  else stop.addEventListener('abort', handOver, { once: true });
  if (kept.size === 0) void finish();
  return finished;
}

/**
 * Called by a daemon before it reads the tunnels' pipes: the keepers of `dir` an earlier daemon left (found by their
 * command line, whatever any file says) write what they have read and go (killed if they have not within a few
 * seconds). `except` is the caller's own spawner, if it has one. Returns their pids.
 */
export async function stopKeeper(dir: string, except?: number): Promise<number[]> {
  const pids = new Set(keepersOf(dir));
  const earlier = await earlierKeeper(dir);
  if (earlier !== undefined) pids.add(earlier);
  if (except !== undefined) pids.delete(except);
  await Promise.all([...pids].map(handOver));
  return [...pids];
}

/** The spawners that keep, or would keep, the output in `dir` (one pass over /proc). */
export function keepersOf(dir: string): number[] {
  return (liveProcesses((args) => (keeperOf(args) === dir ? dir : undefined)).get(dir) ?? []).map((p) => p.pid);
}

/** The directory a spawner's command line says it keeps, if it is a spawner's. */
function keeperOf(args: readonly string[]): string | undefined {
  const at = args.findIndex((arg) => arg.endsWith(`/${SPAWNER_SCRIPT}`));
  return at >= 0 ? args[at + 1] : undefined;
}

/**
 * A keeper of an earlier version, which named itself only in `keeper.pid`: taken as one only if it is a spawner and
 * holds one of `dir`'s pipes open (a pid file left behind may name anything by now). The file is removed.
 */
async function earlierKeeper(dir: string): Promise<number | undefined> {
  const file = join(dir, EARLIER_PID_FILE);
  const pid = Number((await readFile(file, 'utf8').catch(() => '')).trim());
  await rm(file, { force: true });
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  // Its command line ends with the script (each argument ends with a NUL: the last split is empty).
  if (!procArgs(pid)?.filter(Boolean).at(-1)?.endsWith(`/${SPAWNER_SCRIPT}`)) return undefined;
  const fds = await readdir(`/proc/${pid}/fd`).catch(() => []);
  for (const fd of fds) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    if (target.startsWith(join(dir, 'tunnel_')) && target.endsWith('.pipe')) return pid;
  }
  return undefined;
}

async function handOver(pid: number): Promise<void> {
  signal(pid, 'SIGTERM');
  const deadline = Date.now() + HANDOVER_MS;
  while (alive(pid)) {
    if (Date.now() > deadline) return signal(pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Running, and not a zombie waiting for its parent to reap it. */
const alive = (pid: number): boolean => pidExists(pid) && procStat(pid)?.state !== 'Z';

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // gone already
  }
}

export function isFifo(path: string): boolean {
  try {
    return statSync(path).isFIFO();
  } catch {
    return false;
  }
}
