// A change of a config file cut off by a kill -9 of the daemon at every step of the change pipeline (intent on record,
// file written, apply begun, committed), for a change applied by a reload and one applied by a restart. The next
// daemon must stand at exactly one revision, the old or the new, never a mix: the file is that revision's, and the
// tunnel runs that file (the proxies frpc reports are the file's).
import test from 'ava';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { adminGet } from '../../../src/frpc/admin-api.js';
import { readTunnelConfig } from '../../../src/config/tunnel-config.js';
import { parseStatus } from '../../../src/config/proxy-status.js';
import { dispose, startDaemon, tempDir, type Daemon } from '../../helpers/daemon.js';
import {
  createInstance,
  instanceSettings,
  killTunnelsUnder,
  statusOf,
  tcpProxy,
  tunnelPids,
  waitFor,
  type CreatedInstance,
} from '../../helpers/instances.js';

const BOOT = { TUNNELWARD_BOOT_ID: 'change-durability-boot' };

interface Case {
  point: 'change:intent' | 'change:written' | 'change:applying' | 'change:committed';
  plan: 'reload' | 'restart';
  /** Which revision the next daemon must stand at. */
  at: 'old' | 'new';
}

const POINTS = ['change:intent', 'change:written', 'change:applying', 'change:committed'] as const;
const CASES: Case[] = (['reload', 'restart'] as const).flatMap((plan) =>
  POINTS.map((point) => ({ point, plan, at: point === 'change:committed' ? 'new' : 'old' }) as Case),
);
const nameOf = (c: Case) => `cd_${c.plan}_${c.point.split(':')[1]}`;

/** The change each case makes: a proxy added (reload), and with it a top-level setting changed (restart). */
function changed(text: string, c: Case): string {
  const extra = [
    '[[proxies]]',
    'name = "added"',
    'type = "tcp"',
    'localIP = "127.0.0.1"',
    'localPort = 22',
    'remotePort = 6611',
  ];
  const settings = c.plan === 'restart' ? text.replace('loginFailExit = false', 'loginFailExit = true') : text;
  return `${settings}\n${extra.join('\n')}\n`;
}

/** The proxies the running tunnel reports (frpc's /api/status), sorted. */
async function liveProxies(configPath: string): Promise<string[]> {
  const endpoint = (await readTunnelConfig(configPath)).adminEndpoint()!;
  const { body } = await adminGet(endpoint, '/api/status');
  return [...parseStatus(body).keys()].sort();
}

const fileProxies = async (configPath: string) =>
  ((parse(await readFile(configPath, 'utf8')) as { proxies?: Array<{ name: string }> }).proxies ?? [])
    .map((p) => p.name)
    .sort();

test('a kill at every step of a change applied by reload or by restart: the next daemon stands at the old or the new revision, file and tunnel alike', async (t) => {
  t.timeout(240_000);
  const setup = await startDaemon({ settingsToml: instanceSettings(), env: BOOT });
  t.teardown(async () => {
    await killTunnelsUnder(setup.dataDir);
    await dispose(setup);
  });
  const control = join(await tempDir(undefined, t), 'control.json');
  await writeFile(control, JSON.stringify({ server: 'up' }));
  let token = await setup.login();
  const made = new Map<Case, CreatedInstance & { old: string; revision: number }>();
  for (const c of CASES) {
    const instance = await createInstance(setup, token, nameOf(c), { metadatas: { 'fixture.control': control } });
    await setup.post(
      '/tunnelAct/proxyMgr/create',
      { instanceID: instance.id, proxyInfo: tcpProxy('ssh', 6610) },
      { token },
    );
    const started = await setup.post('/tunnelAct/instanceMgr/start', { instanceID: instance.id }, { token });
    t.true(started.body.success, started.body.message);
    const old = await readFile(instance.configPath, 'utf8');
    made.set(c, { ...instance, old, revision: (await statusOf(setup, token, instance.id)).revision });
  }
  const dataDir = setup.dataDir;
  await setup.stop('SIGKILL');

  let previous: Case | undefined;
  for (const c of [...CASES, undefined]) {
    const daemon: Daemon = await startDaemon({
      dataDir,
      env: c ? { ...BOOT, TUNNELWARD_CRASH_AT: `${c.point}@${made.get(c)!.id}` } : BOOT,
    });
    t.teardown(() => daemon.stop('SIGKILL'));
    token = await daemon.login();
    if (previous) await check(t, daemon, token, previous, made.get(previous)!);
    if (!c) break;
    const instance = made.get(c)!;
    const exported = await daemon.get(`/tunnelAct/instanceMgr/export?instanceID=${instance.id}`, { token });
    await daemon
      .post(
        '/tunnelAct/instanceMgr/replaceConfig',
        { instanceID: instance.id, content: changed(exported.body.data.content, c) },
        { token },
      )
      .then(
        (res) => t.fail(`${nameOf(c)}: the daemon answered ${res.status} ${res.body.message} instead of dying`),
        () => {},
      );
    t.like(await daemon.exited, { signal: 'SIGKILL' }, nameOf(c));
    previous = c;
  }
});

async function check(
  t: any,
  daemon: Daemon,
  token: string,
  c: Case,
  instance: CreatedInstance & { old: string; revision: number },
) {
  const what = `${c.plan} cut off at ${c.point}`;
  const { id, configPath } = instance;
  const revision = instance.revision + (c.at === 'new' ? 1 : 0);
  const expected = c.at === 'new' ? ['added', 'ssh'] : ['ssh'];
  const status = await waitFor(
    () => statusOf(daemon, token, id),
    (s) => s.state === 'running' && s.queued === 0,
    15_000,
  );
  t.is(status.revision, revision, `${what}: the revision`);
  const history = await daemon.get(`/tunnelAct/instanceMgr/history?instanceID=${id}`, { token });
  t.is(history.body.data.current, revision, `${what}: history says the same`);
  t.deepEqual(await fileProxies(configPath), expected, `${what}: the file is that revision's`);
  if (c.at === 'old') t.is(await readFile(configPath, 'utf8'), instance.old, `${what}: the old file, byte for byte`);
  else t.regex(await readFile(configPath, 'utf8'), c.plan === 'restart' ? /loginFailExit = true/ : /name = "added"/);
  t.is((await tunnelPids(configPath)).length, 1, `${what}: one tunnel`);
  // The tunnel runs the file: the proxies frpc reports are the file's (a reload or restart gave it back if needed).
  await waitFor(
    () => liveProxies(configPath),
    (live) => JSON.stringify(live) === JSON.stringify(expected),
    10_000,
  ).catch(async (err: Error) => t.fail(`${what}: the tunnel runs other proxies than the file's: ${err.message}`));
  if (c.at === 'old')
    await daemon.waitForOutput(new RegExp(`"instanceID":${id},.*an interrupted change of a config file was undone`));
}
