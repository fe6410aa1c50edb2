import type { Context } from 'koa';
import {
  createdAtOf,
  processFields,
  type InstanceSupervisor,
  type ChangeAnswer,
  type ChangeOptions,
  type CommandResult,
  type InstanceView,
} from '../../../actors/instance-supervisor.js';
import { serviceNameOf } from '../../../actors/boot-services.js';
import type { Command } from '../../../machines/instance.machine.js';
import { hasRole } from '../../accounts/rules.js';
import { AppError, conflict, forbidden } from '../../errors.js';
import { IMPORT_FORMATS } from '../../config/import-formats.js';
import { settingText } from '../../config/key-schema.js';
import { ENVIRONMENT_CHANGES } from '../../instances/instance-env.js';
import { NOT_RESERVED } from '../../util/reserved-keys.js';
import { checkLabels, LABEL_KEY_PATTERN, LABEL_VALUE_PATTERN } from '../../instances/labels.js';
import { seesOnlyGuestView } from '../exposure.js';
import { authorOf } from '../auth.js';
import { reply, replyWithSecrets } from '../envelope.js';
import { z } from 'zod';
import { arrayOf, CONFIG_MISSING, documentedBy, NO_INSTANCE, ok, APPLY_FAILED, schema } from '../openapi-schemas.js';
import { operation } from '../operation.js';
import { idField, idParam, MAX_IDS } from '../params.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';
import { formatIso } from '../../util/time.js';
import { POLICY_SETTINGS } from '../../instances/health-policy.js';
import { SETTINGS_TABLE } from '../../settings/table.js';
import { EXPIRY_FORMS, expiryFields } from '../../instances/expiry.js';

/** `labels` of a create or an import, each checked: none when left out. */

/**
 * An instance's own supervision figures over the settings, each with its setting's own rule; null goes back to the
 * setting.
 */
const instancePolicy = z
  .strictObject(
    Object.fromEntries(
      Object.entries(POLICY_SETTINGS).map(([key, setting]) => [
        key,
        SETTINGS_TABLE[setting].schema.nullable().optional().describe(`its own ${setting}; null: the setting's`),
      ]),
    ) as { [K in keyof typeof POLICY_SETTINGS]: z.ZodOptional<z.ZodNullable<z.ZodNumber>> },
  )
  .describe(
    "its own health policy and memory cap over the settings (Health.DisconnectedSecs, Health.UnreachableSecs, Instance.MemoryMaxMB); a number sets one, null goes back to the setting's",
  );

const optionalLabels = (labels: Record<string, string> | undefined): Record<string, string> | undefined =>
  labels === undefined ? undefined : (checkLabels(labels, 'labels') as Record<string, string>);

const isRunning = (view: InstanceView) => view.state === 'running';

/** Whether the caller reads the instance's secrets masked (see may: only a superuser reads them in clear). */
export const secretsMasked = (ctx: Context, supervisor: InstanceSupervisor, id: number) =>
  !supervisor.may(id, ctx.state.auth.user, 'secrets');

/**
 * Whether the caller reads the instance's file masked (see may); a visitor is refused while Visitor.ShowDetails hides
 * details.
 */
function readableFile(ctx: Context, supervisor: InstanceSupervisor, id: number): boolean {
  if (seesOnlyGuestView(ctx.state.exposure, ctx.state.auth.user.type))
    throw forbidden('a visitor cannot read config files on this server (Visitor.ShowDetails)');
  return secretsMasked(ctx, supervisor, id);
}

/** A reply with a file's text: unmasked, its secrets are what a superuser asked for. */
function replyMasked(ctx: Context, masked: boolean, what: string, data: object): void {
  if (masked) reply(ctx, what, data);
  else replyWithSecrets(ctx, what, data);
}

/** What every change of a config file may add to its request: a dry run, and the revision it was made against. */
export const changeFields = {
  dryRun: z
    .boolean()
    .optional()
    .describe('check and plan only: the answer says what would happen (diff, frpc verify, plan); nothing is written'),
  baseRevision: z
    .number({ error: 'must be a revision number' })
    .int('must be a revision number')
    .min(0, 'must be a revision number')
    .optional()
    .describe(
      'the revision the change was made against (export, getInfo and history give it): an instance that has moved on since is a 409 and nothing changes',
    ),
};

/** How a change request runs: by whom, dry or not, against which revision. */
export const changeOptions = (
  ctx: Context,
  fields: { dryRun?: boolean; baseRevision?: number; baseVersion?: string },
): ChangeOptions => ({
  by: authorOf(ctx.state.auth),
  as: ctx.state.auth.user,
  ...(fields.dryRun ? { dryRun: true } : {}),
  ...(fields.baseRevision !== undefined ? { baseRevision: fields.baseRevision } : {}),
  ...(fields.baseVersion !== undefined ? { baseVersion: fields.baseVersion } : {}),
});

/** What every change answers besides its own fields: how it reached the tunnel, and the revision it made. */
export const changeData = (done: ChangeAnswer<unknown>) => ({
  applied: done.applied,
  plan: done.plan,
  revision: done.revision,
  dryRun: done.applied === 'not applied',
  verify:
    'skipped' in done.verify ? { verified: false, skipped: done.verify.skipped } : { verified: done.verify.verified },
  notes: done.notes,
  ...(done.observed ? { observed: done.observed } : {}),
  diff: done.diff,
});

/** How a change went, as a message ends: `; applied by a reload (revision 4)`. */
export function changeHow(done: ChangeAnswer<unknown>): string {
  const how = {
    unchanged: 'nothing to apply: the file is as it was',
    'not applied': `dry run, nothing written; plan: ${done.plan.action} (${done.plan.reason})`,
    reload: `applied by a reload (revision ${done.revision})`,
    restart: `applied by a restart (revision ${done.revision}): ${done.plan.reason}`,
    'on next start': `it applies at the next start (revision ${done.revision})`,
  }[done.applied];
  const notes = done.notes.length > 0 ? `; ${done.notes.join('; ')}` : '';
  return `${how}${notes}`;
}

const FORMS = ['instanceID', 'instanceIDs', 'all'] as const;

/**
 * The instances a command names: one (`instanceID`, the contract's form), several (`instanceIDs`), or every one
 * (`all: true`); exactly one form. Delete takes no `all`.
 */
const targets = (forms: readonly (typeof FORMS)[number][]) =>
  z
    .object({
      instanceID: idField.optional(),
      instanceIDs: z
        .array(idField, { error: 'must be an array of instance ids' })
        .min(1, 'must name at least one instance')
        .max(MAX_IDS, `may name at most ${MAX_IDS} instances`)
        .describe('repeated ids count once')
        .optional(),
      all: z.literal(true, { error: 'must be true (or left out)' }).describe('every instance').optional(),
    })
    .superRefine((body, ctx) => {
      if (body.all !== undefined && !forms.includes('all')) {
        ctx.addIssue({ code: 'custom', message: 'delete takes instanceID or instanceIDs, never all' });
        return;
      }
      const given = FORMS.filter((form) => body[form] !== undefined);
      if (given.length > 1) {
        ctx.addIssue({
          code: 'custom',
          message: `give one of instanceID, instanceIDs or all, not ${given.join(' and ')}`,
        });
      } else if (given.length === 0) ctx.addIssue({ code: 'custom', path: ['instanceID'], message: 'is required' });
    })
    .meta({
      oneOf: forms.map((form) => ({ required: [form] })),
      ...(forms.includes('all') ? {} : { not: { required: ['all'] } }),
    });

/** The one instance of a GET (query, then X-instanceID header). */
export const instanceQuery = z.object({ instanceID: idParam('the instance') });

const BAD_ID = 'instanceID missing or not a positive integer.';

/** A text field the request must give (the catalogue checks its rule and says it). */
const given = (description: string) => z.string().min(1, 'is required').describe(description);
const instanceName = z.string().min(1, 'is required').meta(schema('InstanceName'));
/** frpc's top-level keys: the config checks them key by key; the document describes them from the same key table. */
const frpcSettings = documentedBy('FrpcSettings');
/** What a create and an import both take: how the instance runs, and its labels (checked by checkLabels). */
const runFields = {
  bootAtStart: z.boolean().optional().describe('start at boot (default false)'),
  runUser: z.string().optional().describe('operating-system user the tunnel runs as (default root)'),
  labels: z.record(z.string(), z.string()).optional().meta(schema('Labels')),
  expires: z
    .string()
    .max(64)
    .optional()
    .describe(`when it is stopped by itself (and taken off boot): ${EXPIRY_FORMS}; a time past is refused`),
};

/** A new expiry, or none (null or never). */
export const expiresValue = z
  .string()
  .max(64)
  .nullable()
  .describe(
    `when it expires: ${EXPIRY_FORMS}; null or never clears it. A time past is refused with nothing changed. At expiry an instance is stopped as an operator's stop does it and taken off boot; a proxy is disabled in the file`,
  );

export const createInstance = operation({
  method: 'post',
  path: '/tunnelAct/instanceMgr/create',
  tag: 'instances',
  summary: 'Create an instance and its config file',
  access: 'admin',
  body: z.object({
    instanceInfo: z.object({
      name: instanceName,
      // Text, checked as the same keys of the config file are (the document says how from their key table).
      serverAddr: given('frps address').meta(settingText('serverAddr')),
      serverPort: given('frps port').meta(settingText('serverPort')),
      auth_method: given('auth.method towards frps').meta(settingText('auth.method')),
    }),
    ...runFields,
    additionalProperties: documentedBy('FrpcAdditionalSettings').optional(),
  }),
  ok: ok('Created; bootServiceError says when its boot service could not be set up', schema('InstanceCreated')),
  errors: {
    400: 'A missing or invalid field (a name of digits only is refused: it would read as an id), an unknown runUser, or a config key frpc would refuse.',
    409: 'An instance with that name exists.',
    500: 'The config file could not be written.',
  },
});

export const importInstance = operation({
  method: 'post',
  path: '/tunnelAct/instanceMgr/import',
  tag: 'instances',
  summary: 'Create an instance from an existing frpc config file',
  description:
    "The content is read in its format (guessed when not given) and stored in frpc's current TOML, with its proxies and visitors, every key checked as the other operations check it. Nothing is created when any part is refused. Its own webServer (frpc's admin API) is kept when it is safe (a loopback address, a user and a password of 8 characters or more, no TLS, a free port), else it gives way to tunnelward's admin endpoint; a TOML file keeps its comments and layout. The message notes what was changed.",
  access: 'admin',
  body: z.object({
    name: instanceName,
    content: given('the text of an frpc config file'),
    format: z.enum(IMPORT_FORMATS).optional().describe('guessed from the content when omitted'),
    includedFiles: z
      .array(
        z
          .object({
            path: z.string().min(1).max(4096).describe('where the client read it (named in notes and messages)'),
            content: z.string().describe('its text, in TOML, YAML or JSON'),
          })
          .strict(),
      )
      .max(100)
      .optional()
      .describe(
        "the files the content's `includes` name, as the client read them (the CLI's import does): their proxies and visitors are brought into the instance's file, and `includes` is left out",
      ),
    ...runFields,
    dryRun: changeFields.dryRun,
  }),
  ok: ok('Imported (or, with dryRun, checked)', {
    oneOf: [schema('InstanceImported'), schema('InstanceImportChecked')],
  }),
  errors: {
    400: 'A missing field, content that does not parse, or something in it that cannot be represented (the message names it).',
    409: 'An instance with that name exists, or a proxy would clash with one of another instance on the same server.',
  },
});

export const deleteInstance = operation({
  method: 'post',
  path: '/tunnelAct/instanceMgr/delete',
  tag: 'instances',
  summary: 'Stop an instance (or several) and remove its config file and record (and its log, with purge)',
  description:
    'With instanceIDs each instance is deleted on its own and the reply says how each went; one failing is that instance’s, not the request’s. There is no all form.',
  access: 'admin',
  instanceAccess: 'delete',
  body: targets(['instanceID', 'instanceIDs']).and(
    z.object({ purge: z.boolean().optional().describe('remove their logs too (default false: the logs are kept)') }),
  ),
  ok: ok('Deleted', { oneOf: [schema('InstanceDeleted'), schema('BulkCommandResult')] }),
  errors: {
    400: `${BAD_ID} Or both forms, or all.`,
    404: `${NO_INSTANCE} (With instanceIDs, an unknown id is a failed result instead.)`,
    500: 'Its tunnel could not be stopped.',
  },
});

/** One kind of modify request: its type, and what modifiedData holds for it. */
const modification = <Type extends string, Data extends z.ZodType>(type: Type, modifiedData: Data) =>
  z.object({ instanceID: idField, type: z.literal(type), modifiedData });

export const modifyInstance = operation({
  method: 'post',
  path: '/tunnelAct/instanceMgr/modify',
  tag: 'instances',
  summary: "Change an instance's config file, record or environment",
  description:
    'configFile changes top-level frpc keys (a running tunnel is restarted to apply them); systemConfig changes name, bootAtStart, runUser, probes (and the boot service: a failure still succeeds, with bootServiceError) and expires; environment sets write-only variables; labels sets (a string) or removes (null) labels.',
  access: 'admin',
  instanceAccess: 'change',
  body: z
    .discriminatedUnion('type', [
      modification('configFile', frpcSettings).extend(changeFields),
      modification(
        'systemConfig',
        z.strictObject({
          name: z.string().optional().meta(schema('InstanceName')),
          bootAtStart: z.boolean().optional(),
          runUser: z.string().optional().describe('operating-system user the tunnel runs as'),
          expires: expiresValue.optional(),
          probes: z
            .boolean()
            .optional()
            .describe(
              'probe its proxies end to end while it runs (through its server and directly, every Probe.IntervalSecs; off by default)',
            ),
          policy: instancePolicy.optional(),
        }),
      ),
      modification(
        'environment',
        z
          .record(z.string(), z.string({ error: 'must be a string, or null' }).nullable())
          .refine((changes) => Object.keys(changes).length > 0, 'must name at least one variable')
          .meta({
            ...ENVIRONMENT_CHANGES,
            description:
              'environment variable NAME to its value (write-only), or null to remove it; the config file reads them as {{ .Envs.NAME }}. The names the tunnel runner sets and those the dynamic loader reads are refused.',
          }),
      ).extend({ dryRun: changeFields.dryRun }),
      modification(
        'labels',
        z
          .record(
            // The rules are checked by checkLabels, whose messages say which part of a key is wrong.
            z.string().meta({ pattern: LABEL_KEY_PATTERN, maxLength: 317, ...NOT_RESERVED }),
            z.string().meta({ pattern: LABEL_VALUE_PATTERN }).nullable(),
          )
          .describe('label key to its new value, or null to remove it (the Labels rules); the others stay as they are'),
      ),
    ])
    .describe('One of four kinds of change, chosen by type.'),
  ok: ok('Modified', schema('InstanceModified')),
  errors: {
    400: 'An invalid field, an unknown type or key, or a value frpc would refuse.',
    404: NO_INSTANCE,
    409: 'The new name is taken, or a proxy would clash with one of another instance on the same server.',
    502: APPLY_FAILED,
  },
});

export const replaceConfig = operation({
  method: 'post',
  path: '/tunnelAct/instanceMgr/replaceConfig',
  tag: 'instances',
  summary: "Replace an instance's whole config file",
  description:
    "Every key, the rules between keys, every proxy and visitor are checked as the other edits check them, and what the proxies hold on their server against the other instances; the file is written atomically. tunnelward's admin endpoint (webServer) is kept whatever the text says (a note says so). A running tunnel applies a change of proxies or visitors by frpc reload (rolled back with a 400 if frpc refuses it) and a change of top-level settings by a restart; applied says which.",
  access: 'admin',
  instanceAccess: 'change',
  body: z.object({
    instanceID: idField,
    content: z
      .string({ error: 'is required: the whole config file, as TOML' })
      .describe(
        "the whole config file as TOML (an export, edited); a secret left as ******** keeps its value, and webServer stays tunnelward's",
      ),
    baseVersion: z
      .string()
      .optional()
      .describe('the version the edit started from (export gives it): a file changed since then is a 409'),
    ...changeFields,
  }),
  ok: ok('Replaced (or unchanged): the diff and how it was applied', schema('InstanceConfigReplaced')),
  errors: {
    400: 'content missing or not TOML, a key or value frpc would refuse (every problem named), or frpc refused the reload.',
    404: NO_INSTANCE,
    409: 'The file changed since baseVersion, or a proxy would clash with one of this or another instance on the same server.',
    502: APPLY_FAILED,
  },
});

const COMMANDS = ['start', 'stop', 'restart'] as const;

const commandOperation = (command: (typeof COMMANDS)[number]) =>
  operation({
    method: 'post',
    path: `/tunnelAct/instanceMgr/${command}`,
    tag: 'instances',
    summary: `${command[0]!.toUpperCase()}${command.slice(1)} one instance, several, or all`,
    description:
      'Replies once the outcome is known. With instanceIDs or all, each instance gets its own command and the reply says how each went; one failing is that instance’s, not the request’s.',
    access: 'admin',
    instanceAccess: 'operate',
    body: targets(FORMS),
    ok: ok(`${command}: the outcome`, schema('CommandOutcome')),
    errors: {
      400: 'More than one of instanceID, instanceIDs, all; an invalid id; or a config file that cannot start (its runUser cannot reach or read it, a placeholder with no variable).',
      404: `${NO_INSTANCE} (In the many-instance forms, an unknown id is a failed result instead.)`,
      409: 'The state refuses the command (starting a running instance, or another command in progress), or TunnelPath is not a program tunnelward may run.',
      500: 'tunnelward could not carry the command out (a spawn refused, a process that survived SIGKILL).',
      502: 'The tunnel exited before its start was confirmed: the message says how (exit code, signal, last log lines) and what follows, as for any exit: retried after a backoff, failed (a no-retry exit code, or the start limit), or stopped (the watchdog is off).',
    },
  });

export const commandOperations = {
  start: commandOperation('start'),
  stop: commandOperation('stop'),
  restart: commandOperation('restart'),
};

export const instanceStatus = operation({
  method: 'get',
  path: '/tunnelAct/instanceMgr/status',
  tag: 'instances',
  summary: "An instance's state and process",
  access: 'visitor',
  query: instanceQuery,
  ok: ok('Its status', schema('InstanceStatus')),
  errors: { 400: BAD_ID, 404: NO_INSTANCE },
});

export const listInstances = operation({
  method: 'get',
  path: '/tunnelAct/instanceMgr/list',
  tag: 'instances',
  summary: "Every user's instances",
  access: 'visitor',
  ok: ok('Every instance', arrayOf(schema('InstanceSummary'))),
});

export const instanceInfo = operation({
  method: 'get',
  path: '/tunnelAct/instanceMgr/getInfo',
  tag: 'instances',
  summary: "An instance's record and server",
  description: 'serverAddr, serverPort and environment are shown to admins and superusers only.',
  access: 'visitor',
  query: instanceQuery,
  ok: ok('Its details', schema('InstanceInfo')),
  errors: { 400: BAD_ID, 404: NO_INSTANCE, 409: CONFIG_MISSING },
});

export const exportInstance = operation({
  method: 'get',
  path: '/tunnelAct/instanceMgr/export',
  tag: 'instances',
  summary: "An instance's config file, as TOML",
  description:
    'Secrets are shown as ******** unless the caller is a superuser (masked says which). A visitor may export only while Visitor.ShowDetails shows details, and without serverAddr and serverPort (as getInfo).',
  access: 'visitor',
  query: instanceQuery,
  ok: ok('The config file', schema('InstanceExport')),
  errors: {
    400: BAD_ID,
    403: 'A visitor, while Visitor.ShowDetails hides details.',
    404: NO_INSTANCE,
    409: CONFIG_MISSING,
  },
});

export const instanceHistory = operation({
  method: 'get',
  path: '/tunnelAct/instanceMgr/history',
  tag: 'instances',
  summary: "An instance's revisions, newest first",
  description:
    'Every committed change of the config file is a revision: who, when, what was asked (names and keys, never a value), the plan and how it went. Revisions.Keep bounds how many are kept.',
  access: 'visitor',
  query: instanceQuery.extend({
    limit: z.coerce
      .number({ error: 'must be a number' })
      .int('must be a whole number')
      .min(1, 'must be 1 to 1000')
      .max(1000, 'must be 1 to 1000')
      .optional()
      .describe('at most this many (default 50)'),
    before: idParam('only revisions older than this one (paging)').optional(),
  }),
  ok: ok('Its revisions', schema('RevisionList')),
  errors: { 400: BAD_ID, 404: NO_INSTANCE },
});

export const showRevision = operation({
  method: 'get',
  path: '/tunnelAct/instanceMgr/revision',
  tag: 'instances',
  summary: 'One revision of an instance, with its file',
  description:
    'Secrets are shown as ******** unless the caller is a superuser. A visitor may read it only while Visitor.ShowDetails shows details.',
  access: 'visitor',
  query: instanceQuery.extend({ revision: idParam('the revision') }),
  ok: ok('The revision', schema('RevisionShown')),
  errors: {
    400: `${BAD_ID} Or revision missing.`,
    403: 'A visitor, while Visitor.ShowDetails hides details.',
    404: 'No such instance or revision.',
  },
});

export const diffRevisions = operation({
  method: 'get',
  path: '/tunnelAct/instanceMgr/diff',
  tag: 'instances',
  summary: 'The unified diff between two revisions, or from one to the live file',
  description:
    'Secrets are masked unless the caller is a superuser. Without to, the diff runs to the file as it is on disk now.',
  access: 'visitor',
  query: instanceQuery.extend({
    from: idParam('the older side'),
    to: idParam('the newer side (default: the live file)').optional(),
  }),
  ok: ok('The diff', schema('RevisionDiff')),
  errors: {
    400: `${BAD_ID} Or from missing.`,
    403: 'A visitor, while Visitor.ShowDetails hides details.',
    404: 'No such instance or revision.',
  },
});

export const rollbackInstance = operation({
  method: 'post',
  path: '/tunnelAct/instanceMgr/rollback',
  tag: 'instances',
  summary: "Put an instance's config file back as a revision had it",
  description:
    "A change like any other: checked, verified by frpc, applied by a reload or a restart as the difference needs, and a new revision. tunnelward's admin endpoint stays as it is.",
  access: 'admin',
  instanceAccess: 'change',
  body: z.object({ instanceID: idField, revision: idField.describe('the revision to go back to'), ...changeFields }),
  ok: ok('Rolled back (or unchanged, or checked)', schema('InstanceConfigReplaced')),
  errors: {
    400: `${BAD_ID} Or revision missing, or frpc refused the file.`,
    404: 'No such instance or revision.',
    409: 'baseRevision is not the current revision, or a proxy would clash with one of another instance.',
    502: 'The tunnel did not come up with the file: it was put back as it was.',
  },
});

export const operations = [
  createInstance,
  importInstance,
  deleteInstance,
  modifyInstance,
  replaceConfig,
  ...Object.values(commandOperations),
  instanceStatus,
  listInstances,
  instanceInfo,
  exportInstance,
  instanceHistory,
  showRevision,
  diffRevisions,
  rollbackInstance,
];

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
  // The tunnel exited before it was up: nothing failed in tunnelward, which supervises the exit as any other.
  if (done.then) throw new AppError(502, `instance ${id} is not up: ${done.message}`);
  throw new AppError(500, `instance ${id} could not ${command}: ${done.message}`);
}

/** /tunnelAct/instanceMgr/*: changes need an admin, reading any authenticated user. */
export function instanceRoutes({ supervisor, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('/tunnelAct/instanceMgr', guards);

  router.route(createInstance, async (ctx, { body: fields }) => {
    const { instanceInfo: info } = fields;
    const { record, bootServiceError, notes } = await supervisor.create(
      {
        name: info.name,
        serverAddr: info.serverAddr,
        serverPort: info.serverPort,
        authMethod: info.auth_method,
        bootAtStart: fields.bootAtStart ?? false,
        runUser: fields.runUser || 'root',
        additional: fields.additionalProperties ?? {},
        labels: optionalLabels(fields.labels),
        expires: fields.expires,
      },
      ctx.state.auth.user,
      authorOf(ctx.state.auth),
    );
    reply(
      ctx,
      `instance ${record.name} created${bootServiceError ? ', but its boot service could not be set up' : ''}${
        notes.length > 0 ? `; ${notes.join('; ')}` : ''
      }`,
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
  router.route(importInstance, async (ctx, { body: fields }) => {
    const input = {
      name: fields.name,
      content: fields.content,
      format: fields.format,
      includedFiles: fields.includedFiles,
      bootAtStart: fields.bootAtStart ?? false,
      runUser: fields.runUser || 'root',
      labels: optionalLabels(fields.labels),
      expires: fields.expires,
    };
    if (fields.dryRun) {
      const checked = await supervisor.checkImport(input);
      const notes = checked.notes.length > 0 ? `; ${checked.notes.join('; ')}` : '';
      const verified =
        'skipped' in checked.verify ? `not verified by frpc (${checked.verify.skipped})` : 'frpc verify accepts it';
      reply(
        ctx,
        `dry run, nothing created: ${fields.name} would be imported from ${checked.format}: ${checked.proxyCount} proxies, ${checked.visitorCount} visitors; ${verified}${notes}`,
        {
          name: fields.name,
          format: checked.format,
          proxyCount: checked.proxyCount,
          visitorCount: checked.visitorCount,
          notes: checked.notes,
          dryRun: true as const,
          verify:
            'skipped' in checked.verify ? { verified: false, skipped: checked.verify.skipped } : { verified: true },
        },
      );
      return;
    }
    const done = await supervisor.importConfig(input, ctx.state.auth.user, authorOf(ctx.state.auth));
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
  router.route(exportInstance, async (ctx, { query }) => {
    const record = supervisor.record(query.instanceID);
    const type = ctx.state.auth.user.type;
    if (seesOnlyGuestView(ctx.state.exposure, type)) {
      throw forbidden('a visitor cannot export config files on this server (Visitor.ShowDetails)');
    }
    const masked = secretsMasked(ctx, supervisor, query.instanceID);
    const withServer = hasRole(type, 'admin');
    const config = await supervisor.readConfig(record.id);
    const content = config.exportText(masked, withServer);
    const what = `config file of instance ${record.name}${masked ? ', secrets masked' : ''}${withServer ? '' : ', without its server'}`;
    const data = {
      instanceID: record.id,
      name: record.name,
      format: 'toml',
      content,
      masked,
      version: config.version(),
      revision: record.revision,
    };
    // Unmasked, the secrets are what a superuser asked for.
    replyMasked(ctx, masked, what, data);
  });

  // The whole config file replaced by an operator's text (an export, edited): checked as every edit is, applied as
  // proxy edits (reload) or top-level ones (restart) are; with baseVersion, refused when the file changed meanwhile.
  router.route(replaceConfig, async (ctx, { body: fields }) => {
    const { instanceID: id, content } = fields;
    const done = await supervisor.replaceConfig(id, content, changeOptions(ctx, fields));
    reply(
      ctx,
      `config file of instance ${done.record.name} ${done.applied === 'unchanged' ? 'unchanged' : done.applied === 'not applied' ? 'checked' : 'replaced'}; ${changeHow(done)}`,
      {
        instanceID: done.record.id,
        configPath: done.record.configPath,
        changed: done.applied !== 'unchanged',
        version: done.version,
        ...changeData(done),
      },
    );
  });

  // One instance, or many (`instanceIDs: [...]`; never `all`): each delete is answered on its own, as the commands.
  // The log stays (for whoever wants to know what the tunnel did) unless purge is true.
  router.route(deleteInstance, async (ctx, { body }) => {
    const purge = body.purge ?? false;
    const kept = purge ? '' : '; its log is kept (purge removes it)';
    const ids = body.instanceIDs && [...new Set(body.instanceIDs)];
    if (!ids) {
      const record = await supervisor.remove(body.instanceID!, ctx.state.auth.user, { purgeLog: purge });
      reply(ctx, `instance ${record.name} deleted${purge ? ', its log too' : kept}`, {
        instanceID: record.id,
        name: record.name,
        logKept: !purge,
      });
      return;
    }
    const results = await Promise.all(
      ids.map(async (id): Promise<CommandResult> => {
        const name = supervisor.nameOf(id) || null;
        try {
          await supervisor.remove(id, ctx.state.auth.user, { purgeLog: purge });
          const message = `deleted${purge ? ', its log too' : kept}`;
          return { instanceID: id, name, ok: true, state: null, unchanged: false, message };
        } catch (err) {
          const state = supervisor.exists(id) ? supervisor.stateOf(id) : null;
          return { instanceID: id, name, ok: false, state, unchanged: false, message: (err as Error).message };
        }
      }),
    );
    replyMany(ctx, 'delete', results);
  });

  router.route(modifyInstance, async (ctx, { body: fields }) => {
    const { instanceID: id, type, modifiedData: data } = fields;
    if (type === 'configFile') {
      const done = await supervisor.modifyConfig(id, data, changeOptions(ctx, fields));
      const what = done.applied === 'not applied' ? 'checked' : done.applied === 'unchanged' ? 'unchanged' : 'modified';
      reply(ctx, `config file of instance ${done.record.name} ${what}; ${changeHow(done)}`, {
        instanceID: done.record.id,
        configPath: done.record.configPath,
        ...changeData(done),
      });
    } else if (type === 'systemConfig') {
      const { record, bootServiceError } = await supervisor.modifySystem(
        id,
        data,
        ctx.state.auth.user,
        authorOf(ctx.state.auth),
      );
      reply(
        ctx,
        `instance ${record.name} modified${bootServiceError ? ', but its boot service could not be changed' : ''}${
          data.expires === undefined
            ? ''
            : record.expiresAt === null
              ? '; it does not expire'
              : `; it expires at ${formatIso(record.expiresAt)}`
        }`,
        {
          instanceID: record.id,
          configPath: record.configPath,
          bootAtStart: record.bootAtStart,
          runUser: record.runUser,
          // Said when asked about: null, it does not expire.
          ...(data.expires !== undefined
            ? { expiresAt: record.expiresAt === null ? null : formatIso(record.expiresAt) }
            : {}),
          probes: record.probes,
          policy: record.policy,
          ...(bootServiceError ? { bootServiceError, instanceName: record.name } : {}),
        },
      );
    } else if (type === 'environment') {
      const dryRun = 'dryRun' in fields && fields.dryRun === true;
      const record = await supervisor.modifyEnvironment(
        id,
        data,
        ctx.state.auth.user,
        authorOf(ctx.state.auth),
        dryRun,
      );
      const what = dryRun ? 'checked; dry run, nothing changed' : 'changed; it applies at the next start';
      reply(ctx, `environment of instance ${record.name} ${what}`, {
        instanceID: record.id,
        environment: supervisor.environment(id),
        ...(dryRun ? { dryRun: true } : {}),
      });
    } else if (type === 'labels') {
      const record = await supervisor.modifyLabels(id, checkLabels(data, 'modifiedData', true), ctx.state.auth.user);
      reply(ctx, `labels of instance ${record.name} changed`, { instanceID: record.id, labels: record.labels });
    }
  });

  // One instance (`instanceID`, the contract's form), or many: `instanceIDs: [...]` or `all: true`.
  for (const command of COMMANDS) {
    router.route(commandOperations[command], async (ctx, { body }) => {
      // Repeated ids count once, in the order first given.
      const ids = body.all
        ? supervisor.views().map((v) => v.record.id)
        : body.instanceIDs && [...new Set(body.instanceIDs)];
      if (!ids) {
        reply(ctx, await commandOutcome(supervisor, body.instanceID!, command), {});
        return;
      }
      replyMany(ctx, command, await supervisor.commandMany(ids, command));
    });
  }

  router.route(instanceStatus, async (ctx, { query }) => {
    const view = supervisor.view(query.instanceID);
    reply(ctx, `instance ${view.record.name} is ${view.state}`, {
      name: view.record.name,
      initSystem: supervisor.initSystem,
      ...(process.platform !== 'win32' ? { serviceName: serviceNameOf(view.record.id) } : {}),
      isRunning: isRunning(view),
      state: view.state,
      queued: supervisor.queuedOf(view.record.id),
      revision: view.record.revision,
      ...expiryFields(view.record),
      ...processFields(view),
      ...supervisor.statusFields(view.record.id),
    });
  });

  // The list is what UIs poll: the supervisor keeps it as JSON until something it shows changes.
  router.route(listInstances, async (ctx) => {
    const { json, count } = supervisor.listJson();
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = `{"success":true,"message":"${count} instances","data":${json}}`;
  });

  router.route(instanceInfo, async (ctx, { query }) => {
    const view = supervisor.view(query.instanceID);
    const config = await supervisor.readConfig(view.record.id);
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
      probes: view.record.probes,
      policy: view.record.policy,
      labels: view.record.labels,
      revision: view.record.revision,
      ...expiryFields(view.record),
      // What the caller may do to it (see may): what a UI offers.
      access: {
        operate: supervisor.may(view.record.id, ctx.state.auth.user, 'operate'),
        change: supervisor.may(view.record.id, ctx.state.auth.user, 'change'),
        secrets: supervisor.may(view.record.id, ctx.state.auth.user, 'secrets'),
        logs: supervisor.may(view.record.id, ctx.state.auth.user, 'logs'),
      },
      // A guest is not shown which local account runs it or where its file is.
      ...(guest ? {} : { runUser: view.record.runUser, configPath: view.record.configPath }),
      state: view.state,
      ...processFields(view),
      ...supervisor.statusFields(view.record.id),
      ...(privileged
        ? {
            serverAddr: config.serverAddr,
            serverPort: config.serverPort,
            environment: supervisor.environment(view.record.id),
          }
        : {}),
    });
  });

  router.route(instanceHistory, async (ctx, { query }) => {
    const id = query.instanceID;
    const { revisions, total, current } = supervisor.history(id, query.limit ?? 50, query.before);
    reply(
      ctx,
      `${revisions.length} of ${total} revisions of instance ${supervisor.nameOf(id)}; it is at revision ${current}`,
      {
        instanceID: id,
        current,
        total,
        revisions: revisions.map(revisionData),
      },
    );
  });

  router.route(showRevision, async (ctx, { query }) => {
    const masked = readableFile(ctx, supervisor, query.instanceID);
    const shown = await supervisor.revision(query.instanceID, query.revision, masked);
    const data = { ...revisionData(shown), instanceID: query.instanceID, content: shown.content, masked };
    const what = `revision ${shown.number} of instance ${supervisor.nameOf(query.instanceID)}${masked ? ', secrets masked' : ''}`;
    replyMasked(ctx, masked, what, data);
  });

  router.route(diffRevisions, async (ctx, { query }) => {
    const masked = readableFile(ctx, supervisor, query.instanceID);
    const { diff, from, to } = await supervisor.diff(query.instanceID, query.from, query.to, masked);
    const what = `revision ${from} to ${to === 'live' ? 'the live file' : `revision ${to}`}: ${diff === '' ? 'the same' : 'they differ'}`;
    const data = { instanceID: query.instanceID, from, to, diff, masked };
    replyMasked(ctx, masked, what, data);
  });

  router.route(rollbackInstance, async (ctx, { body }) => {
    const done = await supervisor.rollback(body.instanceID, body.revision, changeOptions(ctx, body));
    const what =
      done.applied === 'unchanged'
        ? `already as revision ${body.revision} had it`
        : done.applied === 'not applied'
          ? `checked against revision ${body.revision}`
          : `rolled back to revision ${body.revision}`;
    reply(ctx, `config file of instance ${done.record.name} ${what}; ${changeHow(done)}`, {
      instanceID: done.record.id,
      configPath: done.record.configPath,
      changed: done.applied !== 'unchanged',
      version: done.version,
      ...changeData(done),
    });
  });

  return router;
}

/** A revision as the API shows it. */
function revisionData(revision: {
  number: number;
  at: number;
  by: { username: string; apiKey?: string };
  kind: string;
  request: Record<string, unknown>;
  plan: string;
  reason: string;
  outcome: string;
  version: string;
  current: boolean;
}) {
  return {
    revision: revision.number,
    at: formatIso(revision.at),
    by: revision.by.username,
    ...(revision.by.apiKey !== undefined ? { apiKey: revision.by.apiKey } : {}),
    kind: revision.kind,
    request: revision.request,
    plan: revision.plan,
    reason: revision.reason,
    outcome: revision.outcome,
    version: revision.version,
    current: revision.current,
  };
}
