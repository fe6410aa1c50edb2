// What answering "is it up?" costs: the health answer computed for 1000 tunnels, the end-to-end probes of 1000
// proxies every 30 s (bench/probes-cost.ts in a process of its own, so its CPU is its own), and the real frpc's
// memory carrying traffic with GOMEMLIMIT unset and set (the memory cap's soft limit).
import { execFile, spawn } from 'node:child_process';
import { readFile, rm, writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tunnelHealth, type TunnelFacts } from '../src/instances/health.js';
import type { ProxyStatus } from '../src/config/proxy-status.js';
import { PACKAGE_ROOT } from '../src/paths.js';
import { EchoConnection, echoServer, freePort, Frps, REAL_FRPC } from '../test/helpers/frp.js';
import { sleep } from './lib/tunnels.js';
import type { Row } from './run.js';
import type { Scenario } from './scenarios.js';

const run = promisify(execFile);

/** CPU per health answer over `count` tunnels of three proxies, a mix of up, degraded and down. */
function healthAnswerCost(count: number): { perAnswerUs: number; perListMs: number } {
  const proxies = (statuses: string[]) =>
    new Map<string, ProxyStatus>(
      statuses.map((status, i) => [
        `p${i}`,
        { status, err: status === 'running' ? '' : 'port already used', remoteAddr: '', since: i },
      ]),
    );
  const facts: TunnelFacts[] = Array.from({ length: count }, (_, i) => ({
    state: 'running',
    stateSince: 0,
    lastError: null,
    expectedProxies: 3,
    live: {
      connected: i % 10 !== 0,
      connectedSince: 1,
      disconnectReason: i % 10 === 0 ? 'server unreachable: dial tcp: connect: connection refused' : null,
      proxies: proxies(i % 3 === 0 ? ['running', 'start error', 'running'] : ['running', 'running', 'running']),
    },
  }));
  for (const f of facts) tunnelHealth(f); // warm
  const rounds = 50;
  const t0 = process.cpuUsage();
  for (let r = 0; r < rounds; r++) for (const f of facts) tunnelHealth(f);
  const used = process.cpuUsage(t0);
  const ms = (used.user + used.system) / 1000;
  return { perAnswerUs: (ms * 1000) / (rounds * count), perListMs: ms / rounds };
}

/** The probes' own process: bench/probes-cost.ts prints its figures as JSON. */
async function probesCost(tunnels: number): Promise<Record<string, any>> {
  const { stdout } = await run(process.execPath, [join(PACKAGE_ROOT, 'dist/bench/probes-cost.js')], {
    env: { ...process.env, TUNNELWARD_BENCH_PROBE_TUNNELS: String(tunnels) },
    maxBuffer: 1 << 20,
  });
  return JSON.parse(stdout) as Record<string, any>;
}

const rssKiB = async (pid: number) =>
  Number(/^VmRSS:\s+(\d+) kB$/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);

/** One real frpc carrying `mib` MiB each way through a tcp proxy: its RSS peak and at the end, with `env`. */
async function frpcUnderLoad(frps: Frps, env: Record<string, string>, mib: number) {
  const dir = await mkdtemp(join(tmpdir(), 'tunnelward-bench-gomem-'));
  const echo = await echoServer();
  const remotePort = await freePort();
  const file = join(dir, 'frpc.toml');
  await writeFile(
    file,
    `serverAddr = "127.0.0.1"\nserverPort = ${frps.bindPort}\nauth.token = "${frps.token}"\nlog.level = "warn"\n` +
      `[[proxies]]\nname = "load${remotePort}"\ntype = "tcp"\nlocalIP = "127.0.0.1"\nlocalPort = ${echo.port}\nremotePort = ${remotePort}\n`,
  );
  const frpc = spawn(REAL_FRPC, ['-c', file], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'ignore' });
  try {
    let connection: EchoConnection | undefined;
    for (let i = 0; i < 100 && !connection; i++) {
      connection = await EchoConnection.open(remotePort)
        .then(
          async (c) =>
            await c.exchange('hello', 1000).then(
              () => c,
              () => (c.close(), undefined),
            ),
        )
        .catch(() => undefined);
      if (!connection) await sleep(100);
    }
    if (!connection) throw new Error('the tunnel did not carry');
    const idle = await rssKiB(frpc.pid!);
    const chunk = Buffer.alloc(1024 * 1024, 7);
    let peak = idle;
    for (let i = 0; i < mib; i++) {
      await connection.exchange(chunk, 20_000);
      if (i % 4 === 0) peak = Math.max(peak, await rssKiB(frpc.pid!));
    }
    connection.close();
    await sleep(2000);
    return { idle, peak, after: await rssKiB(frpc.pid!) };
  } finally {
    frpc.kill('SIGKILL');
    await echo.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export const health: Scenario = {
  name: 'health',
  async run({ quick }) {
    const rows: Omit<Row, 'scenario'>[] = [];
    const answer = healthAnswerCost(1000);
    rows.push({
      metric: 'health answer, 1000 tunnels of 3 proxies: CPU per list',
      value: answer.perListMs.toFixed(2),
      unit: 'ms',
    });
    rows.push({ metric: '  per tunnel', value: answer.perAnswerUs.toFixed(2), unit: 'us' });

    const tunnels = quick ? 100 : 1000;
    const probes = await probesCost(tunnels);
    rows.push({
      metric: `probes: ${tunnels} tcp proxies every ${probes.intervalSecs} s, CPU of one core (echo servers included)`,
      value: probes.cpuPercentOfOneCore,
      unit: '%',
    });
    rows.push({ metric: '  CPU per probe', value: probes.cpuMsPerProbe, unit: 'ms' });
    rows.push({ metric: '  every proxy judged after', value: probes.allReachableAfterMs, unit: 'ms' });
    rows.push({
      metric: '  event loop delay p99 / max',
      value: `${Number(probes.eventLoopDelayMs.p99).toFixed(0)} / ${Number(probes.eventLoopDelayMs.max).toFixed(0)}`,
      unit: 'ms',
    });

    const frps = await Frps.start({ token: 'bench-gomem-token' });
    try {
      const mib = quick ? 32 : 256;
      for (const [label, env] of [
        ['GOMEMLIMIT unset', {}],
        ['GOMEMLIMIT=16MiB (a cap of 20 MiB)', { GOMEMLIMIT: '16MiB' }],
      ] as const) {
        const { idle, peak, after } = await frpcUnderLoad(frps, env, mib);
        rows.push({
          metric: `real frpc RSS, ${label}: idle / peak carrying ${mib} MiB each way / after`,
          value: `${(idle / 1024).toFixed(1)} / ${(peak / 1024).toFixed(1)} / ${(after / 1024).toFixed(1)}`,
          unit: 'MiB',
        });
      }
    } finally {
      await frps.stop();
    }
    return rows;
  },
};
