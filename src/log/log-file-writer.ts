import { appendFile, rename, rm, stat } from 'node:fs/promises';
import type { Logger } from './logger.js';

export interface RotationPolicy {
  /** Rotate the log file before it grows past this many bytes. */
  maxBytes: number;
  /** Rotated files kept beside the live one: `.1` (newest) to `.<files>`. */
  files: number;
}

/** A log file that cannot be written: since when, why, and how much output was dropped meanwhile. */
export interface LogFault {
  since: number;
  reason: string;
  lostBytes: number;
}

/** Past this much output waiting for the disk, reading from the tunnel pauses (the tunnel's pipe then fills). */
const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;
/** While the file cannot be written, output is dropped and a write is tried again at most this often. */
const RETRY_MS = 1000;

/**
 * Appends a tunnel's output to its log file without blocking the event loop: writes are queued and batched, the
 * file is rotated by rename at its size limit, and a slow disk slows the reader (back-pressure) instead of
 * growing memory. A file that cannot be written (a full disk, an I/O error) never stops the daemon: the output
 * is dropped and counted, the fault reported once, and writing resumes by itself when the cause goes away.
 */
export class LogFileWriter {
  private queue: string[] = [];
  private queuedBytes = 0;
  private flushing: Promise<void> | undefined;
  private size: number | undefined;
  private paused = false;
  private fault: (LogFault & { retryAt: number }) | undefined;

  constructor(
    readonly path: string,
    private readonly policy: () => RotationPolicy,
    private readonly log: Logger,
    private readonly events: {
      /** True: stop reading the tunnel's output for now; false: read again. */
      pressure(paused: boolean): void;
      faulted(fault: LogFault): void;
      recovered(fault: LogFault): void;
    },
  ) {}

  /** The current fault, if the file cannot be written. */
  get failing(): LogFault | undefined {
    return this.fault && { since: this.fault.since, reason: this.fault.reason, lostBytes: this.fault.lostBytes };
  }

  append(text: string): void {
    const bytes = Buffer.byteLength(text);
    if (this.fault && Date.now() < this.fault.retryAt) {
      this.fault.lostBytes += bytes;
      return;
    }
    this.queue.push(text);
    this.queuedBytes += bytes;
    if (!this.paused && this.queuedBytes > HIGH_WATER) this.setPaused(true);
    this.flushing ??= this.flush().finally(() => (this.flushing = undefined));
  }

  /** Resolves once everything appended so far has been written (or dropped). */
  async idle(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const text = this.queue.join('');
      const bytes = this.queuedBytes;
      this.queue = [];
      this.queuedBytes = 0;
      try {
        await this.write(text);
        if (this.fault) this.recover();
      } catch (err) {
        this.failed(err as NodeJS.ErrnoException, bytes);
      }
      if (this.paused && (this.queuedBytes < LOW_WATER || this.fault)) this.setPaused(false);
    }
  }

  /** Appends whole lines, rotating first whenever the next lines would take the file past its size limit. */
  private async write(text: string): Promise<void> {
    const { maxBytes, files } = this.policy();
    this.size ??= await stat(this.path).then(
      (s) => s.size,
      () => 0,
    );
    let rest = Buffer.from(text);
    while (rest.length > 0) {
      let part = rest;
      if (this.size + part.length > maxBytes) {
        if (this.size > 0) {
          await this.rotate(files);
          this.size = 0;
        }
        part = rest.subarray(0, fitting(rest, maxBytes));
      }
      await appendFile(this.path, part, { mode: 0o640 });
      this.size += part.length;
      rest = rest.subarray(part.length);
    }
  }

  private async rotate(files: number): Promise<void> {
    await rm(`${this.path}.${files}`, { force: true });
    for (let i = files - 1; i >= 1; i--) {
      await rename(`${this.path}.${i}`, `${this.path}.${i + 1}`).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    }
    await rename(this.path, `${this.path}.1`);
  }

  private failed(err: NodeJS.ErrnoException, bytes: number): void {
    // The size on disk is unknown after a failed append: read it again before the next one.
    this.size = undefined;
    if (this.fault) {
      this.fault.lostBytes += bytes;
      this.fault.retryAt = Date.now() + RETRY_MS;
      return;
    }
    const now = Date.now();
    this.fault = { since: now, reason: err.code ?? err.message, lostBytes: bytes, retryAt: now + RETRY_MS };
    this.log.error(
      { path: this.path, reason: this.fault.reason },
      'cannot write a tunnel log file; its output is dropped until writing works again',
    );
    this.events.faulted(this.failing!);
  }

  private recover(): void {
    const fault = this.failing!;
    this.fault = undefined;
    this.log.warn(
      { path: this.path, lostBytes: fault.lostBytes, sinceMs: Date.now() - fault.since },
      'tunnel log file writable again',
    );
    this.events.recovered(fault);
  }

  private setPaused(paused: boolean): void {
    this.paused = paused;
    this.events.pressure(paused);
  }
}

/** How many bytes of `lines` make whole lines within `limit`; at least one line, however long it is. */
function fitting(lines: Buffer, limit: number): number {
  if (lines.length <= limit) return lines.length;
  const cut = lines.lastIndexOf(0x0a, limit - 1);
  if (cut >= 0) return cut + 1;
  const first = lines.indexOf(0x0a);
  return first < 0 ? lines.length : first + 1;
}
