import test from 'ava';
import type { ProxyStatus } from '../../../src/config/proxy-status.js';
import type { Health } from '../../../src/instances/health.js';
import {
  addHealthCounts,
  countHealth,
  noHealthCounts,
  proxyHealthCounts,
} from '../../../src/instances/health-counts.js';

const proxy = (status: string, err = ''): ProxyStatus => ({ status, err, remoteAddr: '', since: 1 });
const health = (state: Health['state'], reason: string | null = null): Health => ({ state, reason, since: 1 });

test('counts have every state, zero when none', (t) => {
  t.deepEqual(noHealthCounts(), { up: 0, degraded: 0, down: 0, stopped: 0, failed: 0 });
  t.deepEqual(countHealth(['up', 'down', 'down', 'failed']), { up: 1, degraded: 0, down: 2, stopped: 0, failed: 1 });
  t.deepEqual(addHealthCounts(countHealth(['up']), countHealth(['up', 'stopped'])), {
    up: 2,
    degraded: 0,
    down: 0,
    stopped: 1,
    failed: 0,
  });
});

test('a tunnel down makes every enabled proxy down, though frpc reports none of them (the server gone)', (t) => {
  const down = health('down', 'not connected to the server: server unreachable');
  t.like(proxyHealthCounts(down, ['a', 'b', 'c'], new Map()), { down: 3, up: 0 });
  t.like(proxyHealthCounts(down, ['a', 'b'], undefined, 2), { down: 2, stopped: 2 });
  // Failed and stopped tunnels share their state with their proxies: not counted down.
  t.like(proxyHealthCounts(health('failed', 'exited with code 1'), ['a'], undefined), { failed: 1, down: 0 });
  t.like(proxyHealthCounts(health('stopped'), ['a'], undefined), { stopped: 1, down: 0 });
});

test("a running tunnel's proxies by frpc's status; an enabled one frpc has not reported is down", (t) => {
  const live = new Map([
    ['a', proxy('running')],
    ['b', proxy('start error', 'port already used')],
  ]);
  t.like(proxyHealthCounts(health('degraded', 'proxy b: start error'), ['a', 'b', 'c'], live), { up: 1, down: 2 });
  // Not knowing the file's proxies: what frpc reports.
  t.like(proxyHealthCounts(health('degraded'), undefined, live), { up: 1, down: 1 });
});
