import { spawn, type ChildProcess } from 'node:child_process';
import { JOURNAL_FIELDS, parseJournalLine } from '../src/boot/journal-entry.js';
import { TUNNEL_SLICE } from '../src/boot/systemd-unit.js';
import type { Logger } from '../src/log/logger.js';
import { trustedProgram } from '../src/system/trusted-program.js';
import { runProgram } from '../src/system/run-program.js';
import type { LogSource } from './log-sources.js';

/** How long to wait before following again after journalctl ended on its own: doubling while it keeps failing. */
const REFOLLOW_MS = 1000;
const REFOLLOW_MAX_MS = 60_000;

/**
 * One `journalctl -f` for every tunnel unit, whatever their number: the output of the units in tunnelward's slice,
 * demultiplexed here by unit to the instance that follows it. (What systemd says of the units comes from its
 * signals: systemd-bus.ts.) If journalctl ends, it is started again after the last entry read (its cursor), so
 * nothing is missed or read twice.
 */
export class JournalFollower {
  private readonly outputs = new Map<number, (text: string) => void>();
  private child: ChildProcess | undefined;
  private cursor: string | undefined;
  /** Runs of journalctl in a row that ended without reading a line. */
  private failures = 0;
  private closed = false;
  private readonly log: Logger;

  constructor(
    private readonly journalctl: () => string,
    log: Logger,
  ) {
    this.log = log.child({ component: 'journal' });
  }

  /**
   * Marks the journal's end now and follows from there. Whatever happens after this call is read, however long
   * journalctl takes to start: a snapshot of the units taken after it misses nothing that follows.
   */
  async start(): Promise<void> {
    try {
      const { stdout } = await runProgram([this.journalctl(), '-n', '1', '-o', 'json', '--output-fields=MESSAGE_ID']);
      this.cursor = parseJournalLine(stdout.trim()).cursor;
    } catch (err) {
      this.log.warn({ err }, 'cannot read where the journal ends; following from now');
    }
    this.follow();
  }

  /** Hands the unit's output to `onText` until the returned source is stopped. */
  output(id: number, onText: (text: string) => void): LogSource {
    this.outputs.set(id, onText);
    return {
      stop: () => {
        if (this.outputs.get(id) === onText) this.outputs.delete(id);
      },
    };
  }

  private follow(): void {
    if (this.closed) return;
    trustedProgram(this.journalctl()).then(
      (journalctl) => this.followWith(journalctl),
      (err: Error) => {
        this.failures++;
        this.followAgain(`cannot run journalctl: ${err.message}; trying again`, {});
      },
    );
  }

  private followWith(journalctl: string): void {
    if (this.closed) return;
    const from = this.cursor ? ['--after-cursor', this.cursor] : ['-n', '0'];
    const child = spawn(
      journalctl,
      [
        '-f',
        '-q',
        '-o',
        'json',
        `--output-fields=${JOURNAL_FIELDS.join(',')}`,
        ...from,
        `_SYSTEMD_SLICE=${TUNNEL_SLICE}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    let rest = '';
    let stderr = '';
    let read = false;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      read = true;
      const lines = (rest + chunk).split('\n');
      rest = lines.pop()!;
      this.read(lines);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-1000)));
    child.on('error', (err) => this.log.error({ err }, 'cannot follow the journal'));
    child.on('close', (code, signal) => {
      if (this.child === child) this.child = undefined;
      if (this.closed) return;
      this.failures = read ? 0 : this.failures + 1;
      this.followAgain('journalctl ended; following again', { code, signal, stderr: stderr.trim() });
    });
  }

  /** Follows again after a delay that doubles while journalctl keeps failing. */
  private followAgain(message: string, details: object): void {
    // A cursor the journal no longer has (vacuumed) would fail every time: then follow from now.
    if (this.failures >= 2 && this.cursor) {
      this.log.warn({ cursor: this.cursor }, 'journalctl fails from the last cursor; following from now on');
      this.cursor = undefined;
    }
    const delay = Math.min(REFOLLOW_MAX_MS, REFOLLOW_MS * 2 ** Math.max(0, this.failures - 1));
    this.log.warn({ ...details, delay }, message);
    setTimeout(() => this.follow(), delay).unref();
  }

  /** Lines in order; each unit's output is handed over in one piece per chunk. */
  private read(lines: string[]): void {
    const pending = new Map<number, string>();
    for (const line of lines) {
      const { cursor, output } = parseJournalLine(line);
      if (cursor) this.cursor = cursor;
      if (output && this.outputs.has(output.id))
        pending.set(output.id, `${pending.get(output.id) ?? ''}${output.text}\n`);
    }
    for (const [id, text] of pending) this.outputs.get(id)?.(text);
  }

  close(): void {
    this.closed = true;
    this.child?.kill();
    this.child = undefined;
  }
}
