import { HEALTH_STATES } from '../instances/health.js';
import type { HealthCounts } from '../instances/health-counts.js';
import { durationMs } from '../util/duration.js';
import { WorkLimiter } from '../util/work-limiter.js';
import { ApiClient, type DataOf } from './api.js';
import { countFlag, flag } from './args.js';
import { print, type Command, type Context } from './command.js';
import type { NamedContext } from './credentials.js';
import { CliError, EXIT, usageError, type ExitCode } from './errors.js';
import { ID_FLAG, LABEL_FLAG, labelSelector, listInstances, resolveIn, type Listed } from './instance-refs.js';
import { instanceCells, instanceColour, instanceColumns, noteCells } from './instance-table.js';
import { HEALTH_COLOURS, shortDuration, table, type Colour } from './render.js';

/** How long a host has to answer unless --timeout says otherwise. */
export const FLEET_TIMEOUT_MS = 5000;
/** Hosts asked at once unless --concurrency says otherwise. */
export const FLEET_CONCURRENCY = 16;

/** Why a host has no answer in the table: it could not be reached (refused, timed out), refused us, or failed. */
export type HostProblem = 'unreachable' | 'unauthorised' | 'failed';

/** One context's answer, or why there is none. */
export type HostAnswer<T> =
  | { host: string; url: string; ok: true; data: T }
  | { host: string; url: string; ok: false; problem: HostProblem; reason: string };

const PROBLEMS: Partial<Record<ExitCode, HostProblem>> = {
  [EXIT.unreachable]: 'unreachable',
  [EXIT.unauthorised]: 'unauthorised',
};

/** `--timeout`: `1500ms`, `5s`, `1m`, or seconds as a number (`2.5`). */
export function timeoutMs(raw: string | undefined): number {
  if (raw === undefined) return FLEET_TIMEOUT_MS;
  const ms = /^\d{1,7}ms$/.test(raw)
    ? Number(raw.slice(0, -2))
    : /^\d{1,5}(?:\.\d{1,3})?$/.test(raw)
      ? Math.round(Number(raw) * 1000)
      : durationMs(raw);
  if (!ms) throw usageError(`--timeout takes a time above zero like 5s, 1500ms or 2.5, not ${raw}`);
  return ms;
}

/**
 * Asks every context the same question, `concurrency` at once, each within `timeout` ms; resolves with one answer
 * per context, in the order of their names. A host that fails is an answer that says why, never a failure of all.
 */
export async function askFleet<T>(
  contexts: Record<string, NamedContext>,
  credentialOf: (context: NamedContext) => Promise<string | undefined>,
  ask: (client: ApiClient) => Promise<T>,
  options: { timeoutMs: number; concurrency: number },
): Promise<Array<HostAnswer<T>>> {
  const limiter = new WorkLimiter(options.concurrency, Number.POSITIVE_INFINITY);
  const names = Object.keys(contexts).sort((a, b) => a.localeCompare(b));
  return Promise.all(
    names.map((host) =>
      limiter.run(async (): Promise<HostAnswer<T>> => {
        const context = contexts[host]!;
        const { url } = context;
        const credential = await credentialOf(context);
        if (!credential) {
          const reason = `no API key and no login for ${url} (tunnelward login --url ${url}, or context add ${host} --replace with a key)`;
          return { host, url, ok: false, problem: 'unauthorised', reason };
        }
        try {
          return { host, url, ok: true, data: await ask(new ApiClient(url, credential, options.timeoutMs)) };
        } catch (err) {
          if (!(err instanceof CliError)) throw err;
          return { host, url, ok: false, problem: PROBLEMS[err.exitCode] ?? 'failed', reason: err.message };
        }
      }),
    ),
  );
}

type Summary = DataOf<'get', '/system/summary'>;

/** `fleet ls`: the instance list with a host column first; a host without an answer is a row that says why. */
export function fleetListTable(answers: ReadonlyArray<HostAnswer<Listed[]>>, colour: boolean): string {
  const all = answers.flatMap((a) => (a.ok ? a.data : []));
  const columns = instanceColumns(
    all,
    answers.some((a) => !a.ok || a.data.length === 0),
  );
  const rows: Array<{ cells: string[]; state?: string; health?: string }> = [];
  for (const a of answers) {
    if (!a.ok) rows.push({ cells: [a.host, ...noteCells(columns, a.problem, a.reason)], state: 'failed' });
    else if (a.data.length === 0) rows.push({ cells: [a.host, ...noteCells(columns, '-', 'no instances')] });
    else
      for (const i of a.data)
        rows.push({ cells: [a.host, ...instanceCells(i, columns)], state: i.state, health: i.health?.state });
  }
  return table(
    ['host', ...columns.header],
    rows.map((r) => r.cells),
    (r, c) => instanceColour(c, rows[r]!.state, rows[r]!.health, 1),
    colour,
  );
}

const ANSWER_COLOURS: Record<string, Colour> = { ok: 'green', unreachable: 'red', unauthorised: 'red', failed: 'red' };

/** `fleet status`: a line per host, its version, uptime and tunnels by health. */
export function fleetStatusTable(answers: ReadonlyArray<HostAnswer<Summary>>, colour: boolean): string {
  const withReasons = answers.some((a) => !a.ok);
  const rows = answers.map((a) => [
    a.host,
    a.ok ? 'ok' : a.problem,
    a.ok ? a.data.version : '-',
    a.ok ? shortDuration(a.data.uptimeSecs) : '-',
    ...HEALTH_STATES.map((state) => (a.ok ? String(a.data.tunnels[state as keyof HealthCounts] ?? 0) : '-')),
    ...(withReasons ? [a.ok ? '' : a.reason] : []),
  ]);
  const header = ['host', 'daemon', 'version', 'uptime', ...HEALTH_STATES, ...(withReasons ? ['why'] : [])];
  return table(
    header,
    rows,
    (r, c) =>
      c === 1
        ? ANSWER_COLOURS[rows[r]![1]!]
        : c >= 4 && c < 4 + HEALTH_STATES.length && rows[r]![c] !== '0' && rows[r]![c] !== '-'
          ? HEALTH_COLOURS[HEALTH_STATES[c - 4]!]
          : undefined,
    colour,
  );
}

/** What a subcommand asks each host, and how the answers are shown. */
interface Question<T> {
  ask: (client: ApiClient) => Promise<T>;
  show: (answers: Array<HostAnswer<T>>, colour: boolean) => string;
  json: (a: HostAnswer<T>) => object;
}

/**
 * `fleet ls`, of every instance or of those the names, patterns and labels select on each host (an id is one
 * host's: none is taken). Selecting, a host with none of them has no row; one that did not answer still has.
 */
function listQuestion(ctx: Context): Question<Listed[]> {
  const refs = ctx.args.positional.slice(1);
  const byId = refs.find((ref) => /^#/.test(ref));
  if (byId || ctx.args.flags.has('id'))
    throw usageError(`an id is one host's (${byId ?? '--id'}): select by name, pattern or --label across hosts`);
  const labels = labelSelector(ctx.args);
  const selecting = refs.length > 0 || labels.length > 0;
  return {
    ask: async (client) => {
      const list = await listInstances(client);
      if (!selecting) return list;
      const ids = new Set(resolveIn(list, refs, [], labels).found.map((t) => t.id));
      return list.filter((i) => ids.has(i.instanceID));
    },
    show: (answers, colour) => {
      const shown = selecting ? answers.filter((a) => !a.ok || a.data.length > 0) : answers;
      return shown.length > 0 ? fleetListTable(shown, colour) : 'no instances selected on any host\n';
    },
    json: (a) => (a.ok ? { instances: a.data } : {}),
  };
}

const statusQuestion = (ctx: Context): Question<Summary> => {
  const extra = ctx.args.positional.slice(1);
  if (extra.length > 0 || ctx.args.flags.has('label') || ctx.args.flags.has('id'))
    throw usageError('fleet status takes no instance names or labels');
  return {
    ask: async (client) => (await client.get('/system/summary')).data,
    show: fleetStatusTable,
    json: (a) => (a.ok ? a.data : {}),
  };
};

async function runFleet<T>(ctx: Context, question: Question<T>): Promise<ExitCode> {
  const concurrency = countFlag(ctx.args, 'concurrency', FLEET_CONCURRENCY);
  if (concurrency === 0) throw usageError('--concurrency must be at least 1');
  const timeout = timeoutMs(flag(ctx.args, 'timeout'));
  const { contexts } = await ctx.credentials.contexts();
  if (Object.keys(contexts).length === 0)
    throw new CliError(EXIT.failed, 'no contexts to ask: tunnelward context add NAME --url URL');
  const answers = await askFleet(
    contexts,
    async (c) => c.key ?? (await ctx.credentials.login(c.url))?.token,
    question.ask,
    { timeoutMs: timeout, concurrency },
  );
  const missing = answers.filter((a) => !a.ok).length;
  if (ctx.json)
    print(
      ctx,
      answers.map((a) => ({
        host: a.host,
        url: a.url,
        answered: a.ok,
        ...(a.ok ? {} : { problem: a.problem, reason: a.reason }),
        ...question.json(a),
      })),
    );
  else {
    ctx.io.out(question.show(answers, ctx.io.colour));
    if (missing > 0) ctx.io.err(`${missing} of ${answers.length} hosts did not answer\n`);
  }
  return missing > 0 ? EXIT.unreachable : EXIT.ok;
}

export const fleet: Command = {
  usage: `fleet ls [<name|'pattern'>...] [--label KEY=VALUE]... [--timeout 5s] [--concurrency N] | fleet status [--timeout 5s] [--concurrency N]`,
  summary: `every context at once, read-only: ls lists their instances (or those the names, patterns and labels select) with a host column first, status a line per host (version, uptime, tunnels by health); each host has --timeout to answer (default ${FLEET_TIMEOUT_MS / 1000}s), ${FLEET_CONCURRENCY} are asked at a time (--concurrency); a host that does not answer is a row saying why, and the exit code is 3`,
  flags: [{ name: 'timeout', value: true }, { name: 'concurrency', value: true }, LABEL_FLAG, ID_FLAG],
  oneServer: false,
  async run(ctx) {
    const [action] = ctx.args.positional;
    const stray = ['url', 'context'].find((f) => ctx.args.flags.has(f));
    if (stray) throw usageError(`fleet asks every context: it takes no --${stray}`);
    if (action === 'ls' || action === 'list') return runFleet(ctx, listQuestion(ctx));
    if (action === 'status') return runFleet(ctx, statusQuestion(ctx));
    throw usageError('fleet ls or fleet status');
  },
};
