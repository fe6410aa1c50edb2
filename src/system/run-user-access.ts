import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { currentOsUser, lookupOsUser, type OsUser } from './os-users.js';

/** Mode and group an instance's config file is written with (see `configFileAccess`). */
export interface ConfigFileAccess {
  mode: number;
  /** Left out: the writer's own group. */
  group?: number;
}

/**
 * Who may read an instance's config file (it holds `auth.token`): tunnelward, which writes it, and the user its
 * tunnel runs as, whichever init system runs it. A tunnelward that is root keeps the file its own and gives it to
 * the run user's primary group, mode 0640: that user reads it and cannot change it. A tunnel run as tunnelward's
 * own user or as root needs nothing more than 0600, and a tunnelward that is not root runs tunnels only as itself.
 */
export function configFileAccess(runUser: string, me: OsUser = currentOsUser()): ConfigFileAccess {
  const user = otherRunUser(runUser, me);
  return user ? { mode: 0o640, group: user.gid } : { mode: 0o600 };
}

/** True when the file at `path` has the owner, mode and group `configFileAccess` gives it. */
export async function hasConfigFileAccess(
  path: string,
  runUser: string,
  me: OsUser = currentOsUser(),
): Promise<boolean> {
  const want = configFileAccess(runUser, me);
  const info = await stat(path);
  return (
    info.uid === me.uid && (info.mode & 0o7777) === want.mode && (want.group === undefined || info.gid === want.group)
  );
}

/**
 * Why the run user could not open the config file at `path`, if it could not: a directory on the way that it may
 * not pass through, or a file it may not read. Only a root tunnelward runs tunnels as another user; for anyone
 * else (and for a tunnel run as root or as tunnelward's own user) there is nothing to check.
 */
export async function runUserCannotRead(
  path: string,
  runUser: string,
  me: OsUser = currentOsUser(),
): Promise<string | undefined> {
  const user = otherRunUser(runUser, me);
  if (!user) return undefined;
  const blocked = await firstUnsearchable(dirname(path), user);
  if (blocked) {
    return `runUser ${runUser} cannot reach ${path}: ${blocked} is not searchable by it (chmod o+x ${blocked})`;
  }
  const info = await stat(path);
  if (!allows(info, user, 0o4)) {
    const mode = (info.mode & 0o7777).toString(8).padStart(4, '0');
    return `runUser ${runUser} cannot read ${path}: it is owned by uid ${info.uid}, gid ${info.gid}, mode ${mode}`;
  }
  return undefined;
}

/** The run user when it is neither tunnelward's own user nor root, and tunnelward is root (it can switch to it). */
function otherRunUser(runUser: string, me: OsUser): OsUser | undefined {
  if (me.uid !== 0 || runUser === me.name) return undefined;
  const user = lookupOsUser(runUser);
  return user && user.uid !== 0 && user.uid !== me.uid ? user : undefined;
}

/** Whether the permission bits (`want`: 4 read, 1 search) let the user in, by its uid or its primary group. */
function allows(info: { uid: number; gid: number; mode: number }, who: OsUser, want: number): boolean {
  const bits = info.uid === who.uid ? info.mode >> 6 : info.gid === who.gid ? info.mode >> 3 : info.mode;
  return (bits & want) === want;
}

/** The first directory from the root down to `dir` that the user may not pass through, if any. */
async function firstUnsearchable(dir: string, who: OsUser): Promise<string | undefined> {
  const parts = dir.split('/').filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const path = '/' + parts.slice(0, i).join('/');
    if (!allows(await stat(path), who, 0o1)) return path;
  }
  return undefined;
}
