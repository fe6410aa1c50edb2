import test from 'ava';
import type { ProxyStatus } from '../../../src/config/proxy-status.js';
import type { ProxyView } from '../../../src/config/proxy-view.js';
import { proxyHealthIn, tunnelHealth, type TunnelFacts } from '../../../src/instances/health.js';
import {
  errorWords,
  judgeHttp,
  judgeTcp,
  nextProbeState,
  probeTargets,
  probeVerdictOf,
  splitHostPort,
  type ProbeFailure,
  type ProbeResult,
  type ProbeState,
} from '../../../src/instances/probes.js';

const view = (fields: Partial<ProxyView> & Record<string, unknown>): ProxyView => ({
  name: 'p',
  type: 'tcp',
  localIP: '127.0.0.1',
  localPort: '8080',
  remotePort: '',
  enabled: true,
  ...fields,
});
const status = (remoteAddr: string, s = 'running'): ProxyStatus => ({ status: s, err: '', remoteAddr, since: 1 });

test("what is probed: tcp at the address frps gave it, http at frps's vhost port with the domain as Host", (t) => {
  const { targets, skipped } = probeTargets(
    'frps.example.com',
    [
      view({ name: 'ssh', localPort: '22', remotePort: '0' }),
      view({ name: 'web', type: 'http', localPort: '80', customDomains: ['a.example.com'] }),
      view({
        name: 'sub',
        type: 'http',
        localPort: '81',
        subdomain: 'sub',
        hostHeaderRewrite: 'inner',
        locations: ['/x'],
      }),
      view({ name: 'tls', type: 'https', localPort: '443', customDomains: ['t.example.com'] }),
      view({ name: 'dns', type: 'udp', localPort: '53', remotePort: '5353' }),
      view({ name: 'files', type: 'tcp', localPort: '', plugin: { type: 'static_file' } }),
      view({ name: 'locked', type: 'http', localPort: '82', httpUser: 'u', customDomains: ['l.example.com'] }),
      view({ name: 'failed', localPort: '23', remotePort: '6023' }),
      view({ name: 'off', localPort: '24', remotePort: '6024', enabled: false }),
    ],
    new Map([
      ['ssh', status('frps.example.com:41234')],
      ['web', status('a.example.com:8080')],
      ['sub', status('sub.frps.example.com')],
      ['tls', status('t.example.com')],
      ['dns', status('frps.example.com:5353')],
      ['files', status('frps.example.com:6000')],
      ['locked', status('l.example.com:8080')],
      ['failed', { ...status(':6023', 'start error'), err: 'port already used' }],
      ['off', status('frps.example.com:6024')],
    ]),
  );
  t.deepEqual(targets, [
    {
      proxy: 'ssh',
      kind: 'tcp',
      remote: { host: 'frps.example.com', port: 41234 },
      local: { host: '127.0.0.1', port: 22 },
    },
    {
      proxy: 'web',
      kind: 'http',
      remote: { host: 'frps.example.com', port: 8080 },
      local: { host: '127.0.0.1', port: 80 },
      hostHeader: 'a.example.com',
      localHostHeader: 'a.example.com',
      path: '/',
    },
    {
      proxy: 'sub',
      kind: 'http',
      remote: { host: 'frps.example.com', port: 80 },
      local: { host: '127.0.0.1', port: 81 },
      hostHeader: 'sub.frps.example.com',
      localHostHeader: 'inner',
      path: '/x',
    },
    {
      proxy: 'tls',
      kind: 'https',
      remote: { host: 'frps.example.com', port: 443 },
      local: { host: '127.0.0.1', port: 443 },
      hostHeader: 't.example.com',
      localHostHeader: 't.example.com',
      path: '/',
    },
  ]);
  t.deepEqual([...skipped.keys()], ['dns', 'files', 'locked'], 'a proxy frpc says is down or disabled is not probed');
});

test('host and port, as frpc writes them (an IPv6 server unbracketed)', (t) => {
  t.deepEqual(splitHostPort('10.0.0.1:6000'), { host: '10.0.0.1', port: 6000 });
  t.deepEqual(splitHostPort('::1:6000'), { host: '::1', port: 6000 });
  t.deepEqual(splitHostPort('[::1]:6000'), { host: '::1', port: 6000 });
  t.deepEqual(splitHostPort('a.example.com', 80), { host: 'a.example.com', port: 80 });
});

test('tcp: the local service refusing is local, whatever the server side did; frps closing at once is outside', (t) => {
  const refused = { ok: false as const, error: 'connection refused' };
  t.deepEqual(judgeTcp(refused, { ok: true, behaviour: 'closed' }), {
    ok: false,
    where: 'local',
    error: 'connection refused',
  });
  t.deepEqual(judgeTcp({ ok: true, behaviour: 'open' }, refused), {
    ok: false,
    where: 'outside',
    error: 'connection refused',
  });
  t.like(judgeTcp({ ok: true, behaviour: 'open' }, { ok: true, behaviour: 'closed' }), {
    ok: false,
    where: 'outside',
    error: 'closed at once by the server: the tunnel did not carry it',
  });
  t.like(judgeTcp({ ok: true, behaviour: 'data' }, { ok: true, behaviour: 'closed' }), { ok: false, where: 'outside' });
  t.deepEqual(judgeTcp({ ok: true, behaviour: 'open' }, { ok: true, behaviour: 'open' }), { ok: true });
  t.deepEqual(judgeTcp({ ok: true, behaviour: 'data' }, { ok: true, behaviour: 'data' }), { ok: true });
  t.deepEqual(judgeTcp({ ok: true, behaviour: 'data' }, { ok: true, behaviour: 'open' }), {
    ok: false,
    where: 'outside',
    error: 'the service speaks first, but nothing came through the server',
  });
  t.deepEqual(judgeTcp({ ok: true, behaviour: 'open' }, { ok: true, behaviour: 'data' }), { ok: true });
  // A service that closes every connection at once does so through the tunnel too: the same behaviour.
  t.deepEqual(judgeTcp({ ok: true, behaviour: 'closed' }, { ok: true, behaviour: 'closed' }), { ok: true });
});

test('http: the class of the status must be the same through frps as directly', (t) => {
  t.deepEqual(judgeHttp({ ok: true, status: 200 }, { ok: true, status: 204 }), { ok: true });
  t.deepEqual(judgeHttp({ ok: true, status: 503 }, { ok: true, status: 500 }), { ok: true }, "the service's own error");
  t.deepEqual(judgeHttp({ ok: true, status: 200 }, { ok: true, status: 404 }), {
    ok: false,
    where: 'outside',
    error: 'HTTP 404 through the server, 200 from the service directly',
  });
  t.like(judgeHttp({ ok: false, error: 'connection refused' }, { ok: true, status: 404 }), { where: 'local' });
  t.like(judgeHttp({ ok: true, status: 200 }, { ok: false, error: 'no answer within 5 s' }), { where: 'outside' });
});

test('failures count: only Probe.Failures in a row make it failing, since the first; one success clears it', (t) => {
  const fail = (error: string, where: 'local' | 'outside' = 'outside'): ProbeResult => ({ ok: false, where, error });
  let state: ProbeState | undefined;
  state = nextProbeState(state, { ok: true }, 10, 3);
  t.is(probeVerdictOf(state), 'reachable');
  state = nextProbeState(state, fail('connection refused'), 20, 3);
  state = nextProbeState(state, fail('connection refused'), 30, 3);
  t.is(probeVerdictOf(state), 'reachable', 'two failures are not yet an outage');
  state = nextProbeState(state, fail('no answer within 5 s'), 40, 3);
  t.is(probeVerdictOf(state), 'unreachable');
  t.deepEqual(state.failure, { where: 'outside', error: 'no answer within 5 s', since: 20 });
  state = nextProbeState(state, fail('connection refused', 'local'), 50, 3);
  t.is(probeVerdictOf(state), 'local down', 'the latest side and words');
  t.is(state.failure!.since, 20);
  state = nextProbeState(state, { ok: true }, 60, 3);
  t.deepEqual(state, { verdict: 'reachable', failure: null, failures: 0, firstFailedAt: null });
  t.is(probeVerdictOf(nextProbeState(undefined, fail('x'), 1, 2)), null, 'nothing known before the count is reached');
  t.is(probeVerdictOf(nextProbeState(undefined, fail('x'), 1, 1)), 'unreachable');
});

test('errors in words, without the addresses (reasons are shown to every user)', (t) => {
  t.is(errorWords({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 10.0.0.1:6000' }, 5), 'connection refused');
  t.is(errorWords({ code: 'PROBE_TIMEOUT' }, 2.5), 'no answer within 2.5 s');
  t.is(errorWords({ code: 'EWHATEVER', message: 'connect EWHATEVER 10.0.0.1:6000' }, 5), 'connect EWHATEVER');
});

test('the health answer: a proxy frpc says runs whose probe fails is down, the tunnel degraded or down', (t) => {
  const live = (names: string[]): NonNullable<TunnelFacts['live']> => ({
    connected: true,
    connectedSince: 5,
    disconnectReason: null,
    proxies: new Map(names.map((n) => [n, status(':1')])),
  });
  const outside: ProbeFailure = { where: 'outside', error: 'connection refused', since: 40 };
  const local: ProbeFailure = { where: 'local', error: 'connection refused', since: 30 };
  const facts = (names: string[], probes: Array<[string, ProbeFailure]>): TunnelFacts => ({
    state: 'running',
    stateSince: 1,
    lastError: null,
    live: live(names),
    probes: new Map(probes),
  });
  t.deepEqual(tunnelHealth(facts(['a', 'b'], [['b', outside]])), {
    state: 'degraded',
    reason: 'proxy b: unreachable from outside: connection refused',
    since: 40,
  });
  t.deepEqual(tunnelHealth(facts(['a'], [['a', local]])), {
    state: 'down',
    reason: 'no proxy working: proxy a: local service down: connection refused',
    since: 30,
  });
  t.like(tunnelHealth(facts(['a'], [])), { state: 'up' });
  const tunnel = tunnelHealth(facts(['a', 'b'], [['b', outside]]));
  t.deepEqual(proxyHealthIn(tunnel, true, status(':1'), outside), {
    state: 'down',
    reason: 'unreachable from outside: connection refused',
    since: 40,
  });
  t.like(proxyHealthIn(tunnel, true, status(':1')), { state: 'up' });
  t.like(
    proxyHealthIn(tunnel, true, { ...status(':1', 'start error'), err: 'port already used' }, outside),
    {
      state: 'down',
      reason: 'start error: port already used',
    },
    "frpc's own word comes first",
  );
});
