import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient, StreamEnd } from './api.js';
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
import { endOfStream, stopOnSignal } from './streams.js';

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
async function followOne(
  ctx: Context,
  client: ApiClient,
  path: string,
  query: Record<string, number>,
  follow: boolean,
): Promise<ExitCode> {
  const stream = client.stream(path, query, (message) => {
    const entry = message as LogEntry;
    if (ctx.json) return ctx.io.out(`${JSON.stringify(entry)}\n`);
    ctx.io.out(`${logLine(entry, ctx.io.colour)}\n`);
  });
  stopOnSignal(stream.stop);
  return endOfStream(ctx, await stream.ended, follow);
}

/**
 * The logs of several instances, each line prefixed with its instance's name (in a colour of its own on a terminal).
 * Without -f, one after the other; with -f, all at once, each on its own stream (each counts as a request against the
 * token's rate limit: a stream refused for it is opened again when the server says, the others running on meanwhile).
 */
async function followMany(
  ctx: Context,
  client: ApiClient,
  targets: readonly Target[],
  query: { lines: number; follow: number },
  follow: boolean,
): Promise<ExitCode> {
  const width = Math.max(...targets.map((t) => t.name.length));
  const stops = new Set<() => void>();
  const halt = new AbortController();
  stopOnSignal(() => {
    halt.abort();
    for (const stop of stops) stop();
  });
  const one = async (target: Target, index: number): Promise<ExitCode> => {
    const colour = INSTANCE_COLOURS[index % INSTANCE_COLOURS.length];
    const prefix = `${paint(target.name.padEnd(width), colour, ctx.io.colour)} | `;
    const onEntry = (message: unknown) => {
      const entry = message as LogEntry;
      if (ctx.json)
        return ctx.io.out(`${JSON.stringify({ instanceID: target.id, instance: target.name, ...entry })}\n`);
      ctx.io.out(`${prefix}${logLine(entry, ctx.io.colour)}\n`);
    };
    for (;;) {
      const stream = client.stream(INSTANCE_LOG, { ...query, instanceID: target.id }, onEntry);
      stops.add(stream.stop);
      let end: StreamEnd;
      try {
        end = await stream.ended;
      } catch (err) {
        if (!(err instanceof CliError)) throw err;
        if (err.status === 429 && follow && !halt.signal.aborted) {
          const wait = err.retryAfterSecs ?? 5;
          ctx.io.err(`${target.name}: ${err.message}; following it in ${wait} s\n`);
          const waited = await sleep(wait * 1000, true, { signal: halt.signal }).catch(() => false);
          if (waited) continue;
          return EXIT.ok;
        }
        ctx.io.err(`${target.name}: ${err.message}\n`);
        return err.exitCode;
      } finally {
        stops.delete(stream.stop);
      }
      return endOfStream(ctx, end, follow, `log of ${target.name}`);
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
