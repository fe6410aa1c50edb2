import { flag } from './args.js';
import { print, type Command } from './command.js';
import { change, dryRun, showDiff, DRY_RUN_FLAG } from './edit-commands.js';
import { usageError } from './errors.js';
import { ID_FLAG, oneInstance } from './instance-refs.js';
import { paint, table } from './render.js';

// The revisions of an instance's config file: what changed, when, by whom; the diff of any two; a rollback.

const HISTORY = '/tunnelAct/instanceMgr/history';

/** A revision number an argument names: `5` or `r5`. */
function revisionArg(value: string | undefined, what: string): number | undefined {
  if (value === undefined) return undefined;
  const m = /^r?(\d+)$/i.exec(value);
  if (!m || Number(m[1]) < 1) throw usageError(`${what} must be a revision number (as history shows it), not ${value}`);
  return Number(m[1]);
}

const history: Command = {
  usage: 'history <name|#id> [--limit N]',
  summary: "the revisions of the instance's config file, newest first: who changed what, how it was applied",
  flags: [ID_FLAG, { name: 'limit', value: true }],
  async run(ctx) {
    const client = await ctx.client();
    const { target, rest } = await oneInstance(client, ctx.args);
    if (rest.length > 0) throw usageError(`history takes one instance, not ${rest.join(' ')}`);
    const limit = flag(ctx.args, 'limit');
    if (limit !== undefined && !/^\d+$/.test(limit)) throw usageError('--limit must be a number');
    const { data } = await client.get(HISTORY, { instanceID: target.id, ...(limit ? { limit: Number(limit) } : {}) });
    if (ctx.json) {
      print(ctx, data);
      return;
    }
    const rows = data.revisions.map((r) => [
      `${r.current ? '*' : ' '}${r.revision}`,
      r.at.replace('T', ' ').replace(/\.\d+Z$/, ''),
      r.apiKey ? `${r.by} (key ${r.apiKey})` : r.by,
      r.kind,
      describeRequest(r.request),
      r.outcome,
    ]);
    ctx.io.out(
      table(
        ['REV', 'AT', 'BY', 'CHANGE', 'WHAT', 'APPLIED'],
        rows,
        (_row, column) => (column === 0 ? 'bold' : undefined),
        ctx.io.colour,
      ),
    );
    ctx.io.out(
      `${target.name} is at revision ${data.current} (${paint('*', 'bold', ctx.io.colour)}); ${data.revisions.length} of ${data.total} kept shown\n`,
    );
  },
};

/** What a revision's request names, in one short cell. */
function describeRequest(request: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(request)) {
    if (Array.isArray(value)) {
      if (value.length > 0) parts.push(`${key}=${value.join(',')}`);
    } else if (value !== null && typeof value === 'object') continue;
    else parts.push(`${key}=${String(value)}`);
  }
  return parts.join(' ').slice(0, 60);
}

const diff: Command = {
  usage: 'diff <name|#id> [R1] [R2]',
  summary:
    'the unified diff of the config file: what the last change did (no R), from revision R1 to the live file, or from R1 to R2; secrets masked unless you are a superuser',
  flags: [ID_FLAG],
  async run(ctx) {
    const client = await ctx.client();
    const { target, rest } = await oneInstance(client, ctx.args);
    if (rest.length > 2) throw usageError('diff takes at most two revisions');
    let from = revisionArg(rest[0], 'R1');
    let to = revisionArg(rest[1], 'R2');
    if (from === undefined) {
      const { data } = await client.get(HISTORY, { instanceID: target.id, limit: 2 });
      const [last, before] = data.revisions;
      if (!last || !before) {
        ctx.io.out(`${target.name} has ${last ? 'one revision' : 'no revision'} yet: nothing to compare\n`);
        return;
      }
      [from, to] = [before.revision, last.revision];
    }
    const { data } = await client.get('/tunnelAct/instanceMgr/diff', {
      instanceID: target.id,
      from,
      ...(to !== undefined ? { to } : {}),
    });
    if (ctx.json) print(ctx, data);
    else if (data.diff === '')
      ctx.io.out(`revision ${from} and ${to === undefined ? 'the live file' : `revision ${to}`} are the same\n`);
    else showDiff(ctx, data.diff);
  },
};

const rollback: Command = {
  usage: 'rollback <name|#id> R [--dry-run]',
  summary:
    'put the config file back as revision R had it: checked, verified and applied (reload or restart) like any change, as a new revision',
  flags: [ID_FLAG, DRY_RUN_FLAG],
  async run(ctx) {
    const client = await ctx.client();
    const { target, rest } = await oneInstance(client, ctx.args);
    if (rest.length !== 1) throw usageError('rollback needs the revision to go back to (history lists them)');
    const revision = revisionArg(rest[0], 'R')!;
    return change(ctx, target, () =>
      client.post('/tunnelAct/instanceMgr/rollback', {
        instanceID: String(target.id),
        revision,
        ...dryRun(ctx.args),
      }),
    );
  },
};

export const REVISION_COMMANDS: Record<string, Command> = { history, diff, rollback };
