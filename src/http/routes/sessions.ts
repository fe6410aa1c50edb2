import Router from '@koa/router';
import { formatIso } from '../../util/time.js';
import { requireRole, type AppState } from '../auth.js';
import { reply } from '../envelope.js';
import { body, requiredString } from '../params.js';
import type { RouteDeps } from '../app.js';

/** /sessionMgr/*: mounted behind authentication. */
export function sessionRoutes({ accounts, authenticated }: RouteDeps): Router<AppState> {
  const router = new Router<AppState>({ prefix: '/sessionMgr' });
  router.use(...authenticated);

  router.get('/list', requireRole('admin'), async (ctx) => {
    const sessions = accounts.listSessions().map((s) => ({
      ID: s.id,
      UserID: s.userId,
      Username: s.username,
      ExpireAt: formatIso(s.expireAt),
    }));
    reply(ctx, `${sessions.length} active sessions`, sessions);
  });

  router.post('/remove', requireRole('superuser'), async (ctx) => {
    const sessionID = requiredString(body(ctx), 'sessionID');
    await accounts.removeSession(sessionID);
    reply(ctx, `session ${sessionID} removed`);
  });

  return router;
}
