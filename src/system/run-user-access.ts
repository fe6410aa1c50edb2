import { readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { AtomicWriteOptions } from '../fs/atomic.js';
import { currentOsUser, lookupOsUser, type OsUser } from './os-users.js';
import { runCommand } from './run-program.js';
import { trustedProgram } from './trusted-program.js';

/** What the decision reads of the host; tests give their own. */
export interface AccessHost {
  me: OsUser;
  passwdFile: string;
  groupFile: string;
  /** The path of a program (setfacl, getfacl) fit to run as tunnelward; throws why there is none. */
  program: (name: string) => Promise<string>;
}

export function liveHost(): AccessHost {
  return { me: currentOsUser(), passwdFile: '/etc/passwd', groupFile: '/etc/group', program: trustedProgram };
}

/** The ACL tools, found where tunnelward may run them. */
interface AclTools {
  setfacl: string;
  getfacl: string;
}

/**
 * The access an instance's config file (it holds `auth.token`) is given, so that tunnelward, which writes it, and the
 * user its tunnel runs as read it, and nobody else:
 * - `own`: tunnelward's alone, mode 0600: a tunnel run as root or as tunnelward's own user (a tunnelward that is not
 *   root runs tunnels only as itself), or a run user that cannot be given access (`refused` says why and what to do;
 *   its tunnel is not started);
 * - `group`: tunnelward's, group the run user's private primary group, mode 0640: works on every host (where setfacl
 *   is, it also clears the ACL entries a default ACL of the dir would give the new file, which 0640 would let read);
 * - `acl`: tunnelward's, group tunnelward's own (with no access), mode 0600 plus the ACL entry `user:<uid>:r--`
 *   (`ls` shows 0640: the group bits are the ACL's mask), where the run user's primary group is shared.
 */
export type ConfigFileAccess =
  | { form: 'own'; refused?: string }
  | { form: 'group'; group: number; setfacl?: string }
  | { form: 'acl'; group: number; reader: number; tools: AclTools };

/**
 * Decides the access of the config file of a tunnel run as `runUser` (see `ConfigFileAccess`). A primary group is the
 * run user's own when it is named after it (a user private group, as `useradd --user-group` makes: the group file
 * and the passwd file read here know local accounts only, and a directory's users may have any gid), no other account
 * has it as its primary group, and its member list names no other user. Anything else would let every member read the
 * token: an ACL gives the run user alone read access, and without setfacl the run user is refused, never given the
 * shared group.
 */
export async function configFileAccess(runUser: string, host: AccessHost = liveHost()): Promise<ConfigFileAccess> {
  const user = otherRunUser(runUser, host);
  if (!user) return { form: 'own' };
  const shared = sharedGroup(user, host);
  if (!shared) {
    const setfacl = await host.program('setfacl').catch(() => undefined);
    return setfacl ? { form: 'group', group: user.gid, setfacl } : { form: 'group', group: user.gid };
  }
  try {
    const tools = { setfacl: await host.program('setfacl'), getfacl: await host.program('getfacl') };
    return { form: 'acl', group: host.me.gid, reader: user.uid, tools };
  } catch (err) {
    return {
      form: 'own',
      refused:
        `runUser ${runUser} ${shared}, so only an ACL lets it alone read its config file, and ${(err as Error).message}: ` +
        `install the acl package (setfacl), or give ${runUser} a primary group of its own ` +
        `(a group named ${runUser} that no other user is in: groupadd ${runUser}; usermod -g ${runUser} ${runUser})`,
    };
  }
}

/** How a write gives the new file its access: mode and group, and the whole ACL set on the temp file. */
export function accessWriteOptions(access: ConfigFileAccess): AtomicWriteOptions {
  switch (access.form) {
    case 'own':
      return { mode: 0o600 };
    case 'group':
      return { mode: 0o640, group: access.group, ...settingAcl(access.setfacl, GROUP_ACL) };
    case 'acl':
      return { mode: 0o600, group: access.group, ...settingAcl(access.tools.setfacl, readerAcl(access.reader)) };
  }
}

/** A write's step that sets the temp file's whole ACL: --set drops what it inherited from a default ACL. */
function settingAcl(setfacl: string | undefined, entries: string[]): Pick<AtomicWriteOptions, 'prepare'> {
  if (!setfacl) return {};
  const acl = `--set=${entries.join(',')}`;
  return { prepare: async (path) => void (await runCommand([setfacl, acl, '--', path])) };
}

/** The write options of the config file of a tunnel run as `runUser`: its access decided, then applied. */
export async function configFileWriteOptions(runUser: string, host?: AccessHost): Promise<AtomicWriteOptions> {
  return accessWriteOptions(await configFileAccess(runUser, host));
}

/** The whole ACL of a file only `reader` reads besides its owner, as getfacl prints it with numeric ids. */
function readerAcl(reader: number): string[] {
  return ['user::rw-', `user:${reader}:r--`, 'group::---', 'mask::r--', 'other::---'];
}

/** The ACL of mode 0640 with no entry besides. */
const GROUP_ACL = ['user::rw-', 'group::r--', 'other::---'];

/**
 * Whether the file at `path` has the owner, mode, group and ACL that `configFileAccess` gives it (`right`), and that
 * access. The permission bits an `own` or `group` file should have show any ACL entry added to it (they become the
 * mask), except one whose rights its group already has.
 */
export async function checkConfigFileAccess(
  path: string,
  runUser: string,
  host: AccessHost = liveHost(),
): Promise<{ access: ConfigFileAccess; right: boolean }> {
  const access = await configFileAccess(runUser, host);
  const info = await stat(path);
  const { mode, group } = accessWriteOptions(access);
  const shown = access.form === 'acl' ? 0o640 : mode;
  let right = info.uid === host.me.uid && (info.mode & 0o7777) === shown && (group === undefined || info.gid === group);
  if (right && access.form === 'acl') {
    const want = readerAcl(access.reader).sort();
    const have = (await fileAcl(path, access.tools.getfacl)).sort();
    right = want.length === have.length && want.every((entry, i) => entry === have[i]);
  }
  return { access, right };
}

/**
 * Why the run user could not open the config file at `path`, if it could not: it cannot be given access (see
 * `configFileAccess`), a directory on the way that it may not pass through, or a file it may not read, by the
 * permission bits or an ACL entry (read when the bits deny). Only a root tunnelward runs tunnels as another user;
 * for anyone else (and for a tunnel run as root or as tunnelward's own user) there is nothing to check.
 */
export async function runUserCannotRead(
  path: string,
  runUser: string,
  host: AccessHost = liveHost(),
): Promise<string | undefined> {
  const user = otherRunUser(runUser, host);
  if (!user) return undefined;
  const access = await configFileAccess(runUser, host);
  if (access.form === 'own' && access.refused) return access.refused;
  let tool: Promise<string | undefined> | undefined;
  const getfacl: AclReader = () =>
    (tool ??=
      access.form === 'acl' ? Promise.resolve(access.tools.getfacl) : host.program('getfacl').catch(() => undefined));
  const blocked = await firstUnsearchable(dirname(path), user, getfacl);
  if (blocked) {
    return `runUser ${runUser} cannot reach ${path}: ${blocked} is not searchable by it (chmod o+x ${blocked})`;
  }
  const info = await stat(path);
  if (!(await allows(path, info, user, 0o4, getfacl))) {
    const mode = (info.mode & 0o7777).toString(8).padStart(4, '0');
    return `runUser ${runUser} cannot read ${path}: it is owned by uid ${info.uid}, gid ${info.gid}, mode ${mode}`;
  }
  return undefined;
}

/** The run user when it is neither tunnelward's own user nor root, and tunnelward is root (it can switch to it). */
function otherRunUser(runUser: string, { me, passwdFile }: AccessHost): OsUser | undefined {
  if (me.uid !== 0 || runUser === me.name) return undefined;
  const user = lookupOsUser(runUser, passwdFile);
  return user && user.uid !== 0 && user.uid !== me.uid ? user : undefined;
}

/**
 * How the user's primary group is not its own, if it is not: the other accounts with it as their primary group and
 * the other members its entries name, or a name that is not the user's.
 */
function sharedGroup(user: OsUser, { passwdFile, groupFile }: AccessHost): string | undefined {
  const others = new Set<string>();
  for (const [name, , , gid] of colonRecords(passwdFile)) {
    if (Number(gid) === user.gid && name !== user.name) others.add(name!);
  }
  let named = false;
  for (const [name, , gid, members] of colonRecords(groupFile)) {
    if (Number(gid) !== user.gid) continue;
    if (name === user.name) named = true;
    for (const member of (members ?? '').split(',')) if (member && member !== user.name) others.add(member);
  }
  if (others.size > 0) return `shares its primary group (gid ${user.gid}) with ${[...others].sort().join(', ')}`;
  return named ? undefined : `has a primary group (gid ${user.gid}) that is not named ${user.name}`;
}

/** The records of a colon-separated database (/etc/passwd, /etc/group); none when it cannot be read. */
function colonRecords(path: string): string[][] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => line.split(':'));
}

/** The file's access ACL, one `type:qualifier:rights` entry a line, ids numeric. */
async function fileAcl(path: string, getfacl: string): Promise<string[]> {
  const { stdout } = await runCommand([
    getfacl,
    '--access',
    '--omit-header',
    '--numeric',
    '--no-effective',
    '--',
    path,
  ]);
  return stdout
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
}

type Stat = { uid: number; gid: number; mode: number };
/** getfacl's path, looked for once it is needed; undefined when there is none. */
type AclReader = () => Promise<string | undefined>;

/**
 * Whether the user may (`want`: 4 read, 1 search) by its uid or its primary group (a tunnel is spawned without
 * supplementary groups): by the permission bits, or when they deny and getfacl is there, by the file's ACL.
 */
async function allows(path: string, info: Stat, who: OsUser, want: number, getfacl: AclReader): Promise<boolean> {
  const bits = info.uid === who.uid ? info.mode >> 6 : info.gid === who.gid ? info.mode >> 3 : info.mode;
  if ((bits & want) === want) return true;
  const tool = await getfacl();
  if (!tool) return false;
  const entries = await fileAcl(path, tool).catch(() => [] as string[]);
  return entries.length > 0 && aclAllows(entries, info, who, want);
}

/** POSIX.1e's access check over an ACL: owner, then a named user entry, then the matching group entries, then other. */
function aclAllows(entries: string[], info: Stat, who: OsUser, want: number): boolean {
  const rights = new Map<string, number>();
  for (const entry of entries) {
    const [type, qualifier, perms = ''] = entry.split(':');
    const value = (perms[0] === 'r' ? 4 : 0) | (perms[1] === 'w' ? 2 : 0) | (perms[2] === 'x' ? 1 : 0);
    rights.set(`${type}:${qualifier}`, value);
  }
  const has = (value: number | undefined, mask = 7) => value !== undefined && (value & mask & want) === want;
  if (info.uid === who.uid) return has(rights.get('user:'));
  const mask = rights.get('mask:') ?? 7;
  const named = rights.get(`user:${who.uid}`);
  if (named !== undefined) return has(named, mask);
  const groups = [info.gid === who.gid ? rights.get('group:') : undefined, rights.get(`group:${who.gid}`)].filter(
    (value) => value !== undefined,
  );
  if (groups.length > 0) return groups.some((value) => has(value, mask));
  return has(rights.get('other:'));
}

/** The first directory from the root down to `dir` that the user may not pass through, if any. */
async function firstUnsearchable(dir: string, who: OsUser, getfacl: AclReader): Promise<string | undefined> {
  const parts = dir.split('/').filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const path = '/' + parts.slice(0, i).join('/');
    if (!(await allows(path, await stat(path), who, 0o1, getfacl))) return path;
  }
  return undefined;
}
