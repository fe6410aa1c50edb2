import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { parse } from 'smol-toml';
import { dispose, startDaemon } from '../../helpers/daemon.js';

const CONTRACT_KEYS = [
  'ListenAddr',
  'ListenPort',
  'TunnelPath',
  'InstancePath',
  'Debug',
  'Watchdog.Enabled',
  'Watchdog.Port',
  'Notification.Enabled',
  'Notification.Method',
  'Webhook.Method',
  'Webhook.URL',
  'Webhook.Headers',
  'Webhook.Body',
];

test('get and set: roles, types, unknown keys, persistence across a restart', async (t) => {
  const daemon = await startDaemon({ settingsToml: '[RateLimit]\nLogin = 1000\n' });
  t.teardown(() => dispose(daemon));
  const root = await daemon.login();
  const visitor = await daemon.userWithToken(root, 'st_visitor', 'visitor');
  const admin = await daemon.userWithToken(root, 'st_admin', 'admin');
  t.is((await daemon.get('/settings/get', { token: visitor.token })).status, 403);
  t.is((await daemon.post('/settings/set', { Debug: true }, { token: visitor.token })).status, 403);

  const all = await daemon.get('/settings/get', { token: admin.token });
  for (const key of CONTRACT_KEYS) t.true(key in all.body.data, key);
  t.like(all.body.data, {
    ListenAddr: '127.0.0.1',
    ListenPort: '7600',
    Debug: false,
    'Notification.Method': 'webhook',
  });
  const one = await daemon.get('/settings/get?key=Watchdog.Enabled', { token: admin.token });
  t.deepEqual(one.body.data, { key: 'Watchdog.Enabled', value: true });
  const viaHeader = await daemon.get('/settings/get', { token: admin.token, headers: { 'X-key': 'Debug' } });
  t.deepEqual(viaHeader.body.data, { key: 'Debug', value: false });
  const unknown = await daemon.get('/settings/get?key=Nope', { token: admin.token });
  t.is(unknown.status, 404);
  t.is(unknown.body.message, 'Unknown setting key: Nope');

  const badTypes: Array<[string, unknown]> = [
    ['Debug', 'yes'],
    ['ListenPort', 7700],
    ['ListenPort', '99999'],
    ['Watchdog.Port', 'x'],
    ['Webhook.URL', 'ftp://x'],
    ['Webhook.Headers', { 'bad header': 'x' }],
    ['Notification.Method', 'email'],
    ['Webhook.Body', [1]],
    ['Webhook.Headers', { 'X-Name': 'caf\u00e9' }],
    ['Webhook.Headers', { 'X-Name': 'a\u0001b' }],
    ['Webhook.Headers', { 'X-Name': 'a\nInjected: 1' }],
    ['Webhook.URL', 'http://example.test/a\nb'],
    ['InstancePath', '../escaped'],
    ['InstancePath', 'relative/dir'],
    ['InstancePath', '/srv/a/../b'],
    ['TunnelPath', 'bin/frpc'],
    ['TunnelPath', '/usr/bin/frpc\n--evil'],
    ['ListenAddr', '127.0.0.1\n'],
    ['ListenAddr', 'bad host'],
    ['Systemd.Systemctl', 'systemctl\nrm'],
    ['Systemd.Journalctl', './journalctl'],
  ];
  for (const [key, value] of badTypes) {
    const res = await daemon.post('/settings/set', { 'Watchdog.Enabled': false, [key]: value }, { token: admin.token });
    t.is(res.status, 400, key);
    t.true(res.body.message.startsWith(key), res.body.message);
  }
  const unchanged = await daemon.get('/settings/get?key=Watchdog.Enabled', { token: admin.token });
  t.is(unchanged.body.data.value, true, 'a request with one bad value applies nothing');

  // The contract: an unknown key is logged as a warning and does not fail the request; the known keys apply, and the
  // message names each key ignored with the key it most likely meant.
  const lenient = await daemon.post(
    '/settings/set',
    { 'Instance.StartSecs': 2, 'Watchdog.Enable': false, 'webhook.url': 'http://127.0.0.1:9/x', Mystery: 1 },
    { token: admin.token },
  );
  t.is(lenient.status, 200);
  t.true(lenient.body.success);
  t.is(
    lenient.body.message,
    'settings saved: Instance.StartSecs; ignored unknown setting keys: Watchdog.Enable (did you mean ' +
      'Watchdog.Enabled?), webhook.url (did you mean Webhook.URL?), Mystery',
  );
  t.is((await daemon.get('/settings/get?key=Instance.StartSecs', { token: admin.token })).body.data.value, 2);
  t.is((await daemon.get('/settings/get?key=Watchdog.Enabled', { token: admin.token })).body.data.value, true);
  for (const key of ['Watchdog.Enable', 'webhook.url', 'Mystery']) {
    await daemon.waitForOutput(new RegExp(`"key":"${key}".*unknown setting key ignored`));
  }
  const afterLenient = parse(await readFile(join(daemon.dataDir, 'settings.toml'), 'utf8')) as any;
  t.false('Mystery' in afterLenient, 'an ignored key is not written');
  const onlyUnknown = await daemon.post('/settings/set', { Nope: 1 }, { token: admin.token });
  t.true(onlyUnknown.body.success);
  t.is(onlyUnknown.body.message, 'no setting changed; ignored unknown setting key: Nope');

  // The strict form (the CLI's and the console's): an unknown key is a 400 that names it and applies nothing.
  const fileBefore = await readFile(join(daemon.dataDir, 'settings.toml'), 'utf8');
  const typo = await daemon.post(
    '/settings/set?strict=true',
    { Debug: true, 'Watchdog.Enable': false, 'webhook.url': 'http://127.0.0.1:9/x', Mystery: 1 },
    { token: admin.token },
  );
  t.is(typo.status, 400);
  t.false(typo.body.success);
  t.is(
    typo.body.message,
    'Unknown setting keys: Watchdog.Enable (did you mean Watchdog.Enabled?), webhook.url (did you mean Webhook.URL?), ' +
      'Mystery; nothing was changed',
  );
  t.is((await daemon.get('/settings/get?key=Debug', { token: admin.token })).body.data.value, false);
  t.is(await readFile(join(daemon.dataDir, 'settings.toml'), 'utf8'), fileBefore, 'the file is untouched');
  const notStrict = await daemon.post('/settings/set?strict=false', { Nope: 1 }, { token: admin.token });
  t.true(notStrict.body.success);
  const badStrict = await daemon.post('/settings/set?strict=yes', { Debug: true }, { token: admin.token });
  t.is(badStrict.status, 400);
  t.is(badStrict.body.message, 'strict must be true or false');

  const set = await daemon.post(
    '/settings/set',
    {
      Debug: true,
      'Watchdog.Enabled': false,
      ListenPort: '7701',
      'Webhook.Headers': { Authorization: 'Bearer s3cret' },
      'Webhook.Body': { text: 'instance {{name}} is {{to}}' },
    },
    { token: admin.token },
  );
  t.true(set.body.success);
  t.is(set.body.data, undefined);
  t.regex(set.body.message, /ListenPort take effect at the next start/);
  t.false(
    daemon.output.some((l) => l.includes('s3cret')),
    'header values never logged',
  );

  const file = parse(await readFile(join(daemon.dataDir, 'settings.toml'), 'utf8')) as any;
  t.is(file.Debug, true);
  t.is(file.Watchdog.Enabled, false);
  t.is(file.ListenPort, '7701');
  t.is(file.Webhook.Body.text, 'instance {{name}} is {{to}}');

  const headers = await daemon.get('/settings/get?key=Webhook.Headers', { token: admin.token });
  t.deepEqual(headers.body.data.value, { Authorization: '********' }, 'secrets are masked');
  // Sending the masked value back keeps the secret.
  await daemon.post('/settings/set', { 'Webhook.Headers': headers.body.data.value }, { token: admin.token });
  t.regex(await readFile(join(daemon.dataDir, 'settings.toml'), 'utf8'), /Bearer s3cret/);

  await daemon.stop();
  const again = await startDaemon({ dataDir: daemon.dataDir });
  t.teardown(() => again.stop('SIGKILL'));
  const token = await again.login();
  const after = await again.get('/settings/get', { token });
  t.like(after.body.data, { Debug: true, 'Watchdog.Enabled': false, ListenPort: '7701' });
});

test('a settings write that fails answers "Failed to save config" and changes nothing', async (t) => {
  const daemon = await startDaemon();
  t.teardown(() => dispose(daemon));
  const token = await daemon.login();
  // A directory where the file should be makes the rename fail, even for root.
  const path = join(daemon.dataDir, 'settings.toml');
  await rm(path, { force: true });
  await mkdir(path);
  const res = await daemon.post('/settings/set', { Debug: true }, { token });
  t.is(res.status, 500);
  t.deepEqual(res.body, { success: false, message: 'Failed to save config' });
  t.is((await daemon.get('/settings/get?key=Debug', { token })).body.data.value, false);
  const { readdir } = await import('node:fs/promises');
  t.false(
    (await readdir(daemon.dataDir)).some((f) => f.endsWith('.tmp')),
    'no temp file left behind',
  );
});

test('a settings.toml with a bad value stops the start with a message naming the key', async (t) => {
  const { spawnCli, tempDir, collectLines } = await import('../../helpers/daemon.js');
  const { writeFile } = await import('node:fs/promises');
  const dir = await tempDir();
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'settings.toml'), '[Watchdog]\nEnabled = "maybe"\n');
  const proc = spawnCli(['--data-dir', dir, '--port', '0']);
  const out: string[] = [];
  collectLines(proc, out);
  const code = await new Promise((r) => proc.once('exit', r));
  t.is(code, 1);
  t.regex(out.join('\n'), /Watchdog\.Enabled must be a boolean/);
});

test('concurrent sets of distinct keys all persist, in memory and on disk across a restart', async (t) => {
  const { instanceSettings, FIXTURE_FRPC } = await import('../../helpers/instances.js');
  const daemon = await startDaemon({ settingsToml: instanceSettings({ 'RateLimit.PerToken': 1_000_000 }) });
  t.teardown(() => dispose(daemon));
  const root = await daemon.login();
  const instances = join(daemon.dataDir, 'other-instances');
  // Every known key but those that change how the daemon listens at its next start (address, TLS); each a new value.
  const values: Record<string, unknown> = {
    ListenPort: '7702',
    TunnelPath: FIXTURE_FRPC,
    InstancePath: instances,
    Debug: true,
    'Watchdog.Enabled': false,
    'Watchdog.Port': 7603,
    'Watchdog.BackoffSecs': 0.2,
    'Watchdog.BackoffMaxSecs': 0.5,
    'Watchdog.StartLimit': 4,
    'Watchdog.NoRetryExitCodes': [1, 2],
    'Watchdog.StableSecs': 61,
    'Instance.StartSecs': 0.4,
    'Instance.StopTimeoutSecs': 3,
    'Notification.Enabled': true,
    'Notification.Method': 'webhook',
    'Webhook.Method': 'PUT',
    'Webhook.URL': 'http://127.0.0.1:9/hook',
    'Webhook.Headers': { 'X-Tag': 'concurrent' },
    'Webhook.Body': { text: 'all at once' },
    'Webhook.TimeoutSecs': 6,
    'Webhook.Retries': 0,
    'Log.MaxBytes': 2048,
    'Log.Files': 4,
    'Alerts.DebounceSecs': 6,
    'Status.PollSecs': 301,
    InitSystem: 'process',
    'Systemd.UnitDir': join(daemon.dataDir, 'units'),
    'Systemd.Systemctl': FIXTURE_FRPC,
    'Systemd.Journalctl': FIXTURE_FRPC,
    'InitD.ScriptDir': join(daemon.dataDir, 'init.d'),
    'InitD.UpdateRcD': FIXTURE_FRPC,
    'InitD.PidDir': join(daemon.dataDir, 'run'),
    'InitD.LogDir': join(daemon.dataDir, 'log'),
    'Windows.Schtasks': FIXTURE_FRPC,
    'RateLimit.Login': 999,
    'RateLimit.PerToken': 999_999,
    'RateLimit.Register': 31,
    'Register.Enabled': false,
    'SystemLog.RequireToken': true,
    'Visitor.ShowDetails': false,
    TrustedProxies: ['10.0.0.0/8'],
    'Audit.RetentionDays': 91,
    'Audit.MaxEntries': 20001,
  };
  t.is(Object.keys(values).length, 43);
  const replies = await Promise.all(
    Object.entries(values).map(([key, value]) => daemon.post('/settings/set', { [key]: value }, { token: root })),
  );
  for (const reply of replies) t.true(reply.body.success, reply.body.message);
  const shown = (value: unknown) =>
    value && typeof value === 'object' && 'X-Tag' in value ? { 'X-Tag': '********' } : value;
  const expected = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, shown(v)]));
  t.like((await daemon.get('/settings/get', { token: root })).body.data, expected, 'every set is in memory');

  await daemon.stop();
  const again = await startDaemon({ dataDir: daemon.dataDir });
  t.teardown(() => again.stop('SIGKILL'));
  const token = await again.login();
  t.like((await again.get('/settings/get', { token })).body.data, expected, 'and in the file');
});
