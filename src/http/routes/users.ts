import type { User } from '../../accounts/account-service.js';
import { isUserType } from '../../accounts/rules.js';
import { badRequest, forbidden } from '../../errors.js';
import { viaApiKey } from '../auth.js';
import { formatDateTime } from '../../util/time.js';
import { reply } from '../envelope.js';
import { body, optionalString, requiredId, requiredString } from '../params.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';

const userData = (u: User) => ({ userID: u.id, username: u.username, type: u.type });

/** /userMgr/*: a superuser's, except that every user may modify themself. */
export function userRoutes({ accounts, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('/userMgr', guards);

  router.post('/create', 'superuser', async (ctx) => {
    const fields = body(ctx);
    const username = requiredString(fields, 'username');
    const passwd = requiredString(fields, 'passwd');
    const type = optionalString(fields, 'type') ?? 'visitor';
    if (!isUserType(type)) throw badRequest('type must be superuser, admin or visitor');
    const user = await accounts.createUser(username, passwd, type);
    reply(ctx, `user ${user.username} created`, userData(user));
  });

  router.post('/remove', 'superuser', async (ctx) => {
    const user = await accounts.removeUser(requiredId(body(ctx), 'targetUserID'));
    reply(ctx, `user ${user.username} removed`);
  });

  router.post('/modify', 'visitor', async (ctx) => {
    const fields = body(ctx);
    const userID = requiredId(fields, 'userID');
    const username = optionalString(fields, 'username') || undefined;
    const passwd = optionalString(fields, 'passwd') || undefined;
    const caller = ctx.state.auth;
    // A key must not be able to take over the password it stands beside (and a new password revokes the keys).
    if (viaApiKey(caller)) throw forbidden('changing a username or password needs a password login, not an API key');
    const user = await accounts.modifyUser(caller, userID, { username, passwd });
    reply(ctx, `user ${user.username} modified`);
  });

  router.post('/modifyType', 'superuser', async (ctx) => {
    const fields = body(ctx);
    const userID = requiredId(fields, 'userID');
    const newType = requiredString(fields, 'newType');
    if (!isUserType(newType)) throw badRequest('newType must be superuser, admin or visitor');
    const user = await accounts.modifyType(userID, newType);
    reply(ctx, `user ${user.username} is now ${user.type}`);
  });

  router.get('/list', 'superuser', async (ctx) => {
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
