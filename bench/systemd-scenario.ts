// A thousand tunnels as units of a real systemd (test/systemd/host.sh boots a throwaway one): start all, a crash
// restarted by systemd, kill -9 of tunnelward and its return, and what tunnelward adds on the host.
import { SystemdHost } from '../test/helpers/systemd-host.js';
import { BenchDaemon } from './lib/daemon.js';
import { descendantsOf, processesByConfig } from './lib/procs.js';
import { inParallel, LIFTED, sleep, START_CLIENTS, STAND_IN_MARKER, standIn } from './lib/tunnels.js';
import type { Row } from './run.js';
import type { Scenario } from './scenarios.js';

type Rows = Omit<Row, 'scenario'>[];

async function mainPid(host: SystemdHost, id: string): Promise<number> {
  return Number((await host.show(`tunnel_${id}.service`, 'MainPID')).MainPID);
}

async function runningPerList(daemon: BenchDaemon): Promise<number> {
  const list = await daemon.call('GET', '/tunnelAct/instanceMgr/list');
  return list.data.filter((i: { isRunning: boolean }) => i.isRunning).length;
}

/** daemon-reloads PID 1 has done (it logs each to the journal). */
async function reloads(host: SystemdHost): Promise<number> {
  const { stdout } = await host.run('journalctl', '-q', '-o', 'cat', '_PID=1', 'MESSAGE=Reloading.');
  return stdout.split('\n').filter((line) => line === 'Reloading.').length;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

async function until(what: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < timeoutMs) {
    if (await what()) return performance.now() - t0;
    await sleep(20);
  }
  return NaN;
}

export const systemd: Scenario = {
  name: 'systemd',
  async run({ quick }) {
    const count = quick ? 200 : 1000;
    const rows: Rows = [];
    const stand = await standIn();
    const host = await SystemdHost.boot();
    const settings = `TunnelPath = ${JSON.stringify(stand)}\nInitSystem = "systemd"\n${LIFTED}`;
    const env = { TUNNELWARD_BOOT_ID: 'bench-systemd' };
    let daemon = await BenchDaemon.start({ settingsToml: settings, wrap: host.enter, env });
    try {
      await daemon.login();
      const reloads0 = await reloads(host);
      const c0 = performance.now();
      const ids = await inParallel(count, 16, async (i) => {
        const res = await daemon.call('POST', '/tunnelAct/instanceMgr/create', {
          instanceInfo: { name: `sd_${i}`, serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' },
        });
        if (!res.success) throw new Error(res.message);
        return String(res.data.instanceID);
      });
      rows.push({
        metric: `create ${count} (a unit file each, read at the first start)`,
        value: performance.now() - c0,
        unit: 'ms',
        goal: '< 5000',
      });
      rows.push({ metric: `daemon-reloads for ${count} creates`, value: (await reloads(host)) - reloads0, unit: '' });

      // The floor: systemd itself starting the same units (systemctl, no tunnelward), and stopping them again.
      await host.systemctl('daemon-reload');
      const units = ids.map((id) => `tunnel_${id}.service`);
      const f0 = performance.now();
      await host.systemctl('start', ...units);
      rows.push({ metric: `floor: systemctl start of the ${count} units`, value: performance.now() - f0, unit: 'ms' });
      await host.systemctl('stop', ...units);
      await host.systemctl('reset-failed', ...units);

      const t0 = performance.now();
      const started = await inParallel(count, START_CLIENTS, (i) =>
        daemon.post('/tunnelAct/instanceMgr/start', { instanceID: ids[i] }),
      );
      rows.push({
        metric: `start ${count} units (${START_CLIENTS} clients, StartSecs 1)`,
        value: performance.now() - t0,
        unit: 'ms',
      });
      const failed = started.filter((r) => !r.success);
      if (failed.length)
        rows.push({ metric: `failed starts (first: ${failed[0].message})`, value: failed.length, unit: '' });
      rows.push({ metric: 'running per list', value: await runningPerList(daemon), unit: 'inst' });
      const active = (await host.systemctl('list-units', '--state=running', '--no-legend', 'tunnel_*')).stdout;
      rows.push({ metric: 'units running per systemd', value: active.trim().split('\n').length, unit: 'units' });
      rows.push({ metric: `daemon RSS, ${count} running`, value: await daemon.rssMiB(), unit: 'MiB' });
      const added = descendantsOf(daemon.pid);
      rows.push({
        metric: `processes tunnelward adds, ${count} running`,
        value: added.length,
        unit: 'procs',
        goal: '1 (journalctl)',
      });

      // One bulk request: stop all, then start all.
      const s1 = performance.now();
      const bulkStop = await daemon.post('/tunnelAct/instanceMgr/stop', { instanceIDs: ids });
      rows.push({ metric: `stop ${count} units (one bulk request)`, value: performance.now() - s1, unit: 'ms' });
      const b0 = performance.now();
      const bulk = await daemon.post('/tunnelAct/instanceMgr/start', { instanceIDs: ids });
      rows.push({
        metric: `start ${count} units (one bulk request, StartSecs 1)`,
        value: performance.now() - b0,
        unit: 'ms',
        goal: '< 5000',
      });
      if (!bulkStop.success || bulk.data?.ok !== count)
        rows.push({ metric: `bulk start: not all ok (${bulk.message})`, value: bulk.data?.ok ?? 0, unit: 'inst' });

      // kill -9 of a unit's main process: systemd restarts it and signals both; tunnelward hears of the crash from
      // systemd's signal (its log line's own time against the time just before the kill) and takes the new process
      // over (running again after StartSecs 1).
      const restarts: number[] = [];
      const noticed: number[] = [];
      const back: number[] = [];
      const lineTime = (line: string) => Number(/"time":(\d+)/.exec(line)?.[1]);
      const samples = 25;
      const stride = Math.floor(count / samples);
      for (let i = 0; i < samples; i++) {
        const id = ids[i * stride]!;
        const old = await mainPid(host, id);
        const killed = await host.run('sh', '-c', `date +%s%N; kill -KILL ${old}`);
        const killedAt = Number(killed.stdout.trim()) / 1e6;
        const crashed = await daemon.waitForLine(
          new RegExp(`"instanceID":${id},"from":"running","to":"backoff"`),
          10_000,
        );
        noticed.push(lineTime(crashed) - killedAt);
        if (i >= 5) continue;
        const restarted = await until(async () => {
          const fresh = await mainPid(host, id);
          return fresh > 0 && fresh !== old;
        }, 10_000);
        restarts.push(restarted);
        const running = await daemon.waitForLine(
          new RegExp(`"instanceID":${id},"from":"starting","to":"running"`),
          10_000,
        );
        back.push(lineTime(running) - killedAt);
      }
      for (const list of [restarts, noticed, back]) list.sort((a, b) => a - b);
      rows.push({ metric: 'crash (kill -9) to new main pid p50 (5)', value: percentile(restarts, 0.5), unit: 'ms' });
      rows.push({
        metric: `crash to noticed by tunnelward p50 (${samples})`,
        value: percentile(noticed, 0.5),
        unit: 'ms',
        goal: '< 50',
      });
      rows.push({
        metric: `crash to noticed by tunnelward p99 (${samples})`,
        value: percentile(noticed, 0.99),
        unit: 'ms',
      });
      rows.push({ metric: 'crash to running again (StartSecs 1) p50 (5)', value: percentile(back, 0.5), unit: 'ms' });
      // The samples not waited for are running again before the next step.
      await until(async () => (await runningPerList(daemon)) === count, 15_000);

      // kill -9 of tunnelward, one crash while it is away, then a new tunnelward.
      await sleep(1500);
      await daemon.stop('SIGKILL');
      const away = ids[count >> 1]!;
      const before = await mainPid(host, away);
      await host.run('kill', '-KILL', String(before));
      const r0 = performance.now();
      daemon = await BenchDaemon.start({ dataDir: daemon.dataDir, wrap: host.enter, env });
      await daemon.login();
      const reattached = await until(async () => (await runningPerList(daemon)) === count, 30_000);
      rows.push({
        metric: `kill -9 + restart: all ${count} running again`,
        value: performance.now() - r0 - (Number.isNaN(reattached) ? 30_000 : 0),
        unit: 'ms',
      });
      rows.push({ metric: 're-attached and running', value: await runningPerList(daemon), unit: 'inst' });
      const procs = await processesByConfig(STAND_IN_MARKER);
      rows.push({
        metric: 'tunnels running twice after restart',
        value: [...procs.values()].filter((p) => p.length > 1).length,
        unit: 'inst',
        goal: '0',
      });
      rows.push({ metric: 'tunnels running after restart', value: procs.size, unit: 'inst' });
      rows.push({
        metric: 'crashed while away: restarted by systemd',
        value: (await mainPid(host, away)) !== before ? 'yes' : 'no',
        unit: '',
      });
      rows.push({ metric: `daemon RSS after re-attaching ${count}`, value: await daemon.rssMiB(), unit: 'MiB' });

      const s0 = performance.now();
      const stopped = await inParallel(count, START_CLIENTS, (i) =>
        daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: ids[i] }),
      );
      rows.push({ metric: `stop ${count} units`, value: performance.now() - s0, unit: 'ms' });
      const notStopped = stopped.filter((r) => !r.success);
      if (notStopped.length)
        rows.push({ metric: `failed stops (first: ${notStopped[0].message})`, value: notStopped.length, unit: '' });
      rows.push({
        metric: 'tunnels left after stopping all',
        value: (await processesByConfig(STAND_IN_MARKER)).size,
        unit: 'inst',
        goal: '0',
      });
    } finally {
      await daemon.stop('SIGKILL').catch(() => {});
      // Powering the throwaway systemd off ends every unit it runs.
      await host.shutdown();
      await daemon.remove();
    }
    return rows;
  },
};
