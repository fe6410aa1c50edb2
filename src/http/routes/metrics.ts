import { hostname } from 'node:os';
import { HEALTH_STATES, REASON_KINDS, reasonKind, type Health } from '../../instances/health.js';
import { METRICS_ROLE } from '../../accounts/rules.js';
import type { RouteDeps } from '../app.js';
import { str } from '../openapi-schemas.js';
import { operation } from '../operation.js';
import { ResourceRouter } from '../resource-router.js';

export const metrics = operation({
  method: 'get',
  path: '/metrics',
  tag: 'system',
  summary: 'Prometheus metrics',
  description: 'The Prometheus text format (not in the envelope); every value is read at scrape time.',
  access: METRICS_ROLE,
  keyScope: 'metrics',
  ok: {
    description: 'Metrics in the Prometheus text exposition format',
    content: { 'text/plain; version=0.0.4': { schema: str() } },
  },
});

export const operations = [metrics];

/** HTTP requests answered, by route (as declared, so the labels stay few) and status. */
export type RequestCounts = Map<string, number>;

/**
 * `GET /metrics` (admin): the Prometheus text format, from prom-client, loaded at the first scrape so that a daemon
 * nobody scrapes pays nothing for it. Every value is read at scrape time from what the daemon keeps anyway.
 */
export function metricsRoutes(deps: RouteDeps & { requests: RequestCounts }): ResourceRouter {
  const router = new ResourceRouter('', deps.guards);
  let built: ReturnType<typeof buildRegistry> | undefined;
  router.route(metrics, async (ctx) => {
    built ??= buildRegistry(deps);
    const { registry, scrape } = await built;
    scrape();
    ctx.status = 200;
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}

type Collected<M> = (name: string, help: string, labelNames: string[], collect: (metric: M) => void) => M;

/**
 * The series of each tunnel, labelled `instance_name`: a few per tunnel, whatever its proxies (at most 7: up,
 * connected, health, restarts by cause, memory and its cap), and one per proxy only while it is down in a tunnel that
 * carries (up or degraded). A proxy of a tunnel down is the tunnel's alert, not one per proxy. Label values are fixed
 * words (health, reason kind, cause) or names tunnelward keeps unique: the count is bounded by the tunnels and proxies.
 */
function perTunnelSeries(
  supervisor: RouteDeps['supervisor'],
  gauge: Collected<InstanceType<typeof import('prom-client').Gauge>>,
  counter: Collected<InstanceType<typeof import('prom-client').Counter>>,
): () => void {
  // One health answer per tunnel per scrape, shared by the series that read it (`scrape` starts a new one).
  let answers: Array<{ name: string; id: number; health: Health }> | undefined;
  const tunnels = () =>
    (answers ??= supervisor.views().map(({ record }) => ({
      name: record.name,
      id: record.id,
      health: supervisor.healthOf(record.id),
    })));
  gauge(
    'tunnelward_tunnel_up',
    'Per tunnel: 1 when it carries traffic (health up or degraded), 0 otherwise (down, failed, or stopped).',
    ['instance_name'],
    (g) => {
      for (const { name, health } of tunnels())
        g.set({ instance_name: name }, health.state === 'up' || health.state === 'degraded' ? 1 : 0);
    },
  );
  gauge(
    'tunnelward_tunnel_connected',
    'Per tunnel: 1 while frpc says it is logged in to its server, 0 otherwise.',
    ['instance_name'],
    (g) => {
      for (const { name, id } of tunnels())
        g.set({ instance_name: name }, supervisor.status.of(id)?.connected === true ? 1 : 0);
    },
  );
  gauge(
    'tunnelward_tunnel_health',
    `Per tunnel, always 1: its health (${HEALTH_STATES.join(', ')}) and the kind of reason it is not up (${REASON_KINDS.join(', ')}); the reason itself is in GET /tunnelAct/instanceMgr/status.`,
    ['instance_name', 'health', 'reason'],
    (g) => {
      for (const { name, health } of tunnels())
        g.set({ instance_name: name, health: health.state, reason: reasonKind(health) }, 1);
    },
  );
  counter(
    'tunnelward_tunnel_restarts_total',
    'Per tunnel, restarts by cause: exit (the watchdog after the tunnel ended; counted from 0 again at an operator start) and health (the health policy: a tunnel that ran but carried nothing, or over its memory cap; since tunnelward started).',
    ['instance_name', 'cause'],
    (c) => {
      for (const { name, id } of tunnels()) {
        c.inc({ instance_name: name, cause: 'exit' }, supervisor.view(id).run.restarts);
        c.inc({ instance_name: name, cause: 'health' }, supervisor.healthPolicy.restartsOf(id));
      }
    },
  );
  gauge(
    'tunnelward_tunnel_memory_bytes',
    'Per running tunnel: resident memory of its frpc process.',
    ['instance_name'],
    (g) => {
      const rss = supervisor.memoryOf();
      for (const { name, id } of tunnels()) {
        const bytes = rss.get(id);
        if (bytes !== undefined) g.set({ instance_name: name }, bytes);
      }
    },
  );
  gauge(
    'tunnelward_tunnel_memory_cap_bytes',
    'Per tunnel with a memory cap (its own, else Instance.MemoryMaxMB): the cap; a tunnel over it is restarted.',
    ['instance_name'],
    (g) => {
      for (const { name, id } of tunnels()) {
        const capMB = supervisor.healthPolicy.memoryCapOf(id);
        if (capMB > 0) g.set({ instance_name: name }, capMB * 1024 * 1024);
      }
    },
  );
  gauge(
    'tunnelward_proxy_down',
    `Per proxy down in a tunnel that carries (up or degraded), always 1, with the kind of reason (${REASON_KINDS.join(', ')}): unreachable and local_down come from the end-to-end probes.`,
    ['instance_name', 'proxy', 'reason'],
    (g) => {
      for (const { name, id, health } of tunnels()) {
        if (health.state !== 'up' && health.state !== 'degraded') continue;
        for (const [proxy, proxyHealth] of supervisor.proxyHealths(id, health))
          if (proxyHealth.state === 'down') g.set({ instance_name: name, proxy, reason: reasonKind(proxyHealth) }, 1);
      }
    },
  );
  return () => (answers = undefined);
}

async function buildRegistry({
  supervisor,
  webhookStats,
  logTotals,
  requests,
}: RouteDeps & { requests: RequestCounts }) {
  const { Counter, Gauge, Registry } = await import('prom-client');
  const registry = new Registry();
  // Every metric is computed at scrape time: its collector starts from zero and sets what the daemon has now.
  const collected =
    <M extends InstanceType<typeof Gauge> | InstanceType<typeof Counter>>(Kind: new (config: never) => M) =>
    (name: string, help: string, labelNames: string[], collect: (metric: M) => void): M =>
      new Kind({
        name,
        help,
        labelNames,
        registers: [registry],
        collect(this: M) {
          this.reset();
          collect(this);
        },
      } as never);
  const gauge = collected(Gauge);
  const counter = collected(Counter);
  // Every series names the host it comes from: several tunnelwards in one Prometheus stay apart, whatever the
  // target's address (the `instance` label is Prometheus's own: the target; a tunnel is `instance_name`).
  registry.setDefaultLabels({ host: hostname() });

  gauge('tunnelward_instances', 'Instances by state.', ['state'], (g) => {
    const counts = new Map<string, number>();
    for (const view of supervisor.views()) counts.set(view.state, (counts.get(view.state) ?? 0) + 1);
    for (const state of ['stopped', 'starting', 'running', 'stopping', 'backoff', 'failed'])
      g.set({ state }, counts.get(state) ?? 0);
  });
  gauge(
    'tunnelward_instance_restarts',
    'Automatic restarts since the last operator start, summed over instances.',
    [],
    (g) => g.set(supervisor.views().reduce((sum, view) => sum + view.run.restarts, 0)),
  );
  counter(
    'tunnelward_health_restarts_total',
    'Restarts the health policy made of tunnels that ran but carried nothing, since tunnelward started.',
    [],
    (c) => c.inc(supervisor.healthPolicy.restartsOf()),
  );
  gauge(
    'tunnelward_instances_health',
    'Instances by health (up, degraded, down, stopped, failed).',
    ['health'],
    (g) => {
      const counts = new Map<string, number>();
      for (const view of supervisor.views()) {
        const { state } = supervisor.healthOf(view.record.id);
        counts.set(state, (counts.get(state) ?? 0) + 1);
      }
      for (const health of HEALTH_STATES) g.set({ health }, counts.get(health) ?? 0);
    },
  );
  gauge('tunnelward_instances_connected', 'Running instances logged in to their server (as frpc says).', [], (g) =>
    g.set(supervisor.views().filter((view) => supervisor.statusFields(view.record.id).connected === true).length),
  );
  gauge('tunnelward_proxies', 'Proxies of running instances by the status frpc reports.', ['status'], (g) => {
    const counts = new Map<string, number>();
    for (const view of supervisor.views())
      for (const [status, n] of Object.entries(supervisor.statusFields(view.record.id).proxyStatus))
        counts.set(status, (counts.get(status) ?? 0) + n);
    for (const [status, n] of counts) g.set({ status }, n);
  });
  gauge(
    'tunnelward_proxy_probes',
    'Proxies probed end to end, by their verdict (reachable, unreachable from outside, local service down, pending).',
    ['result'],
    (g) => {
      const { proxies } = supervisor.probes?.stats() ?? { proxies: undefined };
      g.set({ result: 'reachable' }, proxies?.reachable ?? 0);
      g.set({ result: 'unreachable' }, proxies?.unreachable ?? 0);
      g.set({ result: 'local_down' }, proxies?.localDown ?? 0);
      g.set({ result: 'pending' }, proxies?.pending ?? 0);
    },
  );
  counter('tunnelward_probes_total', 'End-to-end probes made, by outcome.', ['outcome'], (c) => {
    const { probes } = supervisor.probes?.stats() ?? { probes: { ok: 0, failed: 0 } };
    c.inc({ outcome: 'ok' }, probes.ok);
    c.inc({ outcome: 'failed' }, probes.failed);
  });
  const scrape = perTunnelSeries(supervisor, gauge, counter);
  counter('tunnelward_instance_log_lines_total', 'Lines of output read from the tunnels.', [], (c) =>
    c.inc(logTotals().lines),
  );
  counter('tunnelward_instance_log_bytes_total', 'Bytes of output read from the tunnels.', [], (c) =>
    c.inc(logTotals().bytes),
  );
  counter('tunnelward_webhook_events_total', 'Webhook events by outcome.', ['outcome'], (c) => {
    const stats = webhookStats();
    for (const outcome of ['published', 'delivered', 'failed', 'dropped'] as const) c.inc({ outcome }, stats[outcome]);
  });
  counter(
    'tunnelward_http_requests_total',
    'HTTP requests answered, by route and status.',
    ['route', 'status'],
    (c) => {
      for (const [key, n] of requests) {
        const [route, status] = key.split('|') as [string, string];
        c.inc({ route, status }, n);
      }
    },
  );
  gauge('process_resident_memory_bytes', 'Resident memory of the daemon process.', [], (g) =>
    g.set(process.memoryUsage.rss()),
  );
  gauge('nodejs_heap_used_bytes', 'JavaScript heap in use.', [], (g) => g.set(process.memoryUsage().heapUsed));
  counter('process_cpu_seconds_total', 'CPU time of the daemon process (user and system).', [], (c) => {
    const { user, system } = process.cpuUsage();
    c.inc((user + system) / 1e6);
  });
  return { registry, scrape };
}
