import test from 'ava';
import { detailLines, forTerminal, paint, table } from '../../../src/client/render.js';

test("forTerminal shows the text's control characters and makes paint's colours real", (t) => {
  const painted = paint('x\x1b]0;t\x07', 'green', true);
  t.is(forTerminal(`${painted} \x1b[31mred?\x1b[0m\n`), '\x1b[32mx\\x1b]0;t\\x07\x1b[0m \\x1b[31mred?\\x1b[0m\n');
  t.is(forTerminal(paint('x', 'green', false)), 'x', 'no colour asked, none given');
  // A colour named by a server is looked up as an own key only.
  t.is(forTerminal(paint('x', 'constructor' as never, true)), 'x');
});

test('forTerminal in JSON escapes what JSON leaves raw, as JSON', (t) => {
  const json = JSON.stringify({ name: '\x1b\x9b\x7f' });
  t.is(forTerminal(json, true), '{"name":"\\u001b\\u009b\\u007f"}');
});

test('a table lines up its columns with the cells as shown', (t) => {
  const text = table(
    ['name', 'state'],
    [
      ['a\x1bb', 'running'],
      ['plain', 'stopped'],
    ],
  );
  const lines = forTerminal(text).split('\n');
  t.deepEqual(lines, ['name    state', 'a\\x1bb  running', 'plain   stopped', '']);
});

test('status in detail: values in words, keys aligned, nothing printed as JSON', (t) => {
  const text = detailLines({
    instanceID: 2,
    name: 'broken',
    isRunning: true,
    labels: {},
    policy: {},
    lastError: null,
    access: { operate: true, change: true, secrets: false, logs: true },
    proxyStatus: { site: 'running', vhost: 'start error' },
    health: {
      state: 'down',
      reason: 'not connected to the server: login refused: token mismatch',
      since: '2026-11-29T09:57:39.193Z',
    },
    proxyHealth: { up: 0, degraded: 0, down: 1 },
    notes: [],
  });
  t.is(
    text,
    [
      'instanceID   2',
      'name         broken',
      'isRunning    true',
      'labels       -',
      'policy       -',
      'access       operate, change, logs',
      'proxyStatus  site=running, vhost=start error',
      'health       down: not connected to the server: login refused: token mismatch (since 2026-11-29 09:57:39)',
      'proxyHealth  up 0, degraded 0, down 1',
      'notes        -',
      '',
    ].join('\n'),
  );
  t.is(
    detailLines({ health: { state: 'up', reason: null, since: '2026-11-29T10:00:00Z' } }),
    'health  up (since 2026-11-29 10:00:00)\n',
  );
});
