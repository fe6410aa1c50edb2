import { forbidden } from '../errors.js';
import { hasRole, type UserType } from './rules.js';

/**
 * What a caller may do to an instance, in one place: routes, streams and the change pipeline all ask here.
 *
 * - `read`: see it, its state, proxies, history and diffs (secrets masked): any user.
 * - `secrets`: read its secrets in clear (export, a revision, a diff): a superuser.
 * - `logs`: follow its output: its owner or a superuser (the contract's rule for the log stream).
 * - `operate`: start, stop, restart: an admin or a superuser, on every instance (operators share the duty, and a
 *   command reads no secret).
 * - `change`: its config file, proxies, environment, record, labels, a rollback; and `delete`: its owner (the admin
 *   who created it) or a superuser. Changing a tunnel's file is as good as reading its secrets (point serverAddr at
 *   another server and frpc sends it the token, `{{ .Envs.NAME }}` values included), so it goes with them.
 *
 * An API key acts as its owner with the lower of the two roles (see ApiKeyService), so the rule holds for keys too.
 */
export type InstanceAction = 'read' | 'secrets' | 'logs' | 'operate' | 'change' | 'delete';

export interface Accessor {
  id: number;
  type: UserType;
}

/** The instance as access sees it: who owns it (null for one whose creator is unknown: superusers only). */
export interface Owned {
  name: string;
  ownerId: number | null;
}

/** The rule of each action, in words: what the OpenAPI document and the 403s say. */
export const ACCESS_RULES: Readonly<Record<InstanceAction, string>> = {
  read: 'any user',
  secrets: 'a superuser',
  logs: "the instance's owner (the user who created it) or a superuser",
  operate: 'an admin or a superuser, on every instance',
  change: "the instance's owner (the admin who created it) or a superuser",
  delete: "the instance's owner (the admin who created it) or a superuser",
};

const owns = (caller: Accessor, instance: Owned) => instance.ownerId !== null && caller.id === instance.ownerId;

export function may(caller: Accessor, action: InstanceAction, instance: Owned): boolean {
  if (caller.type === 'superuser') return true;
  switch (action) {
    case 'read':
      return true;
    case 'secrets':
      return false;
    case 'logs':
      return owns(caller, instance);
    case 'operate':
      return hasRole(caller.type, 'admin');
    case 'change':
    case 'delete':
      return hasRole(caller.type, 'admin') && owns(caller, instance);
  }
}

/** Throws the 403 that says the rule when the caller may not. */
export function allow(caller: Accessor, action: InstanceAction, instance: Owned): void {
  if (may(caller, action, instance)) return;
  const verb = {
    read: 'read',
    secrets: 'read the secrets of',
    logs: 'follow the log of',
    operate: 'start or stop',
    change: 'change',
    delete: 'delete',
  }[action];
  throw forbidden(`you may not ${verb} instance ${instance.name}: only ${ACCESS_RULES[action]} may`);
}
