// Changes of config files with the real frpc and a real frps: how long a change takes for each plan (a reload of
// a running tunnel, a restart of one, the file only for a stopped one) with 1000 instances on the host; how many times
// a start reads its config file; and the bytes written per change as an instance's history grows to 10 000
// revisions. TUNNELWARD_BENCH_CHANGES=latency runs the first part only (what an older daemon without revisions can).
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Frps, REAL_FRPC } from '../test/helpers/frp.js';
import { BenchDaemon } from './lib/daemon.js';
import { percentile } from './lib/load.js';
import { inParallel, LIFTED, sleep } from './lib/tunnels.js';
import type { Row } from './run.js';
import type { Scenario } from './scenarios.js';

type Rows = Omit<Row, 'scenario'>[];
const TOKEN = 'bench-changes-token';

/**
 * Bytes the process sent to storage: `write_bytes` less `cancelled_write_bytes` (pages of files removed before
 * they were written back, such as the private copy `frpc verify` reads).
 */
async function writeBytes(pid: number): Promise<number> {
  const io = await readFile(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(io)![1]);
  return field('write_bytes') - field('cancelled_write_bytes');
}

/** The time of one request that must succeed, in ms. */
async function timed(send: () => Promise<{ success: boolean; message: string }>): Promise<number> {
  const t0 = performance.now();
  const res = await send();
  if (!res.success) throw new Error(res.message);
  return performance.now() - t0;
}

function latencyRows(plan: string, samples: number[], count: number): Rows {
  samples.sort((a, b) => a - b);
  return [
    { metric: `change latency p50, ${plan} (${count} instances)`, value: percentile(samples, 50), unit: 'ms' },
    { metric: `change latency p99, ${plan} (${count} instances)`, value: percentile(samples, 99), unit: 'ms' },
  ];
}

/**
 * Counts the openings of instance config files by the daemon (every thread, not its children) while `work` runs,
 * with strace attached to each of its threads.
 */
async function configOpenings(pid: number, work: () => Promise<void>): Promise<number> {
  const threads = readdirSync(`/proc/${pid}/task`);
  const trace = spawn('strace', ['-qq', '-e', 'trace=openat,open', ...threads.flatMap((t) => ['-p', t])], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let text = '';
  trace.stderr!.setEncoding('utf8');
  trace.stderr!.on('data', (chunk: string) => (text += chunk));
  // strace says nothing when attached: give it a moment, then check it is there.
  await sleep(500);
  if (trace.exitCode !== null) throw new Error(`strace could not attach: ${text}`);
  await work();
  await sleep(200);
  trace.kill('SIGINT');
  await new Promise((r) => trace.once('exit', r));
  return (text.match(/instances\/tunnel_\d+\.toml"/g) ?? []).length;
}

export const changes: Scenario = {
  name: 'changes',
  async run({ quick }) {
    const total = quick ? 200 : 1000;
    const running = quick ? 4 : 20;
    const perPlan = quick ? 20 : 100;
    const latencyOnly = process.env.TUNNELWARD_BENCH_CHANGES === 'latency';
    const rows: Rows = [];
    const frps = await Frps.start({ token: TOKEN });
    const daemon = await BenchDaemon.start({
      settingsToml: `TunnelPath = ${JSON.stringify(REAL_FRPC)}\n${LIFTED}[Revisions]\nKeep = 100000\n`,
    });
    try {
      await daemon.login();
      const ids = await inParallel(total, 32, async (i) => {
        const res = await daemon.post('/tunnelAct/instanceMgr/create', {
          instanceInfo: { name: `ch_${i}`, ...frps.client, auth_method: 'token' },
          additionalProperties: { 'auth.token': TOKEN },
        });
        if (!res.success) throw new Error(`create: ${res.message}`);
        return String(res.data.instanceID);
      });
      const live = ids.slice(0, running);
      for (const [n, id] of live.entries()) {
        await timed(() =>
          daemon.post('/tunnelAct/proxyMgr/create', {
            instanceID: id,
            proxyInfo: {
              name: `base${n}`,
              type: 'tcp',
              localIP: '127.0.0.1',
              localPort: '22',
              remotePort: String(30000 + n),
            },
          }),
        );
      }
      await timed(() => daemon.post('/tunnelAct/instanceMgr/start', { instanceIDs: live }));
      // Connected, each proxy running: what a reload then changes is a tunnel at work.
      for (let waited = 0; ; waited += 100) {
        const list = await daemon.call('GET', '/tunnelAct/instanceMgr/list');
        const up = list.data.filter(
          (e: { instanceID: number; connected: boolean | null; proxyStatus: Record<string, number> }) =>
            live.includes(String(e.instanceID)) && e.connected === true && e.proxyStatus.running === 1,
        ).length;
        if (up === running) break;
        if (waited > 30_000) throw new Error(`only ${up} of ${running} tunnels connected`);
        await sleep(100);
      }

      // Reload: a proxy added to a running tunnel and removed again, one change at a time per tunnel.
      const reloads: number[] = [];
      for (let i = 0; i < perPlan; i++) {
        const id = live[i % running]!;
        const name = `p${i}`;
        reloads.push(
          await timed(() =>
            daemon.post('/tunnelAct/proxyMgr/create', {
              instanceID: id,
              proxyInfo: { name, type: 'tcp', localIP: '127.0.0.1', localPort: '22', remotePort: String(31000 + i) },
            }),
          ),
        );
        reloads.push(await timed(() => daemon.post('/tunnelAct/proxyMgr/delete', { instanceID: id, proxyName: name })));
      }
      rows.push(...latencyRows('reload', reloads, total));
      // Restart: a top-level key of a running tunnel.
      const restarts: number[] = [];
      for (let i = 0; i < Math.ceil(perPlan / 4); i++) {
        const id = live[i % running]!;
        restarts.push(
          await timed(() =>
            daemon.post('/tunnelAct/instanceMgr/modify', {
              instanceID: id,
              type: 'configFile',
              modifiedData: { metadatas: { rev: String(i) } },
            }),
          ),
        );
      }
      rows.push(...latencyRows('restart', restarts, total));
      // The file only: a stopped tunnel.
      const files: number[] = [];
      for (let i = 0; i < perPlan; i++) {
        const id = ids[running + (i % (total - running))]!;
        files.push(
          await timed(() =>
            daemon.post('/tunnelAct/instanceMgr/modify', {
              instanceID: id,
              type: 'configFile',
              modifiedData: { metadatas: { rev: String(i) } },
            }),
          ),
        );
      }
      rows.push(...latencyRows('file only', files, total));
      if (latencyOnly) return rows;

      // Openings of config files per start: stopped instances started one request each, then stopped again.
      const starting = ids.slice(running, running + (quick ? 10 : 50));
      const opened = await configOpenings(daemon.pid, async () => {
        for (const id of starting) await timed(() => daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }));
      });
      rows.push({ metric: 'config file reads per start', value: opened / starting.length, unit: 'reads', goal: '1' });
      await timed(() => daemon.post('/tunnelAct/instanceMgr/stop', { instanceIDs: starting }));

      // Bytes written per change as one instance's history grows (changes of a stopped instance: the file only).
      const id = ids[total - 1]!;
      let made = 1;
      const change = (n: number) =>
        timed(() =>
          daemon.post('/tunnelAct/instanceMgr/modify', {
            instanceID: id,
            type: 'configFile',
            modifiedData: { metadatas: { rev: `r${n}` } },
          }),
        );
      const measured = quick ? 100 : 2000;
      for (const level of quick ? [10, 1000] : [10, 1000, 10_000]) {
        while (made < level) await change(made++);
        const before = await writeBytes(daemon.pid);
        for (let i = 0; i < measured; i++) await change(made++);
        const written = (await writeBytes(daemon.pid)) - before;
        rows.push({
          metric: `bytes written per change, ${level} revisions kept`,
          value: written / measured / 1024,
          unit: 'KiB',
          goal: '< 8',
        });
      }
      const history = await daemon.call('GET', `/tunnelAct/instanceMgr/history?instanceID=${id}&limit=1`);
      rows.push({ metric: '  revisions kept at the end', value: history.data.total, unit: 'revisions' });
      rows.push({
        metric: '  daemon RSS at the end',
        value: Number((await readFile(`/proc/${daemon.pid}/status`, 'utf8')).match(/^VmRSS:\s+(\d+)/m)![1]) / 1024,
        unit: 'MiB',
      });
      return rows;
    } finally {
      await daemon.call('POST', '/tunnelAct/instanceMgr/stop', { all: true }).catch(() => undefined);
      await daemon.stop();
      await daemon.remove();
      await frps.stop();
    }
  },
};
