// `tunnelward fleet ls` and `fleet status` over many hosts: twenty real daemons on this host, each with a few tunnels
// (the Node fixture, one of them running), each a context of one CLI user with a visitor-scoped API key. What is
// measured is what an operator waits for: the wall time of the whole command, process start included.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../src/paths.js';
import { BenchDaemon } from './lib/daemon.js';
import { percentile } from './lib/load.js';
import { inParallel, LIFTED, sleep } from './lib/tunnels.js';
import type { Row } from './run.js';
import type { Scenario } from './scenarios.js';

const FIXTURE = join(PACKAGE_ROOT, 'test', 'fixtures', 'frpc.mjs');
const CLI = join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
const HOSTS = 20;
const INSTANCES = 3;

interface Timed {
  ms: number;
  code: number | null;
  /** The highest resident memory seen while it ran (VmHWM, read every few ms), in MiB. */
  peakMiB: number;
}

/** Runs the CLI once as a user would, timing it from spawn to exit. */
async function timedCli(args: string[], env: Record<string, string>): Promise<Timed> {
  const started = performance.now();
  const proc = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let peakMiB = 0;
  let running = true;
  const exited = new Promise<number | null>((resolve) =>
    proc.once('exit', (code) => {
      running = false;
      resolve(code);
    }),
  );
  const sample = async () => {
    while (running) {
      try {
        const status = await readFile(`/proc/${proc.pid}/status`, 'utf8');
        const hwm = Number(status.match(/^VmHWM:\s+(\d+)/m)?.[1] ?? 0) / 1024;
        peakMiB = Math.max(peakMiB, hwm);
      } catch {
        // gone between the check and the read
      }
      await sleep(5);
    }
  };
  const [code] = await Promise.all([exited, sample()]);
  return { ms: performance.now() - started, code, peakMiB };
}

async function runs(count: number, args: string[], env: Record<string, string>): Promise<Timed[]> {
  const all: Timed[] = [];
  for (let i = 0; i < count; i++) {
    const run = await timedCli(args, env);
    if (run.code !== 0) throw new Error(`tunnelward ${args.join(' ')} exited ${run.code}`);
    all.push(run);
  }
  return all;
}

const p50 = (all: Timed[]) =>
  Math.round(
    percentile(
      all.map((r) => r.ms).sort((a, b) => a - b),
      50,
    ),
  );

export const fleet: Scenario = {
  name: 'fleet',
  async run({ quick }) {
    const repeats = quick ? 5 : 15;
    const rows: Omit<Row, 'scenario'>[] = [];
    const home = await mkdtemp(join(tmpdir(), 'tunnelward-fleet-'));
    const settings = `TunnelPath = ${JSON.stringify(FIXTURE)}\n${LIFTED}[Instance]\nStartSecs = 1\n`;
    const daemons: BenchDaemon[] = [];
    try {
      daemons.push(
        ...(await inParallel(HOSTS, 4, async () => {
          const daemon = await BenchDaemon.start({ settingsToml: settings });
          await daemon.login();
          return daemon;
        })),
      );
      const env = { XDG_CONFIG_HOME: home };
      await inParallel(HOSTS, 4, async (h) => {
        const daemon = daemons[h]!;
        for (let i = 0; i < INSTANCES; i++) {
          const created = await daemon.call('POST', '/tunnelAct/instanceMgr/create', {
            instanceInfo: {
              name: `fleet_${h}_${i}`,
              serverAddr: '127.0.0.1',
              serverPort: String(21000 + h * INSTANCES + i),
              auth_method: 'token',
            },
          });
          if (!created.success) throw new Error(created.message);
          if (i === 0) {
            const started = await daemon.call('POST', '/tunnelAct/instanceMgr/start', {
              instanceID: String(created.data.instanceID),
            });
            if (!started.success) throw new Error(started.message);
          }
        }
        const key = await daemon.call('POST', '/apiKeyMgr/create', { name: 'fleet', role: 'visitor' });
        if (!key.success) throw new Error(key.message);
        const file = join(home, `host${h}.key`);
        await writeFile(file, key.data.key, { mode: 0o600 });
        const added = await timedCli(
          ['context', 'add', `host${String(h).padStart(2, '0')}`, '--url', daemon.url, '--api-key-file', file],
          env,
        );
        if (added.code !== 0) throw new Error(`context add exited ${added.code}`);
      });

      // One host alone, for scale: most of a short command is Node starting and loading the client.
      const one = await runs(repeats, ['ls', '--context', 'host00'], env);
      const fleetLs = await runs(repeats, ['fleet', 'ls'], env);
      const fleetStatus = await runs(repeats, ['fleet', 'status'], env);
      rows.push({ metric: `ls of one host (${INSTANCES} instances), wall p50`, value: p50(one), unit: 'ms' });
      rows.push({
        metric: `fleet ls over ${HOSTS} daemons (${HOSTS * INSTANCES} instances), wall p50`,
        value: p50(fleetLs),
        unit: 'ms',
        goal: '< 2000',
      });
      rows.push({
        metric: `fleet ls over ${HOSTS} daemons, slowest of ${repeats}`,
        value: Math.round(Math.max(...fleetLs.map((r) => r.ms))),
        unit: 'ms',
      });
      rows.push({ metric: `fleet status over ${HOSTS} daemons, wall p50`, value: p50(fleetStatus), unit: 'ms' });
      const peak = (all: Timed[]) => Math.round(Math.max(...all.map((r) => r.peakMiB)) * 10) / 10;
      rows.push({
        metric: 'peak RSS of the CLI: ls of one host / fleet ls',
        value: `${peak(one)} / ${peak(fleetLs)}`,
        unit: 'MiB',
      });
      return rows;
    } finally {
      await Promise.all(
        daemons.map(async (d) => {
          await d.call('POST', '/tunnelAct/instanceMgr/stop', { all: true }).catch(() => undefined);
          await d.stop();
          await d.remove();
        }),
      );
      await rm(home, { recursive: true, force: true });
    }
  },
};
