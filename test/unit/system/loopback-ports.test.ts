import test from 'ava';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { readFile } from 'node:fs/promises';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import {
  ADMIN_PORTS_FROM,
  adminPortRange,
  freeLoopbackPort,
  loopbackPortState,
  parsePortRange,
  pickPort,
} from '../../../src/system/loopback-ports.js';

const listening = (port = 0) =>
  new Promise<Server>((resolve, reject) => {
    const server = createServer((socket) => socket.on('error', () => {}));
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
const portOf = (server: Server) => (server.address() as AddressInfo).port;
const closed = (server: Server) => new Promise((resolve) => server.close(resolve));
const connected = (port: number) =>
  new Promise<Socket>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });

test('the ephemeral range as the kernel writes it; anything else is not one', (t) => {
  t.deepEqual(parsePortRange('32768\t60999\n'), { low: 32768, high: 60999 });
  t.deepEqual(parsePortRange('1024 65535'), { low: 1024, high: 65535 });
  for (const text of ['', '32768', '60999\t32768', '0\t100', '1000\t70000', 'a\tb', '1 2 3'])
    t.is(parsePortRange(text), undefined, JSON.stringify(text));
});

test('admin ports come from below the ephemeral range, when it leaves room for them', (t) => {
  t.deepEqual(adminPortRange({ low: 32768, high: 60999 }), { low: ADMIN_PORTS_FROM, high: 32767 });
  t.deepEqual(adminPortRange({ low: ADMIN_PORTS_FROM + 1001, high: 60999 }), {
    low: ADMIN_PORTS_FROM,
    high: ADMIN_PORTS_FROM + 1000,
  });
  t.is(adminPortRange({ low: ADMIN_PORTS_FROM + 500, high: 60999 }), undefined);
  t.is(adminPortRange({ low: 1024, high: 65535 }), undefined);
  t.is(adminPortRange(undefined), undefined);
});

test('a pick is uniform over the range, skips the ports taken, and gives up after its draws', (t) => {
  const range = { low: 100, high: 109 };
  const draws = [0, 0.35, 0.999];
  const random = () => draws.shift()!;
  t.is(
    pickPort(range, (p) => p === 100, random),
    103,
  );
  t.is(
    pickPort(
      range,
      () => false,
      () => 0.999,
    ),
    109,
  );
  t.is(
    pickPort(
      range,
      () => false,
      () => 0,
    ),
    100,
  );
  let asked = 0;
  t.is(
    pickPort(range, () => (asked++, true), Math.random, 5),
    undefined,
  );
  t.is(asked, 5);
});

test("this host's admin ports are below its ephemeral range", async (t) => {
  const ephemeral = parsePortRange(await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8'))!;
  for (let i = 0; i < 20; i++) {
    const port = await freeLoopbackPort(() => false);
    t.true(port >= ADMIN_PORTS_FROM && port < ephemeral.low, `${port}`);
    t.is(await loopbackPortState(port), 'free');
  }
});

test('a port a listener holds, or a connection of this host, is not free; one neither holds is', async (t) => {
  const server = await listening();
  const held = portOf(server);
  t.is(await loopbackPortState(held), 'held', 'a listener');
  const client = await connected(held);
  const outgoing = client.localPort!;
  t.is(await loopbackPortState(outgoing), 'held', "an outgoing connection's own port");
  client.destroy();
  await closed(server);
  t.is(await loopbackPortState(held), 'free', 'free once the listener is closed');
});

test('a range whose ports are held or taken ends in a port the kernel chooses; a free one of the range is chosen', async (t) => {
  const server = await listening(0);
  const held = portOf(server);
  t.teardown(() => closed(server));
  const instead = await freeLoopbackPort(() => false, { low: held, high: held });
  t.not(instead, held);
  t.is(await loopbackPortState(instead), 'free');
  const other = await freeLoopbackPort((p) => p === instead, { low: instead, high: instead });
  t.not(other, instead);
  const spare = await listening(0);
  const freed = portOf(spare);
  await closed(spare);
  t.is(await freeLoopbackPort(() => false, { low: freed, high: freed }), freed);
});

test('a bind that fails for want of a file descriptor says nothing of the port: unknown, not held', async (t) => {
  // A process with no descriptor left (its limit lowered, then used up): as in a start of thousands of tunnels.
  const module = fileURLToPath(new URL('../../../src/system/loopback-ports.js', import.meta.url));
  const script = `
    const { openSync } = await import('node:fs');
    const { loopbackPortState } = await import(${JSON.stringify(module)});
    const held = [];
    try { for (;;) held.push(openSync('/dev/null', 'r')); } catch (err) { if (err.code !== 'EMFILE') throw err; }
    console.log(await loopbackPortState(${await freeLoopbackPort(() => false)}));`;
  const { stdout } = await promisify(execFile)('sh', [
    '-c',
    'ulimit -n 64 && exec "$0" --input-type=module -e "$1"',
    process.execPath,
    script,
  ]);
  t.is(stdout.trim(), 'unknown');
});
