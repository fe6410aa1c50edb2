import { z } from 'zod';
import type { User } from '../../accounts/account-service.js';
import { passwordSchema, USER_TYPES, usernameSchema } from '../../accounts/rules.js';
import { forbidden } from '../../errors.js';
import { viaApiKey } from '../auth.js';
import { formatDateTime } from '../../util/time.js';
import { reply } from '../envelope.js';
import { arrayOf, ok, schema } from '../openapi-schemas.js';
import { operation } from '../operation.js';
import { idField } from '../params.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';

const userData = (u: User) => ({ userID: u.id, username: u.username, type: u.type });

const userType = z.enum(USER_TYPES);

export const createUser = operation({
  method: 'post',
  path: '/userMgr/create',
  tag: 'users',
  summary: 'Create a user',
  access: 'superuser',
  body: z.object({
    username: usernameSchema,
    passwd: passwordSchema,
    type: userType.default('visitor').describe('visitor when left out'),
  }),
  ok: ok('Created (type defaults to visitor)', schema('Account')),
  description: 'Not with an API key: a password login is needed (an account made with a leaked key would outlive it).',
  errors: {
    403: 'Not a superuser, or called with an API key.',
    400: 'A missing field, a username or password that breaks the rules, or an unknown type.',
    409: 'The username is taken.',
    429: 'Too many requests for this token, or too many password hashes at once.',
  },
});

export const removeUser = operation({
  method: 'post',
  path: '/userMgr/remove',
  tag: 'users',
  summary: "Remove a user, end that user's sessions and revoke that user's API keys",
  access: 'superuser',
  body: z.object({ targetUserID: idField }),
  ok: ok('Removed'),
  errors: { 404: 'No such user.', 409: 'The last superuser cannot be removed.' },
});

export const modifyUser = operation({
  method: 'post',
  path: '/userMgr/modify',
  tag: 'users',
  summary: 'Change a username and/or password',
  description:
    "Yourself only; a superuser may modify anyone. A new password ends the user's other sessions and revokes all of the user's API keys. Not with an API key: a password login is needed.",
  access: 'visitor',
  body: z
    .object({
      userID: idField,
      // An empty value is "no change", as the contract's clients send it.
      username: z.union([z.literal(''), usernameSchema]).nullish(),
      passwd: z.union([z.literal(''), passwordSchema]).nullish(),
    })
    .refine((body) => body.username || body.passwd, 'nothing to modify: give username, passwd or both')
    .meta({
      description: 'At least one of username and passwd.',
      anyOf: ['username', 'passwd'].map((name) => ({
        required: [name],
        properties: { [name]: { type: 'string', minLength: 1 } },
      })),
    }),
  ok: ok('Modified'),
  errors: {
    400: 'userID missing, nothing to modify, or a username or password that breaks the rules.',
    403: "Another user's account, and the caller is not a superuser; or the caller used an API key.",
    404: 'No such user.',
    409: 'The new username is taken.',
    429: 'Too many requests for this token, or too many password hashes at once.',
  },
});

export const modifyUserType = operation({
  method: 'post',
  path: '/userMgr/modifyType',
  tag: 'users',
  summary: "Change a user's role",
  description:
    "The user's API keys act with the lower of their own scope and the new role. Not with an API key: a password login is needed (a role raised with a leaked key would outlive it).",
  access: 'superuser',
  body: z.object({ userID: idField, newType: userType }),
  ok: ok('Changed'),
  errors: {
    403: 'Not a superuser, or called with an API key.',
    404: 'No such user.',
    409: 'The last superuser cannot be demoted.',
  },
});

export const listUsers = operation({
  method: 'get',
  path: '/userMgr/list',
  tag: 'users',
  summary: 'List users',
  access: 'superuser',
  ok: ok('Every user', arrayOf(schema('User'))),
});

export const operations = [createUser, removeUser, modifyUser, modifyUserType, listUsers];

/** /userMgr/*: a superuser's, except that every user may modify themself. */
export function userRoutes({ accounts, apiKeys, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('/userMgr', guards);

  router.route(createUser, async (ctx, { body }) => {
    // A leaked key must not mint a credential that outlives its revocation.
    if (viaApiKey(ctx.state.auth))
      throw forbidden('creating a user needs a password login, not an API key: an account would outlive the key');
    const user = await accounts.createUser(body.username, body.passwd, body.type);
    reply(ctx, `user ${user.username} created`, userData(user));
  });

  router.route(removeUser, async (ctx, { body }) => {
    const user = await accounts.removeUser(body.targetUserID);
    reply(ctx, `user ${user.username} removed`);
  });

  router.route(modifyUser, async (ctx, { body }) => {
    const caller = ctx.state.auth;
    // A key must not be able to take over the password it stands beside (and a new password revokes the keys).
    if (viaApiKey(caller)) throw forbidden('changing a username or password needs a password login, not an API key');
    // A new password revokes the user's keys: the reply says how many, as it happens.
    const keys = body.passwd ? apiKeys.list(caller.user, body.userID).keys.length : 0;
    const user = await accounts.modifyUser(caller, body.userID, {
      username: body.username || undefined,
      passwd: body.passwd || undefined,
    });
    const retired = body.passwd
      ? `; the new password ended ${user.username}'s other sessions and revoked ${keys === 1 ? 'its 1 API key' : `its ${keys} API keys`}`
      : '';
    reply(ctx, `user ${user.username} modified${retired}`);
  });

  router.route(modifyUserType, async (ctx, { body }) => {
    // Nor raise an account it controls (a self-registered visitor) to a role that outlives the key.
    if (viaApiKey(ctx.state.auth))
      throw forbidden("changing a user's type needs a password login, not an API key: the role would outlive the key");
    const user = await accounts.modifyType(body.userID, body.newType);
    reply(ctx, `user ${user.username} is now ${user.type}`);
  });

  router.route(listUsers, async (ctx) => {
    const users = accounts.listUsers().map((u) => ({
      UserID: u.id,
      Username: u.username,
      Passwd: '',
      Type: u.type,
      CreatedAt: formatDateTime(u.createdAt),
    }));
    reply(ctx, `${users.length} users`, users);
  });

  return router;
}
