import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { realpath, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { collectLines, dispose, spawnCli, startDaemon, tempDir } from '../helpers/daemon.js';
import { createInstance, instanceSettings, killTunnelsUnder, statusOf, tunnelPids } from '../helpers/instances.js';
import { until } from '../helpers/until.js';

const run = promisify(execFile);
const BOOT = { TUNNELWARD_BOOT_ID: 'lock-boot' };

/** A second daemon on the data dir: how it ended and what it said (killed, if it got as far as listening). */
async function secondDaemon(dataDir: string, wrap: string[] = []): Promise<{ code: number | string; output: string }> {
  const proc = spawnCli(['serve', '--data-dir', dataDir, '--port', '0'], BOOT, {}, wrap);
  const lines: string[] = [];
  collectLines(proc, lines);
  // 'close', not 'exit': the process may have exited before its last output has been read.
  let code: number | string | undefined;
  const closed = new Promise<void>((resolve) =>
    proc.once('close', (exit, signal) => {
      code ??= exit ?? String(signal);
      resolve();
    }),
  );
  await until(() => code !== undefined || lines.some((line) => line.includes('tunnelward listening on')), Boolean, {
    timeoutMs: 30_000,
    everyMs: 20,
    what: 'the daemon to listen or exit',
  });
  if (code === undefined) {
    code = 'listening';
    proc.kill('SIGKILL');
  }
  await closed;
  return { code, output: lines.join('\n') };
}

// One at a time: each test starts whole daemons, two or three in a row.
const serial = test.serial;

serial('a local process that is not a daemon cannot keep one from starting', async (t) => {
  const dataDir = await tempDir();
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  // The name the daemon once took in the abstract socket namespace, which anyone on the host could take first.
  const squatter = createServer();
  const name = `\0tunnelward-${createHash('sha256')
    .update(await realpath(dataDir))
    .digest('hex')
    .slice(0, 40)}`;
  await new Promise<void>((resolve) => squatter.listen(name, resolve));
  t.teardown(() => new Promise<void>((resolve) => squatter.close(() => resolve())));

  const daemon = await startDaemon({ dataDir });
  t.teardown(() => dispose(daemon));
  t.is((await daemon.get('/system/getStatus')).status, 200);
  // The lock is a file only the daemon's user may open: nobody else can lock it first.
  const lockFile = join(dataDir, 'tunnelward.lock');
  t.is((await stat(lockFile)).mode & 0o777, 0o600);
  const other = await run('setpriv', [
    '--reuid=65534',
    '--regid=65534',
    '--clear-groups',
    'flock',
    '-n',
    lockFile,
    'true',
  ]).then(
    () => 'locked',
    (err: { stderr: string }) => err.stderr,
  );
  t.regex(other, /Permission denied/, 'another user cannot even open it');
});

serial(
  'two daemons on one data dir: the second is refused with the holder named, also from another network namespace',
  async (t) => {
    const first = await startDaemon();
    t.teardown(() => dispose(first));
    const holder = new RegExp(`data dir \\S+ is in use by another tunnelward \\(pid ${first.pid}\\)`);

    const second = await secondDaemon(first.dataDir);
    t.is(second.code, 1, second.output);
    t.regex(second.output, holder);

    // Another network namespace (another container on the same volume) shares nothing with the first but the files.
    const elsewhere = await secondDaemon(first.dataDir, ['unshare', '--net', '--']);
    t.is(elsewhere.code, 1, elsewhere.output);
    t.regex(elsewhere.output, holder);
    t.is((await first.get('/system/getStatus')).status, 200, 'the first one is untouched');
  },
);

serial(
  'a kill -9 frees the data dir at once: neither the lock file it leaves nor its tunnels and their output keeper block the next daemon',
  async (t) => {
    const first = await startDaemon({ settingsToml: instanceSettings(), env: BOOT });
    t.teardown(async () => {
      await killTunnelsUnder(first.dataDir);
      await dispose(first);
    });
    const token = await first.login();
    const { id, configPath } = await createInstance(first, token, 'lk_tunnel');
    t.true((await first.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token })).body.success);
    const [tunnel] = await tunnelPids(configPath);
    await first.stop('SIGKILL');

    const next = await startDaemon({ dataDir: first.dataDir, env: BOOT });
    t.teardown(() => next.stop('SIGKILL'));
    t.like(await statusOf(next, await next.login(), id), { state: 'running', pid: tunnel });
    // And the one after a clean stop too, with the tunnel still running.
    await next.stop('SIGTERM');
    const third = await startDaemon({ dataDir: first.dataDir, env: BOOT });
    t.teardown(() => third.stop('SIGKILL'));
    t.like(await statusOf(third, await third.login(), id), { state: 'running' });
  },
);
