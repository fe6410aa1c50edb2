import { readFile } from 'node:fs/promises';
import test from 'ava';
import { disposeWithTunnels, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, tunnelPids } from '../../helpers/instances.js';

let daemon: Daemon;
let root: string;
test.before(async () => ({ daemon, root } = await startWithRoot({ settingsToml: instanceSettings() })));
test.after.always(() => disposeWithTunnels(daemon, root));

const SECRET = 's3cr3t-token-value';
const environ = async (pid: number) => (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
const setEnv = (id: string, modifiedData: unknown) =>
  daemon.post('/tunnelAct/instanceMgr/modify', { instanceID: id, type: 'environment', modifiedData }, { token: root });

test('{{ .Envs.NAME }}: a start without the variable is refused by name; with it, the value reaches that tunnel and nothing else', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'env_token', { 'auth.token': '{{ .Envs.FRP_TOKEN }}' });
  const other = await createInstance(daemon, root, 'env_other');
  t.regex(
    await readFile(configPath, 'utf8'),
    /token = "\{\{ \.Envs\.FRP_TOKEN \}\}"/,
    'the file keeps the placeholder',
  );

  const refused = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
  t.is(refused.status, 400);
  t.regex(
    refused.body.message,
    /reads \{\{ \.Envs\.FRP_TOKEN \}\}, but instance \d+ has no environment variable FRP_TOKEN/,
  );
  t.deepEqual(await tunnelPids(configPath), [], 'nothing was started');

  const set = await setEnv(id, { FRP_TOKEN: SECRET, EXTRA_FLAG: '1' });
  t.true(set.body.success, set.body.message);
  t.deepEqual(set.body.data.environment, { EXTRA_FLAG: '********', FRP_TOKEN: '********' });
  const info = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root });
  t.deepEqual(info.body.data.environment, { EXTRA_FLAG: '********', FRP_TOKEN: '********' });

  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root })).body.success);
  t.true((await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: other.id }, { token: root })).body.success);
  const [pid] = await tunnelPids(configPath);
  const [otherPid] = await tunnelPids(other.configPath);
  t.true((await environ(pid!)).includes(`FRP_TOKEN=${SECRET}`), 'the tunnel has it');
  t.false(
    (await environ(otherPid!)).some((v) => v.startsWith('FRP_TOKEN=')),
    'another tunnel does not',
  );
  t.false((await readFile(configPath, 'utf8')).includes(SECRET), 'the config file never holds it');
  t.false(
    daemon.output.some((line) => line.includes(SECRET)),
    'it is never logged',
  );
  const visitor = await daemon.userWithToken(root, 'env_visitor', 'visitor');
  const seen = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: visitor.token });
  t.false('environment' in seen.body.data, 'a visitor does not even see the names');

  // Removed: the next start is refused again, the running tunnel is left as it is.
  t.true((await setEnv(id, { FRP_TOKEN: null })).body.success);
  const restart = await daemon.post('/tunnelAct/instanceMgr/restart', { instanceID: id }, { token: root });
  t.is(restart.status, 400);
  t.is((await tunnelPids(configPath)).length, 1);
});

test('environment changes are checked whole: bad names, reserved names, non-strings and the mask are refused, nothing applied', async (t) => {
  const { id } = await createInstance(daemon, root, 'env_checks');
  const cases: Array<[unknown, RegExp]> = [
    [{ 'lower-case': 'x' }, /letters, digits and "_"/],
    [{ ['N'.repeat(129)]: 'x' }, /at most 128 characters/],
    [{ '9LIVES': 'x' }, /not starting with a digit/],
    [{ PATH: '/tmp' }, /PATH is set by tunnelward/],
    // The dynamic loader's variables would run code of the caller's choosing in a tunnel that may run as root.
    [{ LD_PRELOAD: '/tmp/evil.so' }, /LD_PRELOAD is read by the dynamic loader/],
    [{ LD_LIBRARY_PATH: '/tmp' }, /LD_LIBRARY_PATH is read by the dynamic loader/],
    [{ LD_AUDIT: '/tmp/a.so' }, /LD_AUDIT is read by the dynamic loader/],
    [{ GOOD: 'x', GCONV_PATH: '/tmp' }, /GCONV_PATH is read by the dynamic loader/],
    [{ HOSTALIASES: '/tmp/h' }, /HOSTALIASES is read by the dynamic loader/],
    [{ MALLOC_TRACE: '/tmp/t' }, /MALLOC_TRACE is read by the dynamic loader/],
    [{ GLIBC_TUNABLES: 'glibc.malloc.check=3' }, /GLIBC_TUNABLES is read by the dynamic loader/],
    [{ GOOD: 'x', N: 5 }, /N must be a string, or null/],
    [{ GOOD: '********' }, /the mask/],
    [{}, /at least one/],
    [[1], /modifiedData must be an object/],
  ];
  for (const [data, message] of cases) {
    const res = await setEnv(id, data);
    t.is(res.status, 400, JSON.stringify(data));
    t.regex(res.body.message, message);
  }
  const info = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root });
  t.deepEqual(info.body.data.environment, {}, 'nothing was set by the refused requests');
  // frpc reads any Go field name after .Envs; the loader reads its variables in upper case only.
  const lower = await setEnv(id, { frp_token: 'x', ld_preload: 'y' });
  t.true(lower.body.success, lower.body.message);
  const after = await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root });
  t.deepEqual(Object.keys(after.body.data.environment), ['frp_token', 'ld_preload']);
});

test('{{ .Envs.NAME }} is read wherever frpc reads it: create, configFile, proxies and import take it in any field, a whole one standing for a number', async (t) => {
  const { id, configPath } = await createInstance(daemon, root, 'env_where');
  t.true((await setEnv(id, { SECRET: 'a-hidden-value-1234', PORT: '6022' })).body.success);
  const accepted: Array<[string, Promise<{ status: number; body: any }>]> = [
    [
      'create serverAddr',
      daemon.post(
        '/tunnelAct/instanceMgr/create',
        {
          instanceInfo: {
            name: 'env_where2',
            serverAddr: '{{ .Envs.SECRET }}',
            serverPort: '7000',
            auth_method: 'token',
          },
        },
        { token: root },
      ),
    ],
    [
      'create additionalProperties user',
      daemon.post(
        '/tunnelAct/instanceMgr/create',
        {
          instanceInfo: { name: 'env_where3', serverAddr: '127.0.0.1', serverPort: '7000', auth_method: 'token' },
          additionalProperties: { user: 'u-{{ .Envs.SECRET }}' },
        },
        { token: root },
      ),
    ],
    [
      'configFile metadatas entry',
      daemon.post(
        '/tunnelAct/instanceMgr/modify',
        { instanceID: id, type: 'configFile', modifiedData: { metadatas: { k: '{{ .Envs.SECRET }}' } } },
        { token: root },
      ),
    ],
    [
      'import serverAddr and a bare port',
      daemon.post(
        '/tunnelAct/instanceMgr/import',
        {
          name: 'env_where4',
          content: 'serverAddr = "{{ .Envs.SECRET }}"\nserverPort = {{ .Envs.FRP_PORT }}\n',
        },
        { token: root },
      ),
    ],
  ];
  for (const [what, request] of accepted) {
    const res = await request;
    t.true(res.body.success, `${what}: ${res.body.message}`);
  }
  const proxy = await daemon.post(
    '/tunnelAct/proxyMgr/create',
    {
      instanceID: id,
      proxyInfo: {
        name: 'p',
        type: 'tcp',
        localIP: '{{ .Envs.SECRET }}',
        localPort: '22',
        remotePort: '{{ .Envs.PORT }}',
      },
    },
    { token: root },
  );
  t.true(proxy.body.success, proxy.body.message);
  const text = await readFile(configPath, 'utf8');
  t.regex(text, /^localIP = "\{\{ \.Envs\.SECRET \}\}"$/m);
  t.regex(text, /^remotePort = \{\{ \.Envs\.PORT \}\}$/m, 'a whole placeholder for a number is written bare');
  t.false(text.includes('a-hidden-value-1234'), 'the file holds the placeholder, never the value');

  // A fixed choice stays literal: a proxy's type picks its keys.
  const literal = await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: { name: 'q', type: '{{ .Envs.T }}', localPort: '22' } },
    { token: root },
  );
  t.is(literal.status, 400);
  t.regex(literal.body.message, /type must be one of/);
  t.is(await readFile(configPath, 'utf8'), text, 'the file is unchanged');
});
