import { isUserType } from '../../accounts/rules.js';
import { badRequest, forbidden } from '../../errors.js';
import { limitByIp, viaApiKey } from '../auth.js';
import { reply } from '../envelope.js';
import { body, optionalString, requiredString } from '../params.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';
import { formatIso } from '../../util/time.js';

/** /register, /login, /whoami and /logout. */
export function accountRoutes({ accounts, limits, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('', guards);

  router.post('/register', 'timestamp', limitByIp(limits.register, 'registration'), async (ctx) => {
    const { registerOpen, closedBecause } = ctx.state.exposure;
    if (!registerOpen) {
      throw forbidden(
        `self-registration is closed on this server (Register.Enabled${closedBecause ? `: closed by default ${closedBecause}` : ''})`,
      );
    }
    const fields = body(ctx);
    const username = requiredString(fields, 'username');
    const passwd = requiredString(fields, 'passwd');
    const type = optionalString(fields, 'type');
    if (type !== undefined && !isUserType(type)) throw badRequest('type must be superuser, admin or visitor');
    const { user, downgraded } = await accounts.register(username, passwd, type);
    reply(ctx, downgraded ? 'registered as visitor: only visitors can register themselves' : 'registered', {
      userID: user.id,
      username: user.username,
      type: user.type,
    });
  });

  router.post('/login', 'timestamp', limitByIp(limits.login, 'login'), async (ctx) => {
    const fields = body(ctx);
    const username = requiredString(fields, 'username');
    const passwd = requiredString(fields, 'passwd');
    const { token, user, session } = await accounts.login(username, passwd);
    reply(ctx, 'logged in', {
      token,
      userID: user.id,
      username: user.username,
      type: user.type,
      expireAt: formatIso(session.expireAt),
    });
  });

  // Who the token (or API key) belongs to and until when: what a client shows after a restart without asking for
  // the password.
  router.get('/whoami', 'visitor', async (ctx) => {
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

  router.get('/logout', 'visitor', async (ctx) => {
    const caller = ctx.state.auth;
    if (viaApiKey(caller)) throw badRequest('an API key has no session to end: revoke it with /apiKeyMgr/revoke');
    await accounts.logout(caller.session);
    reply(ctx, 'logged out');
  });

  return router;
}
