// A daemon whose tunnels are the real frpc, against a real frps on loopback: what the real-frp suites share.
import type { ExecutionContext } from 'ava';
import { readTunnelConfig, type AdminEndpoint } from '../../src/config/tunnel-config.js';
import { processesByConfigPath } from '../../src/system/proc.js';
import { disposeWithTunnels, startWithRoot, type Daemon } from './daemon.js';
import { Frps, REAL_FRPC, type FrpsOptions } from './frp.js';
import { createInstance, instanceSettings, statusOf, waitFor } from './instances.js';
import { openStream, wsUrl, type Stream } from './streams.js';

export const FRP_TOKEN = 'real-frp-test-token';

/** settings.toml for a daemon running the real frpc: alerts after 1 s, and no polling to hide what the log says. */
export const realFrpSettings = (extra: Record<string, string | number | boolean> = {}): string =>
  instanceSettings({ 'Alerts.DebounceSecs': 1, 'Status.PollSecs': 600, ...extra }, REAL_FRPC);

/** A real frps for one test (with the suites' token unless told otherwise), stopped with it. */
/** A daemon on the real frpc with its root token, disposed of (tunnels included) when the test ends. */
export async function realFrpDaemon(
  t: ExecutionContext,
  settings: Record<string, string | number | boolean> = {},
): Promise<{ daemon: Daemon; root: string }> {
  const { daemon, root } = await startWithRoot({ settingsToml: realFrpSettings(settings) });
  t.teardown(() => disposeWithTunnels(daemon, root));
  return { daemon, root };
}

export async function frpsFor(t: ExecutionContext, options: FrpsOptions = { token: FRP_TOKEN }): Promise<Frps> {
  const frps = await Frps.start(options);
  t.teardown(() => frps.stop());
  return frps;
}

/**
 * An instance that is a client of `frps` (`extra`: more create fields, such as `runUser`); returns its id (as the
 * API takes it) and config path.
 */
export function createTunnel(
  daemon: Daemon,
  token: string,
  frps: Frps,
  name: string,
  additionalProperties: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
) {
  return createInstance(
    daemon,
    token,
    name,
    { 'auth.token': frps.token, ...additionalProperties },
    { serverPort: String(frps.bindPort), ...extra },
  );
}

export const tcpTo = (name: string, localPort: number, remotePort: number) => ({
  name,
  type: 'tcp',
  localIP: '127.0.0.1',
  localPort: String(localPort),
  remotePort: String(remotePort),
});

export const httpTo = (name: string, localPort: number, domain: string) => ({
  name,
  type: 'http',
  localIP: '127.0.0.1',
  localPort: String(localPort),
  customDomains: [domain],
});

/** Pids of the real frpc processes that run a config file. */
export const frpcPids = (configPath: string): number[] =>
  (processesByConfigPath(new Set([configPath])).get(configPath) ?? []).map((p) => p.pid);

/** Where tunnelward reaches the tunnel's admin API, read from its config file as tunnelward reads it. */
export async function adminEndpointOf(configPath: string): Promise<AdminEndpoint> {
  return (await readTunnelConfig(configPath)).adminEndpoint()!;
}

/** Adds a proxy through the API and returns the reply's data (`applied` says how it reached the tunnel). */
export async function addProxy(daemon: Daemon, token: string, id: string, proxyInfo: object) {
  const res = await daemon.post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo }, { token });
  if (!res.body.success) throw new Error(`adding a proxy failed: ${res.status} ${res.body.message}`);
  return res.body.data as { applied: string };
}

export async function start(daemon: Daemon, token: string, id: string) {
  const res = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
  if (!res.body.success) throw new Error(`start failed: ${res.status} ${res.body.message}`);
}

/** Waits until the instance's status satisfies `until` (within `timeoutMs`) and returns it. */
export const statusUntil = (
  daemon: Daemon,
  token: string,
  id: string,
  until: (s: any) => boolean,
  timeoutMs = 10_000,
) => waitFor(() => statusOf(daemon, token, id), until, timeoutMs);

/** Waits (30 s at most) until the instance's health is `state`, its reason matching `reason` when given. */
export const healthUntil = (daemon: Daemon, token: string, id: string, state: string, reason?: RegExp) =>
  statusUntil(
    daemon,
    token,
    id,
    (s) => s.health.state === state && (reason === undefined || reason.test(s.health.reason ?? '')),
    30_000,
  );

/** The event stream, and the alerts about one instance in it. */
export async function alertsOf(t: ExecutionContext, daemon: Daemon, token: string) {
  const events: Stream = await openStream(wsUrl(daemon.url, `/system/events?token=${token}`));
  t.teardown(() => events.ws.close());
  const alerts = (id: string) =>
    events.messages.filter(
      (e) =>
        e.instanceID === Number(id) &&
        /^(proxy|instance)\.(up|down|connected|disconnected|unreachable|reachable)$/.test(e.event),
    );
  return {
    events,
    alerts,
    /** Waits for an alert of the instance that matches (event, and proxy when given), and returns it. */
    async next(id: string, event: string, proxy?: string, after = 0, timeoutMs = 30_000) {
      const match = (e: any) => e.event === event && (proxy === undefined || e.proxy === proxy);
      await events.waitFor(() => alerts(id).slice(after).some(match), timeoutMs);
      return alerts(id).slice(after).find(match);
    },
  };
}
