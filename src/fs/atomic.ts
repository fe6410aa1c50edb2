import { randomBytes } from 'node:crypto';
import { open, readdir, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export interface AtomicWriteOptions {
  /** File mode of the new file, exactly (whatever the umask); defaults to 0o600: what we write often holds secrets. */
  mode?: number;
  /** Group of the new file (its owner stays the writer); the writer's own group when left out. */
  group?: number;
  /** Gives the temp file the rest of its access (an ACL) by its path, after its mode and group, before its data. */
  prepare?: (tempPath: string) => Promise<void>;
}

/**
 * Replaces `path` with `data` so that a reader or a crash sees either the old file whole or the new one whole:
 * write a temp file in the same directory, fsync it, rename it over the target, fsync the directory. The temp file
 * has its mode, group and ACL before anything is written into it, so the file is never there with other access.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const mode = options.mode ?? 0o600;
  const handle = await open(tmp, 'wx', mode);
  try {
    await handle.chmod(mode);
    if (options.group !== undefined) await handle.chown(-1, options.group);
    await options.prepare?.(tmp);
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close().catch(() => {});
    await unlink(tmp).catch(() => {});
    throw err;
  }
  await handle.close();
  try {
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
  await syncDirectory(dir);
}

/** Temp files of this module's writes: `.<name>.<pid>.<random>.tmp`. */
const TEMP_FILE = /^\..+\.\d+\.[0-9a-f]{12}\.tmp$/;

/**
 * Removes the temp files that writes cut off by a crash left in `dir`; returns their names. Only for a directory
 * no other writer uses at the moment (the daemon holds its data dir's lock).
 */
export async function removeStaleTempFiles(dir: string): Promise<string[]> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((name) => TEMP_FILE.test(name));
  for (const name of names) await unlink(join(dir, name)).catch(() => {});
  return names;
}

/** Makes a rename durable: without it a power cut can forget the new directory entry. */
export async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch {
    // Some filesystems refuse fsync on a directory; the rename is still atomic there.
  } finally {
    await handle?.close().catch(() => {});
  }
}
