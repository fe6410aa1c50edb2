import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';

export interface OsUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/** System user names as useradd accepts them; anything else never reaches a command line or a unit file. */
export const USER_NAME = /^[a-z_][a-z0-9_-]{0,31}\$?$/;

/** Looks a user up in /etc/passwd (no NSS: tunnelward manages local service users). */
export function lookupOsUser(name: string, passwdFile = '/etc/passwd'): OsUser | undefined {
  if (!USER_NAME.test(name)) return undefined;
  let text: string;
  try {
    text = readFileSync(passwdFile, 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const [user, , uid, gid, , home] = line.split(':');
    if (user === name && uid !== undefined && gid !== undefined) {
      return { name, uid: Number(uid), gid: Number(gid), home: home || '/' };
    }
  }
  return undefined;
}

let me: OsUser | undefined;

/** The user tunnelward runs as (read once: a process keeps its user, and each read is a lookup in the user database). */
export function currentOsUser(): OsUser {
  if (me) return me;
  const info = userInfo();
  return (me = Object.freeze({ name: info.username, uid: info.uid, gid: info.gid, home: info.homedir }));
}
