import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../src/paths.js';
import { BenchDaemon, ADMIN } from './lib/daemon.js';
import { load, percentile } from './lib/load.js';
import type { Row } from './run.js';

export interface Scenario {
  name: string;
  run(options: { quick: boolean }): Promise<Omit<Row, 'scenario'>[]>;
}

const FIXTURE = join(PACKAGE_ROOT, 'test', 'fixtures', 'frpc.mjs');
const LIFTED = '[RateLimit]\nLogin = 1000000\nPerToken = 1000000\n';

function fixtureSettings(): string {
  return `TunnelPath = ${JSON.stringify(FIXTURE)}\n[Instance]\nStartSecs = 1\n${LIFTED}`;
}

async function bareKoa(): Promise<{ url: string; stop: () => void }> {
  const proc = spawn(process.execPath, [join(PACKAGE_ROOT, 'dist/bench/bare-koa.js')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve) => {
    proc.stdout!.setEncoding('utf8');
    proc.stdout!.on('data', (c: string) => {
      const m = c.match(/listening on (\S+)/);
      if (m) resolve(m[1]!);
    });
  });
  return { url, stop: () => proc.kill('SIGTERM') };
}

/** Login latency, and authenticated list/status throughput against a bare Koa route. */
const http: Scenario = {
  name: 'http',
  async run({ quick }) {
    const rows: Omit<Row, 'scenario'>[] = [];
    const daemon = await BenchDaemon.start({ settingsToml: fixtureSettings() });
    try {
      const logins: number[] = [];
      for (let i = 0; i < (quick ? 10 : 30); i++) {
        const t0 = performance.now();
        await daemon.login();
        logins.push(performance.now() - t0);
      }
      logins.sort((a, b) => a - b);
      rows.push({ metric: 'login latency p50', value: percentile(logins, 50), unit: 'ms' });
      rows.push({ metric: 'login latency p99', value: percentile(logins, 99), unit: 'ms' });

      const instances = quick ? 20 : 100;
      for (let i = 0; i < instances; i++) {
        await daemon.call('POST', '/tunnelAct/instanceMgr/create', {
          instanceInfo: { name: `bench_${i}`, serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' },
        });
      }
      const bare = await bareKoa();
      const durationMs = quick ? 2000 : 5000;
      try {
        for (const connections of quick ? [1, 16] : [1, 16, 64]) {
          const base = await load({ url: `${bare.url}/`, connections, durationMs });
          const list = await load({ url: `${daemon.url}/tunnelAct/instanceMgr/list`, headers: () => daemon.headers(), connections, durationMs });
          const status = await load({ url: `${daemon.url}/tunnelAct/instanceMgr/status?instanceID=1`, headers: () => daemon.headers(), connections, durationMs });
          rows.push({ metric: `bare koa @${connections} req/s`, value: base.rps, unit: 'req/s' });
          rows.push({ metric: `list (${instances}) @${connections} req/s`, value: list.rps, unit: 'req/s' });
          rows.push({ metric: `list @${connections} ratio to bare koa`, value: list.rps / base.rps, unit: 'x', goal: connections === 64 ? '>= 0.5' : undefined });
          rows.push({ metric: `list @${connections} p50 / p99`, value: `${list.p50.toFixed(2)} / ${list.p99.toFixed(2)}`, unit: 'ms' });
          rows.push({ metric: `status @${connections} req/s`, value: status.rps, unit: 'req/s' });
          rows.push({ metric: `status @${connections} p50 / p99`, value: `${status.p50.toFixed(2)} / ${status.p99.toFixed(2)}`, unit: 'ms' });
          if (list.errors + status.errors > 0) rows.push({ metric: `errors @${connections}`, value: list.errors + status.errors, unit: 'req' });
        }
      } finally {
        bare.stop();
      }
    } finally {
      await daemon.stop();
      await daemon.remove();
    }
    return rows;
  },
};

/** Start and stop many instances of the fixture tunnel client at once. */
const fixtureInstances: Scenario = {
  name: 'fixture',
  async run({ quick }) {
    const count = quick ? 20 : 100;
    const daemon = await BenchDaemon.start({ settingsToml: fixtureSettings() });
    const rows: Omit<Row, 'scenario'>[] = [];
    try {
      await daemon.login();
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const res = await daemon.call('POST', '/tunnelAct/instanceMgr/create', {
          instanceInfo: { name: `fx_${i}`, serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' },
        });
        ids.push(String(res.data.instanceID));
      }
      const rssIdle = await daemon.rssMiB();
      let t0 = performance.now();
      const started = await Promise.all(ids.map((id) => daemon.call('POST', '/tunnelAct/instanceMgr/start', { instanceID: id })));
      const startMs = performance.now() - t0;
      const failures = started.filter((r) => !r.success).length;
      rows.push({ metric: `start ${count} fixture tunnels (StartSecs 1)`, value: startMs, unit: 'ms' });
      if (failures) rows.push({ metric: 'failed starts', value: failures, unit: '' });
      rows.push({ metric: `daemon RSS, ${count} running`, value: await daemon.rssMiB(), unit: 'MiB' });
      rows.push({ metric: 'daemon RSS, none running', value: rssIdle, unit: 'MiB' });
      rows.push({ metric: `daemon fds, ${count} running`, value: await daemon.openFds(), unit: 'fds' });
      t0 = performance.now();
      await Promise.all(ids.map((id) => daemon.call('POST', '/tunnelAct/instanceMgr/stop', { instanceID: id })));
      rows.push({ metric: `stop ${count} fixture tunnels`, value: performance.now() - t0, unit: 'ms' });
    } finally {
      await daemon.stop();
      await daemon.remove();
    }
    return rows;
  },
};

export const scenarios: Scenario[] = [http, fixtureInstances];
export { ADMIN };
