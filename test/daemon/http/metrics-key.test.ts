// API keys of the metrics scope: GET /metrics alone, without X-Timestamp (what a Prometheus scrape can send), kept
// across a kill -9, and keys made before the scope existed keep acting as they did.
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import initSqlJs from 'sql.js';
import { readAsLeftSync } from '../../helpers/database.js';
import { dispose, startDaemon, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { openStream, wsUrl } from '../../helpers/streams.js';
import { MIGRATIONS } from '../../../src/storage/migrations.js';

/** GET /metrics as a scraper sends it: the key and whatever fixed headers, no X-Timestamp unless given. */
async function scrape(daemon: Daemon, headers: Record<string, string>) {
  const res = await fetch(`${daemon.url}/metrics`, { headers });
  const text = await res.text();
  return { status: res.status, text, message: res.ok ? '' : (JSON.parse(text) as { message: string }).message };
}

const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

async function newKey(daemon: Daemon, token: string, body: Record<string, unknown>) {
  const res = await daemon.post('/apiKeyMgr/create', body, { token });
  if (!res.body.success) throw new Error(`${res.status} ${res.body.message}`);
  return res.body.data as { key: string; keyID: string; scope: string; role: string };
}

test('a metrics key reads /metrics without X-Timestamp, and nothing else; a login or an all-scoped key still needs it', async (t) => {
  const { daemon, root } = await startWithRoot();
  t.teardown(() => dispose(daemon));
  const metrics = await newKey(daemon, root, { name: 'prometheus', scope: 'metrics' });
  t.like(metrics, { scope: 'metrics', role: 'admin' }, 'no more role than /metrics needs, by default');
  const all = await newKey(daemon, root, { name: 'robot', role: 'admin' });
  t.is(all.scope, 'all', 'the scope defaults to all');
  const listed = (await daemon.get('/apiKeyMgr/list', { token: root })).body.data as Array<{ name: string }>;
  t.deepEqual(
    listed.map((k) => k),
    listed.map((k) => ({ ...k, scope: k.name === 'prometheus' ? 'metrics' : 'all' })),
  );

  const trail = (await daemon.get('/system/audit', { token: root })).body.data.entries as any[];
  t.like(
    trail.find((e) => e.action === 'apiKey.create' && e.targetName === 'prometheus'),
    { outcome: 'ok', detail: { role: 'admin', scope: 'metrics' } },
    'the audit trail says what the key is for',
  );

  const read = await scrape(daemon, bearer(metrics.key));
  t.is(read.status, 200, read.message);
  t.regex(read.text, /^# HELP tunnelward_instances /m);
  t.is((await scrape(daemon, { ...bearer(metrics.key), 'X-Timestamp': String(Date.now()) })).status, 200);
  // One it sends is still checked: a replayed request with its old timestamp is refused.
  const stale = await scrape(daemon, { ...bearer(metrics.key), 'X-Timestamp': String(Date.now() - 60_000) });
  t.is(stale.status, 401);
  t.regex(stale.message, /X-Timestamp is outside/);

  // Every other route, and every stream, is a 403 that says what the key is for.
  for (const [method, path, body] of [
    ['GET', '/whoami'],
    ['GET', '/tunnelAct/instanceMgr/list'],
    ['POST', '/apiKeyMgr/revoke', { name: 'robot' }],
    ['POST', '/settings/set', { Debug: true }],
  ] as const) {
    const res = await daemon.request(method, path, { headers: bearer(metrics.key), body });
    t.is(res.status, 403, `${method} ${path}`);
    t.is(
      res.body.message,
      'API key prometheus has the metrics scope: it may be used for GET /metrics only, with or without X-Timestamp (it needs the admin role or higher)',
    );
  }
  const stream = await openStream(wsUrl(daemon.url, '/system/events'), bearer(metrics.key)).catch((err) => err);
  t.is(stream.status, 403, 'no stream either');
  t.is((await daemon.get('/apiKeyMgr/list', { token: root })).body.data.length, 2, 'nothing was revoked');

  // Only the metrics scope skips the timestamp: a key that may do more, and a login, still need it.
  const allKey = await scrape(daemon, bearer(all.key));
  t.is(allKey.status, 401);
  t.is(allKey.message, 'X-Timestamp is required');
  t.is((await scrape(daemon, { ...bearer(all.key), 'X-Timestamp': String(Date.now()) })).status, 200);
  t.is((await scrape(daemon, { 'X-Token': root })).status, 401);
  t.is((await scrape(daemon, { 'X-Token': root, 'X-Timestamp': String(Date.now()) })).status, 200);
  t.is((await scrape(daemon, {})).status, 401);
  t.is((await scrape(daemon, bearer(`${metrics.key.slice(0, -4)}AAAA`))).status, 401, 'a wrong key is a wrong key');

  // A metrics key is no use without the role /metrics needs, so none is made.
  const visitor = await daemon.userWithToken(root, 'mk_visitor', 'visitor');
  const refused = await daemon.post(
    '/apiKeyMgr/create',
    { name: 'scrape', scope: 'metrics' },
    { token: visitor.token },
  );
  t.is(refused.status, 403);
  t.is(refused.body.message, 'a metrics key needs the admin role or higher (what /metrics needs), not visitor');
  const asked = await newKey(daemon, root, { name: 'su-scrape', scope: 'metrics', role: 'superuser' });
  t.like(asked, { scope: 'metrics', role: 'superuser' }, 'a higher role when asked for');
  const bad = await daemon.post('/apiKeyMgr/create', { name: 'x', scope: 'everything' }, { token: root });
  t.is(bad.status, 400);
  t.is(bad.body.message, 'scope must be all or metrics');
  // A key of an admin that loses the role reads /metrics no more: the owner's role caps it, as for any key.
  const admin = await daemon.userWithToken(root, 'mk_admin', 'admin');
  const adminKey = await newKey(daemon, admin.token, { name: 'scrape', scope: 'metrics' });
  t.is(adminKey.role, 'admin');
  t.is((await scrape(daemon, bearer(adminKey.key))).status, 200);
  t.true(
    (await daemon.post('/userMgr/modifyType', { userID: admin.userID, newType: 'visitor' }, { token: root })).body
      .success,
  );
  t.is((await scrape(daemon, bearer(adminKey.key))).status, 403);
});

test('the scope is on disk when the reply comes: a kill -9 right after keeps the key a metrics key', async (t) => {
  const first = await startDaemon();
  t.teardown(() => dispose(first));
  const root = await first.login();
  const { key } = await newKey(first, root, { name: 'prometheus', scope: 'metrics' });
  await first.stop('SIGKILL');

  const second = await startDaemon({ dataDir: first.dataDir });
  t.teardown(() => second.stop('SIGKILL'));
  t.is((await scrape(second, bearer(key))).status, 200);
  t.is((await second.get('/whoami', { headers: bearer(key) })).status, 403, 'still the metrics scope alone');
});

test('an upgrade from the schema before scopes: the keys it holds act as before (all), and need X-Timestamp', async (t) => {
  const first = await startDaemon();
  t.teardown(() => dispose(first));
  const root = await first.login();
  const { key, keyID } = await newKey(first, root, { name: 'old', role: 'admin' });
  await first.stop('SIGKILL');
  // The data dir as the tunnelward before the scope left it: migration 13 not applied, no scope column.
  const dbPath = join(first.dataDir, 'tunnelward.db');
  const SQL = await initSqlJs();
  const db = readAsLeftSync(SQL, dbPath);
  t.is(db.exec('PRAGMA user_version')[0]!.values[0]![0], MIGRATIONS.length);
  db.exec(`ALTER TABLE api_keys DROP COLUMN scope; PRAGMA user_version = ${MIGRATIONS.length - 1}`);
  await writeFile(dbPath, db.export());
  db.close();
  await rm(`${dbPath}.journal`, { force: true });

  const second = await startDaemon({ dataDir: first.dataDir });
  t.teardown(() => second.stop('SIGKILL'));
  const token = await second.login();
  t.like((await second.get('/apiKeyMgr/list', { token })).body.data[0], { keyID, name: 'old', scope: 'all' });
  t.is((await second.get('/whoami', { headers: bearer(key) })).status, 200);
  t.is((await scrape(second, bearer(key))).status, 401, 'an all-scoped key sends X-Timestamp, as before');
});
