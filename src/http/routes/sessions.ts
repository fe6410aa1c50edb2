import { z } from 'zod';
import { formatIso } from '../../util/time.js';
import { reply } from '../envelope.js';
import { arrayOf, ok, schema } from '../openapi-schemas.js';
import { operation } from '../operation.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';

export const listSessions = operation({
  method: 'get',
  path: '/sessionMgr/list',
  tag: 'sessions',
  summary: 'List active sessions',
  access: 'admin',
  ok: ok('Every active session', arrayOf(schema('Session'))),
});

export const removeSession = operation({
  method: 'post',
  path: '/sessionMgr/remove',
  tag: 'sessions',
  summary: 'End a session; its token stops working at once',
  access: 'superuser',
  body: z.object({ sessionID: z.string().min(1, 'is required') }),
  ok: ok('Removed'),
  errors: { 404: 'No such session.' },
});

export const operations = [listSessions, removeSession];

/** /sessionMgr/*: listing needs an admin, removing a superuser. */
export function sessionRoutes({ accounts, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('/sessionMgr', guards);

  router.route(listSessions, async (ctx) => {
    const sessions = accounts.listSessions().map((s) => ({
      ID: s.id,
      UserID: s.userId,
      Username: s.username,
      ExpireAt: formatIso(s.expireAt),
    }));
    reply(ctx, `${sessions.length} active sessions`, sessions);
  });

  router.route(removeSession, async (ctx, { body }) => {
    await accounts.removeSession(body.sessionID);
    reply(ctx, `session ${body.sessionID} removed`);
  });

  return router;
}
