import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { dirname } from 'node:path';

/** This process's user name, or its uid when it has no passwd entry. */
function userName(): string {
  try {
    return userInfo().username;
  } catch {
    return String(process.getuid?.() ?? '');
  }
}

async function describe(path: string): Promise<string> {
  const info = await stat(path);
  return `owned by uid ${info.uid}, mode ${(info.mode & 0o7777).toString(8).padStart(4, '0')}`;
}

/**
 * Creates the data dir (searchable but not listable by others: a tunnel running as another user must reach its
 * config file) and makes sure this process can write in it, before anything else is opened there. Throws a message
 * that says which dir, which user, and what to do.
 */
export async function prepareDataDir(dataDir: string): Promise<void> {
  try {
    await mkdir(dataDir, { recursive: true, mode: 0o711 });
    await access(dataDir, constants.W_OK | constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM' && code !== 'EROFS') throw err;
    // The dir itself, or the nearest ancestor that exists when the dir could not be created.
    const blocking = await nearestExisting(dataDir);
    const what =
      blocking === dataDir ? `the data dir ${dataDir}` : `cannot create the data dir ${dataDir}: ${blocking}`;
    if (code === 'EROFS') {
      throw new Error(`${what} is on a read-only file system; choose another --data-dir`, { cause: err });
    }
    throw new Error(
      `${what} is not writable by user ${userName()} (uid ${process.getuid?.()}): it is ${await describe(blocking)}. ` +
        `Run tunnelward as the user that owns it, give this user the dir (chown ${userName()} ${blocking}), ` +
        'or choose another --data-dir',
      { cause: err },
    );
  }
}

async function nearestExisting(path: string): Promise<string> {
  for (let at = path; ; at = dirname(at)) {
    const found = await stat(at).then(
      () => true,
      () => false,
    );
    if (found || dirname(at) === at) return at;
  }
}
