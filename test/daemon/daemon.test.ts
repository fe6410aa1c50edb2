import { chmod, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { freePort } from '../helpers/frp.js';
import initSqlJs from 'sql.js';
import { collectLines, Daemon, dispose, spawnCli, startDaemon, tempDir } from '../helpers/daemon.js';
import { openAsLeft } from '../helpers/database.js';
import { until } from '../helpers/until.js';

// 'close', not 'exit': the process may have exited before its last output has been read.
const exitOf = (proc: ReturnType<typeof spawnCli>) =>
  new Promise<number | null>((resolve) => proc.once('close', (code) => resolve(code)));

// One at a time: each test starts whole daemons (some two or three in a row), and nine starting together at the
// beginning of the suite, beside the other files, have been seen to take more than 20 s to listen on a slow machine.
const serial = test.serial;

serial('prints its URL, writes its pid file, and a second daemon on the same data dir refuses to start', async (t) => {
  const daemon = await startDaemon();
  t.teardown(() => dispose(daemon));
  t.regex(daemon.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.not(daemon.url, 'http://127.0.0.1:0');
  t.is((await readFile(join(daemon.dataDir, 'tunnelward.pid'), 'utf8')).trim(), String(daemon.pid));

  const second = spawnCli(['serve', '--data-dir', daemon.dataDir, '--port', '0']);
  const out: string[] = [];
  collectLines(second, out);
  t.is(await exitOf(second), 1);
  t.regex(out.join('\n'), new RegExp(`in use by another tunnelward \\(pid ${daemon.pid}\\)`));
  t.is((await daemon.get('/system/getStatus')).status, 200, 'the first one is untouched');
  t.is((await readFile(join(daemon.dataDir, 'tunnelward.pid'), 'utf8')).trim(), String(daemon.pid));
});

serial('SIGTERM closes, flushes and exits 0; a kill -9 loses nothing that was acknowledged', async (t) => {
  const daemon = await startDaemon();
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const created = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      daemon.post('/userMgr/create', { username: `flush_${i}`, passwd: 'Passw0rd!x' }, { token }),
    ),
  );
  t.true(created.every((r) => r.body.success));
  // kill -9 right after the replies: every acknowledged user must be on disk already (the snapshot and its journal).
  await daemon.stop('SIGKILL');
  const db = await openAsLeft(join(daemon.dataDir, 'tunnelward.db'), t);
  t.is(db.get<{ n: number }>("SELECT COUNT(*) AS n FROM users WHERE username LIKE 'flush_%'")!.n, 12);

  const again = await startDaemon({ dataDir: daemon.dataDir });
  const token2 = await again.login();
  await again.post('/userMgr/create', { username: 'flush_last', passwd: 'Passw0rd!x' }, { token: token2 });
  const { code, signal } = await again.stop('SIGTERM');
  t.is(code, 0);
  t.is(signal, null);
  t.true(again.output.some((l) => l.includes('"msg":"stopped"')));
  await t.throwsAsync(stat(join(daemon.dataDir, 'tunnelward.pid')), undefined, 'pid file removed');
  // A clean stop leaves everything in the SQLite file itself.
  const SQL = await initSqlJs();
  const after = new SQL.Database(await readFile(join(daemon.dataDir, 'tunnelward.db')));
  t.is(after.exec("SELECT COUNT(*) FROM users WHERE username LIKE 'flush_%'")[0]!.values[0]![0], 13);
  after.close();
});

serial('without TUNNELWARD_ADMIN_PASSWORD a random password is printed once and kept in a 0600 file', async (t) => {
  const dir = await tempDir(undefined, t);
  const daemon = await startDaemon({
    dataDir: dir,
    env: { TUNNELWARD_ADMIN_USER: 'owner', TUNNELWARD_ADMIN_PASSWORD: '' },
  });
  t.teardown(() => dispose(daemon));
  const printed = (await daemon.waitForOutput(/first superuser: owner, password: (\S+)/))[1]!;
  const file = join(dir, 'initial-admin-password');
  t.is((await readFile(file, 'utf8')).trim(), printed);
  t.is((await stat(file)).mode & 0o777, 0o600);
  t.false(
    daemon.output.some((l) => l.startsWith('{') && l.includes(printed)),
    'never in the JSON log',
  );
  const token = await daemon.login('owner', printed);
  t.truthy(token);
  await daemon.stop();
  const again = await startDaemon({
    dataDir: dir,
    env: { TUNNELWARD_ADMIN_USER: 'other', TUNNELWARD_ADMIN_PASSWORD: 'Other123!x' },
  });
  t.teardown(() => again.stop('SIGKILL'));
  t.false(
    again.output.some((l) => l.includes('first superuser')),
    'printed only while there are no users',
  );
  const ownerToken = await again.login('owner', printed);
  const list = await again.get('/userMgr/list', { token: ownerToken });
  t.deepEqual(
    list.body.data.map((u: any) => u.Username),
    ['owner'],
  );
  t.is((await readFile(file, 'utf8')).trim(), printed, 'kept across a restart while the password still applies');

  // Another user's new password leaves it; the owner's new password removes it.
  const other = await again.userWithToken(ownerToken, 'ip_other', 'admin');
  await again.post('/userMgr/modify', { userID: other.userID, passwd: 'Changed1!x' }, { token: ownerToken });
  t.is((await readFile(file, 'utf8')).trim(), printed);
  const owner = list.body.data[0];
  const changed = await again.post(
    '/userMgr/modify',
    { userID: owner.UserID, passwd: 'Changed1!x' },
    { token: ownerToken },
  );
  t.true(changed.body.success, changed.body.message);
  await again.waitForOutput(/removed initial-admin-password: that password no longer applies/);
  await t.throwsAsync(stat(file), { code: 'ENOENT' });
});

serial('an initial-admin-password file that no longer opens the first account is removed at start', async (t) => {
  const dir = await tempDir(undefined, t);
  const daemon = await startDaemon({
    dataDir: dir,
    env: { TUNNELWARD_ADMIN_USER: 'owner', TUNNELWARD_ADMIN_PASSWORD: '' },
  });
  const printed = (await daemon.waitForOutput(/first superuser: owner, password: (\S+)/))[1]!;
  const token = await daemon.login('owner', printed);
  const [owner] = (await daemon.get('/userMgr/list', { token })).body.data;
  // Changed, then killed before the file could go: the next start finds it stale.
  await daemon.post('/userMgr/modify', { userID: owner.UserID, passwd: 'Changed1!x' }, { token });
  await daemon.stop('SIGKILL');
  await writeFile(join(dir, 'initial-admin-password'), `${printed}\n`, { mode: 0o600 });
  const again = await startDaemon({ dataDir: dir, env: { TUNNELWARD_ADMIN_PASSWORD: '' } });
  t.teardown(() => dispose(again));
  await again.waitForOutput(/removed initial-admin-password: it no longer opens any account/);
  await t.throwsAsync(stat(join(dir, 'initial-admin-password')), { code: 'ENOENT' });
  t.truthy(await again.login('owner', 'Changed1!x'));
});

serial('a first superuser password that breaks the rules stops the start', async (t) => {
  const dir = await tempDir(undefined, t);
  const proc = spawnCli(['--data-dir', dir, '--port', '0'], { TUNNELWARD_ADMIN_PASSWORD: 'weak' });
  const out: string[] = [];
  collectLines(proc, out);
  t.is(await exitOf(proc), 1);
  t.regex(out.join('\n'), /first superuser.*passwd must be at least 8 characters/);
});

serial('flags beat the environment, which beats settings.toml', async (t) => {
  const [fromSettings, fromEnv, fromFlag] = [await freePort(), await freePort(), await freePort()];
  const dir = await tempDir(undefined, t);
  await writeFile(join(dir, 'settings.toml'), `ListenPort = "${fromSettings}"\n`);
  const run = async (env: Record<string, string>, args: string[]) => {
    const proc = spawnCli(['serve', '--data-dir', dir, ...args], env);
    const out: string[] = [];
    collectLines(proc, out);
    const daemon = { output: out } as unknown as Daemon;
    const exited = exitOf(proc);
    await until(() => out.some((l) => l.includes('listening on')) || proc.exitCode !== null, Boolean, {
      timeoutMs: 30_000,
      everyMs: 20,
      what: 'the daemon to listen or exit',
    }).catch(() => undefined);
    proc.kill('SIGTERM');
    await exited;
    // The whole output when it did not listen: what went wrong is in it.
    return daemon.output.find((l) => l.startsWith('tunnelward listening on')) ?? daemon.output.join('\n');
  };
  t.is(await run({}, []), `tunnelward listening on http://127.0.0.1:${fromSettings}`);
  t.is(await run({ TUNNELWARD_PORT: String(fromEnv) }, []), `tunnelward listening on http://127.0.0.1:${fromEnv}`);
  t.is(
    await run({ TUNNELWARD_PORT: String(fromEnv) }, ['--port', String(fromFlag)]),
    `tunnelward listening on http://127.0.0.1:${fromFlag}`,
  );
  t.is(
    await run({}, [`--port=${fromFlag}`, '--host', '127.0.0.2']),
    `tunnelward listening on http://127.0.0.2:${fromFlag}`,
  );
});

serial('bad flags and a busy port give clear messages', async (t) => {
  const unknown = spawnCli(['serve', '--colour', 'blue']);
  const out1: string[] = [];
  collectLines(unknown, out1);
  t.is(await exitOf(unknown), 2);
  t.regex(out1.join('\n'), /unknown flag --colour/);

  const badPort = spawnCli(['serve', '--data-dir', await tempDir(undefined, t), '--port', '70000']);
  const out2: string[] = [];
  collectLines(badPort, out2);
  t.is(await exitOf(badPort), 1);
  t.regex(out2.join('\n'), /--port must be a port number/);

  const holder = createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  t.teardown(() => holder.close());
  const busy = spawnCli([
    'serve',
    '--data-dir',
    await tempDir(undefined, t),
    '--port',
    String((holder.address() as any).port),
  ]);
  const out3: string[] = [];
  collectLines(busy, out3);
  t.is(await exitOf(busy), 1);
  t.regex(out3.join('\n'), /cannot listen on 127\.0\.0\.1:\d+: the address is in use/);
});

serial('a data dir it cannot write names the dir, the user and what to do; nothing is left behind', async (t) => {
  // As root, run the daemon as nobody against a root-owned dir; otherwise a dir of our own without write access.
  const asRoot = process.getuid?.() === 0;
  const parent = await tempDir();
  t.teardown(() => rm(parent, { recursive: true, force: true }));
  await chmod(parent, asRoot ? 0o755 : 0o555);
  t.teardown(() => chmod(parent, 0o755));
  const identity = asRoot ? { uid: 65534, gid: 65534 } : {};
  const user = asRoot ? 'nobody' : userInfo().username;

  const existing = join(parent, 'existing');
  await mkdir(existing, { mode: 0o755 });
  if (!asRoot) await chmod(existing, 0o555);
  const inside = spawnCli(['serve', '--data-dir', existing, '--port', '0'], {}, identity);
  const out1: string[] = [];
  collectLines(inside, out1);
  t.is(await exitOf(inside), 1);
  t.is(
    out1.join('\n'),
    `tunnelward: the data dir ${existing} is not writable by user ${user} (uid ${asRoot ? 65534 : process.getuid?.()}): ` +
      `it is owned by uid ${process.getuid?.()}, mode ${asRoot ? '0755' : '0555'}. Run tunnelward as the user that owns it, ` +
      `give this user the dir (chown ${user} ${existing}), or choose another --data-dir`,
  );
  t.deepEqual(await readdir(existing), [], 'nothing written');

  const missing = join(parent, 'missing', 'data');
  const create = spawnCli(['serve', '--data-dir', missing, '--port', '0'], {}, identity);
  const out2: string[] = [];
  collectLines(create, out2);
  t.is(await exitOf(create), 1);
  t.regex(
    out2.join('\n'),
    new RegExp(`^tunnelward: cannot create the data dir ${missing}: ${parent} is not writable by user ${user} `),
  );
  t.deepEqual((await readdir(parent)).sort(), ['existing']);
});

/** The parent pid and process group of a process, from /proc. */
async function parentAndGroup(pid: number): Promise<{ ppid: number; pgrp: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const [ppid, pgrp] = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .slice(1, 3)
    .map(Number);
  return { ppid: ppid!, pgrp: pgrp! };
}

/**
 * A daemon in a process group of its own, as a shell gives a job in a terminal (a Ctrl-C signals that whole group);
 * the daemons its restarts start print on the same output and are killed with it when the test ends.
 */
async function startInOwnGroup(t: ExecutionContext) {
  const dataDir = await tempDir(undefined, t);
  const first = new Daemon(spawnCli(['serve', '--data-dir', dataDir, '--port', '0'], {}, { detached: true }), dataDir);
  collectLines(first.proc, first.output);
  t.teardown(async () => {
    try {
      process.kill(-first.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    await rm(dataDir, { recursive: true, force: true });
  });
  /** The URL the n-th daemon printed (each new daemon prints on the same output). */
  const nthUrl = async (n: number) => {
    const printed = await until(
      () => first.output.filter((l) => l.startsWith('tunnelward listening on ')),
      (lines) => lines.length >= n,
      { timeoutMs: 20_000, everyMs: 20, what: `URL #${n} (${first.output.join(' | ')})` },
    );
    return printed[n - 1]!.split(' ').pop()!;
  };
  first.url = await nthUrl(1);
  return { first, dataDir, nthUrl };
}

serial(
  'POST /system/restart: a new daemon takes over the same data dir, in the same process group as the first',
  async (t) => {
    const { first, dataDir, nthUrl } = await startInOwnGroup(t);
    const token = await first.login();
    const visitor = await first.userWithToken(token, 'rs_visitor', 'visitor');
    t.is((await first.post('/system/restart', {}, { token: visitor.token })).status, 403);

    const pids = [first.pid];
    for (let round = 2; round <= 3; round++) {
      const res = await first.post('/system/restart', {}, { token: await first.login() });
      t.deepEqual(res.body, { success: true, message: 'restarting' });
      first.url = await nthUrl(round);
      const pid = Number((await readFile(join(dataDir, 'tunnelward.pid'), 'utf8')).trim());
      t.false(pids.includes(pid), 'a new process');
      pids.push(pid);
      t.deepEqual(
        await parentAndGroup(pid),
        { ppid: first.pid, pgrp: first.pid },
        'a child of the first, in its group',
      );
      t.is(first.proc.exitCode, null, 'the first process stays, so the terminal and the shell keep their job');
      t.truthy(await first.login('rs_visitor', visitor.passwd), 'same data');
    }
    await t.throwsAsync(parentAndGroup(pids[1]!), undefined, 'the daemon it replaced is gone: two processes at most');

    // Ctrl-C: SIGINT to the whole group stops the daemon once, and the first process exits as it does.
    process.kill(-first.pid, 'SIGINT');
    t.deepEqual(await first.exited, { code: 0, signal: null });
    await t.throwsAsync(parentAndGroup(pids[2]!));
    await t.throwsAsync(stat(join(dataDir, 'tunnelward.pid')), { code: 'ENOENT' }, 'stopped cleanly');
  },
);

serial('POST /system/restart from a client that hangs up at once still restarts the daemon', async (t) => {
  const { first, dataDir, nthUrl } = await startInOwnGroup(t);
  const token = await first.login();
  const { hostname, port } = new URL(first.url);
  // The request, then the connection dropped before any reply can be read.
  const body = '{}';
  const request =
    `POST /system/restart HTTP/1.1\r\nHost: ${hostname}:${port}\r\nX-Token: ${token}\r\n` +
    `X-Timestamp: ${Date.now()}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  await new Promise<void>((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request, () => (socket.destroy(), resolve())));
    socket.on('error', reject);
  });
  first.url = await nthUrl(2);
  const pid = Number((await readFile(join(dataDir, 'tunnelward.pid'), 'utf8')).trim());
  t.not(pid, first.pid, 'a new daemon');
  t.is((await first.get('/system/getStatus')).status, 200);
});
