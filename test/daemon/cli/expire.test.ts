// `tunnelward expire`: an instance's or a proxy's expiry from the command line, and what ls and proxies show of it.
import test from 'ava';
import { cli, loggedIn } from '../../helpers/cli.js';
import { disposeWithTunnels, startWithRoot } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf, tcpProxy } from '../../helpers/instances.js';

test('expire sets, shows and clears expiries; ls has an expires column only while one is set; refusals exit 1', async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const env = await loggedIn(daemon, t);
  const { id } = await createInstance(daemon, root, 'cx_box');
  await createInstance(daemon, root, 'cx_other');
  t.true(
    (
      await daemon.post(
        '/tunnelAct/proxyMgr/create',
        { instanceID: id, proxyInfo: tcpProxy('ssh', 27301) },
        { token: root },
      )
    ).body.success,
  );
  t.false((await cli(['ls'], env)).stdout.split('\n')[0]!.includes('expires'), 'no column while none is set');

  const set = await cli(['expire', 'cx_box', '2h'], env);
  t.is(set.code, 0, set.stderr);
  t.regex(set.stdout, /^ok {2}cx_box \(\d+\): instance cx_box modified; it expires at \S+Z\n$/);
  const proxy = await cli(['expire', 'cx_box', 'ssh', '30m'], env);
  t.is(proxy.code, 0, proxy.stderr);
  t.regex(proxy.stdout, /proxy ssh of instance cx_box expires at \S+Z/);

  const ls = (await cli(['ls'], env)).stdout.split('\n');
  t.regex(ls[0]!, /\bexpires\b/);
  t.regex(
    ls.find((l) => l.includes('cx_box'))!,
    /\s(1h59m|2h)\s*$/,
  );
  t.regex(
    ls.find((l) => l.includes('cx_other'))!,
    /\s-\s*$/,
  );
  const proxies = (await cli(['proxies', 'cx_box'], env)).stdout.split('\n');
  t.regex(proxies[0]!, /\bexpires$/);
  t.regex(proxies[1]!, /^ssh .*\s(29m\d*s?|30m)$/);

  const refused = await cli(['expire', 'cx_box', 'ssh', 'yesterday'], env);
  t.is(refused.code, 1);
  t.regex(refused.stdout, /^failed {2}cx_box \(\d+\): expires must be a duration from now/);
  const usage = await cli(['expire', 'cx_box'], env);
  t.is(usage.code, 2);

  t.is((await cli(['expire', 'cx_box', 'never'], env)).code, 0);
  t.is((await cli(['expire', 'cx_box', 'ssh', 'never'], env)).code, 0);
  const status = await statusOf(daemon, root, id);
  t.is(status.expiresAt, undefined);
  t.is(status.proxyExpiries, undefined);
  t.false((await cli(['ls'], env)).stdout.split('\n')[0]!.includes('expires'));
});
