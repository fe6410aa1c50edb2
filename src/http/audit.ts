import type { Middleware } from 'koa';
import type { AuditRecord, AuditTrail } from '../audit/audit-trail.js';
import { clipMiddle } from '../util/clip-middle.js';
import { viaApiKey, type AppState } from './auth.js';

type Fields = Record<string, unknown>;
type Target = AuditRecord['target'];

/** The field's value as a short text, when it is a plain scalar; secrets are never read through here. */
function scalar(fields: Fields | undefined, name: string): string | undefined {
  const value = fields?.[name];
  if (typeof value === 'string') return value.slice(0, 128);
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
}

const object = (value: unknown): Fields | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Fields) : undefined;

/** The instance (or instances) a request names. */
function instances(body: Fields | undefined, data: Fields | undefined): Target {
  if (body?.all === true) return { type: 'instance', id: 'all' };
  if (Array.isArray(body?.instanceIDs)) return { type: 'instance', id: body.instanceIDs.slice(0, 50).join(',') };
  const id = scalar(body, 'instanceID') ?? scalar(data, 'instanceID');
  const name = scalar(data, 'name') ?? scalar(object(body?.instanceInfo), 'name') ?? scalar(body, 'name');
  return { type: 'instance', ...(id ? { id } : {}), ...(name ? { name } : {}) };
}

const user = (id: string | undefined, name?: string): Target => ({
  type: 'user',
  ...(id ? { id } : {}),
  ...(name ? { name } : {}),
});

interface Audited {
  action: string;
  /** What the request acted on, from its body and its reply's data: ids, names and keys only. */
  describe?: (body: Fields | undefined, data: Fields | undefined) => { target?: Target; detail?: Fields };
}

const instanceAction = (action: string): Audited => ({ action, describe: (b, d) => ({ target: instances(b, d) }) });
const proxyAction = (action: string): Audited => ({
  action,
  describe: (b, d) => ({
    target: {
      type: 'proxy',
      name: scalar(b, 'proxyName') ?? scalar(object(b?.proxyInfo), 'name') ?? scalar(b, 'oldName') ?? '',
    },
    detail: { instanceID: scalar(b, 'instanceID') ?? scalar(d, 'instanceID') },
  }),
});

/**
 * Every route that changes something, by `METHOD path`. A route missing here is not audited: the audit test
 * checks that every POST route of the app is listed.
 */
export const AUDITED: Readonly<Record<string, Audited>> = {
  'POST /register': {
    action: 'register',
    describe: (b, d) => ({ target: user(scalar(d, 'userID'), scalar(b, 'username')) }),
  },
  'POST /login': { action: 'login' },
  'GET /logout': { action: 'logout' },
  'POST /userMgr/create': {
    action: 'user.create',
    describe: (b, d) => ({
      target: user(scalar(d, 'userID'), scalar(b, 'username')),
      detail: { type: scalar(b, 'type') },
    }),
  },
  'POST /userMgr/remove': { action: 'user.remove', describe: (b) => ({ target: user(scalar(b, 'targetUserID')) }) },
  'POST /userMgr/modify': {
    action: 'user.modify',
    // Which fields changed, never the password itself.
    describe: (b) => ({
      target: user(scalar(b, 'userID'), scalar(b, 'username')),
      detail: { changed: ['username', 'passwd'].filter((k) => b?.[k] !== undefined && b[k] !== '') },
    }),
  },
  'POST /userMgr/modifyType': {
    action: 'user.modifyType',
    describe: (b) => ({ target: user(scalar(b, 'userID')), detail: { newType: scalar(b, 'newType') } }),
  },
  'POST /apiKeyMgr/create': {
    action: 'apiKey.create',
    // The key's id, name, owner and limits: never the key, which only the reply carries.
    describe: (b, d) => ({
      target: {
        type: 'apiKey',
        ...(scalar(d, 'keyID') ? { id: scalar(d, 'keyID') } : {}),
        name: scalar(b, 'name') ?? '',
      },
      detail: {
        userID: scalar(d, 'userID') ?? scalar(b, 'userID'),
        role: scalar(d, 'role') ?? scalar(b, 'role'),
        scope: scalar(d, 'scope') ?? scalar(b, 'scope'),
        expiresAt: scalar(d, 'expiresAt'),
        ratePerMinute: scalar(d, 'ratePerMinute') ?? scalar(b, 'ratePerMinute'),
      },
    }),
  },
  'POST /apiKeyMgr/revoke': {
    action: 'apiKey.revoke',
    describe: (b, d) => ({
      target: {
        type: 'apiKey',
        id: scalar(d, 'keyID') ?? scalar(b, 'keyID') ?? '',
        name: scalar(d, 'name') ?? scalar(b, 'name') ?? '',
      },
      detail: { userID: scalar(d, 'userID') ?? scalar(b, 'userID') },
    }),
  },
  'POST /sessionMgr/remove': {
    action: 'session.remove',
    describe: (b) => ({ target: { type: 'session', id: scalar(b, 'sessionID') ?? '' } }),
  },
  'POST /settings/set': {
    action: 'settings.set',
    // The keys only: values may be secrets (webhook headers).
    describe: (b) => ({ target: { type: 'settings' }, detail: { keys: Object.keys(b ?? {}).slice(0, 100) } }),
  },
  'POST /system/restart': { action: 'service.restart', describe: () => ({ target: { type: 'service' } }) },
  'POST /tunnelAct/instanceMgr/create': instanceAction('instance.create'),
  'POST /tunnelAct/instanceMgr/import': instanceAction('instance.import'),
  'POST /tunnelAct/instanceMgr/delete': instanceAction('instance.delete'),
  'POST /tunnelAct/instanceMgr/modify': {
    action: 'instance.modify',
    describe: (b, d) => ({
      target: instances(b, d),
      detail: { type: scalar(b, 'type'), keys: Object.keys(object(b?.modifiedData) ?? {}).slice(0, 100) },
    }),
  },
  'POST /tunnelAct/instanceMgr/replaceConfig': {
    action: 'instance.replaceConfig',
    // How it was applied, never the text (it holds secrets).
    describe: (b, d) => ({
      target: instances(b, d),
      detail: { applied: scalar(d, 'applied'), revision: scalar(d, 'revision') },
    }),
  },
  'POST /tunnelAct/instanceMgr/rollback': {
    action: 'instance.rollback',
    describe: (b, d) => ({
      target: instances(b, d),
      detail: { to: scalar(b, 'revision'), applied: scalar(d, 'applied'), revision: scalar(d, 'revision') },
    }),
  },
  'POST /tunnelAct/instanceMgr/apply': {
    action: 'instance.apply',
    // The outcome of each instance by name, and the counts: never the files, their diffs or the environment.
    describe: (b, d) => {
      const outcomes = Array.isArray(d?.instances) ? (d.instances as unknown[]).map(object) : [];
      const changed = outcomes.filter((o) => o && o.outcome !== 'unchanged').slice(0, 50);
      return {
        target: { type: 'instance', id: 'apply' },
        detail: {
          prune: b?.prune === true,
          counts: object(d?.counts),
          instances: changed.map((o) => `${scalar(o, 'name') ?? '?'}: ${scalar(o, 'outcome') ?? '?'}`),
        },
      };
    },
  },
  'POST /tunnelAct/instanceMgr/start': instanceAction('instance.start'),
  'POST /tunnelAct/instanceMgr/stop': instanceAction('instance.stop'),
  'POST /tunnelAct/instanceMgr/restart': instanceAction('instance.restart'),
  'POST /tunnelAct/proxyMgr/create': proxyAction('proxy.create'),
  'POST /tunnelAct/proxyMgr/modify': proxyAction('proxy.modify'),
  'POST /tunnelAct/proxyMgr/delete': proxyAction('proxy.delete'),
  'POST /tunnelAct/proxyMgr/setStatus': {
    action: 'proxy.setStatus',
    describe: (b, d) => ({
      ...proxyAction('').describe!(b, d),
      detail: { instanceID: scalar(b, 'instanceID'), enabled: b?.enabled },
    }),
  },
  'POST /tunnelAct/proxyMgr/setExpiry': {
    action: 'proxy.setExpiry',
    describe: (b, d) => ({
      ...proxyAction('').describe!(b, d),
      detail: { instanceID: scalar(b, 'instanceID'), expires: scalar(b, 'expires') },
    }),
  },
};

/** Refusals that changed nothing and name nobody: anonymous noise that must not fill the trail or the disk. */
function worthRecording(status: number, action: string, signedIn: boolean): boolean {
  if (status === 429) return false;
  if (status === 401) return action === 'login';
  return signedIn || action === 'login' || action === 'register';
}

/**
 * Records each audited request once its answer is known (before it is sent: the entry is saved first). It runs
 * outside the envelope, so a failure is seen with the status and message the client gets.
 */
export function auditRequests(trail: AuditTrail, now: () => number = Date.now): Middleware<AppState> {
  return async (ctx, next) => {
    await next();
    const audited = AUDITED[`${ctx.method} ${ctx.path}`];
    if (!audited) return;
    const auth = ctx.state.auth as AppState['auth'] | undefined;
    if (!worthRecording(ctx.status, audited.action, auth !== undefined)) return;
    const body = object((ctx.request as { body?: unknown }).body);
    // A dry run changes nothing: there is nothing to account for.
    if (body?.dryRun === true) return;
    const reply = object(ctx.body);
    const described = audited.describe?.(body, object(reply?.data)) ?? {};
    const { target } = described;
    // A request made with an API key names the key (its public id) beside its owner.
    const detail = auth && viaApiKey(auth) ? { ...described.detail, apiKey: auth.apiKey.id } : described.detail;
    // The reply stands whatever happens here: a trail that cannot be written is an error for the log, not the client.
    await trail
      .record({
        at: now(),
        userId: auth?.user.id ?? (audited.action === 'login' ? numberOr(reply?.data, 'userID') : null),
        username: auth?.user.username ?? scalar(body, 'username') ?? '',
        ip: ctx.ip,
        action: audited.action,
        target,
        detail,
        status: ctx.status,
        message: typeof reply?.message === 'string' ? clipMiddle(reply.message, MESSAGE_CHARS) : '',
      })
      .catch((err: unknown) => ctx.app.emit('error', err, ctx));
  };
}

/** How much of a reply's message an entry keeps. */
const MESSAGE_CHARS = 500;

function numberOr(data: unknown, name: string): number | null {
  const value = object(data)?.[name];
  return typeof value === 'number' ? value : null;
}
