import type { InstanceState, InstanceSummary } from './api';

/** A condition the summary bar counts and filters by, beside the state. */
export type Condition = 'any' | 'disconnected' | 'proxiesDown';

export interface InstanceFilter {
  /** Part of the name, any case. */
  query: string;
  state: InstanceState | 'any';
  condition: Condition;
  /** Labels as typed: `env=prod team=web` (commas or spaces between); an instance must have every one. */
  labels: string;
}

export const NO_FILTER: InstanceFilter = { query: '', state: 'any', condition: 'any', labels: '' };

/**
 * The labels a filter asks for: `key=value` wants that value, a bare `key` any value of it (`team=` an empty one).
 * Compared exactly, as the CLI's `--label` compares them.
 */
export function labelSelector(text: string): Array<[string, string | undefined]> {
  return text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((word) => {
      const eq = word.indexOf('=');
      return eq < 0 ? [word, undefined] : [word.slice(0, eq), word.slice(eq + 1)];
    });
}

/** Whether an instance has every label the selector asks for. */
export const hasLabels = (i: InstanceSummary, selector: ReadonlyArray<[string, string | undefined]>): boolean =>
  selector.every(
    ([key, value]) => Object.hasOwn(i.labels ?? {}, key) && (value === undefined || i.labels[key] === value),
  );

/** `env=prod`, as a label is written everywhere (the CLI's `label` and `--label`). */
export const labelText = (key: string, value: string): string => `${key}=${value}`;

/** Running, but frpc is not logged in to its server. */
export const isDisconnected = (i: InstanceSummary): boolean => i.state === 'running' && i.connected === false;

/**
 * How many of its proxies are down by their health (the daemon's one answer): frpc's own status of each, and every
 * enabled one of a tunnel that is down (not logged in, restarting), which frpc no longer reports.
 */
export const proxiesDown = (i: InstanceSummary): number => i.proxyHealth?.down ?? 0;

export interface Summary {
  total: number;
  running: number;
  stopped: number;
  failed: number;
  /** starting, stopping or backoff */
  changing: number;
  disconnected: number;
  proxiesDown: number;
  /** Instances with at least one proxy down. */
  withProxiesDown: number;
}

export function summarize(list: readonly InstanceSummary[]): Summary {
  const s: Summary = {
    total: list.length,
    running: 0,
    stopped: 0,
    failed: 0,
    changing: 0,
    disconnected: 0,
    proxiesDown: 0,
    withProxiesDown: 0,
  };
  for (const i of list) {
    if (i.state === 'running' || i.state === 'stopped' || i.state === 'failed') s[i.state]++;
    else s.changing++;
    if (isDisconnected(i)) s.disconnected++;
    const down = proxiesDown(i);
    s.proxiesDown += down;
    if (down > 0) s.withProxiesDown++;
  }
  return s;
}

export function matches(i: InstanceSummary, filter: InstanceFilter): boolean {
  if (filter.state !== 'any' && i.state !== filter.state) return false;
  if (filter.condition === 'disconnected' && !isDisconnected(i)) return false;
  if (filter.condition === 'proxiesDown' && proxiesDown(i) === 0) return false;
  if (!hasLabels(i, labelSelector(filter.labels))) return false;
  const query = filter.query.trim().toLowerCase();
  return query === '' || i.name.toLowerCase().includes(query);
}

export const isFiltered = (filter: InstanceFilter): boolean =>
  filter.query.trim() !== '' || filter.state !== 'any' || filter.condition !== 'any' || filter.labels.trim() !== '';
