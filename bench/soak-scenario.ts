import { writeFile } from 'node:fs/promises';
import { WebSocket } from 'ws';
import { BenchDaemon, ADMIN } from './lib/daemon.js';
import { inParallel, LIFTED, sleep, standIn } from './lib/tunnels.js';
import type { Scenario } from './scenarios.js';

interface Sample {
  at: number;
  rss: number;
  heap: number;
}

/** Least-squares slope of `y` over time, per hour. */
function slopePerHour(samples: Sample[], y: (s: Sample) => number): number {
  const n = samples.length;
  if (n < 2) return NaN;
  const hours = samples.map((s) => s.at / 3_600_000);
  const mx = hours.reduce((a, b) => a + b, 0) / n;
  const my = samples.reduce((a, s) => a + y(s), 0) / n;
  let num = 0;
  let den = 0;
  samples.forEach((s, i) => {
    num += (hours[i]! - mx) * (y(s) - my);
    den += (hours[i]! - mx) ** 2;
  });
  return num / den;
}

/** The JS heap in use, as the daemon's own metrics say. */
async function heapMiB(daemon: BenchDaemon): Promise<number> {
  const res = await fetch(`${daemon.url}/metrics`, { headers: daemon.headers() });
  const match = (await res.text()).match(/^nodejs_heap_used_bytes (\S+)/m);
  return match ? Number(match[1]) / 1048576 : NaN;
}

/** Opens an instance's log stream, reads for a while, leaves. */
function followFor(daemon: BenchDaemon, id: string, ms: number): Promise<number> {
  return new Promise((resolve) => {
    let lines = 0;
    const ws = new WebSocket(
      `${daemon.url.replace('http', 'ws')}/tunnelAct/instanceMgr/logs?instanceID=${id}&token=${daemon.token}`,
    );
    ws.on('message', () => lines++);
    ws.on('error', () => resolve(lines));
    ws.on('close', () => resolve(lines));
    setTimeout(() => ws.close(), ms);
  });
}

/**
 * A thousand tunnels for a fixed time under the daily traffic of a busy host: a tunnel killed every few seconds
 * (and restarted by the daemon), a log-stream client coming and going, logins and logouts, a UI polling the list
 * every second, the event stream followed. RSS and heap are sampled throughout; what counts is how they end and
 * their slope after the warm-up. `TUNNELWARD_SOAK_MINUTES` sets the length (the long mode).
 */
export const soak: Scenario = {
  name: 'soak',
  async run({ quick }) {
    const count = quick ? 200 : 1000;
    const minutes = Number(process.env.TUNNELWARD_SOAK_MINUTES ?? (quick ? 1 : 3));
    const warmupMs = Math.min(60_000, (minutes * 60_000) / 4);
    const stand = await standIn();
    const daemon = await BenchDaemon.start({ settingsToml: `TunnelPath = ${JSON.stringify(stand)}\n${LIFTED}` });
    const counts = { crashes: 0, logins: 0, streams: 0, streamLines: 0, lists: 0, events: 0 };
    try {
      await daemon.login();
      const ids = await inParallel(count, 16, async (i) => {
        const res = await daemon.call('POST', '/tunnelAct/instanceMgr/create', {
          instanceInfo: { name: `soak_${i}`, serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' },
        });
        return String(res.data.instanceID);
      });
      const started = await daemon.call('POST', '/tunnelAct/instanceMgr/start', { all: true });
      if (!started.success || started.data.failed > 0) throw new Error(`start failed: ${started.message}`);

      const events = new WebSocket(`${daemon.url.replace('http', 'ws')}/system/events?token=${daemon.token}`);
      events.on('message', () => counts.events++);

      const t0 = Date.now();
      const end = t0 + minutes * 60_000;
      const samples: Sample[] = [];
      let stop = false;
      const every = (ms: number, job: () => Promise<unknown>) =>
        (async () => {
          while (!stop) {
            const next = Date.now() + ms;
            await job().catch(() => {});
            await sleep(Math.max(0, next - Date.now()));
          }
        })();
      const loops = [
        every(3000, async () => {
          const list = await daemon.call('GET', '/tunnelAct/instanceMgr/list');
          const running = (list.data as any[]).filter((i) => i.state === 'running' && i.pid);
          const victim = running[Math.floor(Math.random() * running.length)];
          if (victim) {
            process.kill(victim.pid, 'SIGKILL');
            counts.crashes++;
          }
        }),
        every(5000, async () => {
          counts.streamLines += await followFor(daemon, ids[Math.floor(Math.random() * count)]!, 2000);
          counts.streams++;
        }),
        every(10_000, async () => {
          const session = await fetch(`${daemon.url}/login`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', 'X-Timestamp': String(Date.now()) },
            body: JSON.stringify(ADMIN),
          }).then((r) => r.json() as Promise<any>);
          await fetch(`${daemon.url}/logout`, {
            headers: { 'X-Token': session.data.token, 'X-Timestamp': String(Date.now()) },
          });
          counts.logins++;
        }),
        every(1000, async () => {
          await daemon.call('GET', '/tunnelAct/instanceMgr/list');
          counts.lists++;
        }),
        every(5000, async () => {
          samples.push({ at: Date.now() - t0, rss: await daemon.rssMiB(), heap: await heapMiB(daemon) });
        }),
      ];
      // A token lives an hour: a long soak logs in again before it ends.
      const relogin = setInterval(() => void daemon.login().catch(() => {}), 30 * 60_000);
      await sleep(end - Date.now());
      stop = true;
      clearInterval(relogin);
      await Promise.all(loops);
      events.close();

      const after = samples.filter((s) => s.at >= warmupMs);
      const at = (fraction: number) => after[Math.min(after.length - 1, Math.floor(fraction * (after.length - 1)))]!;
      const [first, middle, last] = [at(0), at(0.5), at(1)];
      const list = await daemon.call('GET', '/tunnelAct/instanceMgr/list');
      const running = (list.data as any[]).filter((i) => i.state === 'running').length;
      if (process.env.TUNNELWARD_SOAK_SAMPLES) {
        const csv = ['seconds,rss_mib,heap_mib', ...samples.map((s) => `${s.at / 1000},${s.rss},${s.heap}`)];
        await writeFile(process.env.TUNNELWARD_SOAK_SAMPLES, `${csv.join('\n')}\n`);
      }
      const fmt = (v: number) => v.toFixed(1);
      return [
        {
          metric: `${count} tunnels for ${minutes} min (warm-up ${warmupMs / 1000} s)`,
          value: samples.length,
          unit: 'samples',
        },
        {
          metric: 'crashes / logins / stream clients / list polls',
          value: `${counts.crashes} / ${counts.logins} / ${counts.streams} / ${counts.lists}`,
          unit: '',
        },
        { metric: 'running at the end', value: running, unit: 'inst', goal: String(count) },
        {
          metric: 'daemon RSS start / middle / end',
          value: `${fmt(first.rss)} / ${fmt(middle.rss)} / ${fmt(last.rss)}`,
          unit: 'MiB',
          goal: 'end < 100',
        },
        {
          metric: 'JS heap used start / middle / end',
          value: `${fmt(first.heap)} / ${fmt(middle.heap)} / ${fmt(last.heap)}`,
          unit: 'MiB',
        },
        { metric: 'RSS slope after warm-up', value: slopePerHour(after, (s) => s.rss), unit: 'MiB/h', goal: '~0' },
        { metric: 'heap slope after warm-up', value: slopePerHour(after, (s) => s.heap), unit: 'MiB/h', goal: '~0' },
        { metric: 'peak RSS', value: Math.max(...samples.map((s) => s.rss)), unit: 'MiB' },
      ];
    } finally {
      await daemon.call('POST', '/tunnelAct/instanceMgr/stop', { all: true }).catch(() => {});
      await daemon.stop();
      await daemon.remove();
    }
  },
};
