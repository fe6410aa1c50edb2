import test from 'ava';
import { disposeWithTunnels, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { openStream, wsUrl } from '../../helpers/streams.js';
import { quietFor } from '../../helpers/until.js';

let daemon: Daemon;
let root: string;
test.before(
  async () =>
    ({ daemon, root } = await startWithRoot({ settingsToml: '[RateLimit]\nLogin = 1000\nPerToken = 100000\n' })),
);
test.after.always(() => disposeWithTunnels(daemon, root));

const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/;

test.serial(
  'replays the latest 100 entries, then each new one, to every client alike; DEBUG only while Debug is on',
  async (t) => {
    const url = wsUrl(daemon.url, '/system/getLogs');
    // Debug off: requests are not logged.
    const quiet = await openStream(url);
    for (let i = 0; i < 5; i++) await daemon.get('/system/getStatus');
    await quietFor(200, 'a DEBUG entry');
    t.false(
      quiet.messages.some((m) => m.level === 0),
      'no DEBUG entries while Debug is off',
    );
    const before = quiet.messages.length;

    // Debug on, live: each request now logs a DEBUG entry.
    t.true((await daemon.post('/settings/set', { Debug: true }, { token: root })).body.success);
    for (let i = 0; i < 130; i++) await daemon.get(`/system/getStatus?n=${i}`);
    await quiet.waitFor((m) => m.filter((e) => e.level === 0).length >= 130);
    t.true(quiet.messages.length > before + 130);
    const debug = quiet.messages.find((m) => m.level === 0 && m.content.includes('getStatus'));
    t.regex(debug.content, /^request \(.*path=\/system\/getStatus/);
    t.false(debug.content.includes('n='), 'query strings are not logged');
    t.regex(debug.timestamp, TIMESTAMP);

    // New clients get exactly the latest 100, then the same live entries as everyone.
    const a = await openStream(url);
    const b = await openStream(`${url}?token=${root}`);
    await a.waitFor((m) => m.length >= 100);
    await quietFor(100, 'a 101st entry replayed');
    t.is(a.messages.length, 100);
    t.deepEqual(a.messages, quiet.messages.slice(-100));
    t.deepEqual(b.messages.slice(0, 100), a.messages);
    await daemon.get('/system/getStatus?n=last');
    await a.waitFor((m) => m.length >= 101);
    await b.waitFor((m) => m.length >= 101);
    t.deepEqual(a.messages[100], b.messages[100]);
    t.deepEqual(a.messages[100], quiet.messages.at(-1));
    for (const m of a.messages) {
      t.true(Number.isInteger(m.level) && m.level >= 0 && m.level <= 4);
      t.is(typeof m.content, 'string');
    }

    await daemon.post('/settings/set', { Debug: false }, { token: root });
    const count = a.messages.length;
    for (let i = 0; i < 5; i++) await daemon.get('/system/getStatus');
    await quietFor(200, 'a DEBUG entry');
    t.false(
      a.messages.slice(count).some((m) => m.level === 0),
      'DEBUG stops at once',
    );
    for (const s of [quiet, a, b]) s.ws.close();
  },
);

test('an invalid token is refused before the upgrade; a missing one is fine', async (t) => {
  const err: any = await openStream(wsUrl(daemon.url, '/system/getLogs?token=nonsense')).catch((e) => e);
  t.is(err.status, 401);
  t.false(err.body.success);
  t.regex(err.body.message, /^Invalid token: /);
  const ok = await openStream(wsUrl(daemon.url, '/system/getLogs'));
  t.is(ok.ws.readyState, ok.ws.OPEN);
  ok.ws.close();
  const nowhere: any = await openStream(wsUrl(daemon.url, '/no/such/stream')).catch((e) => e);
  t.is(nowhere.status, 404);
});

test('secrets never reach the system log stream', async (t) => {
  const stream = await openStream(wsUrl(daemon.url, '/system/getLogs'));
  await daemon.post('/settings/set', { 'Webhook.Headers': { Authorization: 'Bearer sys-secret-1' } }, { token: root });
  await daemon.post('/login', { username: 'admin', passwd: 'Wrong-pass-1!' });
  await stream.waitFor((m) => m.some((e) => e.content.includes('settings changed')));
  const all = JSON.stringify(stream.messages);
  t.false(all.includes('sys-secret-1'));
  t.false(all.includes('Wrong-pass-1!'));
  t.false(all.includes(root));
  stream.ws.close();
});

test('a username tried at /login reaches neither the stream nor standard output with its control characters', async (t) => {
  const stream = await openStream(wsUrl(daemon.url, '/system/getLogs'));
  const username = 'sys\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x1b\\\x9b2J\x1bPq\x1b\\\x85\x7fend';
  t.is((await daemon.post('/login', { username, passwd: 'Wrong-pass-1!' })).status, 401);
  const [entry] = (await stream.waitFor((m) => m.some((e) => /audit: sys.* login: failed/.test(e.content)))).filter(
    (e) => /audit: sys/.test(e.content),
  );
  t.regex(entry.content, /^audit: sysend login: failed \(401\)/, 'the sequences are gone from the message');
  t.false(/[\x00-\x08\x0a-\x1f\x7f-\x9f]/.test(entry.content), JSON.stringify(entry.content));
  stream.ws.close();
  // What the daemon writes for the journal is JSON with every control character escaped.
  const [line] = await daemon.waitForOutput(/^\{.*"action":"login".*"user":"sys.*$/);
  t.false(/[\x00-\x1f\x7f-\x9f]/.test(line!), JSON.stringify(line));
  t.is(JSON.parse(line!).audit.user, username, 'and exactly what was tried, once parsed');
});
