import { spawn } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { PACKAGE_ROOT } from '../src/paths.js';
import { MALLOC_ENVIRONMENT, NODE_FLAGS } from '../src/system/node-flags.js';
import { BenchDaemon } from './lib/daemon.js';
import { inParallel, LIFTED, sleep, standIn } from './lib/tunnels.js';
import type { Scenario } from './scenarios.js';

/** The modules of the chosen stack, as the daemon loads them. */
const STACK = ['koa', '@koa/router', 'koa-body', 'ws', 'rxjs', 'xstate', 'pino', 'smol-toml', 'argon2', 'sql.js'];

interface Memory {
  rss: number;
  anon: number;
}

async function memoryOf(pid: number): Promise<Memory> {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
  const field = (name: string) => Number(rollup.match(new RegExp(`^${name}:\\s+(\\d+)`, 'm'))![1]) / 1024;
  return { rss: field('Rss'), anon: field('Anonymous') };
}

/** The resident part of sql.js's WebAssembly memory: the one mapping of its declared size (338 pages). */
async function databaseMiB(pid: number): Promise<number> {
  const smaps = await readFile(`/proc/${pid}/smaps`, 'utf8');
  const wasmKiB = 338 * 64;
  for (const block of smaps.split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/)) {
    const size = Number(block.match(/^Size:\s+(\d+)/m)?.[1] ?? 0);
    if (size >= wasmKiB && size <= wasmKiB + 64 * 64) return Number(block.match(/^Rss:\s+(\d+)/m)![1]) / 1024;
  }
  return NaN;
}

/** A Node process with the daemon's flags that loads `modules` (none: Node itself), measured once idle. */
async function nodeWith(modules: string[]): Promise<Memory> {
  const code = `${modules.map((m) => `await import(${JSON.stringify(m)});`).join('')} process.stdout.write('ready\\n'); setInterval(() => {}, 1000);`;
  const proc = spawn(process.execPath, [...NODE_FLAGS, '--input-type=module', '-e', code], {
    cwd: PACKAGE_ROOT,
    env: { ...process.env, ...MALLOC_ENVIRONMENT },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((resolve) => proc.stdout!.once('data', resolve));
  await sleep(1000);
  const memory = await memoryOf(proc.pid!);
  proc.kill('SIGKILL');
  return memory;
}

function openStream(daemon: BenchDaemon, id: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(
      `${daemon.url.replace('http', 'ws')}/tunnelAct/instanceMgr/logs?instanceID=${id}&token=${daemon.token}`,
    );
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/**
 * Where the daemon's memory goes: Node itself, the stack it loads, the empty daemon, each instance (created, then
 * running), each log-stream client, the database. The figures of docs/benchmarks.md's memory budget.
 */
export const memory: Scenario = {
  name: 'memory',
  async run({ quick }) {
    const count = quick ? 200 : 1000;
    const streams = 500;
    const rows = [];
    const mib = (v: number) => Math.round(v * 10) / 10;
    const bare = await nodeWith([]);
    const stack = await nodeWith(STACK);
    rows.push({ metric: 'Node itself (RSS / anonymous)', value: `${mib(bare.rss)} / ${mib(bare.anon)}`, unit: 'MiB' });
    rows.push({
      metric: 'the stack loaded (RSS / anonymous)',
      value: `${mib(stack.rss)} / ${mib(stack.anon)}`,
      unit: 'MiB',
    });

    const stand = await standIn();
    const daemon = await BenchDaemon.start({ settingsToml: `TunnelPath = ${JSON.stringify(stand)}\n${LIFTED}` });
    try {
      await daemon.login();
      await sleep(2000);
      const empty = await memoryOf(daemon.pid);
      rows.push({ metric: 'daemon, no instance', value: mib(empty.rss), unit: 'MiB' });
      const ids = await inParallel(count, 16, async (i) => {
        const res = await daemon.call('POST', '/tunnelAct/instanceMgr/create', {
          instanceInfo: { name: `mem_${i}`, serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' },
        });
        return String(res.data.instanceID);
      });
      await sleep(2000);
      const created = await memoryOf(daemon.pid);
      rows.push({
        metric: `per instance, stopped (${count})`,
        value: mib(((created.rss - empty.rss) * 1024) / count),
        unit: 'KiB',
      });
      await daemon.call('POST', '/tunnelAct/instanceMgr/start', { all: true });
      await sleep(5000);
      const running = await memoryOf(daemon.pid);
      rows.push({
        metric: `per instance, running (${count})`,
        value: mib(((running.rss - empty.rss) * 1024) / count),
        unit: 'KiB',
      });
      rows.push({ metric: `daemon, ${count} running`, value: mib(running.rss), unit: 'MiB', goal: '< 100' });
      const db = await stat(join(daemon.dataDir, 'tunnelward.db'));
      rows.push({
        metric: 'database: file / resident WebAssembly memory',
        value: `${mib(db.size / 1048576)} / ${mib(await databaseMiB(daemon.pid))}`,
        unit: 'MiB',
      });
      await sleep(5000);
      const beforeStreams = await memoryOf(daemon.pid);
      const clients = await inParallel(streams, 50, (i) => openStream(daemon, ids[i % count]!));
      await sleep(5000);
      const streaming = await memoryOf(daemon.pid);
      rows.push({
        metric: `per log stream client (${streams} open)`,
        value: mib(((streaming.rss - beforeStreams.rss) * 1024) / streams),
        unit: 'KiB',
      });
      for (const ws of clients) ws.close();
      await daemon.call('POST', '/tunnelAct/instanceMgr/stop', { all: true });
    } finally {
      await daemon.stop();
      await daemon.remove();
    }
    return rows;
  },
};
