// What a Prometheus scrape of /metrics costs on a host of 1000 tunnels of 5 proxies each (5000 proxies): the series
// it holds, its size, and how long it takes, read as Prometheus reads it (a metrics-scoped key, no X-Timestamp). The
// tunnels are the compiled stand-in (one small process each, as the scale scenario runs them), each with a memory
// cap so that every per-tunnel series is there; what the stand-in cannot give (proxies down in a tunnel that
// carries: one series each) is counted at its bound, all but one proxy of every tunnel.
import { percentile } from './lib/load.js';
import { BenchDaemon } from './lib/daemon.js';
import { inParallel, LIFTED, sleep, standIn } from './lib/tunnels.js';
import type { Row } from './run.js';
import type { Scenario } from './scenarios.js';

const PROXIES_PER_TUNNEL = 5;

/** The series of a scrape, by metric name (a line that is no comment is one series). */
function seriesOf(text: string): Map<string, number> {
  const byName = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0];
    byName.set(name, (byName.get(name) ?? 0) + 1);
  }
  return byName;
}

export const prometheus: Scenario = {
  name: 'prometheus',
  async run({ quick }) {
    const count = quick ? 100 : 1000;
    const rows: Omit<Row, 'scenario'>[] = [];
    const settings = `TunnelPath = ${JSON.stringify(await standIn())}\n${LIFTED}[Instance]\nMemoryMaxMB = 64\n`;
    const daemon = await BenchDaemon.start({ settingsToml: settings });
    try {
      await daemon.login();
      const ids = await inParallel(count, 16, async (i) => {
        const res = await daemon.call('POST', '/tunnelAct/instanceMgr/create', {
          instanceInfo: { name: `pm_${i}`, serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' },
        });
        if (!res.success) throw new Error(res.message);
        return String(res.data.instanceID);
      });
      await inParallel(count * PROXIES_PER_TUNNEL, 16, async (n) => {
        const res = await daemon.call('POST', '/tunnelAct/proxyMgr/create', {
          instanceID: ids[Math.floor(n / PROXIES_PER_TUNNEL)],
          proxyInfo: {
            // Unique on the server, as frps wants them.
            name: `pm${Math.floor(n / PROXIES_PER_TUNNEL)}_p${n % PROXIES_PER_TUNNEL}`,
            type: 'tcp',
            localIP: '127.0.0.1',
            localPort: '22',
            remotePort: String(10000 + n),
          },
        });
        if (!res.success) throw new Error(res.message);
      });
      const started = await daemon.post('/tunnelAct/instanceMgr/start', { all: true });
      rows.push({
        metric: `${count} stand-in tunnels of ${PROXIES_PER_TUNNEL} proxies running`,
        value: started.data?.ok ?? started.message,
        unit: 'inst',
      });
      const made = await daemon.call('POST', '/apiKeyMgr/create', { name: 'prometheus', scope: 'metrics' });
      if (!made.success) throw new Error(made.message);
      const scrape = async () => {
        const t0 = performance.now();
        const res = await fetch(`${daemon.url}/metrics`, { headers: { Authorization: `Bearer ${made.data.key}` } });
        const text = await res.text();
        if (!res.ok) throw new Error(`scrape: ${res.status} ${text}`);
        return { ms: performance.now() - t0, text };
      };
      await scrape(); // the registry is built at the first scrape
      await sleep(1000);

      const times: number[] = [];
      let last = '';
      const cpu0 = await daemon.cpuSeconds();
      const scrapes = quick ? 10 : 30;
      for (let i = 0; i < scrapes; i++) {
        const { ms, text } = await scrape();
        times.push(ms);
        last = text;
      }
      const cpuMs = (((await daemon.cpuSeconds()) - cpu0) * 1000) / scrapes;
      times.sort((a, b) => a - b);
      const series = seriesOf(last);
      const total = [...series.values()].reduce((a, b) => a + b, 0);
      const perTunnel = [...series]
        .filter(([name]) => name.startsWith('tunnelward_tunnel_'))
        .reduce((sum, [, n]) => sum + n, 0);
      rows.push({ metric: 'series in one scrape', value: total, unit: 'series' });
      rows.push({ metric: `  of them per tunnel (tunnelward_tunnel_*)`, value: perTunnel, unit: 'series' });
      rows.push({
        metric: '  of them proxies down (tunnelward_proxy_down)',
        value: series.get('tunnelward_proxy_down') ?? 0,
        unit: 'series',
      });
      // A tunnel whose proxies are all down is down itself, and has no proxy series: at most all but one each.
      rows.push({
        metric: `  at most, ${PROXIES_PER_TUNNEL - 1} of the ${PROXIES_PER_TUNNEL} proxies of every tunnel down`,
        value: total - (series.get('tunnelward_proxy_down') ?? 0) + count * (PROXIES_PER_TUNNEL - 1),
        unit: 'series',
      });
      rows.push({ metric: 'scrape size', value: (Buffer.byteLength(last) / 1024).toFixed(0), unit: 'KiB' });
      rows.push({
        metric: 'scrape time p50 / p99',
        value: `${percentile(times, 50).toFixed(1)} / ${percentile(times, 99).toFixed(1)}`,
        unit: 'ms',
      });
      rows.push({ metric: 'daemon CPU per scrape', value: cpuMs.toFixed(1), unit: 'ms' });
      await daemon.post('/tunnelAct/instanceMgr/stop', { all: true });
    } finally {
      await daemon.stop();
      await daemon.remove();
    }
    return rows;
  },
};
