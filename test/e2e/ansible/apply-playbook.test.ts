// The Ansible example for real: ansible-core (test/setup/install-ansible.sh) runs examples/ansible/playbook.yml
// against two real daemons on loopback whose tunnels are the real frpc, with a real frps. The first run creates and
// starts the tunnels (bytes flow through frps to a local echo service) and reports changed; the second reports
// changed=0; a run in check mode is the apply's dry run.
import test from 'ava';
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { readDesiredState } from '../../../src/config/desired-state.js';
import { tempDir } from '../../helpers/daemon.js';
import { echoServer, freePort, roundTrip } from '../../helpers/frp.js';
import { waitFor } from '../../helpers/instances.js';
import { frpsFor, realFrpDaemon } from '../../helpers/real-frp.js';

const ANSIBLE_PLAYBOOK = join(PACKAGE_ROOT, '.cache', 'ansible', 'bin', 'ansible-playbook');
const PLAYBOOK = join(PACKAGE_ROOT, 'examples', 'ansible', 'playbook.yml');

function playbook(args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  const proc = spawn(ANSIBLE_PLAYBOOK, args, {
    cwd,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: cwd,
      ANSIBLE_HOME: join(cwd, '.ansible'),
      ANSIBLE_LOCAL_TEMP: join(cwd, '.ansible', 'tmp'),
      ANSIBLE_NOCOLOR: '1',
      ANSIBLE_FORCE_COLOR: '0',
      LC_ALL: 'C.UTF-8',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  proc.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => proc.on('close', (code) => resolve({ code, output })));
}

/** The recap's counts of one host: `tw-a : ok=2 changed=1 ...`. */
function recap(output: string, host: string): Record<string, number> {
  const line = output.split('\n').find((l) => new RegExp(`^${host}\\s+:\\s+ok=`).test(l));
  if (!line) throw new Error(`no recap line for ${host} in:\n${output}`);
  return Object.fromEntries([...line.matchAll(/(\w+)=(\d+)/g)].map((m) => [m[1]!, Number(m[2])]));
}

test('ansible-playbook converges two daemons: the first run changes and the tunnels carry bytes, the second changes nothing', async (t) => {
  t.timeout(240_000);
  const frps = await frpsFor(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const dir = await tempDir('tunnelward-ansible-', t);
  const hosts: Array<{ name: string; url: string; key: string; remotePort: number; daemon: any; root: string }> = [];
  for (const name of ['tw-a', 'tw-b']) {
    const { daemon, root } = await realFrpDaemon(t);
    const key = await daemon.post('/apiKeyMgr/create', { name: 'ansible' }, { token: root });
    t.true(key.body.success, key.body.message);
    const remotePort = await freePort();
    hosts.push({ name, url: daemon.url, key: key.body.data.key, remotePort, daemon, root });
    const desired = [
      'instances:',
      `  - name: ${name}-echo`,
      '    state: running',
      `    labels: { site: ${name} }`,
      '    env: [FRP_TOKEN]',
      '    frpc:',
      '      serverAddr: 127.0.0.1',
      `      serverPort: ${frps.bindPort}`,
      '      auth: { method: token, token: "{{ .Envs.FRP_TOKEN }}" }',
      '      proxies:',
      `        - { name: ${name}-echo, type: tcp, localIP: 127.0.0.1, localPort: ${echo.port}, remotePort: ${remotePort} }`,
    ];
    await writeFile(join(dir, `${name}.yaml`), `${desired.join('\n')}\n`);
  }
  const inventory = [
    '[tunnelward]',
    ...hosts.map(
      (h) =>
        `${h.name} ansible_connection=local ansible_python_interpreter="{{ ansible_playbook_python }}" tunnelward_url=${h.url} tunnelward_api_key=${h.key} desired_state_file=${join(dir, `${h.name}.yaml`)}`,
    ),
    '',
    '[tunnelward:vars]',
    `tunnelward_environment={"FRP_TOKEN": "${frps.token}"}`,
  ];
  await writeFile(join(dir, 'inventory.ini'), `${inventory.join('\n')}\n`);
  const run = (...extra: string[]) => playbook(['-i', join(dir, 'inventory.ini'), PLAYBOOK, ...extra], dir);

  const checked = await run('--check');
  t.is(checked.code, 0, checked.output);
  for (const h of hosts) t.like(recap(checked.output, h.name), { changed: 1, failed: 0 }, 'check mode: would change');
  for (const h of hosts) {
    const list = await h.daemon.get('/tunnelAct/instanceMgr/list', { token: h.root });
    t.is(list.body.data.length, 0, `${h.name}: check mode created nothing`);
  }

  const first = await run();
  t.is(first.code, 0, first.output);
  for (const h of hosts) t.like(recap(first.output, h.name), { changed: 1, failed: 0 }, h.name);
  t.false(first.output.includes(frps.token), 'the environment value is not printed');
  // Bytes flow through frps to the echo service, over each host's tunnel.
  for (const h of hosts)
    await waitFor(
      () =>
        roundTrip(h.remotePort, `through ${h.name}`).then(
          () => true,
          () => false,
        ),
      (ok) => ok,
      20_000,
    ).catch(async (err: Error) => {
      const info = await h.daemon.get('/tunnelAct/instanceMgr/getInfo?instanceID=1', { token: h.root });
      throw new Error(`${h.name}: no bytes through the tunnel (${err.message}): ${info.body.data.health?.reason}`);
    });

  const second = await run();
  t.is(second.code, 0, second.output);
  for (const h of hosts) t.like(recap(second.output, h.name), { changed: 0, failed: 0 }, h.name);
});

test("the example's desired-state files are ones apply reads", async (t) => {
  for (const name of ['tw-a', 'tw-b']) {
    const text = await readFile(join(PACKAGE_ROOT, 'examples', 'ansible', 'desired', `${name}.yaml`), 'utf8');
    const state = readDesiredState(text, 'yaml');
    t.is(state.instances.length, 1, name);
    t.deepEqual(state.instances[0]!.env, ['FRP_TOKEN'], name);
  }
});
