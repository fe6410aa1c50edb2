// Requests that come together must not both get what only one may have: an admin port, a remote port or a proxy
// name on a server (frps refuses the second at run time, or frpc fails to listen).
import test from 'ava';
import { readTunnelConfig } from '../../src/config/tunnel-config.js';
import { disposeWithTunnels, startWithRoot } from '../helpers/daemon.js';
import { createInstance, instanceSettings, tcpProxy } from '../helpers/instances.js';

test('creates at once get an admin port each; proxies at once on one server get their claims once', async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const made = await Promise.all(
    Array.from({ length: 24 }, (_, i) => createInstance(daemon, root, `cc_${i}`, {}, { serverPort: '7000' })),
  );
  const ports = await Promise.all(
    made.map(async ({ configPath }) => (await readTunnelConfig(configPath)).adminEndpoint()!.port),
  );
  t.is(new Set(ports).size, made.length, 'no admin port given twice');

  // The same proxy name (and remote port) asked for on ten instances of one server at once: one gets it.
  const replies = await Promise.all(
    made
      .slice(0, 10)
      .map(({ id }) =>
        daemon.post(
          '/tunnelAct/proxyMgr/create',
          { instanceID: id, proxyInfo: tcpProxy('same', 6999) },
          { token: root },
        ),
      ),
  );
  t.is(replies.filter((r) => r.body.success).length, 1, replies.map((r) => r.body.message).join('; '));
  t.true(replies.filter((r) => !r.body.success).every((r) => r.status === 409));
});
