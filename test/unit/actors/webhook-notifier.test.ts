import test from 'ava';
import pino from 'pino';
import { renderBody, WebhookNotifier } from '../../../actors/webhook-notifier.js';
import { eventsOf, type NotificationEvent } from '../../../src/events/vocabulary.js';
import { defaultSettings } from '../../../src/settings/table.js';
import { startReceiver } from '../../helpers/receiver.js';
import { until } from '../../helpers/until.js';

const silent = pino({ level: 'silent' });

let numbered = 0;
/** An event as the event hub hands it over: numbered and stamped. */
const serviceStarted = (seq = ++numbered): NotificationEvent => ({
  event: 'service.started',
  instanceID: null,
  name: 'x',
  from: null,
  to: null,
  exitCode: null,
  signal: null,
  at: new Date().toISOString(),
  seq,
});

test('state changes map to notification events', (t) => {
  const base = { instanceID: 3, name: 'web', exitCode: 1, signal: null, attempt: 2, delayMs: 2000, at: 0 };
  const kinds = (from: any, to: any) => eventsOf({ ...base, from, to }).map((e) => e.event);
  t.deepEqual(kinds('starting', 'running'), ['instance.started']);
  t.deepEqual(kinds('stopped', 'running'), [], 'adoption at start-up is no news');
  t.deepEqual(kinds('stopping', 'stopped'), ['instance.stopped']);
  t.deepEqual(kinds('backoff', 'stopped'), ['instance.stopped']);
  t.deepEqual(kinds('running', 'stopped'), ['instance.crashed']);
  t.deepEqual(kinds('running', 'backoff'), ['instance.crashed', 'instance.restarting']);
  t.deepEqual(kinds('starting', 'failed'), ['instance.crashed', 'instance.failed']);
  t.deepEqual(kinds('stopped', 'starting'), []);
  t.like(eventsOf({ ...base, from: 'running', to: 'backoff' })[1], { attempt: 2, delayMs: 2000 });
});

test('body templates fill {{field}} placeholders, escaped by JSON', (t) => {
  const event = { event: 'instance.crashed', name: 'we"b\n', exitCode: 1, seq: 7 } as unknown as NotificationEvent;
  const body = renderBody(
    { text: '{{name}} {{event}} ({{exitCode}}) #{{ seq }} {{nope}}', list: ['{{seq}}'], n: 5 },
    event,
  );
  t.deepEqual(body, { text: 'we"b\n instance.crashed (1) #7 ', list: ['7'], n: 5 });
  t.is(JSON.parse(JSON.stringify(body)).text, 'we"b\n instance.crashed (1) #7 ');
});

test('a full queue drops new events and counts them; publish never waits', async (t) => {
  const receiver = await startReceiver(() => {
    // never answers
  });
  t.teardown(() => receiver.close());
  const settings = {
    ...defaultSettings('/tmp'),
    'Notification.Enabled': true,
    'Webhook.URL': receiver.url,
    // Long enough that the receiver (in this same thread) reads each request before its attempt times out.
    'Webhook.TimeoutSecs': 2,
    'Webhook.Retries': 0,
  };
  const notifier = new WebhookNotifier(() => settings, silent, { capacity: 3, retryDelayMs: 10 });
  for (let i = 1; i <= 10; i++) {
    const returned = notifier.publish(serviceStarted(i));
    t.is(returned, undefined, 'publish returns at once, with nothing to wait for');
  }
  // One in flight, three queued, six dropped: all decided before any delivery ended (the receiver never answers).
  t.is(notifier.stats.dropped, 6);
  await receiver.waitFor((r) => r.length >= 4, 30_000);
  await until(
    () => notifier.stats.failed,
    (failed) => failed >= 4,
    { timeoutMs: 5000, what: 'four failed deliveries' },
  ).catch(() => undefined);
  t.is(notifier.stats.failed, 4);
  t.deepEqual(
    receiver.received.map((r) => r.body.seq),
    [1, 2, 3, 4],
  );
});

test('nothing is sent while notifications are off', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const settings = { ...defaultSettings('/tmp'), 'Webhook.URL': receiver.url };
  const notifier = new WebhookNotifier(() => settings, silent);
  notifier.publish(serviceStarted());
  await notifier.drain(200);
  t.is(notifier.stats.published, 0);
  t.is(receiver.received.length, 0);
});

test('a header Node refuses to send fails the delivery once, logged, without retries or an unhandled rejection', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const settings = {
    ...defaultSettings('/tmp'),
    'Notification.Enabled': true,
    'Webhook.URL': receiver.url,
    'Webhook.Headers': { 'X-Name': 'caf\u00e9 \u20ac' },
    'Webhook.Retries': 3,
  };
  const lines: string[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
  const notifier = new WebhookNotifier(() => settings, log, { capacity: 10, retryDelayMs: 10 });
  notifier.publish(serviceStarted());
  await notifier.drain(2000);
  t.is(notifier.stats.failed, 1);
  t.is(receiver.received.length, 0);
  const entry = JSON.parse(lines.find((l) => l.includes('notification not delivered'))!);
  t.is(entry.attempts, 1, 'not retried');
  t.regex(entry.reason, /^refused: cannot send: /);
  t.false(lines.join('').includes('caf'), 'the header value is not logged');
});
