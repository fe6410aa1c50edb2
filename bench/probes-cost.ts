// What end-to-end probes cost at scale: the prober (actors/probes.ts) with TUNNELWARD_BENCH_PROBE_TUNNELS tunnels
// (1000), each with one tcp proxy, on its defaults but for the period (Probe.IntervalSecs = 30): the service is an
// echo server on loopback and "frps" another one. Measures the time until every proxy has a verdict, the CPU the
// daemon's process spends per probe and per period, the event loop's delay, and the connections at once.
// Run: npm run --silent build:all && node dist/bench/probes-cost.js
import { createServer, type AddressInfo, type Server } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pino from 'pino';
import { Prober, type ProbeSubjects } from '../actors/probes.js';
import type { ProxyStatus } from '../src/config/proxy-status.js';
import type { TunnelConfig } from '../src/config/tunnel-config.js';
import type { InstanceRecord } from '../src/instances/instance-store.js';
import { defaultSettings } from '../src/settings/table.js';
import { Subject } from '../src/util/rx.js';

const N = Number(process.env.TUNNELWARD_BENCH_PROBE_TUNNELS ?? 1000);
const INTERVAL_SECS = 30;

async function echo(): Promise<{ server: Server; port: number }> {
  const server = createServer((s) => {
    s.on('error', () => s.destroy());
    s.pipe(s);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, port: (server.address() as AddressInfo).port };
}

const local = await echo();
const remote = await echo();
const settings = { ...defaultSettings('/tmp'), 'Probe.IntervalSecs': INTERVAL_SECS };
const records = new Map<number, InstanceRecord>();
for (let id = 1; id <= N; id++) records.set(id, { id, probes: true, revision: 1 } as InstanceRecord);
const proxies = new Map<string, ProxyStatus>([
  ['p', { status: 'running', err: '', remoteAddr: `127.0.0.1:${remote.port}`, since: 0 }],
]);
const config = {
  serverAddr: '127.0.0.1',
  proxies: () => [
    { name: 'p', type: 'tcp', localIP: '127.0.0.1', localPort: String(local.port), remotePort: '', enabled: true },
  ],
} as unknown as TunnelConfig;
const subjects: ProbeSubjects = {
  views: () => [...records.values()].map((record) => ({ record })),
  exists: (id) => records.has(id),
  record: (id) => records.get(id)!,
  stateOf: () => 'running',
  readConfig: async () => config,
  status: { of: () => ({ connected: true, connectedSince: 0, disconnectReason: null, proxies }) },
  catalogueChanges$: new Subject<{ instanceID: number }>(),
};

const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
const cpu0 = process.cpuUsage();
const rss0 = process.memoryUsage.rss();
const t0 = Date.now();
const prober = new Prober(() => settings, subjects, pino({ level: 'silent' }));
let peakInFlight = 0;
let allAt = 0;
await new Promise<void>((resolve) => {
  const watch = setInterval(() => {
    const stats = prober.stats();
    peakInFlight = Math.max(peakInFlight, stats.inFlight);
    if (!allAt && stats.proxies.reachable === N) allAt = Date.now() - t0;
    if (Date.now() - t0 >= 2 * INTERVAL_SECS * 1000) {
      clearInterval(watch);
      resolve();
    }
  }, 50);
});
const cpu = process.cpuUsage(cpu0);
const stats = prober.stats();
prober.close();
delay.disable();
const cpuMs = (cpu.user + cpu.system) / 1000;
const made = stats.probes.ok + stats.probes.failed;
console.log(
  JSON.stringify(
    {
      tunnels: N,
      intervalSecs: INTERVAL_SECS,
      concurrency: settings['Probe.Concurrency'],
      secondsMeasured: 2 * INTERVAL_SECS,
      allReachableAfterMs: allAt,
      probes: stats.probes,
      meanProbeMs: Math.round(stats.totalMs / Math.max(1, made)),
      peakInFlight,
      cpuMs: Math.round(cpuMs),
      cpuPercentOfOneCore: Number(((cpuMs / (2 * INTERVAL_SECS * 1000)) * 100).toFixed(2)),
      cpuMsPerProbe: Number((cpuMs / Math.max(1, made)).toFixed(3)),
      eventLoopDelayMs: { p50: delay.percentile(50) / 1e6, p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 },
      rssGrowthMiB: Number(((process.memoryUsage.rss() - rss0) / 1048576).toFixed(1)),
    },
    null,
    2,
  ),
);
local.server.close();
remote.server.close();
