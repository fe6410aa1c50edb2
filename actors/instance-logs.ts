import { execFile } from 'node:child_process';
import { constants, mkdirSync, openSync, readSync, closeSync, fstatSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Socket, type OnReadOpts, type SocketConstructorOpts } from 'node:net';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { promisify } from 'node:util';
import { map, share, Subject, type Observable } from '../src/util/rx.js';
import { readLogLine, withoutStatusReads } from '../src/config/proxy-status.js';
import { logSeq, parseFrpcLine, runOfLogSeq, type InstanceLogEntry } from '../src/log/log-entries.js';
import type { Logger } from '../src/log/logger.js';
import { stripControls } from '../src/util/terminal-text.js';
import { LogFileWriter, type LogFault, type RotationPolicy } from '../src/log/log-file-writer.js';
import { isFifo } from '../src/spawner/output-keeper.js';
import { batchedCommand } from '../src/util/batcher.js';
import type { LogSource, LogSourceFactory } from './log-sources.js';

/**
 * The one buffer every tunnel's pipe is read into. Each read is decoded before the next can happen, so no read
 * holds memory of its own: a read into a fresh 64 KiB block, shrunk to the few bytes that came, would leave a
 * thousand running tunnels' first lines scattered across the allocator's heap.
 */
const PIPE_READS = Buffer.allocUnsafe(64 * 1024);

export type { RotationPolicy } from '../src/log/log-file-writer.js';

const run = promisify(execFile);

/** Named pipes asked for together (a thousand first starts) are made by one `mkfifo`. */
const makeFifo = batchedCommand((paths: string[]) => run('mkfifo', ['-m', '600', '--', ...paths]));

/** Output read from the tunnels, in lines and bytes. */
export interface LogTotals {
  lines: number;
  bytes: number;
}

/** A tunnel log file that stopped (or started again) being writable. */
export interface LogFaultEvent {
  instanceID: number;
  fault: LogFault;
  recovered: boolean;
  /** What is wrong when it is not the log file (the tunnel's output cannot be read). */
  message?: string;
}

/** How long without new output before the pipe counts as drained after a tunnel exits. */
const QUIET_MS = 5;
/** How long `quiet` waits for a reader paused by the log file's pressure before it answers with what was read. */
const PAUSED_WAIT_MS = 2000;
/** Lines of a run kept to explain its exit. */
const TAIL_LINES = 5;
/** A line longer than this is cut: a tunnel cannot make us buffer without bound. */
const MAX_LINE = 64 * 1024;
/** Lines of nothing but spaces. */
const BLANK_LINES = /^[^\S\n]*\n/gm;

/**
 * The output of one instance. The tunnel writes into a named pipe that it holds open for reading and writing
 * itself, so its writes never fail while tunnelward is away (the pipe buffers up to 64 KiB until tunnelward is
 * back). tunnelward reads the pipe, appends whole lines to `tunnel_<id>.log`, rotates that file by rename at a
 * size limit (being the only writer, it loses and repeats no line), and publishes each line as an entry.
 */
export class LogChannel {
  /** The entries of each chunk of output, together: a client gets them in one write of several messages. */
  readonly entries$ = new Subject<InstanceLogEntry[]>();
  private serialized: Observable<Buffer[]> | undefined;
  /**
   * Each entry as the JSON a client receives, serialized once however many clients follow. Built when first
   * followed: most instances are never watched, and a thousand of them need not carry the pipeline.
   */
  get serialized$(): Observable<Buffer[]> {
    return (this.serialized ??= this.entries$.pipe(
      map((entries) => entries.map((entry) => Buffer.from(JSON.stringify(entry)))),
      share(),
    ));
  }
  /**
   * One listener to the entries besides the subscribers of `entries$`: the live status reads the log of every
   * tunnel it follows for hints, and a field costs a thousand tunnels far less than a subscription each.
   */
  hints: ((entries: InstanceLogEntry[]) => void) | undefined;
  /**
   * What the current run's log last said of the server connection: the live status, which follows a tunnel only
   * once it runs, starts from it (a tunnel logs in well before its start is confirmed).
   */
  connectionSaid: boolean | undefined;
  /** And why it was not connected, when a line said. */
  disconnectSaid: string | undefined;
  private reader: Socket | LogSource | undefined;
  private partial = '';
  private lastData = 0;
  /** Chunks of output read so far (what tells that a turn of the event loop read more). */
  private chunks = 0;
  /** The last lines of the current run of the tunnel: what explains its exit, and nothing of an earlier run. */
  private runTail: string[] = [];
  /** Lines read from the tunnel since the daemon started: the last of them has seq `logSeq(run, written)`. */
  private written = 0;
  readonly file: LogFileWriter;

  constructor(
    readonly id: number,
    readonly pipePath: string,
    readonly logPath: string,
    private readonly policy: () => RotationPolicy,
    private readonly log: Logger,
    faults: Subject<LogFaultEvent>,
    /** Where output comes from when it is not tunnelward's own pipe (an init system's journal or log file). */
    private readonly source?: LogSourceFactory,
    /** Lines and bytes of output, counted for every instance together (the metrics). */
    private readonly totals: LogTotals = { lines: 0, bytes: 0 },
    /** Masks known secrets: nothing a tunnel prints leaves in clear, whichever way it is read. */
    private readonly redact: (text: string) => string = (text) => text,
    /** This run of the daemon (its starts counted), what the seqs of the lines it reads begin with. */
    private readonly run = 0,
  ) {
    this.file = new LogFileWriter(logPath, policy, log.child({ instanceID: id }), {
      // A disk that cannot keep up slows the reading, and so the tunnel, rather than filling our memory.
      pressure: (paused) => {
        if (!(this.reader instanceof Socket)) return;
        if (paused) this.reader.pause();
        else this.reader.resume();
      },
      faulted: (fault) => faults.next({ instanceID: id, fault, recovered: false }),
      recovered: (fault) => faults.next({ instanceID: id, fault, recovered: true }),
    });
  }

  /** The pipe a tunnel is to write its stdout and stderr into, with this side already reading it. */
  async prepareForTunnel(): Promise<string> {
    await this.ensurePipe();
    this.startReading();
    return this.pipePath;
  }

  /** Creates the named pipe unless it is there (normally once, at the instance's first start). */
  async ensurePipe(): Promise<void> {
    if (isFifo(this.pipePath)) return;
    rmSync(this.pipePath, { force: true });
    try {
      await makeFifo(this.pipePath);
    } catch (err) {
      throw new Error(
        `cannot create ${this.pipePath}: ${(err as { stderr?: string }).stderr?.trim() || (err as Error).message}`,
        {
          cause: err,
        },
      );
    }
  }

  /**
   * Starts draining the pipe: at spawn, or at start-up for a tunnel that is still running. For a spawned tunnel
   * we also hold a writer, so the pipe never reports end-of-file between tunnels. For an adopted one we read
   * only, and end-of-file means its last writer, the tunnel, is gone: `onWriterGone` hears it at once, long
   * before a poll of its pid would.
   */
  startReading(onWriterGone?: () => void, path = this.pipePath): void {
    if (this.reader) return;
    if (this.source) {
      this.reader = this.source(this.id, (text) => this.onData(text));
      return;
    }
    const mode = onWriterGone ? constants.O_RDONLY : constants.O_RDWR;
    const fd = openSync(path, mode | constants.O_NONBLOCK);
    const decoder = new StringDecoder('utf8');
    const onread: OnReadOpts = {
      buffer: PIPE_READS,
      callback: (length, buffer) => {
        this.onData(decoder.write(buffer.subarray(0, length)));
        return true;
      },
    };
    // Node takes `onread` in the constructor too (its typings list it for connect() only).
    const reader = new Socket({ fd, readable: true, writable: false, onread } as SocketConstructorOpts);
    if (onWriterGone) {
      reader.on('end', () => {
        const rest = decoder.end();
        if (rest) this.onData(rest);
        this.flushPartial();
        if (this.reader === reader) this.reader = undefined;
        reader.destroy();
        onWriterGone();
      });
    }
    reader.on('error', (err) => this.log.warn({ instanceID: this.id, err }, 'reading the tunnel output failed'));
    this.reader = reader;
  }

  /**
   * Starts draining the output of tunnel `pid`, found running at start-up (see `startReading`). When the pipe's
   * name is gone (removed while no daemon ran), the tunnel still holds the pipe itself, and it is read through the
   * tunnel's own descriptor. Returns what is wrong, if anything: the instance says it, and is taken over all the same.
   */
  readTakenOver(pid: number, onWriterGone: () => void): string | undefined {
    try {
      if (this.source || isFifo(this.pipePath)) return void this.startReading(onWriterGone);
      const own = `/proc/${pid}/fd/1`;
      const found = isFifo(own);
      if (found) this.startReading(onWriterGone, own);
      return (
        `its output pipe ${this.pipePath} was missing (a restart of the tunnel makes it again): until then ` +
        (found
          ? "its output is read through the tunnel's own end of the pipe, and nothing keeps it flowing while tunnelward is away"
          : 'its output cannot be read')
      );
    } catch (err) {
      return `cannot read its output until it is restarted: ${(err as Error).message}`;
    }
  }

  /**
   * From now on reads as for an adopted tunnel (its parent is gone, so its exit must be heard some other way):
   * end-of-file on the pipe tells `onWriterGone`. What the pipe holds is still read; nothing is lost. Returns what
   * is wrong, if anything, as `readTakenOver` does.
   */
  readAsAdopted(pid: number, onWriterGone: () => void): string | undefined {
    if (this.source) return undefined;
    this.stopReader();
    return this.readTakenOver(pid, onWriterGone);
  }

  /**
   * Stops draining once nothing more arrives and `stillIdle()` holds then (no new tunnel took the pipe over
   * meanwhile): a stopped instance costs no descriptor.
   */
  async stopReading(stillIdle: () => boolean): Promise<void> {
    await this.quiet();
    if (!stillIdle()) return;
    this.flushPartial();
    this.stopReader();
  }

  private stopReader(): void {
    if (this.reader instanceof Socket) this.reader.destroy();
    else this.reader?.stop();
    this.reader = undefined;
  }

  /**
   * Resolves once what the tunnel wrote before it exited is in. From tunnelward's own pipe that is as soon as a
   * turn of the event loop reads nothing more: the bytes a process wrote are in the pipe before it exits, and a
   * poll of the pipe then reports them at once. From another source (a journal, a file read by another process)
   * output may lag: there, until none has arrived for a moment.
   */
  async quiet(): Promise<void> {
    if (this.reader instanceof Socket) {
      const reader = this.reader;
      const pausedUntil = Date.now() + PAUSED_WAIT_MS;
      for (;;) {
        const before = this.chunks;
        // The first turn reaches the end of the current one; the second runs after a poll of the pipe.
        for (let turn = 0; turn < 2; turn++) await new Promise((r) => setImmediate(r));
        // Paused while the log file catches up (its pressure): what waits in the pipe is read once it resumes.
        if (reader.isPaused() && this.reader === reader && Date.now() < pausedUntil) {
          await new Promise((r) => setTimeout(r, QUIET_MS));
          continue;
        }
        if (this.chunks === before) return;
      }
    }
    for (;;) {
      await new Promise((r) => setTimeout(r, QUIET_MS));
      // Timers run before the loop polls for I/O: a busy loop could fire this one before reading output that
      // is already waiting. One turn through the poll phase first.
      await new Promise((r) => setImmediate(r));
      if (Date.now() - this.lastData >= QUIET_MS) return;
    }
  }

  private onData(chunk: string): void {
    this.lastData = Date.now();
    this.chunks++;
    const text = this.partial + chunk;
    const end = text.lastIndexOf('\n');
    if (end < 0) {
      this.partial = text;
      if (text.length > MAX_LINE) this.flushPartial();
      return;
    }
    this.partial = text.slice(end + 1);
    this.write(text.slice(0, end + 1));
  }

  private flushPartial(): void {
    if (this.partial === '') return;
    const rest = this.partial;
    this.partial = '';
    this.write(`${rest}\n`);
  }

  /**
   * Queues whole lines for the file and publishes them at once: followers do not wait for the disk. Colour codes
   * and every other control sequence are left out: what the tunnel prints can come from its server.
   */
  private write(text: string): void {
    // Blank lines are left out: each line kept is an entry, so a line's place in the file is its place in the stream.
    const lines = this.redact(withoutStatusReads(stripControls(text))).replace(BLANK_LINES, '');
    if (lines === '') return;
    this.totals.bytes += Buffer.byteLength(lines);
    let count = 0;
    for (let at = lines.indexOf('\n'); at >= 0; at = lines.indexOf('\n', at + 1)) count++;
    this.totals.lines += count;
    let line = this.written;
    this.written += count;
    this.file.append(lines);
    this.keepTail(lines);
    if (!this.entries$.observed && !this.hints) return;
    const now = Date.now();
    const entries: InstanceLogEntry[] = [];
    for (const text of lines.split('\n')) {
      const entry = parseFrpcLine(text, now);
      if (entry) entries.push({ ...entry, seq: logSeq(this.run, ++line) });
    }
    if (entries.length === 0) return;
    this.hints?.(entries);
    this.entries$.next(entries);
  }

  /**
   * The last `count` lines written, newest last, from the live file and, if it is short, the rotated one. Masked
   * again: the keeper writes while tunnelward is away, and a secret may have become known after its line was written.
   */
  lastLines(count: number): string[] {
    const lines: string[] = [];
    for (const path of [this.logPath, `${this.logPath}.1`]) {
      const found = tailOf(path, count - lines.length);
      lines.unshift(...found);
      if (lines.length >= count) break;
    }
    return lines.slice(-count).map(this.redact);
  }

  /**
   * The last `count` entries, for a client that just connected; those of the daemon's current run with their seq.
   * Read once the file has what was read (`file.idle()`): its last `written` lines are then this run's.
   */
  recentEntries(count: number): InstanceLogEntry[] {
    const now = Date.now();
    const lines = this.lastLines(count);
    return lines.flatMap((line, i) => {
      const entry = parseFrpcLine(line, now);
      if (!entry) return [];
      const fromEnd = lines.length - 1 - i;
      return fromEnd < this.written ? [{ ...entry, seq: logSeq(this.run, this.written - fromEnd) }] : [entry];
    });
  }

  /**
   * The entries after `seq` that the files still hold, at most `max` (the latest), for a client that reconnects. A
   * seq of another run of the daemon (0: none seen): every line of this run. Read once the file has what was read.
   */
  entriesAfter(seq: number, max: number): InstanceLogEntry[] {
    const seen = runOfLogSeq(seq) === this.run ? seq - logSeq(this.run, 0) : 0;
    return this.recentEntries(Math.min(Math.max(this.written - seen, 0), max));
  }

  /** A new run of the tunnel begins: its exit is explained by its own lines only. */
  newRun(): void {
    this.runTail = [];
    this.connectionSaid = undefined;
    this.disconnectSaid = undefined;
  }

  private keepTail(lines: string): void {
    for (const line of lines.split('\n')) {
      const plain = line.trimEnd();
      if (plain === '') continue;
      const said = readLogLine(plain);
      if (said.connected !== undefined) {
        this.connectionSaid = said.connected;
        // Why not, kept across the lines that say only that frpc tries again.
        if (said.connected) this.disconnectSaid = undefined;
        else if (said.reason) this.disconnectSaid = said.reason;
      }
      this.runTail.push(plain);
      if (this.runTail.length > TAIL_LINES) this.runTail.shift();
    }
  }

  /** The current run's last lines with colour codes stripped, once the pipe is drained: what a failed start shows. */
  async exitTail(): Promise<string[]> {
    await this.quiet();
    this.flushPartial();
    return [...this.runTail];
  }

  close(): void {
    this.stopReader();
    // Half a line read: written (masked as every line tunnelward writes) without its end, so that whoever reads the
    // pipe next (the keeper) completes it.
    if (this.partial !== '') this.file.append(this.redact(stripControls(this.partial)));
    this.partial = '';
    this.entries$.complete();
  }

  /** Removes the pipe and every log file of the instance, once what was queued for the file is written. */
  async remove(keepLog = false): Promise<void> {
    this.close();
    await this.file.idle();
    await rm(this.pipePath, { force: true });
    if (keepLog) return;
    for (let i = 0; i <= this.policy().files + 1; i++)
      await rm(i === 0 ? this.logPath : `${this.logPath}.${i}`, { force: true });
  }
}

/**
 * Up to `count` last lines of a file, reading backwards in blocks only as far as needed. The bytes are decoded once,
 * whole: a character cut by a block's edge is read whole, never as U+FFFD.
 */
export function tailOf(path: string, count: number, block = 16 * 1024): string[] {
  if (count <= 0) return [];
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return [];
  }
  try {
    let position = fstatSync(fd).size;
    const blocks: Buffer[] = [];
    let newlines = 0;
    while (position > 0 && newlines <= count + 1) {
      const length = Math.min(block, position);
      position -= length;
      const buffer = Buffer.alloc(length);
      readSync(fd, buffer, 0, length, position);
      blocks.unshift(buffer);
      for (const byte of buffer) if (byte === 0x0a) newlines++;
    }
    const lines = Buffer.concat(blocks).toString('utf8').split('\n');
    // Unless the file was read from its start, its first line here is cut (maybe mid-character): it is not one.
    if (position > 0) lines.shift();
    return lines.filter((l) => l !== '').slice(-count);
  } finally {
    closeSync(fd);
  }
}

/** Where the tunnels' output pipes and log files are. */
export const logsDirOf = (dataDir: string): string => join(dataDir, 'logs');

/** The log channels of every instance, created on first use. */
export class InstanceLogs {
  private readonly channels = new Map<number, LogChannel>();
  readonly dir: string;
  /** Log files that stopped, or started again, being writable. */
  readonly faults$ = new Subject<LogFaultEvent>();
  /** Output read from every tunnel since start-up. */
  readonly totals: LogTotals = { lines: 0, bytes: 0 };

  constructor(
    dataDir: string,
    private readonly policy: () => RotationPolicy,
    private readonly log: Logger,
    private readonly source?: LogSourceFactory,
    private readonly redact?: (text: string) => string,
    /** This run of the daemon, its starts counted (see `logSeq`). */
    private readonly run = 0,
  ) {
    this.dir = logsDirOf(dataDir);
    mkdirSync(this.dir, { recursive: true, mode: 0o750 });
  }

  channel(id: number): LogChannel {
    let channel = this.channels.get(id);
    if (!channel) {
      channel = new LogChannel(
        id,
        join(this.dir, `tunnel_${id}.pipe`),
        join(this.dir, `tunnel_${id}.log`),
        this.policy,
        this.log,
        this.faults$,
        this.source,
        this.totals,
        this.redact,
        this.run,
      );
      this.channels.set(id, channel);
    }
    return channel;
  }

  /** Lets the instance's log go: its pipe, and its files unless `keepLog`. */
  async remove(id: number, { keepLog = false }: { keepLog?: boolean } = {}): Promise<void> {
    const channel = this.channel(id);
    this.channels.delete(id);
    await channel.remove(keepLog);
  }

  /** The log files that cannot be written now, for the self-check. */
  failing(): Array<{ instanceID: number; fault: LogFault }> {
    return [...this.channels.values()].flatMap((c) =>
      c.file.failing ? [{ instanceID: c.id, fault: c.file.failing }] : [],
    );
  }

  /** Stops reading every pipe; resolves once what was read is in the log files. */
  async close(): Promise<void> {
    const channels = [...this.channels.values()];
    this.channels.clear();
    for (const channel of channels) channel.close();
    await Promise.all(channels.map((c) => c.file.idle()));
  }
}
