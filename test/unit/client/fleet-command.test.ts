import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import test from 'ava';
import {
  askFleet,
  fleetListTable,
  fleetStatusTable,
  FLEET_TIMEOUT_MS,
  timeoutMs,
  type HostAnswer,
} from '../../../src/client/fleet-command.js';
import type { Listed } from '../../../src/client/instance-refs.js';

const KEY = `twk_${'0'.repeat(16)}_${'A'.repeat(43)}`;

/** A loopback server answering with `handle`; closed when the test ends. */
async function server(
  t: { teardown: (fn: () => Promise<void>) => void },
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<string> {
  const srv: Server = createServer(handle);
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections();
        srv.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
}

const envelope = (res: ServerResponse, data: unknown) => {
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify({ success: true, message: 'ok', data }));
};

test('--timeout reads 5s, 1500ms, 2.5 and 1m; anything else is a usage error', (t) => {
  t.is(timeoutMs(undefined), FLEET_TIMEOUT_MS);
  t.is(timeoutMs('5s'), 5000);
  t.is(timeoutMs('1500ms'), 1500);
  t.is(timeoutMs('2.5'), 2500);
  t.is(timeoutMs('1m'), 60_000);
  for (const bad of ['0', '0ms', 'soon', '-1', '5 s', ''])
    t.throws(() => timeoutMs(bad), { message: /--timeout takes a time above zero/ }, bad);
});

test('askFleet asks at most `concurrency` hosts at once, and answers in the order of the names', async (t) => {
  const hosts = 5;
  let arrived = 0;
  const held: Array<() => void> = [];
  // The server answers two at a time (the last alone): a third question while two wait would be one too many.
  const url = await server(t, (req, res) => {
    held.push(() =>
      envelope(res, [{ instanceID: 1, name: req.headers.authorization === `Bearer ${KEY}` ? 'keyed' : 'other' }]),
    );
    arrived++;
    if (held.length === 2 || arrived === hosts) held.splice(0).forEach((answer) => answer());
  });
  let asking = 0;
  let most = 0;
  const contexts = Object.fromEntries(['e', 'c', 'a', 'd', 'b'].map((name) => [name, { url, key: KEY }]));
  const answers = await askFleet(
    contexts,
    async (c) => c.key,
    async (client) => {
      // Counted as the questions start: all five at once if nothing held them back.
      most = Math.max(most, ++asking);
      try {
        return (await client.get('/tunnelAct/instanceMgr/list')).data;
      } finally {
        asking--;
      }
    },
    { timeoutMs: 5000, concurrency: 2 },
  );
  t.is(most, 2);
  t.is(arrived, hosts);
  t.deepEqual(
    answers.map((a) => a.host),
    ['a', 'b', 'c', 'd', 'e'],
  );
  t.true(answers.every((a) => a.ok && (a.data as Listed[])[0]!.name === 'keyed'));
});

test('askFleet: a host that does not answer in time, one that refuses the key, and one with no credential', async (t) => {
  const silent = await server(t, () => undefined);
  const refusing = await server(t, (_req, res) => {
    res.statusCode = 401;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ success: false, message: 'API key revoked' }));
  });
  const started = Date.now();
  const answers = await askFleet(
    { slow: { url: silent, key: KEY }, revoked: { url: refusing, key: KEY }, bare: { url: refusing } },
    async (c) => c.key,
    async (client) => (await client.get('/system/summary')).data,
    { timeoutMs: 300, concurrency: 4 },
  );
  t.true(Date.now() - started >= 300);
  t.like(answers, [
    { host: 'bare', ok: false, problem: 'unauthorised' },
    { host: 'revoked', ok: false, problem: 'unauthorised' },
    { host: 'slow', ok: false, problem: 'unreachable', reason: `no answer from ${silent} within 300 ms` },
  ]);
  t.regex((answers[0] as { reason: string }).reason, /no API key and no login for/);
  t.regex((answers[1] as { reason: string }).reason, /^API key revoked/);
});

const listed = (name: string, state: string, health: string, reason: string | null = null): Listed => ({
  instanceID: 7,
  name,
  state,
  pid: null,
  restarts: 0,
  connected: null,
  proxyStatus: {},
  health: { state: health, reason, since: null },
  bootAtStart: false,
  labels: {},
});

test('fleet ls: the host first, the instance columns after, and a row with the reason for a host with no answer', (t) => {
  const answers: Array<HostAnswer<Listed[]>> = [
    {
      host: 'a',
      url: 'http://a',
      ok: true,
      data: [listed('web', 'running', 'up'), listed('db', 'stopped', 'stopped')],
    },
    { host: 'b', url: 'http://b', ok: true, data: [] },
    { host: 'c', url: 'http://c', ok: false, problem: 'unreachable', reason: 'refused' },
  ];
  const lines = fleetListTable(answers, false).trimEnd().split('\n');
  t.deepEqual(
    lines.map((line) => line.split(/ {2,}/)),
    [
      ['host', 'id', 'name', 'state', 'health', 'boot', 'pid', 'uptime', 'cpu', 'mem', 'restarts', 'proxies', 'why'],
      ['a', '7', 'web', 'running', 'up', 'no', '-', '-', '-', '-', '0', '-'],
      ['a', '7', 'db', 'stopped', 'stopped', 'no', '-', '-', '-', '-', '0', '-'],
      ['b', '-', '-', '-', '-', '-', '-', '-', '-', '-', '-', '-', 'no instances'],
      ['c', '-', '-', 'unreachable', '-', '-', '-', '-', '-', '-', '-', '-', 'refused'],
    ],
  );
  // With every host answering with instances, no `why` column unless a tunnel has a reason.
  t.notRegex(fleetListTable([answers[0]!], false), /why/);
});

test('fleet status: counts by health per host, a why column only when a host did not answer', (t) => {
  const tunnels = { up: 2, degraded: 1, down: 0, stopped: 3, failed: 0 };
  const ok: HostAnswer<any> = {
    host: 'a',
    url: 'http://a',
    ok: true,
    data: { version: '1.2.3', startedAt: '2026-01-01T00:00:00.000Z', uptimeSecs: 7200, tunnels },
  };
  t.deepEqual(
    fleetStatusTable([ok], false)
      .trimEnd()
      .split('\n')
      .map((l) => l.split(/ {2,}/)),
    [
      ['host', 'daemon', 'version', 'uptime', 'up', 'degraded', 'down', 'stopped', 'failed'],
      ['a', 'ok', '1.2.3', '2h', '2', '1', '0', '3', '0'],
    ],
  );
  const down: HostAnswer<any> = { host: 'b', url: 'http://b', ok: false, problem: 'failed', reason: 'not tunnelward' };
  t.regex(fleetStatusTable([ok, down], false), /^b\s+failed\s+-\s+-\s+-\s+-\s+-\s+-\s+-\s+not tunnelward$/m);
});
