// Keys that name what every JavaScript object already has (`__proto__`, `constructor`, `toString`,
// `hasOwnProperty`...) are no setting, proxy field, variable or header of ours: wherever a request or an imported
// file holds one, it is refused with a 400 that names it, and nothing is written.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { disposeWithTunnels, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, tcpProxy, type CreatedInstance } from '../../helpers/instances.js';

const KEYS = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'] as const;

let daemon: Daemon;
let root: string;
let made: CreatedInstance;
test.before(async () => {
  ({ daemon, root } = await startWithRoot({ settingsToml: instanceSettings() }));
  made = await createInstance(daemon, root, 'rk_base');
  const proxy = await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: made.id, proxyInfo: tcpProxy('rk_ssh', 6101) },
    { token: root },
  );
  if (!proxy.body.success) throw new Error(proxy.body.message);
});
test.after.always(() => disposeWithTunnels(daemon, root));

/** What a refused request could have changed: settings, the instance's file, the set of instances. */
async function snapshot() {
  return {
    settings: await readFile(join(daemon.dataDir, 'settings.toml'), 'utf8'),
    file: await readFile(made.configPath, 'utf8'),
    files: await readdir(join(daemon.dataDir, 'instances')),
  };
}

const instanceInfo = (name: string) =>
  `"instanceInfo":{"name":"${name}","serverAddr":"127.0.0.1","serverPort":"7000","auth_method":"token"}`;

/** Each request as raw JSON text (an object literal's `__proto__` would be no key at all), with `K` for the key. */
function requests(): Array<[string, string]> {
  const id = made.id;
  const proxy = (extra: string) =>
    `{"instanceID":"${id}","proxyInfo":{"name":"rk_ssh","type":"tcp","localIP":"127.0.0.1","localPort":"22","remotePort":"6101",${extra}}}`;
  return [
    ['/tunnelAct/instanceMgr/create', `{${instanceInfo('rk_new')},"additionalProperties":{"K":"x"}}`],
    ['/tunnelAct/instanceMgr/create', `{${instanceInfo('rk_new')},"additionalProperties":{"metadatas":{"K":"x"}}}`],
    ['/tunnelAct/instanceMgr/create', `{"instanceInfo":{"K":"x","name":"rk_new"}}`],
    ['/tunnelAct/instanceMgr/modify', `{"instanceID":"${id}","type":"configFile","modifiedData":{"K":"x"}}`],
    [
      '/tunnelAct/instanceMgr/modify',
      `{"instanceID":"${id}","type":"configFile","modifiedData":{"transport":{"K":1}}}`,
    ],
    ['/tunnelAct/instanceMgr/modify', `{"instanceID":"${id}","type":"environment","modifiedData":{"K":"x"}}`],
    ['/tunnelAct/instanceMgr/modify', `{"instanceID":"${id}","type":"systemConfig","modifiedData":{"K":"x"}}`],
    ['/tunnelAct/proxyMgr/create', proxy('"K":"x"').replace('rk_ssh', 'rk_web')],
    ['/tunnelAct/proxyMgr/modify', proxy('"metadatas":{"K":"x"}')],
    ['/tunnelAct/proxyMgr/modify', proxy('"K":{"a":1}')],
    ['/settings/set', `{"K":"x"}`],
    ['/settings/set', `{"Webhook.Headers":{"K":"********"}}`],
    ['/settings/set', `{"Webhook.Body":{"K":"x"}}`],
    ['/settings/set', `{"Debug":false,"K":{"Enabled":true}}`],
  ];
}

test.serial('a reserved key anywhere in a request body: 400 naming it, nothing written', async (t) => {
  const before = await snapshot();
  const outcomes: string[] = [];
  for (const key of KEYS) {
    for (const [path, template] of requests()) {
      const res = await daemon.post(path, template.replaceAll('"K"', JSON.stringify(key)), { token: root });
      outcomes.push(`${path} ${template} [${key}]: ${res.status} ${res.body.message}`);
    }
  }
  const wrong = outcomes.filter(
    (o) => !/: 400 request body has the reserved key "(__proto__|constructor|toString|hasOwnProperty)" \S/.test(o),
  );
  t.deepEqual(wrong, []);
  t.deepEqual(await snapshot(), before);
  t.is(({} as Record<string, unknown>).x, undefined, 'no prototype was touched');
});

test.serial('the message says where the key is', async (t) => {
  const res = await daemon.post(
    '/tunnelAct/proxyMgr/modify',
    `{"instanceID":"${made.id}","proxyInfo":{"name":"rk_ssh","metadatas":{"toString":{"x":1}}}}`,
    { token: root },
  );
  t.deepEqual(res.body, {
    success: false,
    message:
      'request body has the reserved key "toString" inside proxyInfo.metadatas: no setting, field or name may be called that',
  });
  // The JSON parser itself refuses __proto__, before the body is walked: the message cannot say where.
  const proto = await daemon.post('/settings/set', '{"Webhook.Body":{"__proto__":{"x":1}}}', { token: root });
  t.deepEqual(proto.body, {
    success: false,
    message: 'request body has the reserved key "__proto__" in an object: no setting, field or name may be called that',
  });
  const top = await daemon.post('/settings/set', '{"constructor":"x"}', { token: root });
  t.is(
    top.body.message,
    'request body has the reserved key "constructor" at its top level: no setting, field or name may be called that',
  );
});

test.serial('a reserved key in an imported file, in any format: 400 naming it, nothing created', async (t) => {
  const before = await snapshot();
  const files: Array<[string, string]> = [
    ['toml', 'serverAddr = "a.example.com"\nK = 1\n'],
    ['toml', 'serverAddr = "a.example.com"\n[transport]\nK = 1\n'],
    [
      'toml',
      'serverAddr = "a.example.com"\n[[proxies]]\nname = "p"\ntype = "tcp"\nlocalPort = 22\nremotePort = 6200\nK = "x"\n',
    ],
    [
      'toml',
      'serverAddr = "a.example.com"\n[[proxies]]\nname = "p"\ntype = "tcp"\nremotePort = 6200\nmetadatas.K = "x"\n',
    ],
    ['ini', '[common]\nserver_addr = a.example.com\nK = 1\n'],
    ['ini', '[common]\nserver_addr = a.example.com\n[ssh]\ntype = tcp\nremote_port = 6200\nK = x\n'],
    ['json', '{"serverAddr":"a.example.com","transport":{"K":1}}'],
    ['yaml', 'serverAddr: a.example.com\nK: 1\n'],
  ];
  const outcomes: string[] = [];
  for (const key of KEYS) {
    for (const [format, template] of files) {
      const content = template.replaceAll('K', key);
      const res = await daemon.post(
        '/tunnelAct/instanceMgr/import',
        { name: 'rk_imported', format, content },
        { token: root },
      );
      outcomes.push(`${format} ${JSON.stringify(template)} [${key}]: ${res.status} ${res.body.message}`);
    }
  }
  const wrong = outcomes.filter((o) => !/: 400 .*(__proto__|constructor|toString|hasOwnProperty)/.test(o));
  t.deepEqual(wrong, []);
  t.deepEqual(await snapshot(), before);
});
