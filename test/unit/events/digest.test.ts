import test from 'ava';
import { digestsOf, isConnectionAlert, summaryOf } from '../../../src/events/digest.js';
import type { NotificationEvent } from '../../../src/events/vocabulary.js';

let seq = 0;
const alert = (
  event: NotificationEvent['event'],
  instanceID: number,
  name: string,
  more: Partial<NotificationEvent> = {},
) =>
  ({
    event,
    instanceID,
    name,
    from: null,
    to: null,
    exitCode: null,
    signal: null,
    at: '',
    seq: ++seq,
    ...more,
  }) as NotificationEvent;

const SERVERS: Record<number, string> = { 1: 'a.example:7000', 2: 'a.example:7000', 3: 'b.example:7000' };

test('one outage: a digest per server and direction, down first, each tunnel and proxy once with its reason', (t) => {
  const digests = digestsOf(
    [
      alert('instance.disconnected', 1, 'home', { err: 'server lost' }),
      alert('proxy.down', 1, 'home', { proxy: 'ssh', err: 'server lost' }),
      alert('instance.disconnected', 2, 'nas', { err: 'server unreachable: dial tcp: connection refused' }),
      alert('instance.connected', 3, 'cam'),
      alert('proxy.down', 3, 'cam', { proxy: 'rtsp', err: 'check failed' }),
      alert('instance.started', 3, 'cam'),
    ],
    (id) => SERVERS[id],
  );
  t.deepEqual(
    digests.map((d) => [d.name, d.to, d.items!.length]),
    [
      ['a.example:7000', 'down', 3],
      ['b.example:7000', 'down', 1],
      ['b.example:7000', 'up', 1],
    ],
  );
  t.deepEqual(digests[0]!.items, [
    { instanceID: 1, name: 'home', err: 'server lost' },
    { instanceID: 1, name: 'home', proxy: 'ssh', err: 'server lost' },
    { instanceID: 2, name: 'nas', err: 'server unreachable: dial tcp: connection refused' },
  ]);
  t.is(
    digests[0]!.message,
    'server a.example:7000: 2 tunnels and 1 proxy down: tunnels home (server lost), nas (server unreachable: dial tcp: connection refused); proxies home/ssh (server lost)',
  );
  t.is(digests[2]!.message, 'server b.example:7000: 1 tunnel back up: tunnels cam');
  t.true(digests.every((d) => d.event === 'alerts.digest' && d.instanceID === null));
});

test('a tunnel whose server is not known is listed under "unknown server"; only connection alerts are gathered', (t) => {
  const [only] = digestsOf([alert('proxy.up', 9, 'gone', { proxy: 'web' })], () => undefined);
  t.like(only, {
    name: 'unknown server',
    to: 'up',
    message: 'server unknown server: 1 proxy back up: proxies gone/web',
  });
  t.true(isConnectionAlert({ event: 'proxy.down' }));
  t.false(isConnectionAlert({ event: 'instance.crashed' }));
  t.deepEqual(
    digestsOf([alert('instance.crashed', 1, 'home')], () => 'x:1'),
    [],
  );
});

test('a long list names ten and counts the rest', (t) => {
  const items = Array.from({ length: 25 }, (_, i) => ({ instanceID: i, name: `t${i}` }));
  t.is(
    summaryOf('s:1', 'down', items),
    'server s:1: 25 tunnels down: tunnels t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, 15 more',
  );
});
