import { finished } from 'node:stream';
import type { Context } from 'koa';
import type { AuditQuery } from '../../audit/audit-trail.js';
import { badRequest } from '../../errors.js';
import { reply } from '../envelope.js';
import { queryParam } from '../params.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';
import { selfCheck } from '../../system/self-check.js';

/** A time filter: Unix ms or an ISO 8601 date. */
function timeParam(ctx: Context, name: string): number | undefined {
  const raw = queryParam(ctx, name);
  if (raw === undefined || raw === '') return undefined;
  const ms = /^\d{1,15}$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (Number.isNaN(ms)) throw badRequest(`${name} must be Unix time in milliseconds or an ISO 8601 date`);
  return ms;
}

function positiveParam(ctx: Context, name: string, max: number): number | undefined {
  const raw = queryParam(ctx, name);
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d{1,15}$/.test(raw) || Number(raw) < 1 || Number(raw) > max)
    throw badRequest(`${name} must be an integer from 1 to ${max}`);
  return Number(raw);
}

function auditQuery(ctx: Context): AuditQuery {
  const text = (name: string) => {
    const value = queryParam(ctx, name);
    return value === undefined || value === '' ? undefined : value;
  };
  const outcome = text('outcome');
  if (outcome !== undefined && outcome !== 'ok' && outcome !== 'failed')
    throw badRequest('outcome must be ok or failed');
  const instanceID = positiveParam(ctx, 'instanceID', Number.MAX_SAFE_INTEGER);
  if (instanceID !== undefined && (text('targetType') ?? 'instance') !== 'instance')
    throw badRequest('instanceID names an instance: leave targetType out or make it instance');
  return {
    username: text('user'),
    action: text('action'),
    targetType: instanceID !== undefined ? 'instance' : text('targetType'),
    targetID: instanceID !== undefined ? String(instanceID) : text('targetID'),
    outcome,
    ip: text('ip'),
    since: timeParam(ctx, 'since'),
    until: timeParam(ctx, 'until'),
    before: positiveParam(ctx, 'before', Number.MAX_SAFE_INTEGER),
    limit: positiveParam(ctx, 'limit', 1000) ?? 100,
  };
}

/** /system/*: status and software info are public; restart and self-check need an admin, the audit trail a superuser. */
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
    // Once the reply has left, or its client has gone (before or while it is sent): the restart happens either way.
    finished(ctx.res, () => deps.restart());
  });

  // The audit trail, newest first; `nextBefore` pages back.
  router.get('/audit', 'superuser', async (ctx) => {
    const page = deps.audit.query(auditQuery(ctx));
    reply(ctx, `${page.entries.length} audit entries`, page);
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
