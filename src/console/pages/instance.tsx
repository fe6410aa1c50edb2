import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { remoteOf } from '../../config/proxy-remote.js';
import {
  ApiError,
  atLeast,
  explain,
  get,
  post,
  type InstanceInfo,
  type InstanceState,
  type Proxy,
  type ProxyList,
  type Visitor,
} from '../api';
import { throttle } from '../events';
import { dateTime, duration, proxyCounts } from '../format';
import { LogView } from '../log-view';
import {
  Check,
  Confirm,
  ErrorText,
  Field,
  LinkIndicator,
  StateBadge,
  useNow,
  usePollWhileDown,
  useSession,
  useTitle,
} from '../ui';
import {
  COMMAND_LABEL,
  DeleteInstance,
  RenameInstance,
  commandFits,
  runCommand,
  type Command,
} from './instance-actions';
import { ConfigEditor, type ExportedConfig } from './config-editor';
import { InstanceLabels } from './instance-labels';
import { History } from './history';
import { ProxyDialog } from './proxy-form';

type DialogState =
  | { kind: 'rename' }
  | { kind: 'delete' }
  | { kind: 'proxy'; proxy: Proxy | null }
  | { kind: 'deleteProxy'; proxy: Proxy }
  | null;

export function InstancePage({ id }: { id: number }) {
  const { me, events, notify } = useSession();
  const admin = atLeast(me.type, 'admin');
  const [info, setInfo] = useState<InstanceInfo | null>(null);
  // Changes of this instance are its owner's and superusers' (the daemon's access rule says it in getInfo).
  const mayChange = info?.access.change ?? false;
  const [infoAt, setInfoAt] = useState(Date.now());
  const [proxies, setProxies] = useState<Proxy[] | null>(null);
  const [visitors, setVisitors] = useState<Visitor[]>([]);
  const [config, setConfig] = useState<ExportedConfig | null>(null);
  const [configError, setConfigError] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [dialog, setDialog] = useState<DialogState>(null);
  const [settingStatus, setSettingStatus] = useState<string | null>(null);
  const now = useNow();
  useTitle(info?.name ?? `Instance ${id}`);

  const loadInfo = useCallback(async () => {
    try {
      const reply = await get<InstanceInfo>('/tunnelAct/instanceMgr/getInfo', { instanceID: id });
      setInfo(reply.data);
      setInfoAt(Date.now());
      setError('');
    } catch (err) {
      setError(err instanceof ApiError && err.status === 404 ? `Instance ${id} does not exist.` : explain(err));
    }
  }, [id]);
  // A list read that overlaps a switch's change may predate it (the daemon may answer the read before it applies
  // the change): it is dropped, and the read after the change shows. `changing` counts the changes in flight (a
  // read answered during one is dropped), `switching` the changes ended (a read one ended during is dropped).
  const switching = useRef(0);
  const changing = useRef(0);
  const loadProxies = useCallback(async () => {
    try {
      const before = switching.current;
      const reply = await get<ProxyList>('/tunnelAct/proxyMgr/list', { instanceID: id });
      if (switching.current !== before || changing.current > 0) return;
      setProxies(reply.data.proxies);
      setVisitors(reply.data.visitors ?? []);
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) notify(explain(err), 'error');
    }
  }, [id, notify]);
  const loadConfig = useCallback(async () => {
    try {
      const reply = await get<ExportedConfig>('/tunnelAct/instanceMgr/export', { instanceID: id });
      setConfig(reply.data);
      setConfigError('');
    } catch (err) {
      setConfigError(
        err instanceof ApiError && err.status === 403 ? 'The config file is not shown to your role.' : explain(err),
      );
    }
  }, [id]);

  // A visitor sees details (and may export) only while the daemon shows them: configPath is the sign.
  const mayExport = admin || (info !== null && info.configPath !== undefined);
  const mayFollowLog = info !== null && (me.type === 'superuser' || info.createdBy === me.username);

  const refreshInfo = useRef(throttle(loadInfo, 1000));
  const refreshProxies = useRef(throttle(loadProxies, 1000));
  const refreshConfig = useRef(throttle(loadConfig, 1000));
  const exportable = useRef(false);
  exportable.current = mayExport;

  useEffect(() => {
    void loadInfo();
    void loadProxies();
    const [info$, proxies$, config$] = [refreshInfo.current, refreshProxies.current, refreshConfig.current];
    const off = events.subscribe((event) => {
      if (event.event === 'resync') {
        info$.request();
        proxies$.request();
        if (exportable.current) config$.request();
        return;
      }
      if (event.event === 'events.start' || event.instanceID !== id) return;
      if (event.event === 'instance.deleted') {
        notify(`Instance ${event.name ?? id} was deleted.`);
        location.hash = '#/instances';
        return;
      }
      if (event.event === 'instance.state' && event.to) {
        const to = event.to as InstanceState;
        setInfo((i) => (i ? { ...i, state: to, isRunning: to === 'running' } : i));
      }
      if (event.event.startsWith('instance.')) info$.request();
      if (event.event.startsWith('proxy.')) {
        proxies$.request();
        info$.request();
      }
      if (event.event === 'instance.modified' || event.event === 'instance.status') {
        proxies$.request();
        if (exportable.current) config$.request();
      }
    });
    return () => {
      off();
      info$.cancel();
      proxies$.cancel();
      config$.cancel();
    };
  }, [id, events, loadInfo, loadProxies, notify]);

  useEffect(() => {
    if (mayExport) void loadConfig();
  }, [mayExport, loadConfig]);

  // After a reload frpc reports its proxies again only after a moment, and no event says so when nothing changed
  // (a proxy back up within Alerts.DebounceSecs is not announced): after an edit of a running instance, and while an
  // enabled proxy's status is unknown, read the list again a few times.
  const settling = useRef(0);
  const running = info?.state === 'running';
  const runningRef = useRef(running);
  runningRef.current = running;
  const rereads = useRef<number[]>([]);
  useEffect(() => () => rereads.current.forEach((timer) => window.clearTimeout(timer)), []);
  const proxiesEdited = () => {
    refreshProxies.current.request();
    if (!runningRef.current) return;
    for (const ms of [2000, 5000]) {
      const reread = () => {
        refreshProxies.current.request();
        refreshInfo.current.request();
      };
      rereads.current.push(window.setTimeout(reread, ms));
    }
  };
  useEffect(() => {
    if (!running || !proxies) return;
    if (!proxies.some((p) => p.enabled && !p.status)) {
      settling.current = 0;
      return;
    }
    if (settling.current >= 5) return;
    const timer = window.setTimeout(() => {
      settling.current++;
      refreshProxies.current.request();
      refreshInfo.current.request();
    }, 2000);
    return () => window.clearTimeout(timer);
  }, [running, proxies]);

  usePollWhileDown(events, () => {
    void loadInfo();
    void loadProxies();
  });

  const command = async (cmd: Command) => {
    setBusy(true);
    await runCommand(cmd, [id], notify);
    setBusy(false);
    refreshInfo.current.request();
  };

  const setEnabled = async (proxy: Proxy, enabled: boolean) => {
    setSettingStatus(proxy.name);
    changing.current++;
    // The switch shows the new position at once, and goes back if the daemon refuses.
    const show = (on: boolean) =>
      setProxies((list) => list?.map((p) => (p.name === proxy.name ? { ...p, enabled: on } : p)) ?? list);
    show(enabled);
    try {
      const reply = await post('/tunnelAct/proxyMgr/setStatus', { instanceID: id, proxyName: proxy.name, enabled });
      notify(reply.message);
    } catch (err) {
      show(!enabled);
      notify(explain(err), 'error');
    } finally {
      switching.current++;
      changing.current--;
      setSettingStatus(null);
      proxiesEdited();
    }
  };

  if (!info) {
    return (
      <section class="page">
        <p>
          <a href="#/instances">← Instances</a>
        </p>
        {error ? <ErrorText>{error}</ErrorText> : <p class="muted">Loading…</p>}
      </section>
    );
  }

  const uptime =
    info.state === 'running' && info.uptimeSecs !== undefined ? duration(info.uptimeSecs + (now - infoAt) / 1000) : '—';
  const lastExit = info.lastExit
    ? `${info.lastExit.signal ?? `code ${info.lastExit.code}`} at ${dateTime(info.lastExit.at)}`
    : '—';

  return (
    <section class="page instance-page" aria-labelledby="instance-title">
      <p class="crumbs">
        <a href="#/instances">← Instances</a>
      </p>
      <div class="page-head">
        <h1 id="instance-title">{info.name}</h1>
        <StateBadge state={info.state} health={info.health} />
        <span class="spacer" />
        <LinkIndicator events={events} />
      </div>
      {admin && (
        <div class="toolbar" role="toolbar" aria-label="Instance actions">
          {(['start', 'stop', 'restart'] as const).map((cmd) => (
            <button
              key={cmd}
              type="button"
              disabled={busy || !commandFits(cmd, info.state)}
              onClick={() => command(cmd)}
            >
              {COMMAND_LABEL[cmd]}
            </button>
          ))}
          {mayChange && (
            <>
              <button type="button" onClick={() => setDialog({ kind: 'rename' })}>
                Rename
              </button>
              <button type="button" class="danger" onClick={() => setDialog({ kind: 'delete' })}>
                Delete
              </button>
            </>
          )}
        </div>
      )}
      <ErrorText>{error}</ErrorText>

      <dl class="facts">
        <Fact name="State" value={info.state} />
        <Fact name="PID" value={info.pid ?? '—'} />
        <Fact name="Uptime" value={uptime} />
        <Fact name="Restarts" value={info.restarts} />
        <Fact name="Health" value={info.health.state} />
        <Fact name="Connected" value={info.connected === null ? '—' : info.connected ? 'yes' : 'no'} />
        <Fact name="Proxies" value={proxyCounts(info.proxyStatus)} />
        <Fact name="Last exit" value={lastExit} />
        {info.nextStartAt && <Fact name="Next start" value={dateTime(info.nextStartAt)} />}
        {info.expiresAt && <Fact name="Expires" value={`${dateTime(info.expiresAt)} (then stopped)`} />}
        {info.proxyExpiries && (
          <Fact
            name="Proxies expire"
            value={Object.entries(info.proxyExpiries)
              .map(([proxy, at]) => `${proxy}: ${dateTime(at)}`)
              .join(', ')}
            wide
          />
        )}
        {info.serverAddr !== undefined && <Fact name="Server" value={`${info.serverAddr}:${info.serverPort ?? ''}`} />}
        <Fact name="Auth" value={info.auth_method || '—'} />
        <Fact name="Service" value={info.serviceName} />
        <Fact name="Created" value={`${dateTime(info.createdAt)} by ${info.createdBy}`} />
        {!mayChange && <Fact name="Start at boot" value={info.bootAtStart ? 'yes' : 'no'} />}
        {!mayChange && <Fact name="Probed end to end" value={info.probes ? 'yes' : 'no'} />}
        {!mayChange && info.runUser !== undefined && <Fact name="Runs as" value={info.runUser} />}
        {info.health.reason && <Fact name="Why not up" value={info.health.reason} wide />}
        {info.configPath !== undefined && <Fact name="Config file" value={info.configPath} wide />}
      </dl>

      <InstanceLabels
        instanceID={id}
        labels={info.labels}
        admin={mayChange}
        onChanged={(labels) => setInfo((i) => (i ? { ...i, labels } : i))}
      />

      <section aria-labelledby="proxies-title" class="panel">
        <div class="panel-head">
          <h2 id="proxies-title">Proxies</h2>
          <span class="spacer" />
          {mayChange && (
            <button type="button" class="primary" onClick={() => setDialog({ kind: 'proxy', proxy: null })}>
              Add proxy
            </button>
          )}
        </div>
        {proxies === null ? (
          <p class="muted">Loading…</p>
        ) : proxies.length === 0 ? (
          <p class="empty">No proxies.{mayChange ? ' Add one with Add proxy.' : ''}</p>
        ) : (
          <div class="table-wrap">
            <table class="grid proxies">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                  <th scope="col">Local</th>
                  <th scope="col">Remote</th>
                  <th scope="col">Status</th>
                  <th scope="col">Enabled</th>
                  {mayChange && <th scope="col">Actions</th>}
                </tr>
              </thead>
              <tbody>
                {proxies.map((p) => (
                  <tr key={p.name} data-proxy={p.name}>
                    <th scope="row" data-label="Name">
                      {p.name}
                    </th>
                    <td data-label="Type">{p.type}</td>
                    <td data-label="Local">{local(p)}</td>
                    <td data-label="Remote">{remoteOf(p, info.serverAddr ?? '') || '—'}</td>
                    <td data-label="Status" class="status-cell">
                      <ProxyStatus proxy={p} running={info.state === 'running'} />
                    </td>
                    <td data-label="Enabled">
                      {mayChange ? (
                        <label class="switch">
                          <input
                            type="checkbox"
                            role="switch"
                            checked={p.enabled}
                            disabled={settingStatus === p.name}
                            onChange={(e) => setEnabled(p, e.currentTarget.checked)}
                          />
                          <span class="visually-hidden">Enabled: {p.name}</span>
                          <span aria-hidden="true">{p.enabled ? 'on' : 'off'}</span>
                        </label>
                      ) : p.enabled ? (
                        'yes'
                      ) : (
                        'no'
                      )}
                    </td>
                    {mayChange && (
                      <td data-label="Actions" class="actions-cell">
                        <button
                          type="button"
                          class="small"
                          aria-label={`Edit ${p.name}`}
                          onClick={() => setDialog({ kind: 'proxy', proxy: p })}
                        >
                          Edit
                        </button>
                        <button
                          type="button"
                          class="small danger"
                          aria-label={`Delete ${p.name}`}
                          onClick={() => setDialog({ kind: 'deleteProxy', proxy: p })}
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
      </section>

      <section aria-labelledby="visitors-title" class="panel">
        <div class="panel-head">
          <h2 id="visitors-title">Visitors</h2>
          <span class="muted">the client side of stcp, sudp and xtcp proxies, from the config file</span>
        </div>
        {visitors.length === 0 ? (
          <p class="empty">No visitors.</p>
        ) : (
          <div class="table-wrap">
            <table class="grid visitors">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                  <th scope="col">Server name</th>
                  <th scope="col">Bind address</th>
                  <th scope="col">Enabled</th>
                </tr>
              </thead>
              <tbody>
                {visitors.map((v) => (
                  <tr key={v.name} data-visitor={v.name}>
                    <th scope="row" data-label="Name">
                      {v.name}
                    </th>
                    <td data-label="Type">{v.type}</td>
                    <td data-label="Server name">
                      {v.serverName === undefined
                        ? '—'
                        : v.serverUser
                          ? `${v.serverUser}.${v.serverName}`
                          : v.serverName}
                    </td>
                    <td data-label="Bind address">{bindAddress(v)}</td>
                    <td data-label="Enabled">{v.enabled ? 'yes' : 'no'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      {mayFollowLog && (
        <section aria-labelledby="log-title" class="panel">
          <div class="panel-head">
            <h2 id="log-title">Log</h2>
          </div>
          <LogView path="/tunnelAct/instanceMgr/logs" params={{ instanceID: id }} label="Instance log" />
        </section>
      )}

      {mayChange && <SystemConfig info={info} onSaved={() => refreshInfo.current.request()} />}

      {mayExport && (
        <section aria-labelledby="config-title" class="panel">
          <div class="panel-head">
            <h2 id="config-title">Config file</h2>
            {!mayChange && <span class="muted">read-only{config?.masked ? ', secrets shown as ********' : ''}</span>}
          </div>
          <ErrorText>{configError}</ErrorText>
          {config &&
            (mayChange ? (
              <ConfigEditor
                instanceID={id}
                config={config}
                onSaved={() => {
                  refreshConfig.current.request();
                  refreshInfo.current.request();
                  proxiesEdited();
                }}
              />
            ) : (
              <pre class="config" tabIndex={0} aria-label="Config file (TOML)">
                {config.content}
              </pre>
            ))}
        </section>
      )}

      <History
        instanceID={id}
        mayChange={mayChange}
        stamp={info.revision}
        onRolledBack={() => {
          refreshInfo.current.request();
          if (exportable.current) refreshConfig.current.request();
          proxiesEdited();
        }}
      />

      {dialog?.kind === 'rename' && (
        <RenameInstance instance={info} onClose={() => setDialog(null)} onDone={() => refreshInfo.current.request()} />
      )}
      {dialog?.kind === 'delete' && (
        <DeleteInstance
          instance={info}
          onClose={() => setDialog(null)}
          onDone={() => {
            location.hash = '#/instances';
          }}
        />
      )}
      {dialog?.kind === 'proxy' && (
        <ProxyDialog
          instanceID={id}
          proxy={dialog.proxy}
          onClose={() => setDialog(null)}
          onSaved={(message) => {
            notify(message);
            proxiesEdited();
          }}
        />
      )}
      {dialog?.kind === 'deleteProxy' && (
        <Confirm
          title={`Delete proxy ${dialog.proxy.name}?`}
          confirmLabel="Delete proxy"
          onClose={() => setDialog(null)}
          onConfirm={async () => {
            const reply = await post('/tunnelAct/proxyMgr/delete', { instanceID: id, proxyName: dialog.proxy.name });
            notify(reply.message);
            proxiesEdited();
          }}
        >
          <p>It is removed from the config file; a running tunnel drops it.</p>
        </Confirm>
      )}
    </section>
  );
}

function Fact({ name, value, wide }: { name: string; value: string | number; wide?: boolean }) {
  return (
    <div class={wide ? 'fact wide' : 'fact'}>
      <dt>{name}</dt>
      <dd>{value}</dd>
    </div>
  );
}

function local(p: Proxy): string {
  if (typeof p.plugin === 'object' && p.plugin !== null) {
    return `plugin ${String((p.plugin as Record<string, unknown>).type ?? '')}`;
  }
  if (!p.localPort) return p.localIP || '—';
  return `${p.localIP || '127.0.0.1'}:${p.localPort}`;
}

/**
 * Where a proxy is reached, each address once. frpc reports a tcp or udp proxy at the server's address and port, and
 * an http, https or tcpmux proxy at each of its domains (once per location, with the server's port): a domain it
 * reports is shown as reported, one it does not (yet) as the file names it.
 */
function bindAddress(v: Visitor): string {
  if (v.bindPort === undefined) return '—';
  return `${v.bindAddr || '127.0.0.1'}:${v.bindPort || '—'}`;
}

function ProxyStatus({ proxy, running }: { proxy: Proxy; running: boolean }) {
  if (!proxy.enabled) return <span class="pstatus pstatus-disabled">disabled</span>;
  if (!proxy.status) return <span class="muted">{running ? 'unknown' : '—'}</span>;
  const cls =
    proxy.status === 'running' ? 'ok' : proxy.status === 'wait start' || proxy.status === 'new' ? 'wait' : 'bad';
  return (
    <span class={`pstatus pstatus-${cls}`} title={proxy.err || undefined}>
      {proxy.status}
      {proxy.err && <small class="perr">{proxy.err}</small>}
    </span>
  );
}

function SystemConfig({ info, onSaved }: { info: InstanceInfo; onSaved: () => void }) {
  const { notify } = useSession();
  const [bootAtStart, setBootAtStart] = useState(info.bootAtStart);
  const [probes, setProbes] = useState(info.probes);
  const [runUser, setRunUser] = useState(info.runUser ?? '');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  useEffect(() => {
    setBootAtStart(info.bootAtStart);
    setProbes(info.probes);
    setRunUser(info.runUser ?? '');
  }, [info.bootAtStart, info.probes, info.runUser]);
  const changed = bootAtStart !== info.bootAtStart || probes !== info.probes || runUser.trim() !== (info.runUser ?? '');

  return (
    <section aria-labelledby="system-title" class="panel">
      <div class="panel-head">
        <h2 id="system-title">Service</h2>
      </div>
      <form
        class="inline-form"
        onSubmit={async (e) => {
          e.preventDefault();
          if (!changed || !runUser.trim()) return;
          setBusy(true);
          setError('');
          try {
            const modifiedData: Record<string, unknown> = {};
            if (bootAtStart !== info.bootAtStart) modifiedData.bootAtStart = bootAtStart;
            if (probes !== info.probes) modifiedData.probes = probes;
            if (runUser.trim() !== (info.runUser ?? '')) modifiedData.runUser = runUser.trim();
            const reply = await post<{ bootServiceError?: string }>('/tunnelAct/instanceMgr/modify', {
              instanceID: info.instanceID,
              type: 'systemConfig',
              modifiedData,
            });
            notify(
              reply.message + (reply.data.bootServiceError ? ` (boot service: ${reply.data.bootServiceError})` : ''),
              reply.data.bootServiceError ? 'error' : 'ok',
            );
            onSaved();
          } catch (err) {
            setError(explain(err));
          } finally {
            setBusy(false);
          }
        }}
      >
        <Check
          label="Start at boot"
          checked={bootAtStart}
          onChange={setBootAtStart}
          hint="Started when the host boots (a boot service of the init system)"
        />
        <Check
          label="Probe end to end"
          checked={probes}
          onChange={setProbes}
          hint="While it runs, each tcp, http and https proxy is tried through its server and directly (Probe settings)"
        />
        <Field label="Run as user" error={runUser.trim() ? undefined : 'A user is required.'}>
          {({ id, describedBy, invalid }) => (
            <input
              id={id}
              value={runUser}
              aria-describedby={describedBy}
              aria-invalid={invalid}
              onInput={(e) => setRunUser(e.currentTarget.value)}
            />
          )}
        </Field>
        <button type="submit" class="primary" disabled={busy || !changed || !runUser.trim()}>
          {busy ? 'Saving…' : 'Save'}
        </button>
      </form>
      <ErrorText>{error}</ErrorText>
    </section>
  );
}
