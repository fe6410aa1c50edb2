import { z } from 'zod';
import { hasRole } from '../../accounts/rules.js';
import { desiredInstance, desiredInstances } from '../../config/desired-state.js';
import { ENVIRONMENT_CHANGES } from '../../instances/instance-env.js';
import { authorOf } from '../auth.js';
import { reply, replyWithSecrets } from '../envelope.js';
import { ok } from '../openapi-schemas.js';
import { jsonSchemaOf, operation } from '../operation.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';
import { changeFields } from './instances.js';

const OUTCOMES = ['created', 'changed', 'unchanged', 'deleted', 'failed'] as const;

/** How one instance of an apply went. */
const instanceOutcome = z.object({
  name: z.string(),
  instanceID: z.number().int().nullable().describe('null for one not created (a refusal, or a dry run)'),
  outcome: z.enum(OUTCOMES),
  message: z.string().describe('what was done, or why it was refused (then nothing of that instance changed)'),
  changes: z
    .array(z.string())
    .describe("what changed of tunnelward's own attributes, one line each; an environment variable by its name only"),
  diff: z.string().describe('unified diff of its frpc file, secrets masked; empty when the file is as it was'),
  plan: z
    .object({ action: z.enum(['none', 'file only', 'reload', 'restart']), reason: z.string() })
    .nullable()
    .describe(
      "how the file's change reached the tunnel (the change pipeline's plan); null when the file did not change",
    ),
  revision: z.number().int().nullable(),
  notes: z.array(z.string()),
});

export const applyAnswer = z
  .object({
    dryRun: z.boolean(),
    counts: z.object(
      Object.fromEntries(OUTCOMES.map((o) => [o, z.number().int()])) as Record<(typeof OUTCOMES)[number], z.ZodNumber>,
    ),
    instances: z.array(instanceOutcome),
  })
  .meta({ id: 'ApplyAnswer' });

export const applyDesiredState = operation({
  method: 'post',
  path: '/tunnelAct/instanceMgr/apply',
  tag: 'instances',
  summary: 'Converge the instances to a desired state',
  description:
    'Each instance named is created when missing, changed where it differs (its file through the change pipeline: checked, verified by frpc, a revision, applied by a reload or a restart; its record as modify changes it), left alone when it is as asked; with prune, every other instance is deleted. Each instance is all-or-nothing and answered on its own: a refused one is left as it was and the others still converge (the reply is a 200 that counts it as failed). A second apply of the same state changes nothing. With dryRun nothing is written: the answer says what would change.',
  access: 'admin',
  body: z.object({
    instances: desiredInstances,
    environment: z
      .record(z.string(), z.string())
      .optional()
      .meta({
        ...ENVIRONMENT_CHANGES,
        description:
          "values of the environment variables the instances' env lists name (write-only: never answered, logged or shown in a diff); a variable an instance gains needs one, a value given for one it has replaces it",
      }),
    prune: z.boolean().optional().describe('delete every instance the desired state does not name (default false)'),
    dryRun: changeFields.dryRun,
  }),
  ok: ok('How each instance went', jsonSchemaOf(applyAnswer)),
  errors: { 400: 'The desired state does not fit its schema (the message names the field); nothing was done.' },
});

export const exportAll = operation({
  method: 'get',
  path: '/tunnelAct/instanceMgr/exportAll',
  tag: 'instances',
  summary: 'Every instance as a desired state (what apply takes)',
  description:
    "Each instance's frpc file (without tunnelward's admin endpoint, and without its clientID where it is the default) and its attributes. A superuser gets the secrets as the files hold them; for anyone else each secret that is not already a {{ .Envs.NAME }} reference is replaced by one, named in the instance's env and in unexported, so that a mask is never applied as if it were the secret.",
  access: 'admin',
  ok: ok(
    'The desired state',
    jsonSchemaOf(
      z.object({
        instances: z.array(desiredInstance),
        masked: z.boolean().describe('whether secrets were replaced by references'),
        unexported: z
          .record(z.string(), z.array(z.string()))
          .describe(
            'by instance, the variables made for the secrets that were not exported; their values must be given to apply',
          ),
      }),
    ),
  ),
});

export const operations = [applyDesiredState, exportAll];

/** /tunnelAct/instanceMgr/apply and exportAll: the desired state of the whole host. */
export function applyRoutes({ supervisor, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('/tunnelAct/instanceMgr', guards);

  router.route(applyDesiredState, async (ctx, { body }) => {
    const done = await supervisor.desired.apply({
      instances: body.instances,
      environment: body.environment ?? {},
      prune: body.prune ?? false,
      dryRun: body.dryRun ?? false,
      as: ctx.state.auth.user,
      by: authorOf(ctx.state.auth),
    });
    const counts = OUTCOMES.map((o) => `${done.counts[o]} ${o}`).join(', ');
    reply(ctx, `${done.dryRun ? 'dry run, nothing written: ' : ''}${counts}`, done);
  });

  router.route(exportAll, async (ctx) => {
    const masked = !hasRole(ctx.state.auth.user.type, 'superuser');
    const instances = [];
    const unexported: Record<string, string[]> = {};
    for (const record of supervisor.allRecords().sort((a, b) => a.id - b.id)) {
      const done = await supervisor.desired.exportOf(record, masked);
      instances.push(done.instance);
      if (done.unexported.length > 0) unexported[record.name] = done.unexported;
    }
    const data = { instances, masked, unexported };
    const what = `${instances.length} instances${masked ? ', secrets replaced by {{ .Envs.NAME }} references' : ''}`;
    // Unmasked, the secrets are what a superuser asked for.
    if (masked) reply(ctx, what, data);
    else replyWithSecrets(ctx, what, data);
  });

  return router;
}
