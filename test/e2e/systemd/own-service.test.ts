// `tunnelward service install|uninstall` under a real systemd (test/systemd/host.sh): the unit it writes runs this
// build with the flags given to install, is started and answers; uninstall stops it and takes the unit away.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { DAEMON_NICE } from '../../../src/system/priority.js';
import { CLI, tempDir } from '../../helpers/daemon.js';
import { freePort } from '../../helpers/frp.js';
import { SystemdHost } from '../../helpers/systemd-host.js';

const UNIT = '/etc/systemd/system/tunnelward.service';

/** Whether anything answers HTTP at the URL. */
const answers = (url: string) =>
  fetch(`${url}/system/getStatus`).then(
    (res) => res.status,
    () => 0,
  );

test('install runs this build with its --host, --port and --data-dir, started and answering; uninstall stops and removes it', async (t) => {
  const host = await SystemdHost.boot();
  t.teardown(() => host.shutdown());
  const dataDir = await tempDir(undefined, t);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = ['--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir];

  const install = await host.run(process.execPath, CLI, 'service', 'install', ...args);
  t.is(install.code, 0, install.stderr);
  t.regex(install.stdout, /installed \/etc\/systemd\/system\/tunnelward\.service and enabled it/);
  t.true(
    install.stdout.includes(`it runs this checkout's ${CLI} with node ${process.version} (${process.execPath})`),
    install.stdout,
  );
  t.true(install.stdout.includes(`with --data-dir ${dataDir}, listening on 127.0.0.1:${port}`), install.stdout);
  t.regex(install.stdout, new RegExp(`started tunnelward\\.service: it answers at ${url} \\(after [\\d.]+ s\\)`));
  t.true(install.stdout.includes(`the first superuser's password is in ${join(dataDir, 'initial-admin-password')}`));

  const unit = await host.readFile(UNIT);
  t.true(unit.includes(` ${CLI} serve --data-dir ${dataDir} --host 127.0.0.1 --port ${port}\n`), unit);
  t.regex(unit, new RegExp(`^ExecStart=${process.execPath} `, 'm'));
  t.like(await host.show('tunnelward.service', 'ActiveState', 'UnitFileState'), {
    ActiveState: 'active',
    UnitFileState: 'enabled',
  });
  t.is(await answers(url), 200, 'it answers on the port it was given');
  const pid = Number((await host.show('tunnelward.service', 'MainPID')).MainPID);
  t.is(Number(await readFile(join(dataDir, 'tunnelward.pid'), 'utf8')), pid, 'it runs on that data dir');
  // A service leads its session: the daemon's threads and, where the kernel groups sessions, its session run above
  // the tunnels (src/system/priority.ts).
  const stat = (await host.run('cat', `/proc/${pid}/stat`)).stdout;
  t.is(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]), DAEMON_NICE, 'its main thread');
  const autogroup = await readFile('/proc/sys/kernel/sched_autogroup_enabled', 'latin1').catch(() => '0');
  if (autogroup.trim() === '1')
    t.regex((await host.run('cat', `/proc/${pid}/autogroup`)).stdout, new RegExp(`nice ${DAEMON_NICE}$`, 'm'));

  const uninstall = await host.run(process.execPath, CLI, 'service', 'uninstall', '--data-dir', dataDir);
  t.is(uninstall.code, 0, uninstall.stderr);
  t.regex(
    uninstall.stdout,
    /stopped and disabled tunnelward\.service, removed \/etc\/systemd\/system\/tunnelward\.service/,
  );
  t.like(await host.show('tunnelward.service', 'ActiveState', 'LoadState'), {
    ActiveState: 'inactive',
    LoadState: 'not-found',
  });
  await t.throwsAsync(host.readFile(UNIT), { code: 'ENOENT' });
  t.is(await answers(url), 0, 'nothing answers any more');
  t.is((await host.run('kill', '-0', String(pid))).code, 1, 'the daemon is gone');
});

test('an install whose daemon cannot start says so with its journal, and leaves the unit to fix', async (t) => {
  const host = await SystemdHost.boot();
  t.teardown(() => host.shutdown());
  const dataDir = await tempDir(undefined, t);
  const port = await freePort();
  // Something else holds the port (the network is shared with the test): the daemon exits at once.
  const held = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => held.listen(port, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => held.close(() => resolve())));

  const install = await host.run(
    process.execPath,
    CLI,
    'service',
    'install',
    '--port',
    String(port),
    '--data-dir',
    dataDir,
  );
  t.is(install.code, 1);
  t.regex(install.stderr, /tunnelward\.service is installed and enabled, but it exited; its last lines:/);
  t.regex(install.stderr, /cannot listen on 127\.0\.0\.1:\d+: the address is in use/);
  const uninstall = await host.run(process.execPath, CLI, 'service', 'uninstall', '--data-dir', dataDir);
  t.is(uninstall.code, 0, uninstall.stderr);
});
