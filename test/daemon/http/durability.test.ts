import { access, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { collectLines, dispose, spawnCli, startDaemon, type Daemon } from '../../helpers/daemon.js';
import {
  createInstance,
  instanceSettings,
  statusOf,
  killTunnelsUnder,
  tunnelPids,
  waitFor,
  type CreatedInstance,
} from '../../helpers/instances.js';
import { openStream, wsUrl } from '../../helpers/streams.js';

// Every step of create, start, restart, stop and delete is cut off by a SIGKILL of the daemon (TUNNELWARD_CRASH_AT,
// aimed at one instance), and the next daemon on the same data dir, within the same boot of the host, must say
// exactly what runs and what is on disk. The cases run as one chain: the daemon that checks one case is the one that
// dies in the next, so each check is made by the very first daemon after its crash.

const BOOT = { TUNNELWARD_BOOT_ID: 'durability-boot' };
const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

type Outcome = 'running' | 'stopped' | 'gone';
interface Case {
  point: string;
  command: 'create' | 'start' | 'restart' | 'stop' | 'delete';
  /** Running before the command is sent. */
  started: boolean;
  outcome: Outcome;
}

const CASES: Case[] = [
  { point: 'create:recorded', command: 'create', started: false, outcome: 'gone' },
  { point: 'create:written', command: 'create', started: false, outcome: 'gone' },
  { point: 'start:intent', command: 'start', started: false, outcome: 'running' },
  { point: 'spawn:spawned', command: 'start', started: false, outcome: 'running' },
  { point: 'spawn:recorded', command: 'start', started: false, outcome: 'running' },
  { point: 'restart:intent', command: 'restart', started: true, outcome: 'running' },
  { point: 'stop:signalled', command: 'restart', started: true, outcome: 'running' },
  { point: 'spawn:spawned', command: 'restart', started: true, outcome: 'running' },
  { point: 'spawn:recorded', command: 'restart', started: true, outcome: 'running' },
  { point: 'stop:intent', command: 'stop', started: true, outcome: 'stopped' },
  { point: 'stop:signalled', command: 'stop', started: true, outcome: 'stopped' },
  { point: 'delete:stopped', command: 'delete', started: true, outcome: 'stopped' },
  { point: 'delete:marked', command: 'delete', started: true, outcome: 'gone' },
  { point: 'delete:unbooted', command: 'delete', started: true, outcome: 'gone' },
  { point: 'delete:files', command: 'delete', started: true, outcome: 'gone' },
];

const nameOf = (c: Case) => `du_${c.command}_${c.point.replace(/[^a-z]/g, '_')}`;

test('a kill at every step of create, start, restart, stop and delete: the next daemon says exactly what runs and what is on disk', async (t) => {
  // The instances of every case but the creates, made (and started where the case needs it) by a daemon that lives.
  const setup = await startDaemon({ settingsToml: instanceSettings(), env: BOOT });
  // Last of all (teardowns run in reverse): every daemon of the test dies by SIGKILL, so the tunnels are ended here.
  t.teardown(async () => {
    await killTunnelsUnder(setup.dataDir);
    await dispose(setup);
  });
  let token = await setup.login();
  const made = new Map<Case, CreatedInstance>();
  for (const c of CASES) {
    if (c.command === 'create') continue;
    const instance = await createInstance(setup, token, nameOf(c));
    made.set(c, instance);
    if (c.started)
      t.true((await setup.post('/tunnelAct/instanceMgr/start', { instanceID: instance.id }, { token })).body.success);
  }
  const dataDir = setup.dataDir;
  const instanceDir = join([...made.values()][0]!.configPath, '..');
  await setup.stop('SIGKILL');

  let previous: Case | undefined;
  let highestId = Math.max(...[...made.values()].map((m) => Number(m.id)));
  let daemon: Daemon;
  for (const c of [...CASES, undefined]) {
    // The daemon that checks the previous case and dies in this one (the last one only checks).
    daemon = await startDaemon({
      dataDir,
      env: c ? { ...BOOT, TUNNELWARD_CRASH_AT: `${c.point}@${made.get(c)?.id ?? nameOf(c)}` } : BOOT,
    });
    const current = daemon;
    t.teardown(() => current.stop('SIGKILL'));
    token = await daemon.login();
    if (previous) await check(t, daemon, token, previous, made.get(previous), instanceDir, highestId);
    if (!c) break;
    if (c.command === 'create') highestId++;
    const body =
      c.command === 'create'
        ? { instanceInfo: { name: nameOf(c), serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' } }
        : { instanceID: made.get(c)!.id };
    await daemon.post(`/tunnelAct/instanceMgr/${c.command}`, body, { token }).then(
      (res) =>
        t.fail(`${c.command} at ${c.point}: the daemon answered ${res.status} ${res.body.message} instead of dying`),
      () => {},
    );
    t.like(await daemon.exited, { signal: 'SIGKILL' }, `${c.command} at ${c.point}`);
    previous = c;
  }

  // A create cut off never hands its id out again; its name is free again.
  const again = await createInstance(daemon!, token, nameOf(CASES[0]!));
  t.is(Number(again.id), highestId + 1, 'ids of creates that were cut off are not reused');
});

/** What the daemon says of the instance of a case, what runs, and what is on disk, all agree with its outcome. */
async function check(
  t: any,
  daemon: Daemon,
  token: string,
  c: Case,
  instance: CreatedInstance | undefined,
  instanceDir: string,
  highestId: number,
) {
  const what = `${c.command} cut off at ${c.point}`;
  if (c.outcome === 'gone') {
    const list = await daemon.get('/tunnelAct/instanceMgr/list', { token });
    t.false(
      list.body.data.some((i: any) => i.name === nameOf(c)),
      `${what}: not listed`,
    );
    if (instance) {
      t.is((await daemon.get(`/tunnelAct/instanceMgr/status?instanceID=${instance.id}`, { token })).status, 404, what);
      t.false(await exists(instance.configPath), `${what}: no config file`);
      t.deepEqual(await tunnelPids(instance.configPath), [], `${what}: no tunnel`);
      await daemon.waitForOutput(/an interrupted delete of an instance was finished/);
    } else {
      t.false(await exists(join(instanceDir, `tunnel_${highestId}.toml`)), `${what}: no config file`);
      await daemon.waitForOutput(/an interrupted create of an instance was undone/);
    }
    return;
  }
  const { id, configPath } = instance!;
  const status = await waitFor(
    () => statusOf(daemon, token, id),
    (s) => s.state === c.outcome,
    15_000,
  );
  t.is(status.isRunning, c.outcome === 'running', what);
  t.true(await exists(configPath), `${what}: the config file is there`);
  t.is(
    (await tunnelPids(configPath)).length,
    c.outcome === 'running' ? 1 : 0,
    `${what}: exactly the processes it says`,
  );
  // Still under control: a stop leaves none, a start gives exactly one.
  t.true((await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token })).body.success, what);
  t.deepEqual(await tunnelPids(configPath), [], what);
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token })).body.success, what);
  t.is((await tunnelPids(configPath)).length, 1, what);
  // Left as the case ended, so that the daemons after this one find it so.
  if (c.outcome === 'stopped') await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token });
}

test('start-up removes temp files of cut-off writes and moves unowned config files aside, keeping their ids from reuse', async (t) => {
  const first = await startDaemon({ settingsToml: instanceSettings(), env: BOOT });
  t.teardown(() => dispose(first));
  const token = await first.login();
  const { configPath } = await createInstance(first, token, 'du_sweep');
  await first.stop('SIGKILL');
  const instanceDir = join(configPath, '..');
  const temps = [
    join(first.dataDir, '.tunnelward.db.4242.0123456789ab.tmp'),
    join(first.dataDir, '.settings.toml.4242.ba9876543210.tmp'),
    join(instanceDir, '.tunnel_1.toml.4242.abcdefabcdef.tmp'),
  ];
  for (const file of temps) await writeFile(file, 'half a write');
  const stray = join(instanceDir, 'tunnel_40.toml');
  await writeFile(stray, 'serverAddr = "10.1.2.3"\n');

  const next = await startDaemon({ dataDir: first.dataDir, env: BOOT });
  t.teardown(() => next.stop('SIGKILL'));
  for (const file of temps) t.false(await exists(file), file);
  t.false(await exists(stray));
  const aside = (await readdir(join(first.dataDir, 'orphaned'))).filter((f) => f.startsWith('tunnel_40.toml'));
  t.is(aside.length, 1);
  t.is(
    await readFile(join(first.dataDir, 'orphaned', aside[0]!), 'utf8'),
    'serverAddr = "10.1.2.3"\n',
    'moved, not changed',
  );
  await next.waitForOutput(/"file":"[^"]*tunnel_40\.toml".*a config file that no instance owns was moved aside/);
  t.true(await exists(configPath), 'an owned file stays');
  const made = await createInstance(next, await next.login(), 'du_after_sweep');
  t.is(Number(made.id), 41, 'ids up to the stray file are never handed out');
});

test('an event seq handed out just before a kill -9 is never handed out again', async (t) => {
  const first = await startDaemon({ env: BOOT });
  t.teardown(() => dispose(first));
  await first.stop('SIGKILL');
  // A daemon that dies of SIGKILL right after it has handed out its first event (service.started).
  const cut = spawnCli(['serve', '--data-dir', first.dataDir, '--port', '0'], {
    ...BOOT,
    TUNNELWARD_CRASH_AT: 'event:issued',
  });
  const lines: string[] = [];
  collectLines(cut, lines);
  const ended = await new Promise<NodeJS.Signals | null>((resolve) =>
    cut.once('close', (_code, signal) => resolve(signal)),
  );
  t.is(ended, 'SIGKILL', lines.join('\n'));
  const issued = Number(
    lines.map((line) => /crash point event:issued reached \((\d+)\)/.exec(line)?.[1]).find(Boolean),
  );
  t.true(issued > 0, lines.join('\n'));

  const next = await startDaemon({ dataDir: first.dataDir, env: BOOT });
  t.teardown(() => next.stop('SIGKILL'));
  const stream = await openStream(wsUrl(next.url, `/system/events?token=${await next.login()}`));
  t.teardown(() => stream.ws.close());
  const [hello] = await stream.waitFor((m) => m.length > 0);
  // Its own service.started is the latest event: numbered above the one the killed daemon handed out.
  t.true(hello.lastSeq > issued, `seq ${hello.lastSeq} after ${issued} was handed out before the kill`);
});

// The database's writes: a record appended to the journal (before it is written, written but not fsynced, fsynced
// but not acknowledged), a snapshot once the journal passes its size (renamed into place, the journal not yet
// emptied; emptied, the waiters not yet told). A small journal makes snapshots come every few changes.
const JOURNAL = { TUNNELWARD_DB_JOURNAL_BYTES: '8192' };
const WRITE_POINTS = [
  'journal:append@25',
  'journal:written@25',
  'journal:synced@25',
  'snapshot:written@1',
  'journal:truncated@1',
];

test('a kill at every step of a database write: every acknowledged change is there after a restart, and none twice', async (t) => {
  const setup = await startDaemon({ env: { ...BOOT, ...JOURNAL } });
  t.teardown(() => dispose(setup));
  await setup.stop('SIGTERM');
  const dataDir = setup.dataDir;
  const journal = join(dataDir, 'tunnelward.db.journal');
  const sent = new Set<string>();
  const acknowledged = new Set<string>();
  for (const at of WRITE_POINTS) {
    const point = at.split('@')[0]!;
    // The daemon that dies starts with an empty journal (the last one stopped cleanly), so the points fall among
    // the requests, not in its start-up.
    const dying = await startDaemon({ dataDir, env: { ...BOOT, ...JOURNAL, TUNNELWARD_CRASH_AT: at } });
    t.teardown(() => dying.stop('SIGKILL'));
    const token = await dying.login();
    let next = 0;
    let dead = false;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (!dead && next < 300) {
          const username = `du_${point.replace(/[^a-z]/g, '_')}_${next++}`;
          sent.add(username);
          await dying.post('/userMgr/create', { username, passwd: 'Passw0rd!x', type: 'visitor' }, { token }).then(
            (res) => (res.body.success ? acknowledged.add(username) : t.fail(`${username}: ${res.body.message}`)),
            () => (dead = true),
          );
        }
      }),
    );
    t.like(await dying.exited, { signal: 'SIGKILL' }, at);
    const before = [...acknowledged].filter((name) => name.includes(point.replace(/[^a-z]/g, '_'))).length;
    t.true(before >= 5, `${at}: ${before} creations acknowledged before the kill`);
    t.true(
      dying.output.some((line) => line.includes(`crash point ${point} reached`)),
      `${at}: the daemon died at that point`,
    );
    if (point === 'snapshot:written')
      t.true((await stat(journal)).size > 0, 'the journal still holds what the snapshot holds');
    if (point === 'journal:truncated') t.is((await stat(journal)).size, 0);

    // The first daemon after the kill: it applies what the journal holds past the snapshot.
    const next_ = await startDaemon({ dataDir, env: { ...BOOT, ...JOURNAL } });
    t.teardown(() => next_.stop('SIGKILL'));
    const root = await next_.login();
    const users: string[] = (await next_.get('/userMgr/list', { token: root })).body.data.map((u: any) => u.Username);
    t.deepEqual(
      [...acknowledged].filter((name) => !users.includes(name)),
      [],
      `${at}: every acknowledged user is there`,
    );
    t.deepEqual(
      users.filter((name) => name.startsWith('du_') && !sent.has(name)),
      [],
      `${at}: nothing that was not asked for`,
    );
    const audit = await next_.get('/system/audit?action=user.create&limit=1000', { token: root });
    const audited = new Map<string, number>();
    for (const e of audit.body.data.entries) audited.set(e.targetName, (audited.get(e.targetName) ?? 0) + 1);
    t.deepEqual(
      [...acknowledged].filter((name) => audited.get(name) !== 1),
      [],
      `${at}: every acknowledged creation is audited once`,
    );
    t.deepEqual(
      [...audited].filter(([, n]) => n > 1),
      [],
      `${at}: no entry applied twice`,
    );
    // Stopped cleanly: everything goes into the snapshot, and the next case starts with an empty journal.
    await next_.stop('SIGTERM');
    t.is((await stat(journal)).size, 0, 'a clean stop empties the journal');
  }
});
