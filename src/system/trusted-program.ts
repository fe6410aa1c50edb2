import { constants } from 'node:fs';
import { access, lstat, readlink, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { delimiter, dirname, isAbsolute, join } from 'node:path';

/** Symbolic links followed at most while walking a path (Linux's own limit). */
const MAX_LINKS = 40;

/** Finds an executable the way a shell would: a path as it is, a bare name in the absolute dirs of PATH. */
export async function findExecutable(command: string): Promise<string> {
  const candidates = command.includes('/')
    ? [command]
    : (process.env.PATH ?? '')
        .split(delimiter)
        .filter((dir) => isAbsolute(dir))
        .map((dir) => join(dir, command));
  for (const candidate of candidates) {
    try {
      const info = await stat(candidate);
      if (!info.isFile()) continue;
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not this one
    }
  }
  const where = command.includes('/') ? command : `${command} on PATH`;
  throw new Error(`${where} is missing or not an executable file`);
}

/** Who may own what tunnelward runs: root, and tunnelward's own user when it is not root. */
export function trustedOwners(): number[] {
  const own = process.getuid?.();
  return own === undefined || own === 0 ? [0] : [0, own];
}

/** Who `owners` are, in words: `root`, or `root or uid 1000 (tunnelward's own user)`. */
export const ownersText = (owners: readonly number[]) =>
  owners.length === 1 ? 'root' : `root or uid ${owners[1]} (tunnelward's own user)`;

function judge(path: string, info: Stats, owners: readonly number[]): string | undefined {
  const mode = `mode ${(info.mode & 0o7777).toString(8).padStart(4, '0')}`;
  if (!owners.includes(info.uid)) return `${path} is owned by uid ${info.uid}, not by ${ownersText(owners)}`;
  if (info.mode & 0o002) return `${path} is writable by every user (${mode})`;
  if (info.mode & 0o020) return `${path} is writable by its group (${mode}, gid ${info.gid})`;
  return undefined;
}

/**
 * Why `path` is not a program only its trusted owners can change, or undefined when it is: the file and every
 * directory met on the way to it, through each symbolic link (whose directory could swap it), must be owned by one of
 * `owners` and writable by neither group nor others (a sticky bit, as on /tmp, does not help: the owner of a file
 * there still replaces it). The rule sudo and systemd apply to what they run as root. With `kind` `directory`, the
 * same of a directory (where such programs are put).
 */
export async function untrustedReason(
  path: string,
  owners: readonly number[],
  kind: 'file' | 'directory' = 'file',
): Promise<string | undefined> {
  const parts = (p: string) => p.split('/').filter((part) => part !== '' && part !== '.');
  const pending = parts(path);
  let dir = '/';
  let links = 0;
  const problem = judge('/', await lstat('/'), owners);
  if (problem) return problem;
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === '..') {
      dir = dirname(dir);
      continue;
    }
    const here = join(dir, name);
    const info = await lstat(here);
    if (info.isSymbolicLink()) {
      if (++links > MAX_LINKS) return `${path} goes through more than ${MAX_LINKS} symbolic links`;
      const target = await readlink(here);
      if (target.startsWith('/')) dir = '/';
      pending.unshift(...parts(target));
      continue;
    }
    const reason = judge(here, info, owners);
    if (reason) return reason;
    if (pending.length === 0) {
      const fits = kind === 'file' ? info.isFile() : info.isDirectory();
      return fits ? undefined : `${here} is not a ${kind}`;
    }
    if (!info.isDirectory()) return `${here} is not a directory`;
    dir = here;
  }
  return kind === 'directory' ? undefined : `${path} is not a file`;
}

/** `untrustedReason`, with a path that cannot be looked at (gone, unreadable) as a reason too. */
export function untrustedOrUnseen(
  path: string,
  owners: readonly number[],
  kind: 'file' | 'directory' = 'file',
): Promise<string | undefined> {
  return untrustedReason(path, owners, kind).catch((err: NodeJS.ErrnoException) =>
    err.code === 'ENOENT' || err.code === 'ENOTDIR'
      ? `it is missing`
      : `${err.path ?? path} cannot be looked at (${err.code ?? err.message})`,
  );
}

/** Checks of one command under way: a thousand starts at once look at the file once. */
const checking = new Map<string, Promise<string>>();

/**
 * The path of `command` (a path, or a name on PATH), once it is found to be an executable file that only root (or
 * tunnelward's own user) can change; throws with the reason otherwise. Run that path, not the name: what is run is
 * what was checked. Called before each use, so a file changed after it was accepted is not run. On Windows, where
 * these owners and modes mean nothing (and PATHEXT decides what a name means), the command is left as it is.
 */
export function trustedProgram(command: string): Promise<string> {
  const pending = checking.get(command);
  if (pending) return pending;
  const check = findTrusted(command).finally(() => checking.delete(command));
  checking.set(command, check);
  return check;
}

async function findTrusted(command: string): Promise<string> {
  if (process.platform === 'win32') return command;
  const path = await findExecutable(command);
  const owners = trustedOwners();
  const reason = await untrustedOrUnseen(path, owners);
  if (reason) {
    throw new Error(
      `${path} is refused: ${reason}; a program tunnelward runs must be a file that only ${ownersText(owners)} can ` +
        `change, in directories that only ${ownersText(owners)} can change`,
    );
  }
  return path;
}
