// The memory cap with the real frpc under load: frpc runs with GOMEMLIMIT below the cap, and 128 MiB each way
// through its tunnel leaves it under the cap, not restarted.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { EchoConnection, echoServer, freePort } from '../../helpers/frp.js';
import { statusOf } from '../../helpers/instances.js';
import { addProxy, createTunnel, frpsFor, realFrpDaemon, start, statusUntil, tcpTo } from '../../helpers/real-frp.js';

const rssOf = async (pid: number) =>
  Number(/^VmRSS:\s+(\d+) kB$/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

test('the real frpc under load stays under its cap with GOMEMLIMIT, and is not restarted', async (t) => {
  t.timeout(120_000);
  const frps = await frpsFor(t);
  const { daemon, root } = await realFrpDaemon(t, { 'Instance.MemoryMaxMB': 64 });
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const remotePort = await freePort();
  const { id } = await createTunnel(daemon, root, frps, 'mc_load');
  await addProxy(daemon, root, id, tcpTo('echo', echo.port, remotePort));
  await start(daemon, root, id);
  const { pid } = await statusUntil(daemon, root, id, (s) => s.health.state === 'up', 30_000);
  const env = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
  t.true(env.includes('GOMEMLIMIT=51MiB'), 'Go is told of the cap');

  const connection = await EchoConnection.open(remotePort);
  t.teardown(() => connection.close());
  const chunk = Buffer.alloc(1024 * 1024, 7);
  let peak = 0;
  for (let i = 0; i < 128; i++) {
    await connection.exchange(chunk, 20_000);
    if (i % 8 === 0) peak = Math.max(peak, await rssOf(pid));
  }
  t.log(`frpc's RSS peaked at ${(peak / 1048576).toFixed(1)} MiB carrying 128 MiB each way`);
  t.true(peak < 64 * 1048576, `RSS ${peak} under the cap`);
  const after = await statusOf(daemon, root, id);
  t.is(after.pid, pid, 'the same frpc');
  t.is(after.healthRestarts, 0);
});
