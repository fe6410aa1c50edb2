import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { BenchDaemon } from './lib/daemon.js';
import { inParallel, LIFTED } from './lib/tunnels.js';
import type { Scenario } from './scenarios.js';
import type { Row } from './run.js';

/** Bytes the process has caused to be written to storage so far (`write_bytes` of /proc/<pid>/io). */
async function writeBytes(pid: number): Promise<number> {
  const io = await readFile(`/proc/${pid}/io`, 'utf8');
  return Number(io.match(/^write_bytes:\s+(\d+)/m)![1]);
}

const sizeOf = (path: string) =>
  stat(path).then(
    (s) => s.size,
    () => 0,
  );

/**
 * Disk writes per state-changing request as history grows: a daemon on its defaults with 1000 instances, one admin
 * changing a user's type at 8 in flight, measured from the daemon's `write_bytes`, with ~100, 5 000 and 20 000
 * audit entries (the audit trail lives in the database). The trail is filled by the same requests at 64 in flight;
 * the smallest `Audit.MaxEntries` empties it to begin with.
 */
export const writes: Scenario = {
  name: 'writes',
  async run({ quick }) {
    const instances = quick ? 200 : 1000;
    const measured = quick ? 500 : 2000;
    const levels = quick ? [0, 5000] : [0, 5000, 20_000];
    const rows: Omit<Row, 'scenario'>[] = [];
    let daemon = await BenchDaemon.start({ settingsToml: LIFTED });
    const db = join(daemon.dataDir, 'tunnelward.db');
    try {
      await daemon.login();
      await inParallel(instances, 32, (i) =>
        daemon.post('/tunnelAct/instanceMgr/create', {
          instanceInfo: { name: `wr_${i}`, serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' },
        }),
      );
      const made = await daemon.call('POST', '/userMgr/create', {
        username: 'bench_target',
        passwd: 'Bench123!x',
        type: 'visitor',
      });
      if (!made.success) throw new Error(made.message);
      const userID = made.data.userID;
      let n = 0;
      const change = async () => {
        const res = await daemon.post('/userMgr/modifyType', { userID, newType: n++ % 2 ? 'admin' : 'visitor' });
        if (!res.success) throw new Error(res.message);
      };
      for (const limit of [100, 20_000]) {
        const res = await daemon.call('POST', '/settings/set', { 'Audit.MaxEntries': limit });
        if (!res.success) throw new Error(res.message);
      }
      let entries = 102;
      for (const level of levels) {
        if (level > entries) {
          await inParallel(level - entries, 64, change);
          entries = level;
        }
        const before = await writeBytes(daemon.pid);
        const t0 = performance.now();
        await inParallel(measured, 8, change);
        const seconds = (performance.now() - t0) / 1000;
        const written = (await writeBytes(daemon.pid)) - before;
        const label = level === 0 ? `~${entries}` : String(level);
        rows.push({
          metric: `bytes written per request, ${label} audit entries`,
          value: written / measured / 1024,
          unit: 'KiB',
          goal: '<= 8',
        });
        rows.push({ metric: `  requests/s @8, ${label} audit entries`, value: measured / seconds, unit: 'req/s' });
        rows.push({
          metric: `  database file / journal, ${label} entries`,
          value: `${((await sizeOf(db)) / 1048576).toFixed(2)} / ${((await sizeOf(`${db}.journal`)) / 1048576).toFixed(2)}`,
          unit: 'MiB',
        });
        entries += measured;
      }
      // What a crash costs the next start: the journal applied before the daemon listens.
      const journal = await sizeOf(`${db}.journal`);
      await daemon.stop('SIGKILL');
      const t0 = performance.now();
      daemon = await BenchDaemon.start({ dataDir: daemon.dataDir });
      rows.push({
        metric: `start-up after kill -9, ${(journal / 1048576).toFixed(1)} MiB of journal`,
        value: performance.now() - t0,
        unit: 'ms',
      });
      // Beside a start with nothing to apply: a clean stop leaves everything in the snapshot.
      await daemon.stop();
      const t1 = performance.now();
      daemon = await BenchDaemon.start({ dataDir: daemon.dataDir });
      rows.push({ metric: 'start-up after a clean stop (empty journal)', value: performance.now() - t1, unit: 'ms' });
    } finally {
      await daemon.stop();
      await daemon.remove();
    }
    return rows;
  },
};
