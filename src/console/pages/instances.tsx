import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import {
  atLeast,
  explain,
  get,
  post,
  type BulkResult,
  type InstanceState,
  type InstanceSummary,
  type ServerEvent,
} from '../api';
import { throttle } from '../events';
import { count, duration, proxyCounts } from '../format';
import {
  Check,
  Confirm,
  ErrorText,
  Field,
  FormDialog,
  LinkIndicator,
  StateBadge,
  useNow,
  usePollWhileDown,
  useSession,
  useTitle,
  type SessionContext,
} from '../ui';

export type Command = 'start' | 'stop' | 'restart';

/** Whether a command makes sense in a state (the daemon decides; this only keeps pointless buttons grey). */
export function commandFits(command: Command, state: InstanceState): boolean {
  if (command === 'start') return state === 'stopped' || state === 'failed' || state === 'backoff';
  if (command === 'stop') return state !== 'stopped' && state !== 'failed';
  return state !== 'stopping';
}

export const COMMAND_LABEL: Record<Command, string> = { start: 'Start', stop: 'Stop', restart: 'Restart' };

/** Runs a command on one instance, or on several in one request, and says how it went. */
export async function runCommand(command: Command, ids: number[], notify: SessionContext['notify']): Promise<void> {
  try {
    if (ids.length === 1) {
      const reply = await post(`/tunnelAct/instanceMgr/${command}`, { instanceID: ids[0] });
      notify(reply.message);
      return;
    }
    const reply = await post<BulkResult>(`/tunnelAct/instanceMgr/${command}`, { instanceIDs: ids });
    const failures = reply.data.results.filter((r) => !r.ok);
    notify(
      failures.length === 0
        ? reply.message
        : `${reply.message}. ${failures.map((f) => `${f.name ?? f.instanceID}: ${f.message}`).join('; ')}`,
      failures.length === 0 ? 'ok' : 'error',
    );
  } catch (err) {
    notify(explain(err), 'error');
  }
}

/** Applies an `instance.state` event to a row at once; the throttled re-read brings the rest. */
function applyEvent(list: InstanceSummary[] | null, event: ServerEvent): InstanceSummary[] | null {
  if (!list || event.event !== 'instance.state' || typeof event.instanceID !== 'number' || !event.to) return list;
  const to = event.to as InstanceState;
  return list.map((i) => (i.instanceID === event.instanceID ? { ...i, state: to, isRunning: to === 'running' } : i));
}

type DialogState =
  | { kind: 'create' }
  | { kind: 'rename'; instance: InstanceSummary }
  | { kind: 'delete'; instance: InstanceSummary }
  | null;

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
  const now = useNow();

  const load = useCallback(async () => {
    try {
      const reply = await get<InstanceSummary[]>('/tunnelAct/instanceMgr/list');
      setList(reply.data);
      setLoadedAt(Date.now());
      setError('');
      // Forget selections of instances that are gone.
      setSelected((s) => new Set([...s].filter((id) => reply.data.some((i) => i.instanceID === id))));
    } catch (err) {
      setError(explain(err));
    }
  }, []);

  const refresh = useRef(throttle(load, 1000));
  useEffect(() => {
    void load();
    const throttled = refresh.current;
    const off = events.subscribe((event) => {
      if (event.event === 'resync') return throttled.request();
      if (!event.event.startsWith('instance.') && !event.event.startsWith('proxy.')) return;
      setList((l) => applyEvent(l, event));
      throttled.request();
    });
    return () => {
      off();
      throttled.cancel();
    };
  }, [events, load]);
  usePollWhileDown(events, load);

  const command = async (cmd: Command, ids: number[]) => {
    setBusy((b) => new Set([...b, ...ids]));
    await runCommand(cmd, ids, notify);
    setBusy((b) => new Set([...b].filter((id) => !ids.includes(id))));
    refresh.current.request();
  };

  const toggle = (id: number, on: boolean) =>
    setSelected((s) => {
      const next = new Set(s);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });

  const all = list ?? [];
  const allSelected = all.length > 0 && all.every((i) => selected.has(i.instanceID));
  const selectedIds = [...selected];

  return (
    <section class="page" aria-labelledby="instances-title">
      <div class="page-head">
        <h1 id="instances-title">Instances</h1>
        <span class="muted">{list ? count(list.length, 'instance') : ''}</span>
        <span class="spacer" />
        <LinkIndicator events={events} />
        {admin && (
          <button type="button" class="primary" onClick={() => setDialog({ kind: 'create' })}>
            New instance
          </button>
        )}
      </div>
      <ErrorText>{error}</ErrorText>
      {admin && selectedIds.length > 0 && (
        <div class="bulk" role="toolbar" aria-label="Selected instances">
          <span>{count(selectedIds.length, 'instance')} selected</span>
          {(['start', 'stop', 'restart'] as const).map((cmd) => (
            <button key={cmd} type="button" onClick={() => command(cmd, selectedIds)}>
              {COMMAND_LABEL[cmd]} selected
            </button>
          ))}
          <button type="button" class="link-button" onClick={() => setSelected(new Set())}>
            Clear selection
          </button>
        </div>
      )}
      {list && list.length === 0 && (
        <p class="empty">No instances yet.{admin ? ' Create one with New instance.' : ''}</p>
      )}
      {list === null && !error && <p class="muted">Loading…</p>}
      {list && list.length > 0 && (
        <div class="table-wrap">
          <table class="grid instances">
            <caption class="visually-hidden">Instances, their state and their tunnels</caption>
            <thead>
              <tr>
                {admin && (
                  <th scope="col" class="select">
                    <input
                      type="checkbox"
                      aria-label="Select all instances"
                      checked={allSelected}
                      onChange={(e) =>
                        setSelected(e.currentTarget.checked ? new Set(all.map((i) => i.instanceID)) : new Set())
                      }
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
                {admin && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {list.map((i) => (
                <tr key={i.instanceID} data-instance={i.name} aria-busy={busy.has(i.instanceID) || undefined}>
                  {admin && (
                    <td class="select">
                      <input
                        type="checkbox"
                        aria-label={`Select ${i.name}`}
                        checked={selected.has(i.instanceID)}
                        onChange={(e) => toggle(i.instanceID, e.currentTarget.checked)}
                      />
                    </td>
                  )}
                  <th scope="row" data-label="Name">
                    <a href={`#/instances/${i.instanceID}`}>{i.name}</a>
                  </th>
                  <td data-label="State" class="state-cell">
                    <StateBadge state={i.state} />
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
                  {admin && (
                    <td data-label="Actions" class="actions-cell">
                      {(['start', 'stop', 'restart'] as const).map((cmd) => (
                        <button
                          key={cmd}
                          type="button"
                          class="small"
                          aria-label={`${COMMAND_LABEL[cmd]} ${i.name}`}
                          disabled={busy.has(i.instanceID) || !commandFits(cmd, i.state)}
                          onClick={() => command(cmd, [i.instanceID])}
                        >
                          {COMMAND_LABEL[cmd]}
                        </button>
                      ))}
                      <button
                        type="button"
                        class="small"
                        aria-label={`Rename ${i.name}`}
                        onClick={() => setDialog({ kind: 'rename', instance: i })}
                      >
                        Rename
                      </button>
                      <button
                        type="button"
                        class="small danger"
                        aria-label={`Delete ${i.name}`}
                        onClick={() => setDialog({ kind: 'delete', instance: i })}
                      >
                        Delete
                      </button>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
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
    </section>
  );
}

const NAME_RULE = /^[A-Za-z0-9_.-]{1,64}$/;

export function nameProblem(name: string): string | undefined {
  if (!name) return 'A name is required.';
  if (!NAME_RULE.test(name)) return 'Up to 64 letters, digits, "_", "." or "-".';
  return undefined;
}

export function portProblem(value: string, { required = true, min = 1 } = {}): string | undefined {
  if (value === '') return required ? 'A port is required.' : undefined;
  if (!/^\d{1,5}$/.test(value) || Number(value) < min || Number(value) > 65535) return `A port from ${min} to 65535.`;
  return undefined;
}

function CreateInstance({ onClose }: { onClose: () => void }) {
  const { notify } = useSession();
  const [name, setName] = useState('');
  const [serverAddr, setServerAddr] = useState('');
  const [serverPort, setServerPort] = useState('7000');
  const [authMethod, setAuthMethod] = useState('token');
  const [authToken, setAuthToken] = useState('');
  const [runUser, setRunUser] = useState('');
  const [bootAtStart, setBootAtStart] = useState(false);
  const [touched, setTouched] = useState(false);
  const problems = {
    name: nameProblem(name),
    serverAddr: serverAddr.trim() ? undefined : 'The frps server address is required.',
    serverPort: portProblem(serverPort),
  };
  const invalid = Object.values(problems).some(Boolean);
  const shown = (p: string | undefined) => (touched ? p : undefined);

  return (
    <FormDialog
      title="New instance"
      submitLabel="Create instance"
      onClose={onClose}
      invalid={touched && invalid}
      onSubmit={async () => {
        setTouched(true);
        if (invalid) throw new Error('Correct the fields marked above.');
        const reply = await post<{ instanceID: number; bootServiceError?: string }>('/tunnelAct/instanceMgr/create', {
          instanceInfo: { name, serverAddr: serverAddr.trim(), serverPort, auth_method: authMethod },
          bootAtStart,
          ...(runUser.trim() ? { runUser: runUser.trim() } : {}),
          additionalProperties: authMethod === 'token' && authToken ? { 'auth.token': authToken } : {},
        });
        notify(reply.message + (reply.data.bootServiceError ? ` (boot service: ${reply.data.bootServiceError})` : ''));
        location.hash = `#/instances/${reply.data.instanceID}`;
      }}
    >
      <Field label="Name" error={shown(problems.name)} hint='Letters, digits, "_", "." and "-"'>
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            value={name}
            required
            aria-describedby={describedBy}
            aria-invalid={invalid}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        )}
      </Field>
      <div class="row">
        <Field label="Server address" error={shown(problems.serverAddr)} class="grow">
          {({ id, describedBy, invalid }) => (
            <input
              id={id}
              value={serverAddr}
              placeholder="frps.example.com"
              required
              aria-describedby={describedBy}
              aria-invalid={invalid}
              onInput={(e) => setServerAddr(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Server port" error={shown(problems.serverPort)}>
          {({ id, describedBy, invalid }) => (
            <input
              id={id}
              value={serverPort}
              inputMode="numeric"
              size={6}
              required
              aria-describedby={describedBy}
              aria-invalid={invalid}
              onInput={(e) => setServerPort(e.currentTarget.value.trim())}
            />
          )}
        </Field>
      </div>
      <div class="row">
        <Field label="Authentication">
          {({ id }) => (
            <select id={id} value={authMethod} onChange={(e) => setAuthMethod(e.currentTarget.value)}>
              <option value="token">token</option>
              <option value="oidc">oidc</option>
            </select>
          )}
        </Field>
        {authMethod === 'token' && (
          <Field label="Token" class="grow" hint="auth.token; leave empty if the server needs none">
            {({ id, describedBy }) => (
              <input
                id={id}
                type="password"
                autocomplete="off"
                value={authToken}
                aria-describedby={describedBy}
                onInput={(e) => setAuthToken(e.currentTarget.value)}
              />
            )}
          </Field>
        )}
      </div>
      <Field label="Run as user" hint="An operating-system user; root when left empty">
        {({ id, describedBy }) => (
          <input
            id={id}
            value={runUser}
            placeholder="root"
            aria-describedby={describedBy}
            onInput={(e) => setRunUser(e.currentTarget.value)}
          />
        )}
      </Field>
      <Check label="Start at boot" checked={bootAtStart} onChange={setBootAtStart} />
    </FormDialog>
  );
}

export function RenameInstance(props: {
  instance: { instanceID: number; name: string };
  onClose: () => void;
  onDone: () => void;
}) {
  const { notify } = useSession();
  const [name, setName] = useState(props.instance.name);
  const problem = nameProblem(name);
  return (
    <FormDialog
      title={`Rename ${props.instance.name}`}
      submitLabel="Rename"
      onClose={props.onClose}
      invalid={Boolean(problem) || name === props.instance.name}
      onSubmit={async () => {
        const reply = await post('/tunnelAct/instanceMgr/modify', {
          instanceID: props.instance.instanceID,
          type: 'systemConfig',
          modifiedData: { name },
        });
        notify(reply.message);
        props.onDone();
      }}
    >
      <Field label="New name" error={problem}>
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            value={name}
            aria-describedby={describedBy}
            aria-invalid={invalid}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        )}
      </Field>
    </FormDialog>
  );
}

export function DeleteInstance(props: {
  instance: { instanceID: number; name: string };
  onClose: () => void;
  onDone: () => void;
}) {
  const { notify } = useSession();
  return (
    <Confirm
      title={`Delete ${props.instance.name}?`}
      confirmLabel="Delete instance"
      onClose={props.onClose}
      onConfirm={async () => {
        const reply = await post('/tunnelAct/instanceMgr/delete', { instanceID: props.instance.instanceID });
        notify(reply.message);
        props.onDone();
      }}
    >
      <p>This stops its tunnel and removes its config file, its logs and its record. It cannot be undone.</p>
    </Confirm>
  );
}
