// tunnelward beside pm2 and supervisord, measured by the side-by-side harness in ../shared/peers-bench (same
// stand-in, same machine, same run; tunnelward driven as `npm start` runs it), and the machine's floor for the same
// start: the same stand-in spawned N times by a plain loop, plus Instance.StartSecs. Run only when named
// (`npm run bench -- --only peers`): about ten minutes, and supervisord installed (bench/peers-tools.sh).
import { execFile, spawn } from 'node:child_process';
import { chmod, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../src/paths.js';
import type { Row } from './run.js';
import type { Scenario } from './scenarios.js';

type Rows = Omit<Row, 'scenario'>[];

const run = promisify(execFile);
const HARNESS = process.env.TUNNELWARD_PEERS_BENCH ?? join(PACKAGE_ROOT, '..', 'shared', 'peers-bench');
/**
 * The harness's working dir (its pm2 install is kept there between runs). tunnelward runs only programs in
 * directories only root can change, and the harness writes tunnelward's stand-in there: so not under /tmp.
 */
const PEERS_DIR = process.env.TUNNELWARD_PEERS_DIR ?? '/var/lib/tunnelward-peers';
const START_SECS_MS = 1000;

interface HarnessResult {
  supervisor: string;
  n: number;
  empty: { rssKb: number };
  loaded?: { rssKb: number };
  start?: { allRunningS: number | null; outcome: string };
  status?: { apiMs: number; cliMs: number };
  idle?: { cpuPct: number };
  crash?: { newPidMs: number | null; runningMs: number | null; respawnMs: number | null };
  daemonKill?: { restartToAllRunningS: number | null; namesWithTwoOrMore: number; aliveAfter3s: number };
}

/**
 * The floor for starting N copies of the harness's tunnelward stand-in: a plain loop spawning them (the same
 * wrapper, which execs a shell that prints its start line and waits), until every one is spawned, plus StartSecs.
 */
async function startFloorMs(n: number, dir: string): Promise<number> {
  const body = join(dir, 'standin-body.sh');
  const wrapper = join(dir, 'standin');
  await writeFile(
    body,
    '#!/bin/bash\nprintf \'%s standin %s pid %s started\\n\' "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)" "$1" "$$"\nexec 3<> <(:)\nwhile :; do read -r -u 3 _; done\n',
  );
  await writeFile(wrapper, `#!/bin/bash\nexec /usr/bin/env FLOOR_RUN=1 /bin/bash '${body}' "$@"\n`);
  await chmod(body, 0o755);
  await chmod(wrapper, 0o755);
  const pids: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from(
      { length: n },
      (_, i) =>
        new Promise<void>((resolve, reject) => {
          const child = spawn(wrapper, ['-c', join(dir, `tunnel_${i}.toml`)], { detached: true, stdio: 'ignore' });
          child.once('spawn', () => {
            pids.push(child.pid!);
            child.unref();
            resolve();
          });
          child.once('error', reject);
        }),
    ),
  );
  const spawned = performance.now() - t0;
  for (const pid of pids) process.kill(pid, 'SIGKILL');
  return spawned + START_SECS_MS;
}

const mb = (kb: number | undefined) => (kb === undefined ? NaN : kb / 1024);

export const peers: Scenario = {
  name: 'peers',
  explicit: true,
  async run({ quick }) {
    const n = quick ? 100 : 1000;
    const rows: Rows = [];
    await run('sh', [join(PACKAGE_ROOT, 'bench', 'peers-tools.sh')]);
    await mkdir(PEERS_DIR, { recursive: true, mode: 0o755 });
    await chmod(PEERS_DIR, 0o755);
    const floorDir = join(PEERS_DIR, 'floor');
    await mkdir(floorDir, { recursive: true });
    const floor = await startFloorMs(n, floorDir).finally(() => rm(floorDir, { recursive: true, force: true }));
    rows.push({ metric: `floor: spawn the stand-in ${n} times + StartSecs`, value: floor, unit: 'ms' });

    const before = new Set(await readdir(join(PEERS_DIR, 'runs')).catch(() => [] as string[]));
    const args = ['--only', 'supervisord,pm2,tunnelward', '--n', String(n), ...(quick ? ['--idle', '10'] : [])];
    const harness = spawn(join(HARNESS, 'run-peers.sh'), args, {
      env: { ...process.env, PEERS_DIR, TW_PROJECT: PACKAGE_ROOT },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const code = await new Promise<number | null>((resolve) => harness.once('exit', resolve));
    const session = (await readdir(join(PEERS_DIR, 'runs'))).find((s) => !before.has(s));
    if (!session) throw new Error(`the harness wrote no results (exit ${code})`);
    const { results } = JSON.parse(await readFile(join(PEERS_DIR, 'runs', session, 'results.json'), 'utf8')) as {
      results: HarnessResult[];
    };
    for (const r of results) {
      const who = r.supervisor;
      const ours = who.startsWith('tunnelward');
      const startS = r.start?.allRunningS ?? NaN;
      rows.push({ metric: `${who}: start all -> all running`, value: startS * 1000, unit: 'ms' });
      if (ours)
        rows.push({ metric: `${who}: start all / floor`, value: (startS * 1000) / floor, unit: 'x', goal: '<= 1.3' });
      rows.push({
        metric: `${who}: RSS with ${n} running`,
        value: mb(r.loaded?.rssKb),
        unit: 'MB',
        ...(ours ? { goal: '< 80' } : {}),
      });
      rows.push({
        metric: `${who}: idle CPU (${quick ? 10 : 30} s)`,
        value: r.idle?.cpuPct ?? NaN,
        unit: '%',
        ...(ours ? { goal: '< 0.3' } : {}),
      });
      rows.push({
        metric: `${who}: crash -> new pid seen`,
        value: r.crash?.newPidMs ?? NaN,
        unit: 'ms',
        ...(ours ? { goal: '< 30' } : {}),
      });
      rows.push({ metric: `${who}: crash -> stand-in's own start line`, value: r.crash?.respawnMs ?? NaN, unit: 'ms' });
      rows.push({ metric: `${who}: full listing through the API`, value: r.status?.apiMs ?? NaN, unit: 'ms' });
      const k = r.daemonKill;
      rows.push({
        metric: `${who}: daemon kill -9 + restart -> all running; names twice`,
        value: k ? `${k.restartToAllRunningS?.toFixed(2) ?? '-'} s; ${k.namesWithTwoOrMore}` : '-',
        unit: '',
      });
    }
    rows.push({ metric: `harness session (${join(PEERS_DIR, 'runs', session)})`, value: code ?? '', unit: 'exit' });
    return rows;
  },
};
