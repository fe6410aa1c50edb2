// The keeper of the tunnels' output while no daemon reads it. A tunnel writes into its named pipe; the daemon reads
// the pipe into the tunnel's log file. When the daemon goes (stopped, or killed), the spawner process, which stays,
// becomes the keeper: it reads every pipe into its log file the same way (rotation included), so a tunnel never
// blocks on output nobody reads (frpc writes its log synchronously: a full pipe would stall its connections). The
// next daemon stops the keeper before it reads the pipes itself; whatever the keeper had not read is still in them.
// Imports nothing of the daemon's but the file writer and /proc readers: it runs in the spawner, which must stay small.
import {
  closeSync,
  constants,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Socket, type SocketConstructorOpts } from 'node:net';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { Logger } from '../log/logger.js';
import { pidExists, procArgs, procStat } from '../system/proc.js';
import { stripControls } from '../util/terminal-text.js';
import { LogFileWriter, type RotationPolicy } from '../log/log-file-writer.js';

export const KEEPER_PID_FILE = 'keeper.pid';
const PIPE = /^tunnel_(\d+)\.pipe$/;

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

/**
 * Reads every tunnel's pipe in `dir` into `tunnel_<id>.log` until each tunnel is gone (end of file: its last
 * writer closed) or the keeper is told to stop (SIGTERM: the next daemon takes over). Resolves when it is done.
 */
export function keepOutput(dir: string, policy: RotationPolicy): Promise<void> {
  const pidFile = join(dir, KEEPER_PID_FILE);
  writeFileSync(`${pidFile}.tmp`, `${process.pid}\n`, { mode: 0o600 });
  renameSync(`${pidFile}.tmp`, pidFile);
  const kept = new Set<Kept>();
  const files: LogFileWriter[] = [];
  let finishing: Promise<void> | undefined;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  // Done once every pipe is let go and what was read from them is written.
  const finish = () =>
    (finishing ??= Promise.all(files.map((f) => f.idle())).then(() => {
      rmSync(pidFile, { force: true });
      done();
    }));
  const release = (k: Kept, endOfFile: boolean) => {
    if (!kept.delete(k)) return;
    const rest = k.partial + k.decoder.end();
    // At end of file the last line is complete; handed over, the next daemon appends the rest of it.
    if (rest) k.file.append(stripControls(endOfFile ? `${rest}\n` : rest));
    k.reader?.destroy();
    if (kept.size === 0 && !opening) void finish();
  };

  let opening = true;
  for (const name of readdirSync(dir)) {
    const id = PIPE.exec(name)?.[1];
    const path = join(dir, name);
    if (!id || !isFifo(path)) continue;
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (err) {
      stderrLog.warn({ path, err: (err as Error).message }, 'cannot open a tunnel output pipe');
      continue;
    }
    // A pipe with no writer (its tunnel is stopped) reads as end of file, but a poll would never say so (it had no
    // writer when it was opened): each pipe is read once here, and only one with a writer is followed.
    const now = drainNow(fd);
    if (!now.writer && now.bytes.length === 0) {
      closeSync(fd);
      continue;
    }
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
      release(k, true);
      continue;
    }
    const reader = new Socket({ fd, readable: true, writable: false } as SocketConstructorOpts);
    k.reader = reader;
    reader.on('data', (chunk: Buffer) => onText(k, k.decoder.write(chunk)));
    reader.on('end', () => release(k, true));
    reader.on('error', () => release(k, true));
  }

  opening = false;
  process.once('SIGTERM', () => {
    for (const k of [...kept]) release(k, false);
    void finish();
  });
  if (kept.size === 0) void finish();
  return finished;
}

/**
 * Called by a daemon before it reads the tunnels' pipes: a keeper left by the daemon before it writes what it has
 * read, and goes (killed if it has not within a few seconds). Returns its pid, if there was one.
 */
export async function stopKeeper(dir: string): Promise<number | undefined> {
  const pidFile = join(dir, KEEPER_PID_FILE);
  const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
  if (!Number.isInteger(pid) || pid <= 0 || !isKeeper(pid)) {
    rmSync(pidFile, { force: true });
    return undefined;
  }
  signal(pid, 'SIGTERM');
  const deadline = Date.now() + HANDOVER_MS;
  while (alive(pid)) {
    if (Date.now() > deadline) {
      signal(pid, 'SIGKILL');
      break;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  rmSync(pidFile, { force: true });
  return pid;
}

function isKeeper(pid: number): boolean {
  return procArgs(pid)?.some((arg) => arg.endsWith('spawner-process.js')) ?? false;
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
