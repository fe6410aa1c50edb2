import type { ApiClient } from './api.js';
import { countFlag, has } from './args.js';
import type { Command, Context } from './command.js';
import { CliError, EXIT, usageError, type ExitCode } from './errors.js';
import {
  ID_FLAG,
  LABEL_FLAG,
  SELECTION_USAGE,
  listInstances,
  selected,
  selects,
  type Target,
} from './instance-refs.js';
import { INSTANCE_COLOURS, logLine, paint } from './render.js';
import { followResuming, haltOnSignal } from './streams.js';
import { runOfLogSeq } from '../log/log-entries.js';

interface LogEntry {
  level: string | number;
  content: string;
  timestamp: string;
}

const INSTANCE_LOG = '/tunnelAct/instanceMgr/logs';

export const logs: Command = {
  usage: `logs [-f] [-n N] ${SELECTION_USAGE} | --all | --system`,
  summary:
    "instance logs (the last N lines of each, then new ones with -f); of several, each line starts with its instance's name; or the daemon's own with --system",
  flags: [
    { name: 'follow', short: 'f' },
    { name: 'lines', short: 'n', value: true },
    { name: 'system' },
    { name: 'all' },
    ID_FLAG,
    LABEL_FLAG,
  ],
  async run(ctx) {
    const client = await ctx.client();
    const follow = has(ctx.args, 'follow');
    const query = { lines: countFlag(ctx.args, 'lines', 20), follow: follow ? 1 : 0 };
    const all = has(ctx.args, 'all');
    if (has(ctx.args, 'system')) {
      if (selects(ctx.args) || all) throw usageError('--system takes no instance');
      return followOne(ctx, client, '/system/getLogs', query, follow);
    }
    if (all === selects(ctx.args)) throw usageError('logs needs instance names, ids, patterns or labels, or --all');
    const list = await listInstances(client);
    if (all && list.length === 0) throw new CliError(EXIT.failed, 'there are no instances');
    const { found, unknown } = all
      ? { found: list.map((i) => ({ id: i.instanceID, name: i.name, state: i.state })), unknown: [] }
      : selected(ctx.args, list);
    for (const u of unknown) ctx.io.err(`${u.ref}: ${u.message}\n`);
    const code =
      found.length === 1 && !all && !isSelection(ctx)
        ? await followOne(ctx, client, INSTANCE_LOG, { ...query, instanceID: found[0]!.id }, follow)
        : await followMany(ctx, client, found, query, follow);
    return unknown.length > 0 && code === EXIT.ok ? EXIT.failed : code;
  },
};

/** A pattern or labels: what they select is prefixed even when it is one instance, as a script expects of them. */
const isSelection = (ctx: Context) =>
  ctx.args.flags.has('label') || ctx.args.positional.some((ref) => /[*?[]/.test(ref));

/** One log, its lines as they are (the instance's, or the daemon's). */
function followOne(
  ctx: Context,
  client: ApiClient,
  path: string,
  query: Record<string, number>,
  follow: boolean,
): Promise<ExitCode> {
  return followResuming(ctx, client, path, {
    ...resumingLog(query, follow, path === INSTANCE_LOG),
    what: 'stream',
    halt: haltOnSignal(),
    show: (entry) =>
      ctx.io.out(ctx.json ? `${JSON.stringify(entry)}\n` : `${logLine(entry as unknown as LogEntry, ctx.io.colour)}\n`),
  });
}

/**
 * How a log is followed again after a drop. An instance's lines carry their seq: it goes on after the last one
 * shown (after a restart of the daemon, with the lines of its new run); a gap is said. The daemon's own log has no
 * seq: after it restarted, all it kept of its new run; otherwise from then on.
 */
function resumingLog(query: Record<string, number>, follow: boolean, seqs: boolean) {
  let opened = false;
  return {
    follow,
    query(last: number | undefined, stopped: boolean): Record<string, number> {
      const first = !opened;
      opened = true;
      const rest = Object.fromEntries(Object.entries(query).filter(([key]) => key !== 'lines'));
      if (first) return query;
      if (last !== undefined) return { ...rest, since: last };
      if (stopped) return seqs ? { ...rest, since: 0 } : rest;
      return { ...rest, lines: 0 };
    },
    gap(last: number, seq: number): string | undefined {
      if (runOfLogSeq(seq) !== runOfLogSeq(last))
        return 'the daemon restarted; lines while it was down are not shown (they are in the log: logs -n N)';
      if (seq > last + 1) return `${seq - last - 1} lines are no longer kept`;
      return undefined;
    },
  };
}

/**
 * The logs of several instances, each line prefixed with its instance's name (in a colour of its own on a terminal).
 * Without -f, one after the other; with -f, all at once, each on its own stream (each counts as a request against the
 * token's rate limit: a stream refused for it is opened again when the server says, the others running on meanwhile),
 * each reconnected on its own after a drop.
 */
async function followMany(
  ctx: Context,
  client: ApiClient,
  targets: readonly Target[],
  query: { lines: number; follow: number },
  follow: boolean,
): Promise<ExitCode> {
  const width = Math.max(...targets.map((t) => t.name.length));
  const halt = haltOnSignal();
  const one = async (target: Target, index: number): Promise<ExitCode> => {
    const colour = INSTANCE_COLOURS[index % INSTANCE_COLOURS.length];
    const prefix = `${paint(target.name.padEnd(width), colour, ctx.io.colour)} | `;
    const show = (message: Record<string, unknown>) => {
      if (ctx.json)
        return ctx.io.out(`${JSON.stringify({ instanceID: target.id, instance: target.name, ...message })}\n`);
      ctx.io.out(`${prefix}${logLine(message as unknown as LogEntry, ctx.io.colour)}\n`);
    };
    try {
      return await followResuming(ctx, client, INSTANCE_LOG, {
        ...resumingLog({ ...query, instanceID: target.id }, follow, true),
        what: `log of ${target.name}`,
        name: target.name,
        halt,
        show,
      });
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      ctx.io.err(`${target.name}: ${err.message}\n`);
      return err.exitCode;
    }
  };
  if (!follow) {
    let worst: ExitCode = EXIT.ok;
    for (const [index, target] of targets.entries()) worst = Math.max(worst, await one(target, index)) as ExitCode;
    return worst;
  }
  const codes = await Promise.all(targets.map(one));
  return codes.find((c) => c !== EXIT.ok) ?? EXIT.ok;
}
