// While no daemon runs, the tunnels' output still flows into their log files (the spawner keeps it): a tunnel
// never blocks on a full pipe, and nothing it writes is lost or written twice across the daemon's comings and goings.
import test, { type ExecutionContext } from 'ava';
import { execFileSync } from 'node:child_process';
import { statfsSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { dispose, startDaemon, tempDir, type Daemon } from '../../helpers/daemon.js';
import { adminEndpointOf } from '../../helpers/real-frp.js';
import { until } from '../../helpers/until.js';
import { adminGet } from '../../../src/frpc/admin-api.js';
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
import { keepersOf, SPAWNER_SCRIPT, stopKeeper } from '../../../src/spawner/output-keeper.js';

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
    const [keeper] = keepersOf(logs);
    t.true(keeper !== undefined && pidExists(keeper), `a keeper runs while the daemon is away (${away})`);

    daemon = await takeOver(t, dataDir, id, keeper!, tunnel!, 64 * 1024);
    token = await daemon.login();
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

test('a full disk when the daemon goes: the keeper stays and drains the pipes (the tunnel never blocks on its output), and the next daemon takes over', async (t) => {
  t.timeout(90_000);
  // A file system of its own, to fill: the data dir on a small tmpfs.
  const dataDir = await tempDir('full-disk-');
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m,mode=0700', 'tmpfs', dataDir]);
  const logs = join(dataDir, 'logs');
  const filler = join(dataDir, 'filler');
  let daemon: Daemon | undefined;
  t.teardown(async () => {
    await daemon?.stop('SIGKILL');
    await killTunnelsUnder(dataDir);
    await stopKeeper(logs);
    execFileSync('umount', ['-l', dataDir]);
    await rm(dataDir, { recursive: true, force: true });
  });
  daemon = await startDaemon({ dataDir, settingsToml: instanceSettings(), env: BOOT });
  const token = await daemon.login();
  const { id, configPath } = await createInstance(daemon, token, 'full_disk', {
    metadatas: { 'fixture.logEveryMs': '1' },
  });
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token })).body.success);
  const [tunnel] = await tunnelPids(configPath);
  const admin = await adminEndpointOf(configPath);

  // Full to the last byte (dd stops at ENOSPC), then the daemon goes.
  t.throws(() => execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=1M'], { stdio: 'ignore' }));
  t.is(statfsSync(dataDir).bavail, 0, 'the disk is full');
  await daemon.stop('SIGKILL');
  daemon = undefined;

  const [keeper] = await until(
    async () => keepersOf(logs),
    (pids) => pids.length === 1,
  );
  // Two seconds: some 160 KB of output, more than two pipefuls, which a keeper that died would leave unread.
  const deadline = Date.now() + 2000;
  for (let asked = 1; Date.now() < deadline; asked++) {
    const res = await adminGet(admin, '/api/status', 1000).catch((err: Error) => err);
    t.true(!(res instanceof Error) && res.status === 200, `the tunnel answers (request ${asked}): ${String(res)}`);
    if (res instanceof Error) break;
  }
  t.true(pidExists(keeper!), 'the keeper is there all along');
  t.true(pidExists(tunnel!), 'the tunnel is there all along');

  await rm(filler);
  daemon = await takeOver(t, dataDir, id, keeper!, tunnel!, 16 * 1024);
});

/** A new daemon on `dataDir`: the keeper has gone, the tunnel is the same, and its log grows by `bytes` again. */
async function takeOver(
  t: ExecutionContext,
  dataDir: string,
  id: string,
  keeper: number,
  tunnel: number,
  bytes: number,
): Promise<Daemon> {
  const daemon = await startDaemon({ dataDir, env: BOOT });
  const token = await daemon.login();
  t.false(pidExists(keeper) && procArgs(keeper)?.some((a) => a.endsWith(SPAWNER_SCRIPT)), 'the keeper has gone');
  t.like(await statusOf(daemon, token, id), { state: 'running', pid: tunnel });
  const resumed = await logBytes(dataDir, id);
  await waitFor(
    () => logBytes(dataDir, id),
    (n) => n > resumed + bytes,
  );
  return daemon;
}
