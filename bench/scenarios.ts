import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../src/paths.js';
import { BenchDaemon, ADMIN } from './lib/daemon.js';
import { load, percentile } from './lib/load.js';
import { descendantsBut, processesByConfig } from './lib/procs.js';
import { inParallel, LIFTED, sleep, START_CLIENTS, STAND_IN_MARKER, standIn } from './lib/tunnels.js';
import { status } from './status-scenario.js';
import { realFrp } from './real-frp-scenario.js';
import { health } from './health-scenario.js';
import { memory } from './memory-scenario.js';
import { soak } from './soak-scenario.js';
import { systemd } from './systemd-scenario.js';
import { peers } from './peers-scenario.js';
import { writes } from './writes-scenario.js';
import { changes } from './changes-scenario.js';
import { fleet } from './fleet-scenario.js';
import { prometheus } from './prometheus-scenario.js';
import { apply } from './apply-scenario.js';
import type { Row } from './run.js';

export interface Scenario {
  name: string;
  /** Run only when named in `--only` (long, or needing what a plain run does not install). */
  explicit?: boolean;
  run(options: { quick: boolean }): Promise<Omit<Row, 'scenario'>[]>;
}

const FIXTURE = join(PACKAGE_ROOT, 'test', 'fixtures', 'frpc.mjs');

function fixtureSettings(): string {
  return `TunnelPath = ${JSON.stringify(FIXTURE)}\n[Instance]\nStartSecs = 1\n${LIFTED}`;
}

async function bareKoa(): Promise<{ url: string; stop: () => void }> {
  const proc = spawn(process.execPath, [join(PACKAGE_ROOT, 'dist/bench/bare-koa.js')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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
          const list = await load({
            url: `${daemon.url}/tunnelAct/instanceMgr/list`,
            headers: () => daemon.headers(),
            connections,
            durationMs,
          });
          const status = await load({
            url: `${daemon.url}/tunnelAct/instanceMgr/status?instanceID=1`,
            headers: () => daemon.headers(),
            connections,
            durationMs,
          });
          // A query checked by its operation's declared schema, and little else: what checking a request costs.
          const checked = await load({
            url: `${daemon.url}/apiKeyMgr/list?userID=1`,
            headers: () => daemon.headers(),
            connections,
            durationMs,
          });
          rows.push({ metric: `bare koa @${connections} req/s`, value: base.rps, unit: 'req/s' });
          rows.push({
            metric: `bare koa @${connections} p50 / p99`,
            value: `${base.p50.toFixed(2)} / ${base.p99.toFixed(2)}`,
            unit: 'ms',
          });
          rows.push({ metric: `list (${instances}) @${connections} req/s`, value: list.rps, unit: 'req/s' });
          rows.push({
            metric: `list @${connections} ratio to bare koa`,
            value: list.rps / base.rps,
            unit: 'x',
            goal: connections === 64 ? '>= 0.5' : undefined,
          });
          rows.push({
            metric: `list @${connections} p50 / p99`,
            value: `${list.p50.toFixed(2)} / ${list.p99.toFixed(2)}`,
            unit: 'ms',
            goal: connections === 64 ? 'p99 < 20' : undefined,
          });
          rows.push({ metric: `status @${connections} req/s`, value: status.rps, unit: 'req/s' });
          rows.push({
            metric: `status @${connections} p50 / p99`,
            value: `${status.p50.toFixed(2)} / ${status.p99.toFixed(2)}`,
            unit: 'ms',
          });
          rows.push({ metric: `apiKeyMgr/list?userID=1 @${connections} req/s`, value: checked.rps, unit: 'req/s' });
          rows.push({
            metric: `apiKeyMgr/list?userID=1 @${connections} p50 / p99`,
            value: `${checked.p50.toFixed(2)} / ${checked.p99.toFixed(2)}`,
            unit: 'ms',
          });
          const errors = list.errors + status.errors + checked.errors;
          if (errors > 0) rows.push({ metric: `errors @${connections}`, value: errors, unit: 'req' });
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
      const started = await Promise.all(
        ids.map((id) => daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id })),
      );
      const startMs = performance.now() - t0;
      const failures = started.filter((r) => !r.success);
      rows.push({ metric: `start ${count} fixture tunnels (StartSecs 1)`, value: startMs, unit: 'ms' });
      if (failures.length)
        rows.push({ metric: `failed starts (first: ${failures[0].message})`, value: failures.length, unit: '' });
      rows.push({ metric: `daemon RSS, ${count} running`, value: await daemon.rssMiB(), unit: 'MiB' });
      rows.push({ metric: 'daemon RSS, none running', value: rssIdle, unit: 'MiB' });
      rows.push({ metric: `daemon fds, ${count} running`, value: await daemon.openFds(), unit: 'fds' });
      t0 = performance.now();
      await Promise.all(ids.map((id) => daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id })));
      rows.push({ metric: `stop ${count} fixture tunnels`, value: performance.now() - t0, unit: 'ms' });
    } finally {
      await daemon.stop();
      await daemon.remove();
    }
    return rows;
  },
};

async function latency(count: number, call: () => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await call();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

/**
 * Waits for a new process below `parent` running `config`; returns when it appeared (ms, performance clock). The
 * tunnels that ran before the kill (`tunnels`) are not looked into: with 1000 of them, a walk of every descendant
 * took tens of ms a turn, which was most of what this measured.
 */
async function newChildFor(
  parent: number,
  config: string,
  tunnels: ReadonlySet<number>,
  timeoutMs: number,
): Promise<number> {
  const { readFileSync } = await import('node:fs');
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    for (const pid of descendantsBut(parent, tunnels)) {
      try {
        // Read each turn: a child's command line is its parent's until it execs.
        if (readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(config)) return performance.now();
      } catch {
        // gone already
      }
    }
    await new Promise((r) => setImmediate(r));
  }
  return NaN;
}

/** A thousand tunnels: start, footprint, idle cost, control-plane latency, crashes, and a kill -9 of the daemon. */
const scale: Scenario = {
  name: 'scale',
  async run({ quick }) {
    const count = quick ? 200 : 1000;
    const idleSeconds = quick ? 10 : 60;
    const rows: Omit<Row, 'scenario'>[] = [];
    const stand = await standIn();
    rows.push({ metric: `stand-in: ${stand.endsWith('.sh') ? 'shell script' : 'compiled C'}`, value: '', unit: '' });
    const settings = `TunnelPath = ${JSON.stringify(stand)}\n${LIFTED}`;
    let daemon = await BenchDaemon.start({ settingsToml: settings });
    const dataDir = daemon.dataDir;
    try {
      await daemon.login();
      const ids = await inParallel(count, 16, async (i) => {
        const res = await daemon.call('POST', '/tunnelAct/instanceMgr/create', {
          instanceInfo: { name: `scale_${i}`, serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' },
        });
        if (!res.success) throw new Error(res.message);
        return String(res.data.instanceID);
      });
      rows.push({ metric: `daemon RSS, ${count} stopped`, value: await daemon.rssMiB(), unit: 'MiB' });

      const t0 = performance.now();
      const started = await inParallel(count, START_CLIENTS, (i) =>
        daemon.post('/tunnelAct/instanceMgr/start', { instanceID: ids[i] }),
      );
      const allRunning = performance.now() - t0;
      const failed = started.filter((r) => !r.success);
      rows.push({
        metric: `start ${count} (${START_CLIENTS} clients, StartSecs 1)`,
        value: allRunning,
        unit: 'ms',
        goal: '< 5000',
      });
      if (failed.length)
        rows.push({ metric: `failed starts (first: ${failed[0].message})`, value: failed.length, unit: '' });
      const list = await daemon.call('GET', '/tunnelAct/instanceMgr/list');
      rows.push({ metric: 'running per list', value: list.data.filter((i: any) => i.isRunning).length, unit: 'inst' });
      rows.push({ metric: `daemon RSS, ${count} running`, value: await daemon.rssMiB(), unit: 'MiB', goal: '< 100' });
      // What the collection at the end of the burst gave back (src/system/memory-reclaim.ts).
      const reclaimed = await daemon
        .waitForLine(/a burst of commands is over/, 5000)
        .then((line) => JSON.parse(line) as { heapBeforeMiB: number; heapAfterMiB: number; ms: number })
        .catch(() => undefined);
      if (reclaimed)
        rows.push({
          metric: `heap given back after the burst (in ${reclaimed.ms} ms)`,
          value: `${reclaimed.heapBeforeMiB} -> ${reclaimed.heapAfterMiB}`,
          unit: 'MiB',
        });
      rows.push({
        metric: `daemon open fds, ${count} running`,
        value: await daemon.openFds(),
        unit: 'fds',
        goal: '< 1500',
      });

      const listLatency = await latency(quick ? 50 : 200, () => daemon.call('GET', '/tunnelAct/instanceMgr/list'));
      const statusLatency = await latency(quick ? 50 : 200, () =>
        daemon.call('GET', `/tunnelAct/instanceMgr/status?instanceID=${ids[count >> 1]}`),
      );
      rows.push({
        metric: `list (${count}) p50 / p99`,
        value: `${listLatency.p50.toFixed(2)} / ${listLatency.p99.toFixed(2)}`,
        unit: 'ms',
        goal: 'p50 < 20',
      });
      rows.push({
        metric: 'status p50 / p99',
        value: `${statusLatency.p50.toFixed(2)} / ${statusLatency.p99.toFixed(2)}`,
        unit: 'ms',
        goal: 'p50 < 20',
      });

      // Idle means after the one-off work of a fresh start (each instance's stable-uptime timer fires at 60 s).
      await sleep(quick ? 2000 : 62_000);
      const cpu0 = await daemon.cpuSeconds();
      await sleep(idleSeconds * 1000);
      const idleCpu = (((await daemon.cpuSeconds()) - cpu0) / idleSeconds) * 100;
      rows.push({ metric: `daemon CPU idle over ${idleSeconds} s`, value: idleCpu, unit: '%', goal: '< 0.5' });
      rows.push({
        metric: `daemon RSS, ${count} running, after the idle period`,
        value: await daemon.rssMiB(),
        unit: 'MiB',
        goal: '< 100',
      });

      // Crash of a spawned tunnel: time until the daemon notices, and until a new process runs.
      const crash = async (which: number, parent: number) => {
        const procs = await processesByConfig(STAND_IN_MARKER);
        const config = [...procs.keys()].find((c) => c.endsWith(`tunnel_${ids[which]}.toml`))!;
        const pid = procs.get(config)![0]!;
        const tunnels = new Set([...procs.values()].flat());
        const killedAt = performance.now();
        process.kill(pid, 'SIGKILL');
        const appeared = await newChildFor(parent, config, tunnels, 5000);
        return appeared - killedAt;
      };
      const spawnedCrash: number[] = [];
      for (let i = 0; i < 5; i++) spawnedCrash.push(await crash(i * 7, daemon.proc.pid!));
      spawnedCrash.sort((a, b) => a - b);
      rows.push({
        metric: 'crash of a spawned tunnel to new process p50',
        value: spawnedCrash[2]!,
        unit: 'ms',
        goal: '< 100',
      });
      const noticed = await noticeTimes(daemon, 3);
      rows.push({ metric: 'crash of a spawned tunnel to noticed p50', value: noticed, unit: 'ms', goal: '< 50' });

      // kill -9 of the daemon, then a new one: every tunnel re-adopted, none started twice.
      await sleep(1500);
      await daemon.stop('SIGKILL');
      const r0 = performance.now();
      daemon = await BenchDaemon.start({ dataDir });
      await daemon.login();
      let running = 0;
      while (performance.now() - r0 < 30_000) {
        const now = await daemon.call('GET', '/tunnelAct/instanceMgr/list');
        running = now.data.filter((i: any) => i.isRunning).length;
        if (running === count) break;
        await sleep(20);
      }
      rows.push({
        metric: `kill -9 + restart: all ${count} running again`,
        value: performance.now() - r0,
        unit: 'ms',
        goal: '< 3000',
      });
      const procs = await processesByConfig(STAND_IN_MARKER);
      const shells = [...procs.values()].map((pids) => pids.length);
      rows.push({ metric: 're-adopted and running', value: running, unit: 'inst' });
      rows.push({
        metric: 'tunnels running twice after restart',
        value: shells.filter((n) => n > 1).length,
        unit: 'inst',
        goal: '0',
      });
      const adoptedCrash: number[] = [];
      for (let i = 0; i < 3; i++) {
        const procsNow = await processesByConfig(STAND_IN_MARKER);
        const config = [...procsNow.keys()].find((c) => c.endsWith(`tunnel_${ids[(count >> 2) + i]}.toml`))!;
        const pid = procsNow.get(config)![0]!;
        const tunnels = new Set([...procsNow.values()].flat());
        const killedAt = performance.now();
        process.kill(pid, 'SIGKILL');
        adoptedCrash.push((await newChildFor(daemon.proc.pid!, config, tunnels, 10_000)) - killedAt);
      }
      adoptedCrash.sort((a, b) => a - b);
      rows.push({
        metric: 'crash of a re-adopted tunnel to new process p50',
        value: adoptedCrash[1]!,
        unit: 'ms',
        goal: '< 2000',
      });

      const s0 = performance.now();
      const stopped = await inParallel(count, START_CLIENTS, (i) =>
        daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: ids[i] }),
      );
      rows.push({ metric: `stop ${count}`, value: performance.now() - s0, unit: 'ms' });
      const notStopped = stopped.filter((r) => !r.success);
      if (notStopped.length)
        rows.push({ metric: `failed stops (first: ${notStopped[0].message})`, value: notStopped.length, unit: '' });
      const left = await processesByConfig(STAND_IN_MARKER);
      rows.push({ metric: 'tunnels left after stopping all', value: left.size, unit: 'inst', goal: '0' });

      // The same in one request each (`all: true`), with the status endpoint polled throughout the burst.
      const polled: number[] = [];
      let polling = true;
      const poller = (async () => {
        while (polling) {
          const p0 = performance.now();
          await daemon.call('GET', `/tunnelAct/instanceMgr/status?instanceID=${ids[count >> 1]}`);
          polled.push(performance.now() - p0);
          await sleep(5);
        }
      })();
      const b0 = performance.now();
      const bulk = await daemon.post('/tunnelAct/instanceMgr/start', { all: true });
      rows.push({
        metric: `one request starts ${count} (StartSecs 1)`,
        value: performance.now() - b0,
        unit: 'ms',
        goal: '< 3000',
      });
      polling = false;
      await poller;
      polled.sort((a, b) => a - b);
      rows.push({
        metric: 'status during that burst p50 / p99',
        value: `${percentile(polled, 50).toFixed(2)} / ${percentile(polled, 99).toFixed(2)}`,
        unit: 'ms',
        goal: 'p99 < 50',
      });
      rows.push({ metric: 'started ok in that reply', value: bulk.data?.ok ?? bulk.message, unit: 'inst' });
      const bs0 = performance.now();
      const bulkStop = await daemon.post('/tunnelAct/instanceMgr/stop', { all: true });
      rows.push({ metric: `one request stops ${count}`, value: performance.now() - bs0, unit: 'ms', goal: '< 2000' });
      rows.push({ metric: 'stopped ok in that reply', value: bulkStop.data?.ok ?? bulkStop.message, unit: 'inst' });
    } finally {
      await daemon.stop();
      const left = await processesByConfig(STAND_IN_MARKER);
      for (const pids of left.values()) {
        for (const pid of pids) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone meanwhile
          }
        }
      }
      await daemon.remove();
    }
    return rows;
  },
};

/** Median delay between a kill and the daemon's log line about it, from the pino timestamps of its own output. */
async function noticeTimes(daemon: BenchDaemon, samples: number): Promise<number> {
  const delays: number[] = [];
  for (let i = 0; i < samples; i++) {
    const procs = await processesByConfig(STAND_IN_MARKER);
    const entries = [...procs.entries()];
    const [config, pids] = entries[(entries.length >> 1) + i]!;
    const id = /tunnel_(\d+)\.toml$/.exec(config)![1];
    const killedAt = Date.now();
    process.kill(pids[0]!, 'SIGKILL');
    const line = await daemon.waitForLine(new RegExp(`"instanceID":${id},.*"to":"backoff"`), 5000);
    delays.push(JSON.parse(line).time - killedAt);
    await sleep(300);
  }
  delays.sort((a, b) => a - b);
  return delays[Math.floor(samples / 2)]!;
}

/** One instance writing 10 000 lines/s, followed by 1, 10 and 50 WebSocket clients. */
const logs: Scenario = {
  name: 'logs',
  async run({ quick }) {
    const { WebSocket } = await import('ws');
    const rate = 10_000;
    const windowMs = quick ? 3000 : 8000;
    const rows: Omit<Row, 'scenario'>[] = [];
    const writer = join(PACKAGE_ROOT, 'bench', 'stand-ins', 'log-rate.mjs');
    const daemon = await BenchDaemon.start({ settingsToml: `TunnelPath = ${JSON.stringify(writer)}\n${LIFTED}` });
    try {
      await daemon.login();
      const created = await daemon.call('POST', '/tunnelAct/instanceMgr/create', {
        instanceInfo: { name: 'fanout', serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' },
        additionalProperties: { metadatas: { rate: String(rate) } },
      });
      const id = created.data.instanceID;
      const start = await daemon.call('POST', '/tunnelAct/instanceMgr/start', { instanceID: String(id) });
      if (!start.success) throw new Error(start.message);
      for (const clients of quick ? [1, 10] : [1, 10, 50]) {
        const counts = new Array<number>(clients).fill(0);
        const latencies: number[] = [];
        let measuring = false;
        const sockets = await Promise.all(
          Array.from(
            { length: clients },
            (_, i) =>
              new Promise<InstanceType<typeof WebSocket>>((resolve, reject) => {
                const ws = new WebSocket(
                  `${daemon.url.replace('http', 'ws')}/tunnelAct/instanceMgr/logs?instanceID=${id}&token=${daemon.token}`,
                );
                ws.on('message', (data: Buffer) => {
                  if (!measuring) return;
                  const text = data.toString();
                  const at = /at (\d+)"/.exec(text);
                  if (!at) return;
                  counts[i]!++;
                  if ((counts[i]! & 15) === 0) latencies.push(Date.now() - Number(at[1]));
                });
                ws.on('open', () => resolve(ws));
                ws.on('error', reject);
              }),
          ),
        );
        await sleep(500);
        const cpu0 = await daemon.cpuSeconds();
        measuring = true;
        await sleep(windowMs);
        measuring = false;
        const cpu = (((await daemon.cpuSeconds()) - cpu0) / (windowMs / 1000)) * 100;
        const closed = sockets.filter((ws) => ws.readyState !== ws.OPEN).length;
        for (const ws of sockets) ws.close();
        latencies.sort((a, b) => a - b);
        const perClient = counts.map((c) => c / (windowMs / 1000));
        rows.push({
          metric: `${clients} clients: lines/s per client (min / mean)`,
          value: `${Math.round(Math.min(...perClient))} / ${Math.round(perClient.reduce((a, b) => a + b, 0) / clients)}`,
          unit: 'lines/s',
          goal: clients === 50 ? `${rate}` : undefined,
        });
        rows.push({
          metric: `${clients} clients: line latency p50 / p99`,
          value: `${percentile(latencies, 50)} / ${percentile(latencies, 99)}`,
          unit: 'ms',
          goal: clients === 50 ? 'p99 < 250' : undefined,
        });
        rows.push({ metric: `${clients} clients: daemon CPU`, value: cpu, unit: '%' });
        if (closed) rows.push({ metric: `${clients} clients: closed as too slow`, value: closed, unit: 'clients' });
        await sleep(500);
      }
      // One stuck client: the daemon's memory stays bounded while it is cut off.
      const rss0 = await daemon.rssMiB();
      const { connect } = await import('node:net');
      const url = new URL(daemon.url);
      const stuck = connect(Number(url.port), url.hostname, () =>
        stuck.write(
          `GET /tunnelAct/instanceMgr/logs?instanceID=${id}&token=${daemon.token} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        ),
      );
      stuck.once('data', () => stuck.pause());
      let peak = rss0;
      for (let i = 0; i < (quick ? 6 : 15); i++) {
        await sleep(500);
        peak = Math.max(peak, await daemon.rssMiB());
      }
      stuck.destroy();
      rows.push({
        metric: 'daemon RSS before / peak with a stuck client',
        value: `${rss0.toFixed(1)} / ${peak.toFixed(1)}`,
        unit: 'MiB',
      });
      await daemon.call('POST', '/tunnelAct/instanceMgr/stop', { instanceID: String(id) });
    } finally {
      await daemon.stop();
      await daemon.remove();
    }
    return rows;
  },
};

/** Start-up with a large database: 1000 instance records and 10 000 sessions. */
const startup: Scenario = {
  name: 'startup',
  async run({ quick }) {
    const { Database } = await import('../src/storage/database.js');
    const { hashToken, newToken } = await import('../src/accounts/tokens.js');
    const { mkdtemp } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const rows: Omit<Row, 'scenario'>[] = [];
    const dataDir = await mkdtemp(join(tmpdir(), 'tunnelward-bench-'));
    // Seed: the admin through a first start (for its password hash), then the rows straight into the file.
    let daemon = await BenchDaemon.start({ dataDir, settingsToml: LIFTED });
    await daemon.stop();
    const db = await Database.open(join(dataDir, 'tunnelward.db'));
    const now = Date.now();
    db.transaction(() => {
      for (let i = 0; i < 1000; i++) {
        db.run(
          `INSERT INTO instances (name, boot_at_start, run_user, config_path, created_at, created_by, owner_id)
           VALUES (?, 0, 'root', ?, ?, 'admin', 1)`,
          [`seed_${i}`, join(dataDir, 'instances', `tunnel_${i + 1}.toml`), now],
        );
      }
      for (let i = 0; i < 10_000; i++) {
        db.run('INSERT INTO sessions (id, user_id, token_hash, created_at, expire_at) VALUES (?, 1, ?, ?, ?)', [
          `seed-${i}`,
          hashToken(newToken()),
          now,
          now + 3_600_000,
        ]);
      }
    });
    await db.close();
    const { stat } = await import('node:fs/promises');
    rows.push({
      metric: 'database size (1000 instances, 10 000 sessions)',
      value: (await stat(join(dataDir, 'tunnelward.db'))).size / 1024,
      unit: 'KiB',
    });
    const runs: number[] = [];
    for (let i = 0; i < (quick ? 2 : 5); i++) {
      const t0 = performance.now();
      daemon = await BenchDaemon.start({ dataDir });
      runs.push(performance.now() - t0);
      if (i < (quick ? 1 : 4)) await daemon.stop();
    }
    runs.sort((a, b) => a - b);
    rows.push({ metric: 'start-up to listening, median', value: runs[runs.length >> 1]!, unit: 'ms', goal: '< 1000' });
    try {
      await daemon.login();
      // A persisted write at that size: a rename is one UPDATE and one snapshot, acknowledged once on disk.
      const writes: number[] = [];
      for (let i = 0; i < 20; i++) {
        const t0 = performance.now();
        const res = await daemon.call('POST', '/tunnelAct/instanceMgr/modify', {
          instanceID: '1',
          type: 'systemConfig',
          modifiedData: { name: `renamed_${i}` },
        });
        if (!res.success) throw new Error(res.message);
        writes.push(performance.now() - t0);
      }
      writes.sort((a, b) => a - b);
      rows.push({
        metric: 'one persisted write (rename) p50 / p99',
        value: `${percentile(writes, 50).toFixed(1)} / ${percentile(writes, 99).toFixed(1)}`,
        unit: 'ms',
      });
      const burst = performance.now();
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          daemon.call('POST', '/tunnelAct/instanceMgr/modify', {
            instanceID: String(i + 2),
            type: 'systemConfig',
            modifiedData: { name: `burst_${i}` },
          }),
        ),
      );
      rows.push({
        metric: '100 concurrent persisted writes, all acknowledged',
        value: performance.now() - burst,
        unit: 'ms',
      });
    } finally {
      await daemon.stop();
      await daemon.remove();
    }
    return rows;
  },
};

export const scenarios: Scenario[] = [
  http,
  fixtureInstances,
  scale,
  systemd,
  status,
  realFrp,
  health,
  logs,
  startup,
  writes,
  changes,
  fleet,
  apply,
  memory,
  soak,
  peers,
  prometheus,
];
export { ADMIN };
