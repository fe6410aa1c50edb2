import type { Context } from 'koa';
import {
  createdAtOf,
  processFields,
  type CommandResult,
  type InstanceSupervisor,
  type InstanceView,
} from '../../../actors/instance-supervisor.js';
import { serviceNameOf } from '../../../actors/boot-services.js';
import type { Command } from '../../../machines/instance.machine.js';
import { hasRole } from '../../accounts/rules.js';
import { AppError, badRequest, conflict, forbidden } from '../../errors.js';
import { seesOnlyGuestView } from '../exposure.js';
import { reply } from '../envelope.js';
import {
  body,
  idList,
  optionalBool,
  optionalString,
  queryParam,
  requiredId,
  requiredString,
  type Fields,
} from '../params.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';

/** The instance id of a GET request (query, then X-InstanceID header). */
export function instanceIdParam(ctx: Context): number {
  return requiredId({ instanceID: queryParam(ctx, 'instanceID') }, 'instanceID');
}

function objectField(fields: Fields, name: string, required: boolean): Fields | undefined {
  const v = fields[name];
  if (v === undefined || v === null) {
    if (required) throw badRequest(`${name} is required`);
    return undefined;
  }
  if (typeof v !== 'object' || Array.isArray(v)) throw badRequest(`${name} must be an object`);
  return v as Fields;
}

const isRunning = (view: InstanceView) => view.state === 'running';

/** The instances a command on many names (`instanceIDs` or `all: true`); undefined for the one-instance form. */
function bulkTargets(fields: Fields, everyId: () => number[]): number[] | undefined {
  const forms = ['instanceID', 'instanceIDs', 'all'].filter((k) => fields[k] !== undefined);
  if (forms.length > 1) throw badRequest(`give one of instanceID, instanceIDs or all, not ${forms.join(' and ')}`);
  if (fields.all !== undefined) {
    if (fields.all !== true) throw badRequest('all must be true (or left out)');
    return everyId();
  }
  return fields.instanceIDs === undefined ? undefined : idList(fields, 'instanceIDs');
}

/** The reply to a command on many instances: how many went well, and how each went. */
function replyMany(ctx: Context, command: string, results: CommandResult[]): void {
  const ok = results.filter((r) => r.ok).length;
  reply(ctx, `${command}: ${ok} of ${results.length} instances ok`, { ok, failed: results.length - ok, results });
}

/** Runs a lifecycle command and says how it went: 409 for a refusal the state explains, 500 for a failure. */
async function commandOutcome(supervisor: InstanceSupervisor, id: number, command: Command): Promise<string> {
  supervisor.view(id); // 404 before queueing
  const done = await supervisor.command(id, command);
  if (done.ok) return `instance ${id} ${done.message}`;
  if (done.conflict) throw conflict(`instance ${id} is ${done.message}`);
  throw new AppError(500, `instance ${id} could not ${command}: ${done.message}`);
}

/** /tunnelAct/instanceMgr/*: changes need an admin, reading any authenticated user. */
export function instanceRoutes({ supervisor, guards, exposure }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('/tunnelAct/instanceMgr', guards);

  router.post('/create', 'admin', async (ctx) => {
    const fields = body(ctx);
    const info = objectField(fields, 'instanceInfo', true)!;
    const { record, bootServiceError } = await supervisor.catalogue.create(
      {
        name: requiredString(info, 'name'),
        serverAddr: requiredString(info, 'serverAddr'),
        serverPort: requiredString(info, 'serverPort'),
        authMethod: requiredString(info, 'auth_method'),
        bootAtStart: optionalBool(fields, 'bootAtStart') ?? false,
        runUser: optionalString(fields, 'runUser') || 'root',
        additional: objectField(fields, 'additionalProperties', false) ?? {},
      },
      ctx.state.auth.user,
    );
    reply(
      ctx,
      `instance ${record.name} created${bootServiceError ? ', but its boot service could not be set up' : ''}`,
      {
        instanceID: record.id,
        name: record.name,
        configPath: record.configPath,
        bootAtStart: record.bootAtStart,
        ...(bootServiceError ? { bootServiceError, instanceName: record.name } : {}),
      },
    );
  });

  // An existing frpc config file (TOML, INI, YAML or JSON) as a new instance, rewritten in frpc's current TOML.
  router.post('/import', 'admin', async (ctx) => {
    const fields = body(ctx);
    const done = await supervisor.catalogue.importConfig(
      {
        name: requiredString(fields, 'name'),
        content: requiredString(fields, 'content'),
        format: optionalString(fields, 'format'),
        bootAtStart: optionalBool(fields, 'bootAtStart') ?? false,
        runUser: optionalString(fields, 'runUser') || 'root',
      },
      ctx.state.auth.user,
    );
    const { record, bootServiceError } = done;
    const notes = [...done.notes, ...(bootServiceError ? ['its boot service could not be set up'] : [])];
    reply(
      ctx,
      `instance ${record.name} imported from ${done.format}: ${done.proxyCount} proxies, ${done.visitorCount} visitors` +
        (notes.length > 0 ? `; ${notes.join('; ')}` : ''),
      {
        instanceID: record.id,
        name: record.name,
        configPath: record.configPath,
        format: done.format,
        proxyCount: done.proxyCount,
        visitorCount: done.visitorCount,
        bootAtStart: record.bootAtStart,
        ...(bootServiceError ? { bootServiceError, instanceName: record.name } : {}),
      },
    );
  });

  // The config file as it may leave tunnelward: current TOML, without tunnelward's own admin endpoint, secrets
  // masked for everyone but a superuser.
  router.get('/export', 'visitor', async (ctx) => {
    const record = supervisor.catalogue.record(instanceIdParam(ctx));
    if (seesOnlyGuestView(exposure, ctx.state.auth.user.type)) {
      throw forbidden('a visitor cannot export config files on this server (Visitor.ShowDetails)');
    }
    const masked = ctx.state.auth.user.type !== 'superuser';
    const content = (await supervisor.catalogue.readConfig(record.id)).exportText(masked);
    reply(ctx, `config file of instance ${record.name}${masked ? ', secrets masked' : ''}`, {
      instanceID: record.id,
      name: record.name,
      format: 'toml',
      content,
      masked,
    });
  });

  // One instance, or many (`instanceIDs: [...]`; never `all`): each delete is answered on its own, as the commands.
  router.post('/delete', 'admin', async (ctx) => {
    const fields = body(ctx);
    if (fields.all !== undefined) throw badRequest('delete takes instanceID or instanceIDs, never all');
    const ids = bulkTargets(fields, () => []);
    if (!ids) {
      const record = await supervisor.catalogue.remove(requiredId(fields, 'instanceID'));
      reply(ctx, `instance ${record.name} deleted`, { instanceID: record.id, name: record.name });
      return;
    }
    const results = await Promise.all(
      ids.map(async (id): Promise<CommandResult> => {
        const name = supervisor.catalogue.nameOf(id) || null;
        try {
          await supervisor.catalogue.remove(id);
          return { instanceID: id, name, ok: true, state: null, message: 'deleted' };
        } catch (err) {
          const state = supervisor.catalogue.exists(id) ? supervisor.lifecycle.stateOf(id) : null;
          return { instanceID: id, name, ok: false, state, message: (err as Error).message };
        }
      }),
    );
    replyMany(ctx, 'delete', results);
  });

  router.post('/modify', 'admin', async (ctx) => {
    const fields = body(ctx);
    const id = requiredId(fields, 'instanceID');
    const type = requiredString(fields, 'type');
    const data = objectField(fields, 'modifiedData', true)!;
    if (type === 'configFile') {
      const { record, applied } = await supervisor.modifyConfig(id, data);
      const how = applied === 'restart' ? 'applied by a restart' : 'it applies at the next start';
      reply(ctx, `config file of instance ${record.name} modified; ${how}`, {
        instanceID: record.id,
        configPath: record.configPath,
        applied,
      });
    } else if (type === 'systemConfig') {
      const unknown = Object.keys(data).filter((k) => !['name', 'bootAtStart', 'runUser'].includes(k));
      if (unknown.length > 0) throw badRequest(`unknown systemConfig keys: ${unknown.join(', ')}`);
      const { record, bootServiceError } = await supervisor.catalogue.modifySystem(id, {
        name: optionalString(data, 'name'),
        bootAtStart: optionalBool(data, 'bootAtStart'),
        runUser: optionalString(data, 'runUser'),
      });
      reply(
        ctx,
        `instance ${record.name} modified${bootServiceError ? ', but its boot service could not be changed' : ''}`,
        {
          instanceID: record.id,
          configPath: record.configPath,
          bootAtStart: record.bootAtStart,
          runUser: record.runUser,
          ...(bootServiceError ? { bootServiceError, instanceName: record.name } : {}),
        },
      );
    } else if (type === 'environment') {
      const record = await supervisor.catalogue.modifyEnvironment(id, data);
      reply(ctx, `environment of instance ${record.name} changed; it applies at the next start`, {
        instanceID: record.id,
        environment: supervisor.catalogue.environment(id),
      });
    } else {
      throw badRequest('type must be configFile, systemConfig or environment');
    }
  });

  // One instance (`instanceID`, the contract's form), or many: `instanceIDs: [...]` or `all: true`.
  for (const command of ['start', 'stop', 'restart'] as const) {
    router.post(`/${command}`, 'admin', async (ctx) => {
      const fields = body(ctx);
      const ids = bulkTargets(fields, () => supervisor.views().map((v) => v.record.id));
      if (!ids) {
        reply(ctx, await commandOutcome(supervisor, requiredId(fields, 'instanceID'), command), {});
        return;
      }
      replyMany(ctx, command, await supervisor.commandMany(ids, command));
    });
  }

  router.get('/status', 'visitor', async (ctx) => {
    const view = supervisor.view(instanceIdParam(ctx));
    reply(ctx, `instance ${view.record.name} is ${view.state}`, {
      name: view.record.name,
      initSystem: supervisor.lifecycle.initSystem,
      ...(process.platform !== 'win32' ? { serviceName: serviceNameOf(view.record.id) } : {}),
      isRunning: isRunning(view),
      state: view.state,
      ...processFields(view),
      ...supervisor.statusFields(view.record.id),
    });
  });

  // The list is what UIs poll: the supervisor keeps it as JSON until something it shows changes.
  router.get('/list', 'visitor', async (ctx) => {
    const { json, count } = supervisor.listJson();
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = `{"success":true,"message":"${count} instances","data":${json}}`;
  });

  router.get('/getInfo', 'visitor', async (ctx) => {
    const view = supervisor.view(instanceIdParam(ctx));
    const config = await supervisor.catalogue.readConfig(view.record.id);
    const privileged = hasRole(ctx.state.auth.user.type, 'admin');
    const guest = seesOnlyGuestView(exposure, ctx.state.auth.user.type);
    reply(ctx, `instance ${view.record.name}`, {
      instanceID: view.record.id,
      name: view.record.name,
      serviceName: serviceNameOf(view.record.id),
      createdAt: createdAtOf(view.record),
      createdBy: view.record.createdBy,
      isRunning: isRunning(view),
      auth_method: config.authMethod,
      bootAtStart: view.record.bootAtStart,
      // A guest is not shown which local account runs it or where its file is.
      ...(guest ? {} : { runUser: view.record.runUser, configPath: view.record.configPath }),
      state: view.state,
      ...processFields(view),
      ...supervisor.statusFields(view.record.id),
      ...(privileged
        ? {
            serverAddr: config.serverAddr,
            serverPort: config.serverPort,
            environment: supervisor.catalogue.environment(view.record.id),
          }
        : {}),
    });
  });

  return router;
}
