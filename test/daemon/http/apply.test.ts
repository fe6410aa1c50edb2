// POST /tunnelAct/instanceMgr/apply and GET exportAll over HTTP: the schema's refusals in the envelope, the access
// level, the operations in the OpenAPI document, and environment values that never come back.
import test from 'ava';
import { dispose, startDaemon, type Daemon } from '../../helpers/daemon.js';
import { instanceSettings } from '../../helpers/instances.js';

let daemon: Daemon;
let root = '';

test.before(async () => {
  daemon = await startDaemon({ settingsToml: instanceSettings() });
  root = await daemon.login();
});
test.after.always(() => dispose(daemon));

const instance = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  env: ['EDGE_TOKEN'],
  frpc: {
    serverAddr: '127.0.0.1',
    serverPort: 7501,
    auth: { method: 'token', token: '{{ .Envs.EDGE_TOKEN }}' },
    proxies: [{ name: `${name}-ssh`, type: 'tcp', localIP: '127.0.0.1', localPort: 22, remotePort: 7600 }],
  },
  ...extra,
});

test.serial('a body that breaks the schema is a 400 that names the field, and nothing is done', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [{}, /instances/],
    [{ instances: [{ name: 'a' }] }, /instances\[0\]\.frpc/],
    [{ instances: [instance('a'), instance('a')] }, /a is named twice/],
    [{ instances: [instance('a', { expires: '2h' })] }, /ISO 8601/],
    [{ instances: [instance('a', { configFile: 'x.toml' })] }, /configFile/],
    [{ instances: [], prune: 'yes' }, /prune/],
  ];
  for (const [body, message] of cases) {
    const res = await daemon.post('/tunnelAct/instanceMgr/apply', body, { token: root });
    t.is(res.status, 400, JSON.stringify(body));
    t.false(res.body.success);
    t.regex(res.body.message, message);
  }
  const list = await daemon.get('/tunnelAct/instanceMgr/list', { token: root });
  t.is(list.body.data.length, 0);
});

test.serial('apply and exportAll are an admin’s, and in the document', async (t) => {
  const visitor = await daemon.userWithToken(root, 'apply_visitor', 'visitor');
  const refused = await daemon.post('/tunnelAct/instanceMgr/apply', { instances: [] }, { token: visitor.token });
  t.is(refused.status, 403);
  t.is((await daemon.get('/tunnelAct/instanceMgr/exportAll', { token: visitor.token })).status, 403);
  const doc = await daemon.get('/openapi.json');
  const apply = (doc.body as any).paths['/tunnelAct/instanceMgr/apply'].post;
  t.truthy(apply.requestBody);
  t.regex(JSON.stringify(apply), /DesiredInstance/);
  t.truthy((doc.body as any).components.schemas.DesiredInstance);
  t.truthy((doc.body as any).paths['/tunnelAct/instanceMgr/exportAll'].get);
});

test.serial(
  'an environment value is taken, never answered; a variable named without a value refuses that instance alone',
  async (t) => {
    const secret = 'edge-token-value-31337';
    const body = { instances: [instance('edge-a'), instance('edge-b', { env: ['EDGE_TOKEN', 'NOT_GIVEN'] })] };
    const dry = await daemon.post(
      '/tunnelAct/instanceMgr/apply',
      { ...body, environment: { EDGE_TOKEN: secret }, dryRun: true },
      { token: root },
    );
    t.true(dry.body.success, dry.body.message);
    t.like(dry.body.data, { dryRun: true, counts: { created: 1, failed: 1 } });
    t.regex(dry.body.message, /^dry run, nothing written/);
    const done = await daemon.post(
      '/tunnelAct/instanceMgr/apply',
      { ...body, environment: { EDGE_TOKEN: secret } },
      { token: root },
    );
    t.like(done.body.data.counts, { created: 1, failed: 1 });
    const failed = done.body.data.instances.find((i: { name: string }) => i.name === 'edge-b');
    t.regex(failed.message, /NOT_GIVEN is named but no value was given/);
    t.is(failed.instanceID, null, 'nothing of it was made');
    for (const res of [dry, done]) t.false(JSON.stringify(res.body).includes(secret));
    const exported = await daemon.get('/tunnelAct/instanceMgr/exportAll', { token: root });
    t.false(JSON.stringify(exported.body).includes(secret));
    t.deepEqual(exported.body.data.instances[0].env, ['EDGE_TOKEN']);
    t.is(exported.body.data.instances[0].frpc.auth.token, '{{ .Envs.EDGE_TOKEN }}');
    t.false(daemon.output.join('\n').includes(secret), 'nor logged');
    // The trail has the apply (not its dry run) by outcome per instance, and never the value.
    const trail = await daemon.get('/system/audit?action=instance.apply', { token: root });
    const done200 = trail.body.data.entries.filter((e: { status: number }) => e.status === 200);
    t.is(done200.length, 1, JSON.stringify(trail.body.data));
    t.deepEqual(done200[0].detail.instances, ['edge-a: created', 'edge-b: failed']);
    t.like(done200[0].detail.counts, { created: 1, failed: 1 });
    t.false(JSON.stringify(trail.body).includes(secret));
  },
);

test.serial(
  'a number given by reference (remotePort = {{ .Envs.PORT }}) round-trips through exportAll unchanged',
  async (t) => {
    const body = {
      instances: [
        {
          name: 'by-ref',
          env: ['EDGE_TOKEN', 'REMOTE_PORT'],
          frpc: {
            serverAddr: '127.0.0.1',
            serverPort: 7502,
            auth: { method: 'token', token: '{{ .Envs.EDGE_TOKEN }}' },
            proxies: [
              {
                name: 'by-ref-ssh',
                type: 'tcp',
                localIP: '127.0.0.1',
                localPort: 22,
                remotePort: '{{ .Envs.REMOTE_PORT }}',
              },
            ],
          },
        },
      ],
      environment: { EDGE_TOKEN: 'x-token-1', REMOTE_PORT: '7702' },
    };
    const created = await daemon.post('/tunnelAct/instanceMgr/apply', body, { token: root });
    t.like(created.body.data.counts, { created: 1, failed: 0 }, JSON.stringify(created.body.data.instances));
    const exported = await daemon.get('/tunnelAct/instanceMgr/exportAll', { token: root });
    const mine = exported.body.data.instances.filter((i: { name: string }) => i.name === 'by-ref');
    t.is(mine[0].frpc.proxies[0].remotePort, '{{ .Envs.REMOTE_PORT }}');
    const again = await daemon.post('/tunnelAct/instanceMgr/apply', { instances: mine }, { token: root });
    t.like(again.body.data.counts, { unchanged: 1, changed: 0, failed: 0 }, JSON.stringify(again.body.data.instances));
  },
);

test.serial(
  'a run user that does not exist is refused by the dry run as by the apply, and nothing changes',
  async (t) => {
    const body = { instances: [instance('edge-a', { runUser: 'tw-no-such-user' })], environment: { EDGE_TOKEN: 'x' } };
    const before = await daemon.get('/tunnelAct/instanceMgr/exportAll', { token: root });
    for (const dryRun of [true, false]) {
      const res = await daemon.post('/tunnelAct/instanceMgr/apply', { ...body, dryRun }, { token: root });
      t.like(res.body.data.counts, { failed: 1, changed: 0 }, JSON.stringify(res.body.data));
      t.regex(res.body.data.instances[0].message, /runUser "tw-no-such-user" is not a user on this system/);
    }
    const after = await daemon.get('/tunnelAct/instanceMgr/exportAll', { token: root });
    t.deepEqual(after.body.data, before.body.data);
  },
);

test.serial(
  'a file an apply changed is at the version its revision says: the next change finds nothing changed outside',
  async (t) => {
    const file = (token: string) => ({
      instances: [
        {
          name: 'layout',
          frpc: {
            serverAddr: '127.0.0.1',
            serverPort: 7502,
            auth: { token },
            proxies: [{ name: 'layout-ssh', type: 'tcp', localIP: '127.0.0.1', localPort: 22, remotePort: 7610 }],
          },
        },
      ],
    });
    const apply = (token: string) => daemon.post('/tunnelAct/instanceMgr/apply', file(token), { token: root });
    t.like((await apply('first-token')).body.data.counts, { created: 1 });
    // tunnelward's additions (log.disablePrintColor, loginFailExit, clientID) land among the file's own keys.
    const second = await apply('second-token');
    t.like(second.body.data.counts, { changed: 1 });
    const changed = (second.body.data.instances[0].diff as string)
      .split('\n')
      .filter((line) => /^[-+](?![-+])/.test(line));
    t.deepEqual(changed, ['-token = "********"', '+token = "******** (new value)"'], 'the token alone, no key moved');
    const id = (await daemon.get('/tunnelAct/instanceMgr/list', { token: root })).body.data.find(
      (i: { name: string }) => i.name === 'layout',
    ).instanceID;
    const added = await daemon.post(
      '/tunnelAct/proxyMgr/create',
      {
        instanceID: id,
        proxyInfo: { name: 'layout-web', type: 'tcp', localIP: '127.0.0.1', localPort: '80', remotePort: '7611' },
      },
      { token: root },
    );
    t.true(added.body.success, added.body.message);
    const history = await daemon.get(`/tunnelAct/instanceMgr/history?instanceID=${id}`, { token: root });
    t.deepEqual(
      history.body.data.revisions.map((r: { revision: number; kind: string }) => [r.revision, r.kind]),
      [
        [3, 'proxy.create'],
        [2, 'apply'],
        [1, 'import'],
      ],
      'no revision "found" on disk between them',
    );
  },
);
