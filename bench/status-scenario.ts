// Live proxy status: how fast a change inside a tunnel reaches the API and the event stream, and what following
// the tunnels costs at rest. The tunnels are the Node fixture (it serves frpc's admin API); a thousand of them
// would need ~45 GiB, so 100 run, read every 30 s: the same 3.3 status reads a second as 1000 at the default 300 s.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { PACKAGE_ROOT } from '../src/paths.js';
import { BenchDaemon } from './lib/daemon.js';
import { percentile } from './lib/load.js';
import { inParallel, LIFTED, sleep } from './lib/tunnels.js';
import type { Row } from './run.js';
import type { Scenario } from './scenarios.js';

const FIXTURE = join(PACKAGE_ROOT, 'test', 'fixtures', 'frpc.mjs');

export const status: Scenario = {
  name: 'status',
  async run({ quick }) {
    const count = quick ? 20 : 100;
    // The rate of 1000 tunnels at the default Status.PollSecs (300 s).
    const pollSecs = (count * 300) / 1000;
    const rows: Omit<Row, 'scenario'>[] = [];
    const dir = await mkdtemp(join(tmpdir(), 'tunnelward-status-'));
    const settings =
      `TunnelPath = ${JSON.stringify(FIXTURE)}\n${LIFTED}` +
      `[Alerts]\nDebounceSecs = 0\n[Status]\nPollSecs = ${pollSecs}\n[Instance]\nStartSecs = 1\n`;
    const daemon = await BenchDaemon.start({ settingsToml: settings });
    try {
      await daemon.login();
      const controls: string[] = [];
      const ids = await inParallel(count, 8, async (i) => {
        const control = join(dir, `control_${i}.json`);
        await writeFile(control, JSON.stringify({ server: 'up' }));
        controls[i] = control;
        const res = await daemon.call('POST', '/tunnelAct/instanceMgr/create', {
          instanceInfo: {
            name: `st_${i}`,
            serverAddr: '127.0.0.1',
            serverPort: String(20000 + i),
            auth_method: 'token',
          },
          // frpc's second 20 ms long in the fixture: the time measured is tunnelward's, not frpc's login backoff.
          additionalProperties: { 'metadatas.fixture.control': control, 'metadatas.fixture.secondMs': '20' },
        });
        if (!res.success) throw new Error(res.message);
        const id = String(res.data.instanceID);
        await daemon.call('POST', '/tunnelAct/proxyMgr/create', {
          instanceID: id,
          proxyInfo: { name: 'ssh', type: 'tcp', localIP: '127.0.0.1', localPort: '22', remotePort: String(30000 + i) },
        });
        return id;
      });
      const started = await daemon.post('/tunnelAct/instanceMgr/start', { all: true });
      rows.push({
        metric: `${count} fixture tunnels running`,
        value: started.data?.ok ?? started.message,
        unit: 'inst',
      });
      await sleep(3000);

      // The server lost, then back (the tunnel logs it; its proxies vanish, then register again): time until the
      // API and the event stream say so.
      const ws = new WebSocket(`${daemon.url.replace(/^http/, 'ws')}/system/events?token=${daemon.token}`);
      const seen: Array<{ event: string; instanceID: number; at: number }> = [];
      ws.on('message', (data) => seen.push({ ...JSON.parse(data.toString()), at: performance.now() }));
      await new Promise((r) => ws.once('open', r));
      const toApi: number[] = [];
      const toStream: number[] = [];
      const samples = quick ? 6 : 20;
      for (let i = 0; i < samples; i++) {
        const k = Math.floor(i / 2) % count;
        const id = ids[k]!;
        const lost = i % 2 === 0;
        const event = lost ? 'instance.disconnected' : 'instance.connected';
        const t0 = performance.now();
        await writeFile(controls[k]!, JSON.stringify({ server: lost ? 'down' : 'up' }));
        for (;;) {
          const st = await daemon.call('GET', `/tunnelAct/instanceMgr/status?instanceID=${id}`);
          if (lost ? st.data.connected === false : st.data.proxyStatus.running === 1) break;
          if (performance.now() - t0 > 10_000) throw new Error(`instance ${id} never showed the change`);
          await sleep(5);
        }
        toApi.push(performance.now() - t0);
        for (;;) {
          const hit = seen.find((e) => e.event === event && e.instanceID === Number(id) && e.at >= t0);
          if (hit) {
            toStream.push(hit.at - t0);
            break;
          }
          if (performance.now() - t0 > 10_000) throw new Error(`no ${event} for instance ${id}`);
          await sleep(5);
        }
      }
      ws.close();
      for (const s of [toApi, toStream]) s.sort((a, b) => a - b);
      rows.push({
        metric: 'server lost / back to the API p50 / p99',
        value: `${percentile(toApi, 50).toFixed(0)} / ${percentile(toApi, 99).toFixed(0)}`,
        unit: 'ms',
        goal: '< 2000',
      });
      rows.push({
        metric: 'server lost / back to the event stream p50 / p99',
        value: `${percentile(toStream, 50).toFixed(0)} / ${percentile(toStream, 99).toFixed(0)}`,
        unit: 'ms',
        goal: '< 2000 (+ debounce)',
      });

      const idleSecs = quick ? 10 : 60;
      const cpu0 = await daemon.cpuSeconds();
      await sleep(idleSecs * 1000);
      rows.push({
        metric: `daemon CPU idle, ${(count / pollSecs) | 0} status reads/s (= 1000 at 300 s)`,
        value: (((await daemon.cpuSeconds()) - cpu0) / idleSecs) * 100,
        unit: '%',
        goal: '< 1',
      });
      await daemon.post('/tunnelAct/instanceMgr/stop', { all: true });
    } finally {
      await daemon.stop();
      await daemon.remove();
    }
    return rows;
  },
};
