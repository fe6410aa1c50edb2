import test from 'ava';
import { AUDITED } from '../../../src/http/audit.js';
import { disposeWithTunnels, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { appRoutes } from '../../helpers/routes.js';
import { createInstance, instanceSettings, tcpProxy } from '../../helpers/instances.js';

let daemon: Daemon;
let root: string;
test.before(async () => {
  ({ daemon, root } = await startWithRoot({ settingsToml: instanceSettings() }));
});
test.after.always(() => disposeWithTunnels(daemon, root));

const audit = async (query = '', token = root) => {
  const res = await daemon.get(`/system/audit${query}`, { token });
  if (!res.body.success) throw new Error(`${res.status} ${res.body.message}`);
  return res.body.data as { entries: any[]; nextBefore: number | null };
};

test('every route that changes something is audited, and no other', (t) => {
  const changing = appRoutes()
    .filter((r) => r.method === 'POST' || r.path === '/logout')
    .map((r) => `${r.method} ${r.path}`)
    .sort();
  t.deepEqual(Object.keys(AUDITED).sort(), changing);
});

test('each kind of change is recorded with who, from where, what, which object and the outcome; never a secret', async (t) => {
  const secrets = ['Tok3n-Very-Secret', 'Hook-Header-Secret', 'N3w!Passw0rd', 'Passw0rd!x', 'Wrong!Passw0rd1'];
  const inst = await createInstance(daemon, root, 'audited', { 'auth.token': secrets[0] });
  const edits = [
    daemon.post(
      '/tunnelAct/instanceMgr/modify',
      { instanceID: inst.id, type: 'configFile', modifiedData: { 'auth.token': secrets[0], 'log.level': 'debug' } },
      { token: root },
    ),
    daemon.post(
      '/tunnelAct/proxyMgr/create',
      { instanceID: inst.id, proxyInfo: tcpProxy('ssh', 46022) },
      { token: root },
    ),
  ];
  for (const edit of edits) t.true((await edit).body.success);
  await daemon.post(
    '/tunnelAct/proxyMgr/setStatus',
    { instanceID: inst.id, proxyName: 'ssh', enabled: false },
    { token: root },
  );
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: inst.id }, { token: root });
  await daemon.post('/tunnelAct/instanceMgr/stop', { instanceIDs: [Number(inst.id)] }, { token: root });
  await daemon.post('/settings/set', { 'Webhook.Headers': { Authorization: secrets[1] } }, { token: root });
  const user = await daemon.userWithToken(root, 'audited_user', 'admin');
  await daemon.post('/userMgr/modify', { userID: user.userID, passwd: secrets[2] }, { token: root });
  const refused = await daemon.post('/login', { username: 'audited_user', passwd: secrets[4] });
  t.is(refused.status, 401);
  const visitor = await daemon.userWithToken(root, 'audited_visitor', 'visitor');
  t.is(
    (await daemon.post('/tunnelAct/instanceMgr/delete', { instanceID: inst.id }, { token: visitor.token })).status,
    403,
  );
  t.true((await daemon.post('/tunnelAct/instanceMgr/delete', { instanceID: inst.id }, { token: root })).body.success);

  const { entries } = await audit('?limit=1000');
  const find = (action: string, extra: (e: any) => boolean = () => true) =>
    entries.find((e) => e.action === action && extra(e));
  const onInstance = (e: any) => e.targetType === 'instance' && e.targetID === inst.id;

  t.like(
    find('instance.create', (e) => e.targetName === 'audited'),
    {
      username: 'admin',
      ip: '127.0.0.1',
      outcome: 'ok',
      status: 200,
      targetID: inst.id,
    },
  );
  t.deepEqual(find('instance.modify', onInstance)?.detail, { type: 'configFile', keys: ['auth.token', 'log.level'] });
  t.like(find('proxy.create'), { targetType: 'proxy', targetName: 'ssh', detail: { instanceID: inst.id } });
  t.like(find('proxy.setStatus'), { targetName: 'ssh', detail: { enabled: false } });
  t.truthy(find('instance.start', onInstance));
  t.like(find('instance.stop'), { targetID: inst.id, outcome: 'ok' });
  t.deepEqual(find('settings.set')?.detail, { keys: ['Webhook.Headers'] });
  t.like(
    find('user.create', (e) => e.targetName === 'audited_user'),
    { detail: { type: 'admin' } },
  );
  t.deepEqual(find('user.modify', (e) => e.targetID === String(user.userID))?.detail, { changed: ['passwd'] });
  t.like(
    find('login', (e) => e.outcome === 'failed'),
    { username: 'audited_user', status: 401, userID: null },
  );
  t.like(
    find('instance.delete', (e) => e.status === 403),
    { username: 'audited_visitor', outcome: 'failed' },
  );
  t.like(
    find('instance.delete', (e) => e.status === 200),
    { targetID: inst.id, targetName: 'audited' },
  );

  // Nothing secret anywhere: not in the entries, not in the system log they are also written to.
  const everything = JSON.stringify(entries) + daemon.output.join('\n');
  for (const secret of [...secrets, root, user.token, visitor.token]) t.false(everything.includes(secret), secret);
  t.true(daemon.output.some((line) => /audit: admin instance\.create instance/.test(line)));
});

test('filters and paging; only a superuser reads the trail', async (t) => {
  const a = await createInstance(daemon, root, 'paged_a');
  const b = await createInstance(daemon, root, 'paged_b');
  const before = Date.now();
  for (const inst of [a, b, a]) {
    await daemon.post('/tunnelAct/instanceMgr/modify', { instanceID: inst.id, type: 'configFile', modifiedData: { 'log.level': 'info' } }, { token: root }); // prettier-ignore
  }
  const byInstance = await audit(`?instanceID=${a.id}&action=instance.modify`);
  t.is(byInstance.entries.length, 2);
  t.true(byInstance.entries.every((e) => e.targetID === a.id && e.action === 'instance.modify'));
  t.true(byInstance.entries[0].id > byInstance.entries[1].id, 'newest first');

  const prefix = await audit('?action=instance.&user=admin&limit=1000');
  t.true(prefix.entries.every((e) => e.action.startsWith('instance.') && e.username === 'admin'));
  t.true(prefix.entries.some((e) => e.action === 'instance.create'));
  const since = await audit(`?since=${new Date(before).toISOString()}&action=instance.modify`);
  // Other tests of this file run meanwhile: only these instances' entries count.
  t.is(since.entries.filter((e) => e.targetID === a.id || e.targetID === b.id).length, 3);
  t.is((await audit(`?until=${before - 60_000}&action=instance.modify`)).entries.length, 0);

  // Paging: two at a time, back to the start, each entry once.
  const seen: number[] = [];
  let page = await audit(`?since=${before}&limit=2`);
  seen.push(...page.entries.map((e) => e.id));
  while (page.nextBefore !== null) {
    page = await audit(`?since=${before}&limit=2&before=${page.nextBefore}`);
    seen.push(...page.entries.map((e) => e.id));
  }
  const all = await audit(`?since=${before}&limit=1000`);
  t.deepEqual(
    seen,
    all.entries.map((e) => e.id),
  );
  t.true(seen.length >= 3);

  const failed = await audit('?outcome=failed&limit=1000');
  t.true(failed.entries.every((e) => e.outcome === 'failed' && e.status >= 400));

  const admin = await daemon.userWithToken(root, 'audit_reader', 'admin');
  t.is((await daemon.get('/system/audit', { token: admin.token })).status, 403);
  for (const bad of ['?limit=0', '?limit=5000', '?outcome=maybe', '?since=yesterday', '?before=x']) {
    const res = await daemon.get(`/system/audit${bad}`, { token: root });
    t.is(res.status, 400, bad);
  }
});

// Serial: the proxies it trusts would change the addresses the other tests see.
test.serial(
  'X-Forwarded-For is believed from a trusted proxy only: for the login limit and in the trail',
  async (t) => {
    const attempt = (forwardedFor: string) =>
      daemon.post(
        '/login',
        { username: 'nobody_here', passwd: 'Wrong!Passw0rd1' },
        {
          headers: { 'X-Forwarded-For': forwardedFor },
        },
      );
    // Not trusted: every client behind 127.0.0.1 is 127.0.0.1, whatever it claims.
    const lowered = await daemon.post('/settings/set', { 'RateLimit.Login': 3 }, { token: root });
    t.true(lowered.body.success, lowered.body.message);
    const claims = ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4'];
    const statuses = [];
    for (const ip of claims) statuses.push((await attempt(ip)).status);
    t.true(statuses.includes(429), `the shared limit is reached: ${statuses.join(',')}`);
    const untrusted = await audit('?user=nobody_here&limit=1000');
    t.true(untrusted.entries.every((e) => e.ip === '127.0.0.1'));

    // Trusted: each client has its own limit, and the trail shows its address.
    const set = await daemon.post('/settings/set', { TrustedProxies: ['127.0.0.0/8', '10.0.0.0/8'] }, { token: root });
    t.true(set.body.success, set.body.message);
    for (let i = 0; i < 3; i++) t.is((await attempt('203.0.113.7')).status, 401);
    t.is((await attempt('203.0.113.7')).status, 429, 'the fourth from the same client is limited');
    t.is((await attempt('203.0.113.8')).status, 401, 'another client is not');
    // A chain: the rightmost address not a trusted proxy is the client; a forged leftmost one is ignored.
    t.is((await attempt('1.2.3.4, 203.0.113.9, 10.1.1.1')).status, 401);
    const trusted = await audit('?user=nobody_here&outcome=failed&limit=1000');
    const ips = new Set(trusted.entries.map((e) => e.ip));
    t.true(ips.has('203.0.113.7') && ips.has('203.0.113.8') && ips.has('203.0.113.9'));
    t.false(ips.has('1.2.3.4'));
    t.true(
      trusted.entries.filter((e) => e.ip === '203.0.113.7').every((e) => e.status !== 429),
      '429s are not recorded',
    );

    const invalid = await daemon.post('/settings/set', { TrustedProxies: ['10.0.0.0/33'] }, { token: root });
    t.is(invalid.status, 400);
    t.regex(invalid.body.message, /TrustedProxies has "10\.0\.0\.0\/33"/);
    // The other tests log in from 127.0.0.1, whose window is used up: the limit goes back up for them.
    await daemon.post('/settings/set', { TrustedProxies: [], 'RateLimit.Login': 1000 }, { token: root });
  },
);

// Serial: it empties most of the trail, which the other tests read.
test.serial('Audit.MaxEntries bounds the trail at once', async (t) => {
  for (let i = 0; i < 110; i++) await daemon.post('/settings/set', { 'Instance.StopTimeoutSecs': 2 }, { token: root });
  t.true((await audit('?limit=1000')).entries.length > 110);
  const res = await daemon.post('/settings/set', { 'Audit.MaxEntries': 100 }, { token: root });
  t.true(res.body.success, res.body.message);
  const { entries } = await audit('?limit=1000');
  t.true(entries.length <= 101, `${entries.length} entries`);
  await daemon.post('/settings/set', { 'Audit.MaxEntries': 20000 }, { token: root });
});
