import type { Listed } from './instance-refs.js';
import {
  HEALTH_COLOURS,
  STATE_COLOURS,
  forTerminal,
  shortBytes,
  shortDuration,
  table,
  timeLeft,
  type Colour,
} from './render.js';

function proxiesCell(i: Listed): string {
  const counts = Object.values(i.proxyStatus ?? {});
  if (counts.length === 0) return '-';
  const total = counts.reduce((a, b) => a + b, 0);
  return `${i.proxyStatus.running ?? 0}/${total}`;
}

/** When the instance expires, or else the first of its proxies to: `1h59m`, `proxy ssh 20m`. */
function expiresCell(i: Listed): string {
  if (i.expiresAt !== undefined) return timeLeft(i.expiresAt);
  const [first] = Object.entries(i.proxyExpiries ?? {}).sort(([, a], [, b]) => Date.parse(a) - Date.parse(b));
  return first ? `proxy ${first[0]} ${timeLeft(first[1])}` : '-';
}

/** The columns of the instance list: the fixed ones, then labels, expiries and reasons when any row has one. */
export interface InstanceColumns {
  header: string[];
  labels: boolean;
  expiries: boolean;
  reasons: boolean;
}

const FIXED = ['id', 'name', 'state', 'health', 'boot', 'pid', 'uptime', 'cpu', 'mem', 'restarts', 'proxies'];

/** The columns `list` needs; `reasons` forces the `why` column (a fleet's host that did not answer has one). */
export function instanceColumns(list: readonly Listed[], reasons = false): InstanceColumns {
  const columns = {
    labels: list.some((i) => Object.keys(i.labels ?? {}).length > 0),
    expiries: list.some((i) => expiresCell(i) !== '-'),
    reasons: reasons || list.some((i) => i.health?.reason),
  };
  const header = [
    ...FIXED,
    ...(columns.labels ? ['labels'] : []),
    ...(columns.expiries ? ['expires'] : []),
    ...(columns.reasons ? ['why'] : []),
  ];
  return { header, ...columns };
}

/** One instance's row. */
export function instanceCells(i: Listed, columns: InstanceColumns): string[] {
  return [
    String(i.instanceID),
    i.name,
    i.state,
    i.health?.state ?? '-',
    i.bootAtStart ? 'yes' : 'no',
    i.pid === null ? '-' : String(i.pid),
    i.uptimeSecs === undefined ? '-' : shortDuration(i.uptimeSecs),
    i.cpuPercent === undefined ? '-' : `${i.cpuPercent.toFixed(1)}%`,
    i.rssBytes === undefined ? '-' : shortBytes(i.rssBytes),
    String(i.restarts),
    proxiesCell(i),
    ...(columns.labels
      ? [
          Object.entries(i.labels ?? {})
            .map(([k, v]) => `${k}=${v}`)
            .join(',') || '-',
        ]
      : []),
    ...(columns.expiries ? [expiresCell(i)] : []),
    ...(columns.reasons ? [forTerminal(i.health?.reason ?? '')] : []),
  ];
}

/** A row that is no instance (a host that did not answer): `state` in the state column, `why` in the last. */
export function noteCells(columns: InstanceColumns, state: string, why: string): string[] {
  return columns.header.map((name) => (name === 'state' ? state : name === 'why' ? forTerminal(why) : '-'));
}

/** The colour of a cell of the state or health column (`offset` columns to the left of `id`). */
export function instanceColour(c: number, state: string | undefined, health: string | undefined, offset = 0) {
  const column = FIXED[c - offset];
  const colour: Colour | undefined =
    column === 'state' ? STATE_COLOURS[state ?? ''] : column === 'health' ? HEALTH_COLOURS[health ?? ''] : undefined;
  return colour;
}

/** The instance list as `tunnelward ls` shows it. */
export function instanceTable(list: readonly Listed[], colour: boolean): string {
  const columns = instanceColumns(list);
  return table(
    columns.header,
    list.map((i) => instanceCells(i, columns)),
    (r, c) => instanceColour(c, list[r]!.state, list[r]!.health?.state),
    colour,
  );
}
