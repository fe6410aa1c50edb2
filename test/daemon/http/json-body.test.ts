import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { jsonBodyProblem } from '../../../src/http/json-body.js';
import { dispose, startDaemon, type Daemon } from '../../helpers/daemon.js';
import { instanceSettings } from '../../helpers/instances.js';

const DEEP = 'request body is nested too deeply';

/** JSON text of `depth` objects nested under key `a` around `inner` (no recursion: stringify would need it). */
const nestedObjects = (depth: number, inner = '1') => '{"a":'.repeat(depth) + inner + '}'.repeat(depth);
/** JSON text of `depth` arrays nested in one another: the most nesting per byte. */
const nestedArrays = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

test('the walk: depth up to the bound passes, one more is refused, however deep the rest goes', (t) => {
  t.is(jsonBodyProblem(JSON.parse(nestedObjects(64)), 64), undefined);
  t.is(jsonBodyProblem(JSON.parse(nestedArrays(64)), 64), undefined);
  t.is(jsonBodyProblem(JSON.parse(nestedObjects(65)), 64), DEEP);
  t.is(jsonBodyProblem(JSON.parse(nestedArrays(65)), 64), DEEP);
  t.is(jsonBodyProblem(JSON.parse(`{"x":[1,2,{"y":${nestedArrays(100_000)}}]}`), 64), DEEP);
  t.is(jsonBodyProblem({ wide: Array.from({ length: 100_000 }, (_, i) => ({ i })) }, 64), undefined);
  t.is(jsonBodyProblem(undefined, 64), undefined);
});

test('the walk: a lone surrogate in a string or a key is named with where it is; pairs are fine', (t) => {
  t.is(jsonBodyProblem(JSON.parse('{"a":{"b":["ok","\\ud83d\\ude00"]}}'), 64), undefined);
  t.is(
    jsonBodyProblem(JSON.parse('{"a":{"b":["ok","\\ud800"]}}'), 64),
    'request body has invalid Unicode (a lone surrogate) in the string at a.b[1]',
  );
  t.is(
    jsonBodyProblem(JSON.parse('{"a":{"x\\udc00":1}}'), 64),
    'request body has invalid Unicode (a lone surrogate) in a key inside a',
  );
  t.is(
    jsonBodyProblem(JSON.parse('{"\\ud800":1}'), 64),
    'request body has invalid Unicode (a lone surrogate) in a key at its top level',
  );
  t.is(
    jsonBodyProblem(JSON.parse('["\\ude00x"]'), 64),
    'request body has invalid Unicode (a lone surrogate) in the string at [0]',
  );
});

let daemon: Daemon;
let token: string;
let settingsText: string;
test.before(async () => {
  daemon = await startDaemon({ settingsToml: instanceSettings() });
  token = await daemon.login();
  settingsText = await readFile(join(daemon.dataDir, 'settings.toml'), 'utf8');
});
test.after.always(() => dispose(daemon));

const instanceInfo =
  '"instanceInfo":{"name":"deep","serverAddr":"127.0.0.1","serverPort":"7000","auth_method":"token"}';

/** Nothing a refused body could have written: settings as they were, no instance, no config file. */
async function assertNothingWritten(t: import('ava').ExecutionContext) {
  t.is(await readFile(join(daemon.dataDir, 'settings.toml'), 'utf8'), settingsText);
  const list = await daemon.get('/tunnelAct/instanceMgr/list', { token });
  t.deepEqual(list.body.data, []);
  const files = await readdir(join(daemon.dataDir, 'instances')).catch(() => []);
  t.deepEqual(files, []);
}

test.serial('a body nested 5000 or 100000 deep: 400 on settings and instance routes, nothing written', async (t) => {
  const bodies: Array<[string, string]> = [
    ['/settings/set', `{"Webhook.Body":${nestedObjects(5000)}}`],
    ['/settings/set', `{"Webhook.Body":{"a":${nestedArrays(100_000)}}}`],
    ['/tunnelAct/instanceMgr/create', `{${instanceInfo},"additionalProperties":${nestedObjects(5000)}}`],
    ['/tunnelAct/instanceMgr/create', `{${instanceInfo},"additionalProperties":{"a":${nestedArrays(100_000)}}}`],
    ['/tunnelAct/instanceMgr/modify', `{"instanceID":"1","type":"configFile","modifiedData":${nestedObjects(5000)}}`],
  ];
  for (const [path, body] of bodies) {
    t.true(Buffer.byteLength(body) < 256 * 1024, 'inside the body size limit');
    const res = await daemon.post(path, body, { token });
    t.is(res.status, 400, path);
    t.deepEqual(res.body, { success: false, message: DEEP }, path);
  }
  await assertNothingWritten(t);
});

test.serial('a lone surrogate anywhere in the body: 400 naming invalid Unicode, nothing written', async (t) => {
  const bodies: Array<[string, string, string]> = [
    ['/settings/set', '{"TunnelPath":"/usr/bin/frpc\\ud800"}', 'in the string at TunnelPath'],
    ['/settings/set', '{"Webhook.Body":{"text":["ok","\\udfff"]}}', 'in the string at Webhook.Body.text[1]'],
    ['/settings/set', '{"Webhook.Headers":{"X-\\ud800":"v"}}', 'in a key inside Webhook.Headers'],
    [
      '/tunnelAct/instanceMgr/create',
      `{${instanceInfo.replace('"deep"', '"de\\ud800ep"')}}`,
      'in the string at instanceInfo.name',
    ],
    [
      '/tunnelAct/instanceMgr/create',
      `{${instanceInfo},"additionalProperties":{"\\udc00":1}}`,
      'in a key inside additionalProperties',
    ],
  ];
  for (const [path, body, where] of bodies) {
    const res = await daemon.post(path, body, { token });
    t.is(res.status, 400, body);
    t.deepEqual(
      res.body,
      { success: false, message: `request body has invalid Unicode (a lone surrogate) ${where}` },
      body,
    );
  }
  await assertNothingWritten(t);
});

test.serial('a body at the bound passes the check and reaches the route', async (t) => {
  // 64 levels in all: the body object, additionalProperties and 62 below it; no instanceInfo, so nothing is created.
  const res = await daemon.post(
    '/tunnelAct/instanceMgr/create',
    `{"additionalProperties":${nestedObjects(62, '{}')}}`,
    { token },
  );
  t.is(res.status, 400);
  t.is(res.body.message, 'instanceInfo is required');
  const deeper = await daemon.post(
    '/tunnelAct/instanceMgr/create',
    `{"additionalProperties":${nestedObjects(63, '{}')}}`,
    { token },
  );
  t.is(deeper.body.message, DEEP);
  await assertNothingWritten(t);
});
