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
import { checkLabels } from '../../instances/labels.js';
import { seesOnlyGuestView } from '../exposure.js';
import { reply, replyWithSecrets } from '../envelope.js';
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

/** `labels` of a create or an import: none when left out. */
function optionalLabels(fields: Fields): Record<string, string> | undefined {
  if (fields.labels === undefined || fields.labels === null) return undefined;
  return checkLabels(fields.labels, 'labels') as Record<string, string>;
}

const isRunning = (view: InstanceView) => view.state === 'running';

/** Only a superuser reads secrets in a config file. */
const secretsMasked = (ctx: Context) => ctx.state.auth.user.type !== 'superuser';

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

/**
 * The reply to a command on many instances: how many went well (of them, how many were already as asked), how many
 * failed, and how each went. The counts are the results': a client's summary is made of them.
 */
function replyMany(ctx: Context, command: string, results: CommandResult[]): void {
  const ok = results.filter((r) => r.ok).length;
  const unchanged = results.filter((r) => r.unchanged).length;
  const failed = results.length - ok;
  const already = unchanged > 0 ? ` (${unchanged} already ${command === 'start' ? 'running' : 'stopped'})` : '';
  reply(ctx, `${command}: ${ok} of ${results.length} instances ok${already}, ${failed} failed`, {
    ok,
    failed,
    unchanged,
    results,
  });
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
export function instanceRoutes({ supervisor, guards }: RouteDeps): ResourceRouter {
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
        labels: optionalLabels(fields),
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
        labels: record.labels,
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
        labels: optionalLabels(fields),
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
        labels: record.labels,
        ...(bootServiceError ? { bootServiceError, instanceName: record.name } : {}),
      },
    );
  });

  // The config file as it may leave tunnelward: current TOML, without tunnelward's own admin endpoint, secrets
  // masked for everyone but a superuser, and without the server for a visitor (as getInfo shows it).
  router.get('/export', 'visitor', async (ctx) => {
    const record = supervisor.catalogue.record(instanceIdParam(ctx));
    const type = ctx.state.auth.user.type;
    if (seesOnlyGuestView(ctx.state.exposure, type)) {
      throw forbidden('a visitor cannot export config files on this server (Visitor.ShowDetails)');
    }
    const masked = secretsMasked(ctx);
    const withServer = hasRole(type, 'admin');
    const config = await supervisor.catalogue.readConfig(record.id);
    const content = config.exportText(masked, withServer);
    const what = `config file of instance ${record.name}${masked ? ', secrets masked' : ''}${withServer ? '' : ', without its server'}`;
    const data = {
      instanceID: record.id,
      name: record.name,
      format: 'toml',
      content,
      masked,
      version: config.version(),
    };
    // Unmasked, the secrets are what a superuser asked for.
    if (masked) reply(ctx, what, data);
    else replyWithSecrets(ctx, what, data);
  });

  // The whole config file replaced by an operator's text (an export, edited): checked as every edit is, applied as
  // proxy edits (reload) or top-level ones (restart) are; with baseVersion, refused when the file changed meanwhile.
  router.post('/replaceConfig', 'admin', async (ctx) => {
    const fields = body(ctx);
    const id = requiredId(fields, 'instanceID');
    const content = fields.content;
    if (typeof content !== 'string') throw badRequest('content is required: the whole config file, as TOML');
    const done = await supervisor.replaceConfig(id, content, {
      baseVersion: optionalString(fields, 'baseVersion'),
      masked: secretsMasked(ctx),
      dryRun: optionalBool(fields, 'dryRun') ?? false,
    });
    const how = {
      unchanged: 'nothing to apply: the file is as it was',
      'not applied': 'checked, not applied (dry run)',
      reload: 'applied by a reload',
      restart: 'applied by a restart',
      'on next start': 'it applies at the next start',
    }[done.applied];
    const notes = done.notes.length > 0 ? `; ${done.notes.join('; ')}` : '';
    reply(
      ctx,
      `config file of instance ${done.record.name} ${done.applied === 'unchanged' ? 'unchanged' : 'replaced'}; ${how}${notes}`,
      {
        instanceID: done.record.id,
        configPath: done.record.configPath,
        changed: done.applied !== 'unchanged',
        applied: done.applied,
        diff: done.diff,
        version: done.version,
        notes: done.notes,
      },
    );
  });

  // One instance, or many (`instanceIDs: [...]`; never `all`): each delete is answered on its own, as the commands.
  // The log stays (for whoever wants to know what the tunnel did) unless purge is true.
  router.post('/delete', 'admin', async (ctx) => {
    const fields = body(ctx);
    if (fields.all !== undefined) throw badRequest('delete takes instanceID or instanceIDs, never all');
    const purge = optionalBool(fields, 'purge') ?? false;
    const kept = purge ? '' : '; its log is kept (purge removes it)';
    const ids = bulkTargets(fields, () => []);
    if (!ids) {
      const record = await supervisor.catalogue.remove(requiredId(fields, 'instanceID'), { purgeLog: purge });
      reply(ctx, `instance ${record.name} deleted${purge ? ', its log too' : kept}`, {
        instanceID: record.id,
        name: record.name,
        logKept: !purge,
      });
      return;
    }
    const results = await Promise.all(
      ids.map(async (id): Promise<CommandResult> => {
        const name = supervisor.catalogue.nameOf(id) || null;
        try {
          await supervisor.catalogue.remove(id, { purgeLog: purge });
          const message = `deleted${purge ? ', its log too' : kept}`;
          return { instanceID: id, name, ok: true, state: null, unchanged: false, message };
        } catch (err) {
          const state = supervisor.catalogue.exists(id) ? supervisor.lifecycle.stateOf(id) : null;
          return { instanceID: id, name, ok: false, state, unchanged: false, message: (err as Error).message };
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
    } else if (type === 'labels') {
      const record = await supervisor.catalogue.modifyLabels(id, checkLabels(data, 'modifiedData', true));
      reply(ctx, `labels of instance ${record.name} changed`, { instanceID: record.id, labels: record.labels });
    } else {
      throw badRequest('type must be configFile, systemConfig, environment or labels');
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
    const guest = seesOnlyGuestView(ctx.state.exposure, ctx.state.auth.user.type);
    reply(ctx, `instance ${view.record.name}`, {
      instanceID: view.record.id,
      name: view.record.name,
      serviceName: serviceNameOf(view.record.id),
      createdAt: createdAtOf(view.record),
      createdBy: view.record.createdBy,
      isRunning: isRunning(view),
      auth_method: config.authMethod,
      bootAtStart: view.record.bootAtStart,
      labels: view.record.labels,
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
