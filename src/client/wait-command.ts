import { setTimeout as sleep } from 'node:timers/promises';
import { durationMs } from '../util/duration.js';
import { flag, has } from './args.js';
import { outcomeLine, print, type Command } from './command.js';
import { EXIT, usageError } from './errors.js';
import {
  ID_FLAG,
  LABEL_FLAG,
  listInstances,
  selected,
  selects,
  SELECTION_USAGE,
  type Listed,
} from './instance-refs.js';

/** How often the list is read while waiting: it answers a thousand instances in a few ms. */
const POLL_MS = 500;
const DEFAULT_TIMEOUT = '60s';

/** Healths that do not become up by themselves: a wait for one of them ends at once. */
const WILL_NOT_COME_UP = new Set(['stopped', 'failed']);

const describe = (i: Listed) => `${i.name} (${i.instanceID})`;

/**
 * `wait`: until the instances are up (running, logged in to their server, every proxy running), for a deploy to
 * wait on after `start` or `apply`. Each is printed as it comes up; at the end, each that is not up with why.
 */
export const wait: Command = {
  usage: `wait ${SELECTION_USAGE} | --all [--timeout ${DEFAULT_TIMEOUT}]`,
  summary:
    'wait until each instance named or matched is up (running, logged in to its server, every proxy running), or with --all every instance not stopped on purpose; prints each as it comes up; exit 0 when all are, 1 at the timeout (default 60s) or at once when one is stopped or failed, naming each that is not up and why',
  flags: [{ name: 'all' }, { name: 'timeout', value: true }, ID_FLAG, LABEL_FLAG],
  async run(ctx) {
    const all = has(ctx.args, 'all');
    if (all === selects(ctx.args)) throw usageError('wait needs instance names, ids, patterns or labels, or --all');
    const timeout = flag(ctx.args, 'timeout') ?? DEFAULT_TIMEOUT;
    const timeoutMs = durationMs(timeout);
    if (timeoutMs === undefined) throw usageError(`--timeout ${timeout} is not a duration such as 30s, 5m or 1h30m`);
    const deadline = Date.now() + timeoutMs;
    const client = await ctx.client();
    let list = await listInstances(client);
    // --all: the instances meant to run; one stopped on purpose is not waited for.
    const { found, unknown } = all
      ? { found: list.filter((i) => i.state !== 'stopped').map((i) => ({ id: i.instanceID })), unknown: [] }
      : selected(ctx.args, list);
    for (const u of unknown) ctx.io.err(`${u.ref}: ${u.message}\n`);
    const ids = found.map((t) => t.id);
    const shown = new Set<number>();
    for (;;) {
      const byId = new Map(list.map((i) => [i.instanceID, i]));
      for (const id of ids) {
        const i = byId.get(id);
        if (i?.health?.state !== 'up' || shown.has(id)) continue;
        shown.add(id);
        if (!ctx.json) outcomeLine(ctx, true, `${describe(i)}: up`);
      }
      const notUp = ids.filter((id) => byId.get(id)?.health?.state !== 'up');
      // Deleted, stopped or failed: nothing brings it up while we wait.
      const settled = notUp.some((id) => WILL_NOT_COME_UP.has(byId.get(id)?.health?.state ?? 'stopped'));
      if (notUp.length === 0 || settled || Date.now() >= deadline) {
        if (ctx.json)
          print(
            ctx,
            ids.map((id) => ({
              instanceID: id,
              name: byId.get(id)?.name ?? null,
              health: byId.get(id)?.health ?? null,
            })),
          );
        else {
          for (const id of notUp) {
            const i = byId.get(id);
            const why = i?.health?.reason ? `: ${i.health.reason}` : '';
            outcomeLine(ctx, false, i ? `${describe(i)}: ${i.health?.state ?? i.state}${why}` : `#${id}: deleted`);
          }
          const after = notUp.length === 0 ? '' : settled ? ' (one will not come up by itself)' : ` after ${timeout}`;
          ctx.io.out(`wait: ${ids.length - notUp.length} of ${ids.length} instances up${after}\n`);
        }
        return notUp.length === 0 && unknown.length === 0 ? EXIT.ok : EXIT.failed;
      }
      await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
      list = await listInstances(client);
    }
  },
};
