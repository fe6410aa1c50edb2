// Who may do what to an instance (src/accounts/access.ts), through every way in: any user reads; any admin starts
// and stops; only the owner (the admin who created it) or a superuser changes or deletes it; only a superuser reads
// its secrets in clear; only the owner or a superuser follows its log. API keys act with the lower role.
import test from 'ava';
import { disposeWithTunnels, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, tcpProxy } from '../../helpers/instances.js';
import { openStream, wsUrl } from '../../helpers/streams.js';

let daemon: Daemon;
let root: string;
test.before(async () => {
  ({ daemon, root } = await startWithRoot({ settingsToml: instanceSettings() }));
});
test.after.always(() => disposeWithTunnels(daemon, root));

type Who = 'root' | 'alice' | 'bob' | 'vera' | 'aliceKey';

test('the access matrix: read, operate, change, delete, secrets and logs, for owner, other admin, visitor, superuser and a key', async (t) => {
  const alice = await daemon.userWithToken(root, 'ac_alice', 'admin');
  const bob = await daemon.userWithToken(root, 'ac_bob', 'admin');
  const vera = await daemon.userWithToken(root, 'ac_vera', 'visitor');
  const key = await daemon.post('/apiKeyMgr/create', { name: 'ro', role: 'visitor' }, { token: alice.token });
  t.true(key.body.success, key.body.message);
  const as = (who: Who) =>
    who === 'aliceKey'
      ? { headers: { Authorization: `Bearer ${key.body.data.key}` } }
      : { token: { root, alice: alice.token, bob: bob.token, vera: vera.token }[who] };
  const post = (who: Who, path: string, body: Record<string, unknown>) => daemon.post(path, body, as(who));
  const get = (who: Who, path: string) => daemon.get(path, as(who));

  const mine = await createInstance(daemon, alice.token, 'ac_mine');
  const roots = await createInstance(daemon, root, 'ac_roots');
  let port = 6700;
  const actions = {
    read: (who: Who, id: string) => get(who, `/tunnelAct/instanceMgr/getInfo?instanceID=${id}`),
    history: (who: Who, id: string) => get(who, `/tunnelAct/instanceMgr/history?instanceID=${id}`),
    start: (who: Who, id: string) => post(who, '/tunnelAct/instanceMgr/start', { instanceID: id }),
    stop: (who: Who, id: string) => post(who, '/tunnelAct/instanceMgr/stop', { instanceID: id }),
    proxy: (who: Who, id: string) =>
      post(who, '/tunnelAct/proxyMgr/create', { instanceID: id, proxyInfo: tcpProxy(`p${port}`, port++) }),
    config: (who: Who, id: string) =>
      post(who, '/tunnelAct/instanceMgr/modify', { instanceID: id, type: 'configFile', modifiedData: { user: 'u' } }),
    env: (who: Who, id: string) =>
      post(who, '/tunnelAct/instanceMgr/modify', { instanceID: id, type: 'environment', modifiedData: { X: '1' } }),
    system: (who: Who, id: string) =>
      post(who, '/tunnelAct/instanceMgr/modify', {
        instanceID: id,
        type: 'systemConfig',
        modifiedData: { bootAtStart: false },
      }),
    labels: (who: Who, id: string) =>
      post(who, '/tunnelAct/instanceMgr/modify', { instanceID: id, type: 'labels', modifiedData: { team: 'a' } }),
    rollback: (who: Who, id: string) => post(who, '/tunnelAct/instanceMgr/rollback', { instanceID: id, revision: 1 }),
  };
  // [action, instance, who, allowed]
  const expectations: Array<[keyof typeof actions, 'mine' | 'roots', Who, boolean]> = [];
  for (const who of ['root', 'alice', 'bob', 'vera', 'aliceKey'] as Who[]) {
    for (const instance of ['mine', 'roots'] as const) {
      const owner = (instance === 'mine' && who === 'alice') || who === 'root';
      const admin = who === 'root' || who === 'alice' || who === 'bob';
      expectations.push(['read', instance, who, true], ['history', instance, who, true]);
      expectations.push(['start', instance, who, admin], ['stop', instance, who, admin]);
      for (const change of ['proxy', 'config', 'env', 'system', 'labels', 'rollback'] as const)
        expectations.push([change, instance, who, owner]);
    }
  }
  for (const [action, instance, who, allowed] of expectations) {
    const id = instance === 'mine' ? mine.id : roots.id;
    const res = await actions[action](who, id);
    const what = `${who} ${action} ${instance}: ${res.status} ${res.body.message}`;
    if (allowed) t.not(res.status, 403, what);
    else {
      t.is(res.status, 403, what);
      if (who !== 'vera' && who !== 'aliceKey' && action !== 'start' && action !== 'stop')
        t.regex(res.body.message, /only the instance's owner \(the admin who created it\) or a superuser may/, what);
    }
  }

  // Secrets in clear for a superuser only, the owner included.
  const exportOf = async (who: Who) =>
    (await get(who, `/tunnelAct/instanceMgr/export?instanceID=${mine.id}`)).body.data.masked;
  t.true(await exportOf('alice'));
  t.false(await exportOf('root'));

  // The log: its owner and superusers.
  const logs = (who: 'alice' | 'bob' | 'root') =>
    openStream(wsUrl(daemon.url, `/tunnelAct/instanceMgr/logs?instanceID=${mine.id}&token=${as(who).token}`)).then(
      (stream) => {
        stream.ws.close();
        return 'open';
      },
      (err: { status?: number; message?: string }) => String(err.status ?? err.message),
    );
  t.is(await logs('alice'), 'open');
  t.is(await logs('root'), 'open');
  t.is(await logs('bob'), '403');

  // Delete: another admin may not; the owner may.
  t.is((await post('bob', '/tunnelAct/instanceMgr/delete', { instanceID: mine.id })).status, 403);
  t.true((await post('alice', '/tunnelAct/instanceMgr/delete', { instanceID: mine.id })).body.success);

  // The document says it, to a person and to a machine.
  const doc = { body: (await (await fetch(`${daemon.url}/openapi.json`)).json()) as any };
  const replace = doc.body.paths['/tunnelAct/instanceMgr/replaceConfig'].post;
  t.is(replace['x-instance-access'], 'change');
  t.regex(replace.description, /on the instance: the instance's owner \(the admin who created it\) or a superuser/);
  t.is(doc.body.paths['/tunnelAct/instanceMgr/stop'].post['x-instance-access'], 'operate');
});
