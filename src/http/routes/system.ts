import { finished } from 'node:stream';
import { z } from 'zod';
import { reply } from '../envelope.js';
import { ok, schema } from '../openapi-schemas.js';
import { operation } from '../operation.js';
import { ID_STRING_PATTERN } from '../params.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';
import { selfCheck } from '../../system/self-check.js';
import { ownServiceState } from '../../daemon/own-service.js';
import { surveyTunnels } from '../../../actors/tunnel-survey.js';
import { countHealth } from '../../instances/health-counts.js';
import { formatIso } from '../../util/time.js';

/** A time filter: Unix ms, or an ISO 8601 date (and time, and zone); empty is no filter. */
const TIME =
  /^(?:|\d{1,15}|\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,9})?)?(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?)?)$/;
/** An id, or empty (no filter). */
const ID_OR_EMPTY = new RegExp(`^(?:|${ID_STRING_PATTERN.slice(1, -1)})$`);

const text = (description: string) =>
  z
    .string()
    .describe(description)
    .optional()
    .transform((v) => v || undefined);
const time = (description: string) =>
  z
    .string()
    .regex(TIME, 'must be Unix time in milliseconds or an ISO 8601 date')
    .describe(description)
    .optional()
    .transform((v) => (!v ? undefined : /^\d+$/.test(v) ? Number(v) : Date.parse(v)));
const id = (description: string) =>
  z
    .string()
    .regex(ID_OR_EMPTY, 'must be a positive integer')
    .describe(description)
    .optional()
    .transform((v) => (v ? Number(v) : undefined));

export const audit = operation({
  method: 'get',
  path: '/system/audit',
  tag: 'system',
  summary: 'The audit trail',
  description:
    'Every state-changing request (who, from where, what, which object, outcome, when), newest first. Refusals that name nobody (a missing or invalid token, a rate limit) are not recorded; failed logins are. Bounded by Audit.RetentionDays and Audit.MaxEntries. Filters combine: instanceID with another targetType finds nothing.',
  access: 'superuser',
  query: z.object({
    user: text('the username'),
    action: text('an action, or a prefix ending in a dot (instance.)'),
    instanceID: id('entries about this instance'),
    targetType: text('instance, proxy, user, session, apiKey, settings or service'),
    targetID: text('the id of the object'),
    outcome: z
      .enum(['ok', 'failed', ''])
      .describe('ok or failed')
      .optional()
      .transform((v) => v || undefined),
    ip: text('the client address'),
    since: time('from this time on: Unix ms or ISO 8601'),
    until: time('up to this time: Unix ms or ISO 8601'),
    before: id('entries older than this id (nextBefore of the previous page)'),
    limit: z
      .string()
      .regex(/^(?:|0{0,12}(?:[1-9]\d{0,2}|1000))$/, 'must be an integer from 1 to 1000')
      .describe('entries per page, 1-1000 (100 when omitted)')
      .optional()
      .transform((v) => (v ? Number(v) : 100)),
  }),
  ok: ok('A page of entries', schema('AuditPage')),
  errors: { 400: 'A filter or paging parameter is malformed.' },
});

export const getStatus = operation({
  method: 'get',
  path: '/system/getStatus',
  tag: 'system',
  summary: 'Whether the service is up',
  access: 'public',
  ok: ok('Online', schema('SystemStatus')),
});

export const getSoftwareInfo = operation({
  method: 'get',
  path: '/system/getSoftwareInfo',
  tag: 'system',
  summary: 'Name, version and build of the software',
  access: 'public',
  ok: ok('The software info', schema('SoftwareInfo')),
});

export const summary = operation({
  method: 'get',
  path: '/system/summary',
  tag: 'system',
  summary: "The daemon's version and uptime, and its tunnels by health",
  description:
    'One request per host for a fleet view (tunnelward fleet status): any role may read it, a visitor-scoped API key included.',
  access: 'visitor',
  ok: ok('The summary', schema('SystemSummary')),
});

export const restart = operation({
  method: 'post',
  path: '/system/restart',
  tag: 'system',
  summary: 'Restart the daemon',
  description:
    'Replies, then a new daemon process with the same arguments takes over; tunnels keep running. No body is needed.',
  access: 'admin',
  ok: ok('Restarting'),
});

export const selfCheckOperation = operation({
  method: 'get',
  path: '/system/selfCheck',
  tag: 'system',
  summary: 'Check the daemon (settings, dirs, frpc) and the tunnels',
  description:
    "The daemon's checks, then the tunnels': down (fail) or degraded (warn) with their reasons, failed (fail) with the cause of the last exit, start at boot set while tunnelward itself does not start at boot (warn), and each config file as the TunnelPath frpc's `verify` reads it (warn when refused). Many tunnels make one line per check: grouped by reason, a few names each. `counts` has the instances and their proxies by health.",
  access: 'admin',
  ok: ok('Each check and its outcome; the message counts the problems', schema('SelfCheck')),
});

export const operations = [getStatus, getSoftwareInfo, summary, restart, selfCheckOperation, audit];

/** /system/*: status and software info are public, the summary any role's; restart and self-check need an admin, the audit trail a superuser. */
export function systemRoutes(deps: RouteDeps): ResourceRouter {
  const { info, settings, dataDir, guards } = deps;
  const router = new ResourceRouter('/system', guards);

  router.route(getStatus, async (ctx) => {
    reply(ctx, 'status', { Status: 'Online' });
  });

  router.route(getSoftwareInfo, async (ctx) => {
    reply(ctx, 'software info', info);
  });

  const startedAt = deps.startedAt ?? Math.round(performance.timeOrigin);
  router.route(summary, async (ctx) => {
    const { supervisor } = deps;
    const tunnels = countHealth(supervisor.views().map(({ record }) => supervisor.healthOf(record.id).state));
    const now = Date.now();
    reply(ctx, 'summary', {
      version: info.Version,
      startedAt: formatIso(startedAt),
      uptimeSecs: Math.max(0, Math.floor((now - startedAt) / 1000)),
      tunnels,
    });
  });

  router.route(restart, async (ctx) => {
    reply(ctx, 'restarting');
    // Once the reply has left, or its client has gone (before or while it is sent): the restart happens either way.
    finished(ctx.res, () => deps.restart());
  });

  // The audit trail, newest first; `nextBefore` pages back.
  router.route(audit, async (ctx, { query }) => {
    const { instanceID, targetType, targetID, user, ...rest } = query;
    // An instance is a target of type instance: with another type, nothing matches both.
    const page =
      instanceID !== undefined && targetType !== undefined && targetType !== 'instance'
        ? { entries: [], nextBefore: null }
        : deps.audit.query({
            ...rest,
            username: user,
            targetType: instanceID !== undefined ? 'instance' : targetType,
            targetID: instanceID !== undefined ? String(instanceID) : targetID,
          });
    reply(ctx, `${page.entries.length} audit entries`, page);
  });

  router.route(selfCheckOperation, async (ctx) => {
    const [survey, ownService] = await Promise.all([
      surveyTunnels(deps.supervisor),
      ownServiceState(settings.value('Systemd.UnitDir'), settings.value('Systemd.Systemctl')),
    ]);
    const { tunnels } = survey;
    const checks = await selfCheck(dataDir, settings, deps.faults, {
      tunnels,
      ownService,
      initSystem: deps.supervisor.initSystem,
    });
    const problems = checks.filter((c) => !c.ok).length;
    reply(ctx, problems === 0 ? 'all checks passed' : `${problems} checks found a problem`, {
      ok: problems === 0,
      checks,
      counts: survey.counts,
    });
  });

  return router;
}
