import Router from '@koa/router';
import { requireRole, type AppState } from '../auth.js';
import { reply } from '../envelope.js';
import type { RouteDeps } from '../app.js';
import { selfCheck } from '../../system/self-check.js';

/** /system/*: status and software info are public; restart and self-check need an admin. */
export function systemRoutes(deps: RouteDeps): Router<AppState> {
  const { info, settings, dataDir, authenticated } = deps;
  const router = new Router<AppState>({ prefix: '/system' });

  router.get('/getStatus', async (ctx) => {
    reply(ctx, 'status', { Status: 'Online' });
  });

  router.get('/getSoftwareInfo', async (ctx) => {
    reply(ctx, 'software info', info);
  });

  const admin = [...authenticated, requireRole('admin')];

  router.post('/restart', ...admin, async (ctx) => {
    reply(ctx, 'restarting');
    // Restart only once the reply has left.
    ctx.res.once('finish', () => deps.restart());
  });

  router.get('/selfCheck', ...admin, async (ctx) => {
    const checks = await selfCheck(dataDir, settings, deps.faults);
    const problems = checks.filter((c) => !c.ok).length;
    reply(ctx, problems === 0 ? 'all checks passed' : `${problems} checks found a problem`, {
      ok: problems === 0,
      checks,
    });
  });

  return router;
}
