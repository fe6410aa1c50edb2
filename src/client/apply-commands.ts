import { readFile } from 'node:fs/promises';
import { dirname, extname, resolve } from 'node:path';
import {
  DESIRED_FORMATS,
  readDesiredState,
  writeDesiredState,
  type DesiredFormat,
  type DesiredInstance,
} from '../config/desired-state.js';
import { readConfigText } from '../config/import-formats.js';
import { AppError } from '../errors.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { flag, has } from './args.js';
import { outcomeLine, print, type Command } from './command.js';
import { DRY_RUN_FLAG } from './edit-commands.js';
import { CliError, EXIT, usageError } from './errors.js';

const FILE_FORMATS: Record<string, DesiredFormat> = { '.yaml': 'yaml', '.yml': 'yaml', '.toml': 'toml' };

const formatFlag = (value: string | undefined): DesiredFormat | undefined => {
  if (value === undefined) return undefined;
  if (!(DESIRED_FORMATS as readonly string[]).includes(value))
    throw usageError(`--format must be ${DESIRED_FORMATS.join(' or ')}`);
  return value as DesiredFormat;
};

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new CliError(EXIT.failed, `cannot read ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

/** A refusal of the file's reading, as the CLI ends with it. */
const refused = (err: unknown): never => {
  if (err instanceof AppError) throw new CliError(EXIT.failed, err.message);
  throw err;
};

/**
 * The desired-state file as the apply sends it: each `configFile` read (relative to the file) into the instance's
 * frpc tree, in the formats an import reads.
 */
export async function readDesiredFile(path: string, format?: DesiredFormat): Promise<DesiredInstance[]> {
  const text = await readText(path, 'the desired-state file');
  const file = await Promise.resolve()
    .then(() => readDesiredState(text, format ?? FILE_FORMATS[extname(path).toLowerCase()]))
    .catch(refused);
  return Promise.all(
    file.instances.map(async ({ configFile, frpc, ...instance }) => {
      if (configFile === undefined) return { ...instance, frpc: frpc! };
      const where = resolve(dirname(path), configFile);
      const read = await readConfigText(await readText(where, `the config file of ${instance.name}`)).catch(
        (err: unknown) => refused(new AppError(400, `${instance.name}: ${where}: ${(err as Error).message}`)),
      );
      return { ...instance, frpc: read.tree };
    }),
  );
}

/** The values of the variables the instances name, from the CLI's own environment (those it has). */
function environmentOf(instances: DesiredInstance[]): Record<string, string> {
  const names = new Set(instances.flatMap((i) => i.env ?? []));
  return Object.fromEntries([...names].filter((n) => process.env[n] !== undefined).map((n) => [n, process.env[n]!]));
}

const apply: Command = {
  usage: 'apply -f FILE [--format yaml|toml] [--dry-run] [--diff] [--prune]',
  summary:
    "converges the instances to a desired-state file (see docs/apply.md): creates the missing, changes what differs, leaves the rest; --prune deletes those the file does not name; --diff shows each change; exit 1 when an instance was refused. The env values the file's instances name come from this environment",
  flags: [
    { name: 'file', short: 'f', value: true },
    { name: 'format', value: true },
    DRY_RUN_FLAG,
    { name: 'diff' },
    { name: 'prune' },
  ],
  async run(ctx) {
    const file = flag(ctx.args, 'file');
    if (!file || ctx.args.positional.length > 0) throw usageError('apply takes -f FILE');
    const instances = await readDesiredFile(file, formatFlag(flag(ctx.args, 'format')));
    const client = await ctx.client();
    const { message, data } = await client.post('/tunnelAct/instanceMgr/apply', {
      instances,
      environment: environmentOf(instances),
      ...(has(ctx.args, 'prune') ? { prune: true } : {}),
      ...(has(ctx.args, 'dry-run') ? { dryRun: true } : {}),
    });
    if (ctx.json) print(ctx, data);
    else {
      const showDiff = has(ctx.args, 'diff');
      for (const done of data.instances) {
        if (done.outcome === 'unchanged' && !showDiff) continue;
        const plan = done.plan ? ` [${done.plan.action}]` : '';
        outcomeLine(ctx, done.outcome !== 'failed', `${done.outcome.padEnd(9)} ${done.name}${plan}: ${done.message}`);
        if (!showDiff) continue;
        for (const line of done.changes) ctx.io.out(`    ${line}\n`);
        if (done.diff !== '') ctx.io.out(done.diff.replace(/^/gm, '    ').replace(/ +$/, ''));
        for (const note of done.notes) ctx.io.out(`    note: ${note}\n`);
      }
      ctx.io.out(`${message}\n`);
    }
    return data.counts.failed > 0 ? EXIT.failed : EXIT.ok;
  },
};

/** `export --all`: every instance as a desired-state file. */
export async function exportAll(ctx: Parameters<Command['run']>[0]): Promise<void> {
  const output = flag(ctx.args, 'output');
  const format =
    formatFlag(flag(ctx.args, 'format')) ??
    (output ? FILE_FORMATS[extname(output).toLowerCase()] : undefined) ??
    'yaml';
  const { data } = await (await ctx.client()).get('/tunnelAct/instanceMgr/exportAll');
  if (ctx.json) return print(ctx, data);
  const text = writeDesiredState({ instances: data.instances as DesiredInstance[] }, format);
  if (output) {
    await writeFileAtomic(output, text, { mode: 0o600 });
    ctx.io.err(`${data.instances.length} instances written to ${output}\n`);
  } else ctx.io.out(text);
  for (const [name, names] of Object.entries(data.unexported))
    ctx.io.err(
      `${name}: secrets not exported (only a superuser exports them): they read ${names.map((n) => `{{ .Envs.${n} }}`).join(', ')}; set ${names.join(', ')} in the environment of the apply\n`,
    );
}

export const APPLY_COMMANDS: Record<string, Command> = { apply };
