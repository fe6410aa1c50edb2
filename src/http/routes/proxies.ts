import type { ProxyInput } from '../../config/tunnel-config.js';
import type { Applied } from '../../../actors/instance-catalogue.js';
import { hasRole } from '../../accounts/rules.js';
import { badRequest } from '../../errors.js';
import { reply } from '../envelope.js';
import { body, optionalString, requiredId, requiredString, type Fields } from '../params.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';
import { guestProxyView, guestVisitorView, seesOnlyGuestView } from '../exposure.js';
import { instanceIdParam } from './instances.js';

function proxyInfo(fields: Fields): ProxyInput & Fields {
  const info = fields.proxyInfo;
  if (info === undefined || info === null) throw badRequest('proxyInfo is required');
  if (typeof info !== 'object' || Array.isArray(info)) throw badRequest('proxyInfo must be an object');
  return info as ProxyInput & Fields;
}

/** /tunnelAct/proxyMgr/*: edits the instance's config file; a running tunnel applies it by frpc's reload. */
export function proxyRoutes({ supervisor, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('/tunnelAct/proxyMgr', guards);

  const edited = (id: number, configPath: string, proxyName: string, applied: Applied) => ({
    instanceID: id,
    configPath,
    proxyName,
    applied,
  });
  const how = (applied: Applied) =>
    applied === 'reload' ? ', applied by a reload' : applied === 'restart' ? ', applied by a restart' : '';

  router.post('/create', 'admin', async (ctx) => {
    const fields = body(ctx);
    const id = requiredId(fields, 'instanceID');
    const info = proxyInfo(fields);
    const { record, result, applied } = await supervisor.editProxies(id, (config) => config.addProxy(info));
    reply(
      ctx,
      `proxy ${result.name} added to instance ${record.name}${how(applied)}`,
      edited(id, record.configPath, result.name, applied),
    );
  });

  router.post('/modify', 'admin', async (ctx) => {
    const fields = body(ctx);
    const id = requiredId(fields, 'instanceID');
    const info = proxyInfo(fields);
    const oldName = optionalString(fields, 'oldName') ?? optionalString(info, 'oldName');
    const newName = optionalString(fields, 'newName') ?? optionalString(info, 'newName');
    const selector = oldName ?? optionalString(info, 'name');
    if (!selector) throw badRequest('proxyInfo.name (or oldName) is required to select the proxy');
    // What the list adds of frpc's live status is read-only: a listed proxy sent back as it is modifies cleanly.
    const { oldName: _o, newName: _n, status: _s, err: _e, remoteAddr: _r, statusSince: _t, ...input } = info;
    const { record, result, applied } = await supervisor.editProxies(id, (config) =>
      config.modifyProxy(selector, input, newName),
    );
    reply(
      ctx,
      `proxy ${result.name} of instance ${record.name} modified${how(applied)}`,
      edited(id, record.configPath, result.name, applied),
    );
  });

  router.post('/delete', 'admin', async (ctx) => {
    const fields = body(ctx);
    const id = requiredId(fields, 'instanceID');
    const name = requiredString(fields, 'proxyName');
    const { record, applied } = await supervisor.editProxies(id, (config) => config.deleteProxy(name));
    reply(
      ctx,
      `proxy ${name} deleted from instance ${record.name}${how(applied)}`,
      edited(id, record.configPath, name, applied),
    );
  });

  router.post('/setStatus', 'admin', async (ctx) => {
    const fields = body(ctx);
    const id = requiredId(fields, 'instanceID');
    const name = requiredString(fields, 'proxyName');
    if (typeof fields.enabled !== 'boolean') throw badRequest('enabled is required and must be true or false');
    const enabled = fields.enabled;
    const { record, applied } = await supervisor.editProxies(id, (config) => config.setProxyEnabled(name, enabled));
    reply(ctx, `proxy ${name} of instance ${record.name} ${enabled ? 'enabled' : 'disabled'}${how(applied)}`, {
      ...edited(id, record.configPath, name, applied),
      enabled,
    });
  });

  router.get('/list', 'visitor', async (ctx) => {
    const id = instanceIdParam(ctx);
    const live = supervisor.status.of(id);
    const privileged = hasRole(ctx.state.auth.user.type, 'admin');
    // Each proxy with what frpc says of it while the tunnel runs (null otherwise, or before it is known).
    const config = await supervisor.catalogue.readConfig(id);
    const proxies = config.proxies().map((proxy) => {
      const seen = live?.proxies.get(proxy.name);
      return {
        ...proxy,
        status: seen?.status ?? null,
        err: seen?.err ?? '',
        // Where the server offers it names the server, which only an admin is shown (as getInfo shows it).
        ...(privileged ? { remoteAddr: seen?.remoteAddr ?? '' } : {}),
        statusSince: seen ? new Date(seen.since).toISOString() : null,
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
