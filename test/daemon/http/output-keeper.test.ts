// While no daemon runs, the tunnels' output still flows into their log files (the spawner keeps it): a tunnel
// never blocks on a full pipe, and nothing it writes is lost or written twice across the daemon's comings and goings.
import test from 'ava';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dispose, startDaemon, type Daemon } from '../../helpers/daemon.js';
import {
  createInstance,
  instanceSettings,
  killTunnelsUnder,
  logBytes,
  statusOf,
  tunnelPids,
  waitFor,
} from '../../helpers/instances.js';
import { pidExists, procArgs } from '../../../src/system/proc.js';

const BOOT = { TUNNELWARD_BOOT_ID: 'keeper-boot' };

/** Every tick the fixture logged, from the rotated files (oldest first) and the live one. */
async function ticks(logs: string, id: string): Promise<number[]> {
  const names = (await readdir(logs)).filter((n) => n.startsWith(`tunnel_${id}.log`));
  const order = (n: string) => (n.endsWith('.log') ? 0 : Number(n.slice(n.lastIndexOf('.') + 1)));
  names.sort((a, b) => order(b) - order(a));
  const found: number[] = [];
  for (const name of names)
    for (const m of (await readFile(join(logs, name), 'utf8')).matchAll(/fixture: tick (\d+)$/gm))
      found.push(Number(m[1]));
  return found;
}

const keeperPid = async (logs: string) =>
  Number((await readFile(join(logs, 'keeper.pid'), 'utf8').catch(() => '0')).trim());

test('the daemon away (stopped, then killed): the output keeps flowing into the log, no line repeated or lost but by the kill', async (t) => {
  t.timeout(90_000);
  const settingsToml = instanceSettings({ 'Log.MaxBytes': 64 * 1024, 'Log.Files': 100 });
  let daemon: Daemon = await startDaemon({ settingsToml, env: BOOT });
  const dataDir = daemon.dataDir;
  const logs = join(dataDir, 'logs');
  t.teardown(async () => {
    await daemon.stop('SIGKILL');
    await killTunnelsUnder(dataDir);
    await dispose(daemon);
  });
  let token = await daemon.login();
  // About 80 bytes a millisecond: the 64 KiB of a pipe fill within a second when nobody reads them.
  const { id, configPath } = await createInstance(daemon, token, 'keep_me', {
    metadatas: { 'fixture.logEveryMs': '1' },
  });
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token })).body.success);
  const [tunnel] = await tunnelPids(configPath);

  for (const away of ['SIGTERM', 'SIGKILL'] as const) {
    await waitFor(
      () => logBytes(dataDir, id),
      (n) => n > 0,
    );
    await daemon.stop(away);
    const before = await logBytes(dataDir, id);
    // Several pipefuls written while no daemon runs: only a reader that outlives the daemon lets them through.
    await waitFor(
      () => logBytes(dataDir, id),
      (n) => n > before + 256 * 1024,
      20_000,
    );
    const keeper = await keeperPid(logs);
    t.true(keeper > 0 && pidExists(keeper), `a keeper runs while the daemon is away (${away})`);

    daemon = await startDaemon({ dataDir, env: BOOT });
    token = await daemon.login();
    t.false(
      pidExists(keeper) && procArgs(keeper)?.some((a) => a.endsWith('spawner-process.js')),
      'the keeper has gone',
    );
    t.false(existsSync(join(logs, 'keeper.pid')));
    t.like(await statusOf(daemon, token, id), { state: 'running', pid: tunnel });
    const resumed = await logBytes(dataDir, id);
    await waitFor(
      () => logBytes(dataDir, id),
      (n) => n > resumed + 64 * 1024,
    );
  }
  t.deepEqual(await tunnelPids(configPath), [tunnel!], 'the same tunnel all along');

  // Stopped, so its pipe is drained to the end: every tick once, in order. A daemon killed with -9 loses what it
  // had read and not yet written (at most one read of the pipe and its write queue), so one gap may come from it.
  t.true((await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token })).body.success);
  const all = await ticks(logs, id);
  t.true(all.length > 5000, `${all.length} ticks`);
  t.is(all[0], 1);
  const steps = all.slice(1).map((n, i) => n - all[i]!);
  t.true(
    steps.every((d) => d >= 1),
    'no tick twice, none out of order',
  );
  const gaps = steps.filter((d) => d > 1);
  t.true(gaps.length <= 1, `${gaps.length} gaps`);
  if (gaps.length > 0) t.log(`the kill -9 lost ${gaps[0]! - 1} lines the daemon had read`);
});
