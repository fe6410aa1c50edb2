import test from 'ava';
import {
  proxyHealth,
  proxyHealthIn,
  reasonKind,
  tunnelHealth,
  type TunnelFacts,
} from '../../../src/instances/health.js';
import type { ProxyStatus } from '../../../src/config/proxy-status.js';

const proxy = (status: string, err = '', since = 100): ProxyStatus => ({ status, err, remoteAddr: ':6000', since });
const live = (
  connected: boolean | null,
  proxies: Array<[string, ProxyStatus]> = [],
  disconnectReason: string | null = null,
): NonNullable<TunnelFacts['live']> => ({ connected, connectedSince: 50, disconnectReason, proxies: new Map(proxies) });
const running = (l?: TunnelFacts['live']): TunnelFacts => ({
  state: 'running',
  stateSince: 10,
  lastError: null,
  live: l,
});

test('a tunnel that is not meant to run, or that the watchdog gave up on, says so and why', (t) => {
  t.deepEqual(tunnelHealth({ state: 'stopped', stateSince: 5, lastError: null }), {
    state: 'stopped',
    reason: null,
    since: 5,
  });
  t.deepEqual(tunnelHealth({ state: 'failed', stateSince: 5, lastError: 'exited with code 1: config error' }), {
    state: 'failed',
    reason: 'exited with code 1: config error',
    since: 5,
  });
  t.like(tunnelHealth({ state: 'backoff', stateSince: 5, lastError: 'killed by SIGKILL' }), {
    state: 'down',
    reason: 'restarting after an exit: killed by SIGKILL',
  });
  t.like(tunnelHealth({ state: 'starting', stateSince: 5, lastError: null }), { state: 'down', reason: 'starting' });
});

test("a running tunnel: up only logged in with every proxy running; why not, in frpc's words", (t) => {
  t.like(tunnelHealth(running()), { state: 'up' }, 'without an admin endpoint, the process is all there is');
  t.like(tunnelHealth(running(live(null))), { state: 'down', reason: 'logging in to the server' });
  t.deepEqual(tunnelHealth(running(live(false, [], 'login refused: token mismatch'))), {
    state: 'down',
    reason: 'not connected to the server: login refused: token mismatch',
    since: 50,
  });
  t.like(tunnelHealth(running(live(false))), {
    reason: 'not connected to the server: connection lost, trying again',
  });
  t.deepEqual(
    tunnelHealth(
      running(
        live(true, [
          ['a', proxy('running', '', 70)],
          ['b', proxy('running', '', 90)],
        ]),
      ),
    ),
    {
      state: 'up',
      reason: null,
      since: 90,
    },
  );
  t.deepEqual(
    tunnelHealth(
      running(
        live(true, [
          ['a', proxy('running')],
          ['b', proxy('start error', 'port already used', 80)],
          ['c', proxy('check failed', '', 95)],
        ]),
      ),
    ),
    { state: 'degraded', reason: 'proxy b: start error: port already used (and 1 more)', since: 80 },
  );
  t.like(tunnelHealth(running(live(true, [['b', proxy('start error', 'port already used')]]))), {
    state: 'down',
    reason: 'no proxy running: proxy b: start error: port already used',
  });
});

test('a proxy: up when frpc runs it, else its status and error in words', (t) => {
  t.like(proxyHealth(proxy('running')), { state: 'up', reason: null });
  t.like(proxyHealth(proxy('check failed', 'dial tcp 127.0.0.1:80: connection refused')), {
    state: 'down',
    reason: 'health check failed: dial tcp 127.0.0.1:80: connection refused',
  });
  t.like(proxyHealth(proxy('wait start')), { state: 'down', reason: 'starting' });
});

test('logged in before frpc lists the proxies its file has: not up yet; up once they are seen running', (t) => {
  const facts = (l: TunnelFacts['live']): TunnelFacts => ({ ...running(l), expectedProxies: 2 });
  t.deepEqual(tunnelHealth(facts(live(true))), {
    state: 'down',
    reason: 'logged in; its proxies not reported by frpc yet',
    since: 50,
  });
  t.like(
    tunnelHealth(
      facts(
        live(true, [
          ['a', proxy('running', '', 70)],
          ['b', proxy('running', '', 80)],
        ]),
      ),
    ),
    {
      state: 'up',
      since: 80,
    },
  );
  // A file with no proxy to run: up at the login.
  t.like(tunnelHealth({ ...running(live(true)), expectedProxies: 0 }), { state: 'up', since: 50 });
});

test("every answer has a kind of reason in a few fixed words, never frpc's own (a label of the metrics)", (t) => {
  const probed = (where: 'outside' | 'local') => new Map([['web', { where, error: 'connection refused', since: 60 }]]);
  const kinds = (facts: TunnelFacts) => reasonKind(tunnelHealth(facts));
  t.is(kinds({ state: 'stopped', stateSince: 5, lastError: null }), 'none');
  t.is(kinds({ state: 'failed', stateSince: 5, lastError: 'exited with code 1: config error' }), 'failed');
  t.is(kinds({ state: 'backoff', stateSince: 5, lastError: 'exited with code 2' }), 'restarting');
  t.is(kinds({ state: 'starting', stateSince: 5, lastError: null }), 'starting');
  t.is(kinds({ state: 'stopping', stateSince: 5, lastError: null }), 'stopping');
  t.is(kinds(running(live(null))), 'logging_in');
  t.is(kinds(running(live(false, [], 'login refused: token mismatch'))), 'disconnected');
  t.is(kinds({ ...running(live(true)), expectedProxies: 2 }), 'proxies_pending');
  t.is(kinds(running(live(true, [['ssh', proxy('running')]]))), 'none');
  t.is(kinds(running(live(true, [['ssh', proxy('start error', 'port already used')]]))), 'proxies_down');
  t.is(
    kinds(
      running(
        live(true, [
          ['ssh', proxy('running')],
          ['web', proxy('start error', 'port already used')],
        ]),
      ),
    ),
    'proxies_down',
    'degraded',
  );
  t.is(kinds({ ...running(live(true, [['web', proxy('running')]])), probes: probed('outside') }), 'unreachable');
  t.is(kinds({ ...running(live(true, [['web', proxy('running')]])), probes: probed('local') }), 'local_down');

  const up = tunnelHealth(running(live(true, [['ssh', proxy('running')]])));
  const ofProxy = (status: ProxyStatus | undefined, enabled = true) => reasonKind(proxyHealthIn(up, enabled, status));
  t.is(ofProxy(proxy('running')), 'none');
  t.is(ofProxy(proxy('start error', 'port already used')), 'start_error');
  t.is(ofProxy(proxy('check failed', 'dial tcp: refused')), 'check_failed');
  t.is(ofProxy(proxy('wait start')), 'starting');
  t.is(ofProxy(undefined), 'not_reported');
  t.is(ofProxy(proxy('running'), false), 'disabled');
  t.is(reasonKind(proxyHealth(proxy('running'), probed('outside').get('web'))), 'unreachable');
  t.is(reasonKind(proxyHealth(proxy('running'), probed('local').get('web'))), 'local_down');
  t.is(reasonKind({ state: 'down', reason: 'something new', since: null }), 'other');
});
