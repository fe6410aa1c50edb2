// `tunnelward wait`: until the instances are up, for a deploy to wait on; why each is not, at the timeout or at once
// for one that will not come up by itself.
import test from 'ava';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cli, loggedIn } from '../../helpers/cli.js';
import { disposeWithTunnels, startWithRoot, tempDir } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, tcpProxy } from '../../helpers/instances.js';

test('wait ends when every instance is up, says why one is not at the timeout, and at once for a stopped one', async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const env = await loggedIn(daemon, t);
  const control = join(await tempDir(undefined, t), 'control.json');
  const server = (state: 'up' | 'down') => writeFile(control, JSON.stringify({ server: state }));
  await server('down');
  // The fixture's second 50 ms long: its login backoff after the server comes back is short.
  const { id } = await createInstance(daemon, root, 'w_edge', {
    metadatas: { 'fixture.control': control, 'fixture.secondMs': '50' },
    loginFailExit: false,
  });
  await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: tcpProxy('ssh', 27401) },
    { token: root },
  );
  const { id: idle } = await createInstance(daemon, root, 'w_idle');
  t.is((await cli(['start', 'w_edge'], env)).code, 0);

  const late = await cli(['wait', 'w_edge', '--timeout', '2s'], env);
  t.is(late.code, 1, late.stderr);
  t.regex(late.stdout, new RegExp(`^failed {2}w_edge \\(${id}\\): down: not connected to the server`, 'm'));
  t.regex(late.stdout, /^wait: 0 of 1 instances up after 2s$/m);

  const stopped = await cli(['wait', 'w_idle', 'w_edge'], env);
  t.is(stopped.code, 1, 'a stopped instance ends the wait at once, not after the 60 s default');
  t.regex(stopped.stdout, new RegExp(`^failed {2}w_idle \\(${idle}\\): stopped$`, 'm'));
  t.regex(stopped.stdout, /^wait: 0 of 2 instances up \(one will not come up by itself\)$/m);

  // --all: the instances meant to run (w_idle is stopped on purpose); the server comes up while it waits.
  const waiting = cli(['wait', '--all', '--timeout', '30s'], env);
  await server('up');
  const done = await waiting;
  t.is(done.code, 0, done.stdout + done.stderr);
  t.is(done.stdout, `ok  w_edge (${id}): up\nwait: 1 of 1 instances up\n`);
  const json = await cli(['wait', 'w_edge', '--json'], env);
  t.is(json.code, 0);
  t.like(JSON.parse(json.stdout), [{ instanceID: Number(id), name: 'w_edge', health: { state: 'up', reason: null } }]);

  t.is((await cli(['wait'], env)).code, 2, 'names or --all');
  const badTimeout = await cli(['wait', '--all', '--timeout', 'soon'], env);
  t.is(badTimeout.code, 2);
  t.regex(badTimeout.stderr, /--timeout soon is not a duration such as 30s/);
  t.is((await cli(['wait', 'w_nothing'], env)).code, 1, 'an unknown name');
});
