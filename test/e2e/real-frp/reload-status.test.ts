// A hot reload that adds a proxy, with the real frpc: the proxies it leaves as they were read running all along.
import test from 'ava';
import { echoServer, freePort } from '../../helpers/frp.js';
import { addProxy, createTunnel, frpsFor, realFrpDaemon, start, statusUntil, tcpTo } from '../../helpers/real-frp.js';

test('a reload that adds a proxy: the proxy already there reads running at every poll, never null', async (t) => {
  const frps = await frpsFor(t);
  const { daemon, root } = await realFrpDaemon(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const { id } = await createTunnel(daemon, root, frps, 'rf_reload_status');
  await addProxy(daemon, root, id, tcpTo('first', echo.port, await freePort()));
  await start(daemon, root, id);
  await statusUntil(daemon, root, id, (s) => s.proxyStatus.running === 1, 5000);

  const seen: Array<string | null> = [];
  let polling = true;
  const poll = (async () => {
    while (polling) {
      const list = await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${id}`, { token: root });
      const first = (list.body.data.proxies as Array<{ name: string; status: string | null }>).find(
        (p) => p.name === 'first',
      );
      seen.push(first?.status ?? null);
    }
  })();
  for (const name of ['second', 'third']) {
    const added = await addProxy(daemon, root, id, tcpTo(name, echo.port, await freePort()));
    t.is(added.applied, 'reload');
  }
  await statusUntil(daemon, root, id, (s) => s.proxyStatus.running === 3, 5000);
  polling = false;
  await poll;
  t.true(seen.length > 5, `polled ${seen.length} times`);
  t.deepEqual([...new Set(seen)], ['running'], `what the first proxy read at each poll: ${seen.join(' ')}`);
});
