import { reply } from '../envelope.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';
import { selfCheck } from '../../system/self-check.js';

/** /system/*: status and software info are public; restart and self-check need an admin. */
export function systemRoutes(deps: RouteDeps): ResourceRouter {
  const { info, settings, dataDir, guards } = deps;
  const router = new ResourceRouter('/system', guards);

  router.get('/getStatus', 'public', async (ctx) => {
    reply(ctx, 'status', { Status: 'Online' });
  });

  router.get('/getSoftwareInfo', 'public', async (ctx) => {
    reply(ctx, 'software info', info);
  });

  router.post('/restart', 'admin', async (ctx) => {
    reply(ctx, 'restarting');
    // Restart only once the reply has left.
    ctx.res.once('finish', () => deps.restart());
  });

  router.get('/selfCheck', 'admin', async (ctx) => {
    const checks = await selfCheck(dataDir, settings, deps.faults);
    const problems = checks.filter((c) => !c.ok).length;
    reply(ctx, problems === 0 ? 'all checks passed' : `${problems} checks found a problem`, {
      ok: problems === 0,
      checks,
    });
  });

  return router;
}
