import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { atLeast, explain, get, type InstanceState, type InstanceSummary, type ServerEvent } from '../api';
import { throttle } from '../events';
import { count, duration, proxyCounts } from '../format';
import {
  NO_FILTER,
  isFiltered,
  labelSelector,
  labelText,
  matches,
  summarize,
  type Condition,
  type InstanceFilter,
  type Summary,
} from '../instance-filter';
import { MenuButton } from '../menu';
import { ErrorText, LinkIndicator, StateBadge, useNow, usePollWhileDown, useSession, useTitle } from '../ui';
import { CreateInstance } from './create-instance';
import {
  BulkConfirm,
  COMMAND_LABEL,
  DeleteInstance,
  RenameInstance,
  commandFits,
  runCommand,
  type BulkAction,
  type Command,
} from './instance-actions';

const STATES: InstanceState[] = ['running', 'starting', 'stopping', 'backoff', 'stopped', 'failed'];
const PAGE_SIZES = [25, 50, 100];

/** Applies `instance.state` events to the rows at once; the throttled re-read brings the rest. */
function applyEvents(list: InstanceSummary[] | null, events: ServerEvent[]): InstanceSummary[] | null {
  const to = new Map<number, InstanceState>();
  for (const e of events) {
    if (e.event === 'instance.state' && typeof e.instanceID === 'number' && e.to)
      to.set(e.instanceID, e.to as InstanceState);
  }
  if (!list || to.size === 0) return list;
  return list.map((i) => {
    const state = to.get(i.instanceID);
    return state ? { ...i, state, isRunning: state === 'running' } : i;
  });
}

type DialogState =
  | { kind: 'create' }
  | { kind: 'rename'; instance: InstanceSummary }
  | { kind: 'delete'; instance: InstanceSummary }
  | { kind: 'bulk'; action: BulkAction; instances: InstanceSummary[] }
  | null;

/** What the list shows, kept while the console is open: back from an instance, the same filter and page. */
const kept = { filter: NO_FILTER, page: 0, pageSize: 50 };

export function Instances() {
  useTitle('Instances');
  const { me, events, notify } = useSession();
  const admin = atLeast(me.type, 'admin');
  const [list, setList] = useState<InstanceSummary[] | null>(null);
  const [loadedAt, setLoadedAt] = useState(Date.now());
  const [error, setError] = useState('');
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const [busy, setBusy] = useState<Set<number>>(new Set());
  const [dialog, setDialog] = useState<DialogState>(null);
  const [filter, setFilterState] = useState<InstanceFilter>(kept.filter);
  const [page, setPageState] = useState(kept.page);
  const [pageSize, setPageSizeState] = useState(kept.pageSize);
  const now = useNow();

  const setFilter = (next: InstanceFilter) => {
    kept.filter = next;
    kept.page = 0;
    setFilterState(next);
    setPageState(0);
  };
  const setPage = (next: number) => {
    kept.page = next;
    setPageState(next);
  };
  const setPageSize = (next: number) => {
    kept.pageSize = next;
    kept.page = 0;
    setPageSizeState(next);
    setPageState(0);
  };

  const load = useCallback(async () => {
    try {
      const reply = await get<InstanceSummary[]>('/tunnelAct/instanceMgr/list');
      setList(reply.data);
      setLoadedAt(Date.now());
      setError('');
      // Forget selections of instances that are gone.
      const ids = new Set(reply.data.map((i) => i.instanceID));
      setSelected((s) => (Array.from(s).every((id) => ids.has(id)) ? s : new Set([...s].filter((id) => ids.has(id)))));
    } catch (err) {
      setError(explain(err));
    }
  }, []);

  const refresh = useRef(throttle(load, 1000));
  useEffect(() => {
    void load();
    const throttled = refresh.current;
    // Events come in bursts (a thousand instances starting): they are applied once per frame, not one by one.
    let pending: ServerEvent[] = [];
    let frame: number | undefined;
    const flush = () => {
      frame = undefined;
      const batch = pending;
      pending = [];
      setList((l) => applyEvents(l, batch));
    };
    const off = events.subscribe((event) => {
      if (event.event === 'resync') return throttled.request();
      if (!event.event.startsWith('instance.') && !event.event.startsWith('proxy.')) return;
      pending.push(event);
      frame ??= window.requestAnimationFrame(flush);
      throttled.request();
    });
    return () => {
      off();
      if (frame !== undefined) window.cancelAnimationFrame(frame);
      throttled.cancel();
    };
  }, [events, load]);
  usePollWhileDown(events, load);

  const all = list ?? [];
  const summary = useMemo(() => summarize(all), [list]);
  const shown = useMemo(() => all.filter((i) => matches(i, filter)), [list, filter]);
  const pages = Math.max(1, Math.ceil(shown.length / pageSize));
  const current = Math.min(page, pages - 1);
  const rows = shown.slice(current * pageSize, (current + 1) * pageSize);
  // A column only when some instance has labels, as `tunnelward ls` shows them.
  const labelled = useMemo(() => all.some((i) => Object.keys(i.labels ?? {}).length > 0), [list]);
  /** A row's label, chosen: added to the label filter (once). */
  const filterByLabel = (key: string, value: string) => {
    if (labelSelector(filter.labels).some(([k, v]) => k === key && v === value)) return;
    setFilter({ ...filter, labels: `${filter.labels.trim()} ${labelText(key, value)}`.trim() });
  };

  const command = async (cmd: Command, ids: number[]) => {
    setBusy((b) => new Set([...b, ...ids]));
    await runCommand(cmd, ids, notify);
    setBusy((b) => new Set([...b].filter((id) => !ids.includes(id))));
    refresh.current.request();
  };

  const select = (ids: number[], on: boolean) =>
    setSelected((s) => {
      const next = new Set(s);
      for (const id of ids) {
        if (on) next.add(id);
        else next.delete(id);
      }
      return next;
    });

  const pageIds = rows.map((i) => i.instanceID);
  const pageSelected = pageIds.filter((id) => selected.has(id)).length;
  const selectedInstances = all.filter((i) => selected.has(i.instanceID));
  const hiddenSelected = selectedInstances.length - shown.filter((i) => selected.has(i.instanceID)).length;

  return (
    <section class="page" aria-labelledby="instances-title">
      <div class="page-head">
        <h1 id="instances-title">Instances</h1>
        <span class="spacer" />
        <LinkIndicator events={events} />
        {admin && (
          <button type="button" class="primary" onClick={() => setDialog({ kind: 'create' })}>
            New instance
          </button>
        )}
      </div>
      <ErrorText>{error}</ErrorText>
      {list === null && !error && <p class="muted">Loading…</p>}
      {list && list.length === 0 && (
        <p class="empty">No instances yet.{admin ? ' Create one with New instance.' : ''}</p>
      )}
      {list && list.length > 0 && (
        <>
          <SummaryBar summary={summary} filter={filter} onFilter={setFilter} />
          <div class="filters" role="search" aria-label="Filter instances">
            <div class="field">
              <label for="instance-search">Search by name</label>
              <input
                id="instance-search"
                type="search"
                value={filter.query}
                placeholder="Part of a name"
                autocomplete="off"
                onInput={(e) => setFilter({ ...filter, query: e.currentTarget.value })}
              />
            </div>
            <div class="field">
              <label for="instance-state">State</label>
              <select
                id="instance-state"
                value={filter.state}
                onChange={(e) => setFilter({ ...filter, state: e.currentTarget.value as InstanceFilter['state'] })}
              >
                <option value="any">any</option>
                {STATES.map((s) => (
                  <option key={s} value={s}>
                    {s}
                  </option>
                ))}
              </select>
            </div>
            <div class="field">
              <label for="instance-labels">Labels</label>
              <input
                id="instance-labels"
                type="search"
                value={filter.labels}
                placeholder="env=prod team=web"
                autocomplete="off"
                spellcheck={false}
                aria-describedby="instance-labels-hint"
                onInput={(e) => setFilter({ ...filter, labels: e.currentTarget.value })}
              />
              <small id="instance-labels-hint" class="visually-hidden">
                key=value, several separated by spaces: an instance must have every one. A key alone matches any value.
              </small>
            </div>
            {admin && rows.length > 0 && (
              <div class="field check phone-only">
                <input
                  id="select-page-phone"
                  type="checkbox"
                  checked={pageSelected > 0 && pageSelected === pageIds.length}
                  onChange={(e) => select(pageIds, e.currentTarget.checked)}
                />
                <label for="select-page-phone">Select this page</label>
              </div>
            )}
            {isFiltered(filter) && (
              <button type="button" class="link-button" onClick={() => setFilter(NO_FILTER)}>
                Clear filters
              </button>
            )}
            <span class="spacer" />
            <span class="muted" role="status" aria-live="polite">
              {isFiltered(filter)
                ? `${shown.length} of ${count(all.length, 'instance')}`
                : count(all.length, 'instance')}
            </span>
          </div>
          {admin && selected.size > 0 && (
            <div class="bulk" role="toolbar" aria-label="Selected instances">
              <span>
                {count(selected.size, 'instance')} selected
                {hiddenSelected > 0 ? ` (${hiddenSelected} not shown by the filter)` : ''}
              </span>
              {shown.length > selected.size && (
                <button
                  type="button"
                  class="link-button"
                  onClick={() =>
                    select(
                      shown.map((i) => i.instanceID),
                      true,
                    )
                  }
                >
                  Select all {shown.length} {isFiltered(filter) ? 'shown' : ''}
                </button>
              )}
              <span class="spacer" />
              {(['start', 'stop', 'restart', 'delete'] as const).map((action) => (
                <button
                  key={action}
                  type="button"
                  class={action === 'delete' ? 'danger' : undefined}
                  onClick={() => setDialog({ kind: 'bulk', action, instances: selectedInstances })}
                >
                  {COMMAND_LABEL[action]}…
                </button>
              ))}
              <button type="button" class="link-button" onClick={() => setSelected(new Set())}>
                Clear selection
              </button>
            </div>
          )}
          {shown.length === 0 ? (
            <p class="empty">No instance matches the filter.</p>
          ) : (
            <div class="table-wrap">
              <table class="grid instances">
                <caption class="visually-hidden">
                  Instances {current * pageSize + 1} to {current * pageSize + rows.length} of {shown.length}
                </caption>
                <thead>
                  <tr>
                    {admin && (
                      <th scope="col" class="select">
                        <input
                          type="checkbox"
                          aria-label="Select the instances on this page"
                          checked={pageSelected > 0 && pageSelected === pageIds.length}
                          indeterminate={pageSelected > 0 && pageSelected < pageIds.length}
                          onChange={(e) => select(pageIds, e.currentTarget.checked)}
                        />
                      </th>
                    )}
                    <th scope="col">Name</th>
                    <th scope="col">State</th>
                    <th scope="col">PID</th>
                    <th scope="col">Uptime</th>
                    <th scope="col">Restarts</th>
                    <th scope="col">Proxies</th>
                    <th scope="col">Connected</th>
                    {labelled && <th scope="col">Labels</th>}
                    {admin && (
                      <th scope="col">
                        <span class="visually-hidden">Actions</span>
                      </th>
                    )}
                  </tr>
                </thead>
                <tbody>
                  {rows.map((i) => (
                    <tr key={i.instanceID} data-instance={i.name} aria-busy={busy.has(i.instanceID) || undefined}>
                      {admin && (
                        <td class="select">
                          <input
                            type="checkbox"
                            aria-label={`Select ${i.name}`}
                            checked={selected.has(i.instanceID)}
                            onChange={(e) => select([i.instanceID], e.currentTarget.checked)}
                          />
                        </td>
                      )}
                      <th scope="row" data-label="Name">
                        <a href={`#/instances/${i.instanceID}`}>{i.name}</a>
                      </th>
                      <td data-label="State" class="state-cell">
                        <StateBadge state={i.state} health={i.health} />
                        {i.state === 'running' && i.health?.state !== 'up' && i.health?.reason && (
                          <div class="why">{i.health.reason}</div>
                        )}
                      </td>
                      <td data-label="PID" class="num">
                        {i.pid ?? '—'}
                      </td>
                      <td data-label="Uptime" class="num">
                        {i.state === 'running' && i.uptimeSecs !== undefined
                          ? duration(i.uptimeSecs + (now - loadedAt) / 1000)
                          : '—'}
                      </td>
                      <td data-label="Restarts" class="num">
                        {i.restarts}
                      </td>
                      <td data-label="Proxies" class="proxies-cell">
                        {proxyCounts(i.proxyStatus)}
                      </td>
                      <td data-label="Connected" class="connected-cell">
                        {i.connected === null ? '—' : i.connected ? 'yes' : 'no'}
                      </td>
                      {labelled && (
                        <td data-label="Labels" class="labels-cell">
                          <LabelChips name={i.name} labels={i.labels} onChoose={filterByLabel} />
                        </td>
                      )}
                      {admin && (
                        <td class="actions-cell">
                          <MenuButton
                            label="Actions"
                            accessibleName={`Actions for ${i.name}`}
                            items={[
                              ...(['start', 'stop', 'restart'] as const).map((cmd) => ({
                                label: COMMAND_LABEL[cmd],
                                disabled: busy.has(i.instanceID) || !commandFits(cmd, i.state),
                                onSelect: () => void command(cmd, [i.instanceID]),
                              })),
                              { label: 'Rename…', onSelect: () => setDialog({ kind: 'rename', instance: i }) },
                              {
                                label: 'Delete…',
                                danger: true,
                                onSelect: () => setDialog({ kind: 'delete', instance: i }),
                              },
                            ]}
                          />
                        </td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {shown.length > PAGE_SIZES[0]! && (
            <Pager page={current} pages={pages} pageSize={pageSize} onPage={setPage} onPageSize={setPageSize} />
          )}
        </>
      )}
      {dialog?.kind === 'create' && <CreateInstance onClose={() => setDialog(null)} />}
      {dialog?.kind === 'rename' && (
        <RenameInstance
          instance={dialog.instance}
          onClose={() => setDialog(null)}
          onDone={() => refresh.current.request()}
        />
      )}
      {dialog?.kind === 'delete' && (
        <DeleteInstance
          instance={dialog.instance}
          onClose={() => setDialog(null)}
          onDone={() => refresh.current.request()}
        />
      )}
      {dialog?.kind === 'bulk' && (
        <BulkConfirm
          action={dialog.action}
          instances={dialog.instances}
          onClose={() => setDialog(null)}
          onDone={() => {
            if (dialog.action === 'delete') setSelected(new Set());
            refresh.current.request();
          }}
        />
      )}
    </section>
  );
}

/** The counts that matter at a glance, each a button that filters the list to what it counts. */
function SummaryBar(props: { summary: Summary; filter: InstanceFilter; onFilter: (filter: InstanceFilter) => void }) {
  const { summary: s, filter, onFilter } = props;
  const chip = (
    key: string,
    label: string,
    value: number,
    target: { state?: InstanceState; condition?: Condition },
    tone: string,
    detail?: string,
  ) => {
    const next: InstanceFilter = {
      query: filter.query,
      labels: filter.labels,
      state: target.state ?? 'any',
      condition: target.condition ?? 'any',
    };
    const pressed = filter.state === next.state && filter.condition === next.condition;
    return (
      <button
        key={key}
        type="button"
        class={`chip chip-${tone} ${value > 0 ? '' : 'chip-zero'}`}
        aria-pressed={pressed}
        data-count={key}
        onClick={() => onFilter(pressed && key !== 'all' ? { ...next, state: 'any', condition: 'any' } : next)}
      >
        <span class="chip-value">{value}</span>
        <span class="chip-label">{label}</span>
        {detail && <span class="chip-detail">{detail}</span>}
      </button>
    );
  };
  return (
    <div class="summary" role="group" aria-label="Summary: choose one to filter the list">
      {chip('all', 'all', s.total, {}, 'all')}
      {chip('running', 'running', s.running, { state: 'running' }, 'ok')}
      {chip('stopped', 'stopped', s.stopped, { state: 'stopped' }, 'idle')}
      {chip('failed', 'failed', s.failed, { state: 'failed' }, 'bad')}
      {chip('disconnected', 'not connected', s.disconnected, { condition: 'disconnected' }, 'warn')}
      {chip(
        'proxiesDown',
        'proxies down',
        s.proxiesDown,
        { condition: 'proxiesDown' },
        'bad',
        s.proxiesDown > 0 ? `in ${count(s.withProxiesDown, 'instance')}` : undefined,
      )}
    </div>
  );
}

/** An instance's labels as small chips; each filters the list by it. */
function LabelChips(props: {
  name: string;
  labels: Record<string, string>;
  onChoose: (key: string, value: string) => void;
}) {
  const entries = Object.entries(props.labels ?? {});
  if (entries.length === 0) return <span class="muted">—</span>;
  return (
    <ul class="labels" aria-label={`Labels of ${props.name}`}>
      {entries.map(([key, value]) => (
        <li key={key}>
          <button
            type="button"
            class="label-chip"
            title={`Show only instances labelled ${labelText(key, value)}`}
            onClick={() => props.onChoose(key, value)}
          >
            {labelText(key, value)}
          </button>
        </li>
      ))}
    </ul>
  );
}

function Pager(props: {
  page: number;
  pages: number;
  pageSize: number;
  onPage: (page: number) => void;
  onPageSize: (size: number) => void;
}) {
  const { page, pages, pageSize, onPage, onPageSize } = props;
  return (
    <nav class="pager" aria-label="Pages of instances">
      <button type="button" disabled={page === 0} onClick={() => onPage(0)}>
        First
      </button>
      <button type="button" disabled={page === 0} onClick={() => onPage(page - 1)}>
        Previous
      </button>
      <span aria-current="page">
        Page {page + 1} of {pages}
      </span>
      <button type="button" disabled={page >= pages - 1} onClick={() => onPage(page + 1)}>
        Next
      </button>
      <button type="button" disabled={page >= pages - 1} onClick={() => onPage(pages - 1)}>
        Last
      </button>
      <span class="spacer" />
      <label for="page-size">Per page</label>
      <select id="page-size" value={pageSize} onChange={(e) => onPageSize(Number(e.currentTarget.value))}>
        {PAGE_SIZES.map((n) => (
          <option key={n} value={n}>
            {n}
          </option>
        ))}
      </select>
    </nav>
  );
}
