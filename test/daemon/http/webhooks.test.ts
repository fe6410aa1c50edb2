import test from 'ava';
import { dispose, startDaemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, statusOf, waitFor } from '../../helpers/instances.js';
import { startReceiver } from '../../helpers/receiver.js';
import { quietFor } from '../../helpers/until.js';

const webhookSettings = (url: string, extra: Record<string, string | number> = {}) =>
  instanceSettings({
    'Notification.Enabled': 'true',
    'Webhook.URL': url,
    'Webhook.TimeoutSecs': 0.5,
    'Webhook.Retries': 3,
    ...extra,
  }).replace('"Notification.Enabled" = "true"', '"Notification.Enabled" = true');

test('start, crash, restart and give-up send their events in order, with every field', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  // A generous timeout: a slow answer would be retried, and delivery is at least once.
  const daemon = await startDaemon({ settingsToml: webhookSettings(receiver.url, { 'Webhook.TimeoutSecs': 10 }) });
  t.teardown(() => dispose(daemon));
  await receiver.waitFor((r) => r.some((x) => x.body.event === 'service.started'));
  const token = await daemon.login();
  const { id } = await createInstance(daemon, token, 'wh_crashy', { metadatas: { 'fixture.crashAfterMs': '1000' } });
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
  await receiver.waitFor((r) => r.some((x) => x.body.event === 'instance.failed'), 30_000);
  const events = receiver.received.map((r) => r.body).filter((e) => e.instanceID === Number(id));
  t.deepEqual(
    events.map((e) => e.event),
    [
      'instance.started',
      'instance.crashed',
      'instance.restarting',
      'instance.started',
      'instance.crashed',
      'instance.restarting',
      'instance.started',
      'instance.crashed',
      'instance.failed',
    ],
  );
  t.like(events[1], { name: 'wh_crashy', from: 'running', to: 'backoff', exitCode: 1, signal: null });
  t.like(events[2], { attempt: 1, delayMs: 0 });
  t.like(events[5], { attempt: 2, delayMs: 100 });
  t.like(events[8], { from: 'running', to: 'failed' });
  for (const e of events) {
    t.regex(e.at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    t.is(e.instanceID, Number(id));
  }
  const seqs = receiver.received.map((r) => r.body.seq);
  t.deepEqual(
    seqs,
    [...seqs].sort((a, b) => a - b),
    'seq only goes up',
  );
  t.is(new Set(seqs).size, seqs.length);
  t.is(receiver.received[0]!.method, 'POST');
  t.is(receiver.received[0]!.headers['content-type'], 'application/json');
});

test('a body template, headers and method from the settings; secrets stay out of the logs', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const daemon = await startDaemon({ settingsToml: instanceSettings() });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const bad = await daemon.post('/settings/set', { 'Notification.Method': 'email' }, { token });
  t.is(bad.status, 400);
  t.regex(bad.body.message, /Notification\.Method must be one of: webhook/);
  const set = await daemon.post(
    '/settings/set',
    {
      'Notification.Enabled': true,
      'Webhook.URL': receiver.url,
      'Webhook.Method': 'PUT',
      'Webhook.Headers': { Authorization: 'Bearer hook-secret-9' },
      'Webhook.Body': { text: 'tunnel {{name}} is now {{to}} (was {{from}})', kind: '{{event}}' },
    },
    { token },
  );
  t.true(set.body.success, set.body.message);
  const { id } = await createInstance(daemon, token, 'wh_tmpl');
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
  const [first] = await receiver.waitFor((r) => r.length >= 1);
  t.is(first!.method, 'PUT');
  t.is(first!.headers.authorization, 'Bearer hook-secret-9');
  t.deepEqual(first!.body, { text: 'tunnel wh_tmpl is now running (was starting)', kind: 'instance.started' });
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token });
  await receiver.waitFor((r) => r.length >= 2);
  t.is(receiver.received[1]!.body.kind, 'instance.stopped');
  t.false(daemon.output.some((l) => l.includes('hook-secret-9') || l.includes('s3cr3t-path')));
});

test('retries on 5xx until delivered; no retry on 4xx', async (t) => {
  const receiver = await startReceiver((req, res, i) => {
    const failing = req.body.name === 'wh_retry' && i < 2;
    res.statusCode = req.body.name === 'wh_refused' ? 400 : failing ? 503 : 200;
    res.end();
  });
  t.teardown(() => receiver.close());
  const daemon = await startDaemon({ settingsToml: instanceSettings() });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const retry = await createInstance(daemon, token, 'wh_retry');
  await daemon.post('/settings/set', { 'Notification.Enabled': true, 'Webhook.URL': receiver.url }, { token });
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: retry.id }, { token });
  await receiver.waitFor((r) => r.length >= 3);
  t.deepEqual(
    receiver.received.map((r) => r.body.event),
    ['instance.started', 'instance.started', 'instance.started'],
  );
  t.is(new Set(receiver.received.map((r) => r.body.seq)).size, 1, 'the same event, retried');
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: retry.id }, { token });
  await receiver.waitFor((r) => r.length >= 4);

  await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: retry.id, type: 'systemConfig', modifiedData: { name: 'wh_refused' } },
    { token },
  );
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: retry.id }, { token });
  await daemon.waitForOutput(
    /"reason":"refused: HTTP 400".*notification not delivered|notification not delivered.*"reason":"refused: HTTP 400"/,
  );
  await quietFor(800, 'a retry of a refused delivery');
  t.is(receiver.received.filter((r) => r.body.name === 'wh_refused').length, 1, 'a 4xx is not retried');
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: retry.id }, { token });
});

test('a receiver that hangs never slows the supervisor; attempts time out and are retried', async (t) => {
  const receiver = await startReceiver(() => {
    // hangs
  });
  t.teardown(() => receiver.close());
  const daemon = await startDaemon({ settingsToml: webhookSettings(receiver.url, { 'Webhook.Retries': 1 }) });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const { id } = await createInstance(daemon, token, 'wh_hang');
  // A delivery is hanging at the receiver (service.started) before the commands are sent: they must not wait on it.
  await waitFor(
    async () => receiver.received.length,
    (n) => n >= 1,
  );
  const start = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
  const stop = await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token });
  t.true(start.body.success && stop.body.success);
  t.false((await statusOf(daemon, token, id)).isRunning);
  await daemon.waitForOutput(/"reason":"timed out".*notification not delivered/, 15_000);
  // Each event: the first attempt and one retry.
  await waitFor(
    async () => receiver.received.length,
    (n) => n >= 2,
  );
  t.true(receiver.received.length >= 2);
});

test('service.started when the daemon starts and service.stopping when it stops', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const daemon = await startDaemon({ settingsToml: webhookSettings(receiver.url) });
  t.teardown(() => dispose(daemon));
  await receiver.waitFor((r) => r.some((x) => x.body.event === 'service.started'));
  const { code } = await daemon.stop('SIGTERM');
  t.is(code, 0);
  t.true(receiver.received.some((x) => x.body.event === 'service.stopping'));
  const events = receiver.received.map((r) => r.body);
  t.like(events[0], { event: 'service.started', name: 'tunnelward', instanceID: null });
});

test("a failed start: its exit code reaches the webhook and the reply, whose last lines are that run's only", async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  // A start that fails is judged over 1.5 s: a Node fixture can take more than 0.3 s to boot on a loaded machine.
  const daemon = await startDaemon({
    settingsToml: webhookSettings(receiver.url, { 'Webhook.TimeoutSecs': 10, 'Instance.StartSecs': 1.5 }),
  });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const { id } = await createInstance(daemon, token, 'wh_failstart');
  // A first run that logs in and starts its proxies, then stops.
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token })).body.success);
  t.true((await daemon.post('/tunnelAct/instanceMgr/stop', { instanceID: id }, { token })).body.success);
  // The next run exits at once with code 4.
  const modify = await daemon.post(
    '/tunnelAct/instanceMgr/modify',
    {
      instanceID: id,
      type: 'configFile',
      modifiedData: { metadatas: { 'fixture.exit': 'now', 'fixture.exitCode': '4' } },
    },
    { token },
  );
  t.true(modify.body.success, modify.body.message);
  const start = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token });
  t.is(start.status, 502);
  t.regex(start.body.message, /exited with code 4/);
  t.regex(start.body.message, /fixture: exiting with code 4/);
  t.notRegex(start.body.message, /login to server success/, 'nothing of the run before');
  const crashed = await receiver.waitFor((r) =>
    r.some((x) => x.body.event === 'instance.crashed' && x.body.instanceID === Number(id)),
  );
  // Supervised as any exit: the watchdog starts it again after a backoff.
  t.like(crashed.find((x) => x.body.event === 'instance.crashed')!.body, {
    from: 'starting',
    to: 'backoff',
    exitCode: 4,
    signal: null,
  });
});

test('webhook header values are secrets: masked wherever they would show, in replies and in the log; Content-Type is none', async (t) => {
  const daemon = await startDaemon({ settingsToml: instanceSettings() });
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  const key = 'hook-key-4242';
  const set = await daemon.post(
    '/settings/set',
    { 'Webhook.Headers': { 'X-Api-Key': key, 'Content-Type': 'application/json' } },
    { token },
  );
  t.true(set.body.success, set.body.message);
  // A name that happens to be the key: shown masked, as CI systems mask a secret in any output.
  const created = await createInstance(daemon, token, key);
  const listed = await daemon.get('/tunnelAct/instanceMgr/list', { token });
  t.deepEqual(
    listed.body.data.filter((i: { instanceID: number }) => i.instanceID === Number(created.id)).map((i: any) => i.name),
    ['***'],
  );
  t.false(JSON.stringify(listed.body).includes(key));
  await waitFor(
    async () => daemon.output.some((line) => line.includes('instance created')),
    (logged) => logged,
  );
  t.false(
    daemon.output.some((line) => line.includes(key)),
    'nor in the log',
  );
  const notJson = await daemon.post('/tunnelAct/instanceMgr/start', 'x', {
    token,
    headers: { 'Content-Type': 'text/plain' },
  });
  t.regex(notJson.body.message, /application\/json/, 'a descriptive header value is no secret');
});
