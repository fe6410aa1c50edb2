// Requests that come together must not both get what only one may have: an admin port, a remote port or a proxy
// name on a server (frps refuses the second at run time, or frpc fails to listen).
import test from 'ava';
import { readTunnelConfig } from '../../../src/config/tunnel-config.js';
import { disposeWithTunnels, startWithRoot } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, tcpProxy } from '../../helpers/instances.js';

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

test('twenty instances of one server asking at once for one remote port or one custom domain: one gets it', async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const made = await Promise.all(
    Array.from({ length: 20 }, (_, i) => createInstance(daemon, root, `claim_${i}`, {}, { serverPort: '7200' })),
  );
  const createAll = (proxyInfo: (i: number) => Record<string, unknown>) =>
    Promise.all(
      made.map(({ id }, i) =>
        daemon.post('/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: proxyInfo(i) }, { token: root }),
      ),
    );
  const oneWins = (replies: Awaited<ReturnType<typeof createAll>>, message: RegExp) => {
    const all = replies.map((r) => `${r.status} ${r.body.message}`).join('; ');
    t.is(replies.filter((r) => r.body.success).length, 1, all);
    for (const refused of replies.filter((r) => !r.body.success)) {
      t.is(refused.status, 409, all);
      t.regex(refused.body.message, message);
    }
  };

  oneWins(
    await createAll((i) => tcpProxy(`port_${i}`, 6998)),
    /^proxy port_\d+: remotePort 6998 \(tcp\) is (already used|being taken) by proxy port_\d+ .*on the same server 127\.0\.0\.1:7200$/,
  );
  oneWins(
    await createAll((i) => ({
      name: `web_${i}`,
      type: 'http',
      localIP: '127.0.0.1',
      localPort: '80',
      customDomains: ['race.example.com'],
    })),
    /^proxy web_\d+: custom domain race\.example\.com \(http\) is (already used|being taken) by proxy web_\d+ .*on the same server 127\.0\.0\.1:7200$/,
  );
  const held = await Promise.all(
    made.map(async ({ configPath }) => (await readTunnelConfig(configPath)).serverClaims()),
  );
  for (const claim of ['tcp port 6998', 'http domain race.example.com']) {
    t.is(held.filter(({ claims }) => claims.has(claim)).length, 1, `one file holds ${claim}`);
  }
});
