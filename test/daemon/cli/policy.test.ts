// `tunnelward policy`: an instance's own health policy and memory cap over the settings, from the command line.
import test from 'ava';
import { cli, loggedIn } from '../../helpers/cli.js';
import { disposeWithTunnels, startWithRoot } from '../../helpers/daemon.js';
import { createInstance, instanceSettings } from '../../helpers/instances.js';

test("policy shows, sets and clears an instance's own figures; a bad figure or key exits 1 with the daemon's words and changes nothing", async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const env = await loggedIn(daemon, t);
  await createInstance(daemon, root, 'pol_box');
  t.is((await cli(['policy', 'pol_box'], env)).stdout, "pol_box: the settings' figures\n");

  const set = await cli(['policy', 'pol_box', 'disconnectedSecs=60', 'memoryMaxMB=128'], env);
  t.is(set.code, 0, set.stderr);
  t.is((await cli(['policy', 'pol_box'], env)).stdout, 'disconnectedSecs=60 memoryMaxMB=128\n');
  t.deepEqual(JSON.parse((await cli(['policy', 'pol_box', '--json'], env)).stdout), {
    disconnectedSecs: 60,
    memoryMaxMB: 128,
  });

  for (const [args, words] of [
    [['memoryMaxMB=lots'], /memoryMaxMB must be an integer from 0 to 1048576/],
    [['restartEvery=5'], /unknown field modifiedData\.policy\.restartEvery/],
  ] as const) {
    const refused = await cli(['policy', 'pol_box', ...args], env);
    t.is(refused.code, 1);
    t.regex(refused.stdout + refused.stderr, words);
  }
  const usage = await cli(['policy', 'pol_box', 'memoryMaxMB'], env);
  t.is(usage.code, 2);

  t.is((await cli(['policy', 'pol_box', 'memoryMaxMB=null'], env)).code, 0);
  t.is((await cli(['policy', 'pol_box'], env)).stdout, 'disconnectedSecs=60\n');
});
