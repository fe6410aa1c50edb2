import { formatIso } from '../../util/time.js';
import { reply } from '../envelope.js';
import { body, requiredString } from '../params.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';

/** /sessionMgr/*: listing needs an admin, removing a superuser. */
export function sessionRoutes({ accounts, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('/sessionMgr', guards);

  router.get('/list', 'admin', async (ctx) => {
    const sessions = accounts.listSessions().map((s) => ({
      ID: s.id,
      UserID: s.userId,
      Username: s.username,
      ExpireAt: formatIso(s.expireAt),
    }));
    reply(ctx, `${sessions.length} active sessions`, sessions);
  });

  router.post('/remove', 'superuser', async (ctx) => {
    const sessionID = requiredString(body(ctx), 'sessionID');
    await accounts.removeSession(sessionID);
    reply(ctx, `session ${sessionID} removed`);
  });

  return router;
}
