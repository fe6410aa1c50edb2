import { z } from 'zod';
import { passwordSchema, USER_TYPES, usernameSchema } from '../../accounts/rules.js';
import { forbidden, badRequest } from '../../errors.js';
import { limitByIp, viaApiKey } from '../auth.js';
import { reply } from '../envelope.js';
import { ok, schema } from '../openapi-schemas.js';
import { operation } from '../operation.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';
import { formatIso } from '../../util/time.js';

/** Any non-empty string: a login is answered 401 for wrong credentials, whatever their form. */
const given = z.string().min(1, 'is required');

export const register = operation({
  method: 'post',
  path: '/register',
  tag: 'accounts',
  summary: 'Create a visitor account for yourself',
  description:
    'Always creates a visitor: another type asked for is not granted, and the message says so. Limited per IP (RateLimit.Register).',
  access: 'timestamp',
  body: z.object({
    username: usernameSchema,
    passwd: passwordSchema,
    type: z.enum(USER_TYPES).nullish().describe('only visitor is granted'),
  }),
  ok: ok('Registered', schema('Account')),
  errors: {
    400: 'A missing field, a username or password that breaks the rules, or an unknown type.',
    403: 'Self-registration is closed (Register.Enabled; closed by default off loopback).',
    409: 'The username is taken.',
    429: 'Too many registrations from this address, or too many password hashes at once.',
  },
});

export const login = operation({
  method: 'post',
  path: '/login',
  tag: 'accounts',
  summary: 'Log in and get a token',
  description: 'Limited per IP (RateLimit.Login). A failure takes the same time whether or not the user exists.',
  access: 'timestamp',
  body: z.object({ username: given, passwd: given }),
  ok: ok('Logged in', schema('LoginResult')),
  errors: {
    400: 'username or passwd missing.',
    401: 'Invalid username or password, or a bad X-Timestamp.',
    429: 'Too many logins from this address, or too many password checks at once.',
  },
});

export const whoami = operation({
  method: 'get',
  path: '/whoami',
  tag: 'accounts',
  summary: 'Who the token belongs to, and until when',
  access: 'visitor',
  description: "With an API key: the key's owner with the role the key acts with, and the key's id, name and expiry.",
  ok: ok('The user and the expiry of the session or key', schema('WhoAmI')),
});

export const logout = operation({
  method: 'get',
  path: '/logout',
  tag: 'accounts',
  summary: 'End your session',
  access: 'visitor',
  ok: ok('Logged out; the token stops working'),
  errors: { 400: 'Called with an API key, which has no session: revoke the key instead.' },
});

export const operations = [register, login, whoami, logout];

/** /register, /login, /whoami and /logout. */
export function accountRoutes({ accounts, limits, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('', guards);

  router.route(
    register,
    async (ctx, { body }) => {
      const { registerOpen, closedBecause } = ctx.state.exposure;
      if (!registerOpen) {
        throw forbidden(
          `self-registration is closed on this server (Register.Enabled${closedBecause ? `: closed by default ${closedBecause}` : ''})`,
        );
      }
      const { user, downgraded } = await accounts.register(body.username, body.passwd, body.type ?? undefined);
      reply(ctx, downgraded ? 'registered as visitor: only visitors can register themselves' : 'registered', {
        userID: user.id,
        username: user.username,
        type: user.type,
      });
    },
    limitByIp(limits.register, 'registration'),
  );

  router.route(
    login,
    async (ctx, { body }) => {
      const { token, user, session } = await accounts.login(body.username, body.passwd);
      reply(ctx, 'logged in', {
        token,
        userID: user.id,
        username: user.username,
        type: user.type,
        expireAt: formatIso(session.expireAt),
      });
    },
    limitByIp(limits.login, 'login'),
  );

  // Who the token (or API key) belongs to and until when: what a client shows after a restart without asking for
  // the password.
  router.route(whoami, async (ctx) => {
    const caller = ctx.state.auth;
    const { user } = caller;
    const who = { userID: user.id, username: user.username, type: user.type };
    if (viaApiKey(caller)) {
      const { id, name, expiresAt } = caller.apiKey;
      reply(ctx, user.username, {
        ...who,
        expireAt: expiresAt === null ? null : formatIso(expiresAt),
        keyID: id,
        keyName: name,
      });
    } else {
      reply(ctx, user.username, { ...who, expireAt: formatIso(caller.session.expireAt), sessionID: caller.session.id });
    }
  });

  router.route(logout, async (ctx) => {
    const caller = ctx.state.auth;
    if (viaApiKey(caller)) throw badRequest('an API key has no session to end: revoke it with /apiKeyMgr/revoke');
    await accounts.logout(caller.session);
    reply(ctx, 'logged out');
  });

  return router;
}
