import { LISTED_ONLY_FIELDS } from '../../config/proxy-view.js';
import { healthView, proxyHealthIn } from '../../instances/health.js';
import type { ProxyInput } from '../../config/tunnel-config.js';
import type { ChangeAnswer } from '../../../actors/instance-supervisor.js';
import { hasRole } from '../../accounts/rules.js';
import { z } from 'zod';
import { PROXY_NAME } from '../../config/proxy-edit.js';
import { badRequest } from '../../errors.js';
import { reply } from '../envelope.js';
import { bool, CONFIG_MISSING, documentedBy, NO_INSTANCE, obj, ok, APPLY_FAILED, schema } from '../openapi-schemas.js';
import { changeData, changeFields, changeHow, changeOptions, expiresValue, instanceQuery } from './instances.js';
import { authorOf } from '../auth.js';
import { formatIso } from '../../util/time.js';
import { operation } from '../operation.js';
import { idField, optionalString, type Fields } from '../params.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';
import { guestProxyView, guestVisitorView, seesOnlyGuestView } from '../exposure.js';

/** A proxy's name, as the config checks it. */
const proxyName = z
  .string()
  .min(1, 'is required')
  .regex(PROXY_NAME, 'must be 1-64 characters, each a letter, a digit, "_", "." or "-"');

/**
 * A proxy's keys: frpc's, by type and plugin. The config checks them key by key (src/config/proxy-edit.ts); the
 * document describes them from the same key tables (src/config/key-schema.ts).
 */
const proxyInfo = documentedBy('ProxyInfo');
const proxyChanges = documentedBy('ProxyChanges');

export const createProxy = operation({
  method: 'post',
  path: '/tunnelAct/proxyMgr/create',
  tag: 'proxies',
  summary: 'Add a proxy to an instance',
  description: 'A running tunnel applies it by frpc reload; if frpc refuses, the file is put back (400).',
  access: 'admin',
  instanceAccess: 'change',
  body: z.object({ instanceID: idField, proxyInfo, ...changeFields }),
  ok: ok('Added', schema('ProxyEdited')),
  errors: {
    400: 'A missing or invalid key, or frpc refused the reload.',
    404: NO_INSTANCE,
    409: 'The name exists, or the remote port, domain or name is held by a proxy of this or another instance on the same server.',
    502: APPLY_FAILED,
  },
});

export const modifyProxy = operation({
  method: 'post',
  path: '/tunnelAct/proxyMgr/modify',
  tag: 'proxies',
  summary: 'Change (and maybe rename) a proxy',
  description:
    'Keys left out keep their value; null removes one. A listed proxy sent back as it is modifies cleanly. proxyInfo.name selects the proxy, unless oldName is given.',
  access: 'admin',
  instanceAccess: 'change',
  body: z
    .object({
      instanceID: idField,
      proxyInfo: proxyChanges,
      oldName: proxyName
        .optional()
        .describe('the proxy to modify, when it is renamed (also accepted inside proxyInfo)'),
      newName: proxyName.optional().describe('its new name (also accepted inside proxyInfo)'),
      ...changeFields,
    })
    .meta({
      anyOf: [
        { required: ['oldName'] },
        { properties: { proxyInfo: { required: ['name'], properties: { name: schema('ProxyName') } } } },
      ],
    }),
  ok: ok('Modified', schema('ProxyEdited')),
  errors: {
    400: 'No proxy named, an invalid key, or frpc refused the reload.',
    404: 'No such instance or proxy.',
    409: 'The new name, remote port or domain is held by another proxy.',
    502: APPLY_FAILED,
  },
});

export const deleteProxy = operation({
  method: 'post',
  path: '/tunnelAct/proxyMgr/delete',
  tag: 'proxies',
  summary: 'Remove a proxy',
  access: 'admin',
  instanceAccess: 'change',
  body: z.object({ instanceID: idField, proxyName, ...changeFields }),
  ok: ok('Removed', schema('ProxyEdited')),
  errors: {
    400: 'A missing field, or frpc refused the reload.',
    404: 'No such instance or proxy.',
    502: APPLY_FAILED,
  },
});

export const setProxyStatus = operation({
  method: 'post',
  path: '/tunnelAct/proxyMgr/setStatus',
  tag: 'proxies',
  summary: 'Enable or disable a proxy (frpc enabled = false)',
  access: 'admin',
  instanceAccess: 'change',
  body: z.object({ instanceID: idField, proxyName, enabled: z.boolean(), ...changeFields }),
  ok: ok('Changed', { allOf: [schema('ProxyEdited'), obj({ enabled: bool() })] }),
  errors: {
    400: 'A missing field, enabled not a boolean, or frpc refused the reload.',
    404: 'No such instance or proxy.',
    409: 'Enabling it would clash with another proxy.',
    502: APPLY_FAILED,
  },
});

export const setProxyExpiry = operation({
  method: 'post',
  path: '/tunnelAct/proxyMgr/setExpiry',
  tag: 'proxies',
  summary: 'Set (or clear) when a proxy is disabled by itself',
  description:
    "The expiry is kept on the instance's record, not in the file (frpc refuses a key it does not know); it follows a rename and goes with a delete. At expiry the proxy is disabled as setStatus disables it (a running tunnel reloads; the others run on), with a proxy.expired event.",
  access: 'admin',
  instanceAccess: 'change',
  body: z.object({ instanceID: idField, proxyName, expires: expiresValue }),
  ok: ok('Set', schema('ProxyExpirySet')),
  errors: {
    400: 'A missing field, or expires neither a duration, a time nor never, or a time past.',
    404: 'No such instance or proxy.',
  },
});

export const listProxies = operation({
  method: 'get',
  path: '/tunnelAct/proxyMgr/list',
  tag: 'proxies',
  summary: "An instance's proxies, from its config file, with frpc's live status",
  access: 'visitor',
  query: instanceQuery,
  ok: ok('Its proxies', schema('ProxyList')),
  errors: { 400: 'instanceID missing or not a positive integer.', 404: NO_INSTANCE, 409: CONFIG_MISSING },
});

export const operations = [createProxy, modifyProxy, deleteProxy, setProxyStatus, setProxyExpiry, listProxies];

/** /tunnelAct/proxyMgr/*: edits the instance's config file; a running tunnel applies it by frpc's reload. */
export function proxyRoutes({ supervisor, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('/tunnelAct/proxyMgr', guards);

  const edited = (done: ChangeAnswer<unknown>, proxyName: string) => ({
    instanceID: done.record.id,
    configPath: done.record.configPath,
    proxyName,
    ...changeData(done),
  });
  const how = (done: ChangeAnswer<unknown>) => `; ${changeHow(done)}`;
  const would = (done: ChangeAnswer<unknown>, what: string) =>
    done.applied === 'not applied' ? `would be ${what}` : done.applied === 'unchanged' ? 'unchanged' : what;

  router.route(createProxy, async (ctx, { body }) => {
    const info = body.proxyInfo as ProxyInput & Fields;
    const done = await supervisor.addProxy(body.instanceID, info, changeOptions(ctx, body));
    const name = done.result.name;
    reply(ctx, `proxy ${name} ${would(done, 'added')} to instance ${done.record.name}${how(done)}`, edited(done, name));
  });

  router.route(modifyProxy, async (ctx, { body }) => {
    const info = body.proxyInfo as ProxyInput & Fields;
    const oldName = body.oldName ?? optionalString(info, 'oldName');
    const newName = body.newName ?? optionalString(info, 'newName');
    const selector = oldName ?? optionalString(info, 'name');
    if (!selector) throw badRequest('proxyInfo.name (or oldName) is required to select the proxy');
    // What the list adds of frpc's live status is read-only: a listed proxy sent back as it is modifies cleanly.
    const { oldName: _o, newName: _n, ...input } = info;
    for (const key of LISTED_ONLY_FIELDS) delete input[key];
    const done = await supervisor.modifyProxy(body.instanceID, selector, input, newName, changeOptions(ctx, body));
    const name = done.result.name;
    reply(
      ctx,
      `proxy ${name} of instance ${done.record.name} ${would(done, 'modified')}${how(done)}`,
      edited(done, name),
    );
  });

  router.route(deleteProxy, async (ctx, { body }) => {
    const { instanceID: id, proxyName: name } = body;
    const done = await supervisor.deleteProxy(id, name, changeOptions(ctx, body));
    reply(
      ctx,
      `proxy ${name} ${would(done, 'deleted')} from instance ${done.record.name}${how(done)}`,
      edited(done, name),
    );
  });

  router.route(setProxyStatus, async (ctx, { body }) => {
    const { instanceID: id, proxyName: name, enabled } = body;
    const done = await supervisor.setProxyEnabled(id, name, enabled, changeOptions(ctx, body));
    reply(
      ctx,
      `proxy ${name} of instance ${done.record.name} ${would(done, enabled ? 'enabled' : 'disabled')}${how(done)}`,
      { ...edited(done, name), enabled },
    );
  });

  router.route(setProxyExpiry, async (ctx, { body }) => {
    const { instanceID: id, proxyName: name, expires } = body;
    const record = await supervisor.setProxyExpiry(id, name, expires, ctx.state.auth.user, authorOf(ctx.state.auth));
    const at = record.proxyExpiries[name];
    reply(
      ctx,
      `proxy ${name} of instance ${record.name} ${at === undefined ? 'does not expire' : `expires at ${formatIso(at)}`}`,
      { instanceID: record.id, proxyName: name, expiresAt: at === undefined ? null : formatIso(at) },
    );
  });

  router.route(listProxies, async (ctx, { query }) => {
    const id = query.instanceID;
    const expiries = supervisor.record(id).proxyExpiries;
    const live = supervisor.status.of(id);
    const privileged = hasRole(ctx.state.auth.user.type, 'admin');
    // Each proxy with what frpc says of it while the tunnel runs (null otherwise, or before it is known).
    const config = await supervisor.readConfig(id);
    const tunnel = supervisor.healthOf(id);
    const failing = supervisor.probes?.failuresOf(id);
    const proxies = config.proxies().map((proxy) => {
      const seen = live?.proxies.get(proxy.name);
      return {
        ...proxy,
        health: healthView(proxyHealthIn(tunnel, proxy.enabled !== false, seen, failing?.get(proxy.name))),
        status: seen?.status ?? null,
        err: seen?.err ?? '',
        // Where the server offers it names the server, which only an admin is shown (as getInfo shows it).
        ...(privileged ? { remoteAddr: seen?.remoteAddr ?? '' } : {}),
        statusSince: seen ? new Date(seen.since).toISOString() : null,
        ...(expiries[proxy.name] !== undefined ? { expiresAt: formatIso(expiries[proxy.name]!) } : {}),
      };
    });
    const guest = seesOnlyGuestView(ctx.state.exposure, ctx.state.auth.user.type);
    // Visitors (the client side of stcp, sudp, xtcp) are listed beside the proxies, read-only.
    const visitors = config.visitors();
    reply(ctx, `${proxies.length} proxies, ${visitors.length} visitors`, {
      instanceID: id,
      proxyCount: proxies.length,
      proxies: guest ? proxies.map(guestProxyView) : proxies,
      visitorCount: visitors.length,
      visitors: guest ? visitors.map(guestVisitorView) : visitors,
    });
  });

  return router;
}
