import { open, readFile, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import type { BindParams, SqlValue } from 'sql.js';
import { syncDirectory } from '../fs/atomic.js';

/**
 * The write-ahead journal beside the database snapshot: each group commit appends one record, the statements that
 * made its changes (SQL and bound values, in the order they ran), so a change costs its own size on disk, not the
 * whole database's. A record is framed as `u32 length, u32 crc32, payload` (little-endian), the payload being the
 * JSON text `[number, [sql, params], ...]`; a record cut off by a crash, or damaged, ends the journal there.
 */
export interface JournalRecord {
  /** Numbered from 1 across the database's life; the snapshot records the last number it holds. */
  number: number;
  statements: Array<[sql: string, params: BindParams]>;
}

const HEADER_BYTES = 8;

/**
 * Values JSON cannot carry exactly (bytes, big integers, non-finite numbers) become tagged objects: a bound value
 * is never an object, so the tag cannot be mistaken for one.
 */
function encodeValue(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const original = this[key];
  if (original instanceof Uint8Array) return { bytes: Buffer.from(original).toString('base64') };
  if (typeof original === 'bigint') return { bigint: original.toString() };
  if (typeof original === 'number' && !Number.isFinite(original)) return { number: String(original) };
  return value;
}

function decodeValue(value: unknown): SqlValue {
  if (value === null || typeof value !== 'object') return value as SqlValue;
  const tagged = value as { bytes?: string; bigint?: string; number?: string };
  if (tagged.bytes !== undefined) return new Uint8Array(Buffer.from(tagged.bytes, 'base64'));
  if (tagged.bigint !== undefined) return BigInt(tagged.bigint) as unknown as SqlValue;
  return Number(tagged.number);
}

function decodeParams(params: unknown): BindParams {
  if (Array.isArray(params)) return params.map(decodeValue);
  if (params !== null && typeof params === 'object')
    return Object.fromEntries(Object.entries(params).map(([name, value]) => [name, decodeValue(value)]));
  throw new Error('bound values are neither a list nor named');
}

/** One statement as the journal keeps it (JSON text); made when the statement runs, so the values are as bound. */
export function encodeStatement(sql: string, params: BindParams): string {
  return JSON.stringify([sql, params ?? []], encodeValue);
}

/** A framed record of the statements (each from `encodeStatement`). */
export function encodeRecord(number: number, statements: readonly string[]): Buffer {
  const payload = Buffer.from(`[${number},${statements.join(',')}]`, 'utf8');
  const record = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
  record.writeUInt32LE(payload.length, 0);
  record.writeUInt32LE(crc32(payload), 4);
  payload.copy(record, HEADER_BYTES);
  return record;
}

/**
 * Reads the records of a journal in order, handing each to `use` (which returns false to stop before it); returns
 * the length of the whole records read. A record cut off, damaged or malformed ends the reading: what follows it
 * cannot be trusted to come after it.
 */
export function scanJournal(bytes: Uint8Array, use: (record: JournalRecord) => boolean): number {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = 0;
  while (offset + HEADER_BYTES <= view.length) {
    const length = view.readUInt32LE(offset);
    const end = offset + HEADER_BYTES + length;
    if (length === 0 || end > view.length) break;
    const payload = view.subarray(offset + HEADER_BYTES, end);
    if (crc32(payload) !== view.readUInt32LE(offset + 4)) break;
    const record = parseRecord(payload);
    if (!record || !use(record)) break;
    offset = end;
  }
  return offset;
}

function parseRecord(payload: Buffer): JournalRecord | undefined {
  try {
    const [number, ...statements] = JSON.parse(payload.toString('utf8')) as unknown[];
    if (!Number.isSafeInteger(number) || (number as number) < 1) return undefined;
    return {
      number: number as number,
      statements: statements.map((s) => {
        const [sql, params] = s as [unknown, unknown];
        if (typeof sql !== 'string') throw new Error('a statement without SQL');
        return [sql, decodeParams(params)];
      }),
    };
  } catch {
    return undefined;
  }
}

/**
 * The journal file: appended to, made durable, emptied once a snapshot holds what it says. Mode 0600 (it holds what
 * the database holds). A write that fails leaves the file in an unknown state: the handle is dropped and the next
 * use opens it again; the database then takes a snapshot and empties the file before it appends again.
 */
export class JournalFile {
  private handle: FileHandle | undefined;
  /** Bytes of whole records in the file, as far as this process knows. */
  size = 0;

  constructor(readonly path: string) {}

  /** The file's bytes; empty when there is none. */
  async read(): Promise<Buffer> {
    try {
      return await readFile(this.path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
      throw err;
    }
  }

  /** Appends `bytes` (not yet durable: `sync()`). */
  async write(bytes: Uint8Array): Promise<void> {
    await this.using(async (handle) => {
      for (let done = 0; done < bytes.length;) {
        done += (await handle.write(bytes, done, bytes.length - done)).bytesWritten;
      }
    });
    this.size += bytes.length;
  }

  async sync(): Promise<void> {
    await this.using((handle) => handle.datasync());
  }

  /** Cuts the file to `length` bytes, durably. */
  async truncate(length = 0): Promise<void> {
    await this.using(async (handle) => {
      await handle.truncate(length);
      await handle.datasync();
    });
    this.size = length;
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close();
  }

  private async using<T>(fn: (handle: FileHandle) => Promise<T>): Promise<T> {
    try {
      return await fn(this.handle ?? (this.handle = await this.open()));
    } catch (err) {
      await this.close().catch(() => {});
      throw err;
    }
  }

  private async open(): Promise<FileHandle> {
    let handle: FileHandle;
    try {
      handle = await open(this.path, 'ax', 0o600);
      // A new file's name must survive a power cut as well as its records.
      await syncDirectory(dirname(this.path));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      handle = await open(this.path, 'a', 0o600);
    }
    await handle.chmod(0o600).catch(async (err: unknown) => {
      await handle.close();
      throw err;
    });
    return handle;
  }
}
