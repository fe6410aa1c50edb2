import test from 'ava';
import { Validator } from '@seriousme/openapi-schema-validator';
import { STREAM_PATHS } from '../../../src/http/log-streams.js';
import { openApiDocument } from '../../../src/http/openapi.js';
import { appRoutes } from '../../helpers/routes.js';
import { SETTING_KEYS } from '../../../src/settings/table.js';
import { ACCESS_RULES } from '../../../src/accounts/access.js';
import { dispose, startDaemon } from '../../helpers/daemon.js';

interface Document {
  openapi: string;
  info: { version: string };
  paths: Record<string, Record<string, any>>;
  components: { schemas: Record<string, any> };
}

/** Every operation of a document, as `METHOD path`. */
function operations(doc: Document): Array<{ key: string; path: string; op: any }> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, path, op })),
  );
}

const sorted = (items: Iterable<string>) => [...items].sort();

test('GET /openapi.json serves a valid OpenAPI 3.1 document without a token; broken copies are refused', async (t) => {
  const daemon = await startDaemon();
  t.teardown(() => dispose(daemon));
  // No X-Token, no X-Timestamp.
  const res = await fetch(`${daemon.url}/openapi.json`);
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^application\/json/);
  const doc = (await res.json()) as Document;
  t.is(doc.openapi, '3.1.0');
  t.false('success' in doc, 'the document itself, not the envelope');
  const info = await daemon.get('/system/getSoftwareInfo', { timestamp: null });
  t.is(doc.info.version, info.body.data.Version);
  t.deepEqual(doc, openApiDocument() as unknown as Document, 'what is served is what the module builds');

  const validator = new Validator();
  const result = await validator.validate(doc as unknown as Record<string, unknown>);
  t.true(result.valid, JSON.stringify(result.errors, null, 2));
  t.is(validator.version, '3.1');

  // Copies with one flaw each: every one must be refused, and for that flaw.
  const flaws: Array<[string, (copy: Document) => void, RegExp]> = [
    [
      'a parameter that says nowhere it travels',
      (copy) => {
        copy.paths['/tunnelAct/instanceMgr/status']!.get.parameters = [
          { name: 'instanceID', schema: { type: 'string' } },
        ];
      },
      /instanceMgr~1status\/get\/parameters\/0/,
    ],
    [
      'a response without its description',
      (copy) => {
        copy.paths['/system/getStatus']!.get.responses['200'] = { content: {} };
      },
      /missingProperty":"description"/,
    ],
    [
      'a reference to a schema that does not exist',
      (copy) => {
        copy.components.schemas.Session = { $ref: '#/components/schemas/NoSuchSchema' };
      },
      /NoSuchSchema/,
    ],
  ];
  for (const [flaw, spoil, reported] of flaws) {
    const copy = structuredClone(doc);
    spoil(copy);
    const spoiled = await new Validator().validate(copy as unknown as Record<string, unknown>);
    t.false(spoiled.valid, flaw);
    t.regex(JSON.stringify(spoiled.errors), reported, flaw);
  }
});

test('every route of the app is documented at its access level, and no operation is documented that no route serves', (t) => {
  const doc = openApiDocument() as unknown as Document;
  const routes = appRoutes();
  t.deepEqual(
    operations(doc)
      .filter(({ op }) => op['x-api-key-scope'])
      .map(({ key, op }) => `${key} ${op['x-api-key-scope']}`),
    ['GET /metrics metrics'],
    'a metrics key may call /metrics alone',
  );
  const documented = operations(doc).filter(({ op }) => op['x-websocket'] !== true);
  const served = new Set(routes.map((r) => `${r.method} ${r.path}`));
  const described = new Set(documented.map((o) => o.key));
  t.deepEqual(sorted([...served].filter((key) => !described.has(key))), [], 'routes the document leaves out');
  t.deepEqual(sorted([...described].filter((key) => !served.has(key))), [], 'operations no route serves');

  const byKey = new Map(documented.map((o) => [o.key, o.op]));
  for (const route of routes) {
    const op = byKey.get(`${route.method} ${route.path}`);
    if (!op) continue;
    t.is(op['x-access'], route.access, `x-access of ${route.method} ${route.path}`);
    t.true(op.description.includes(`Access: ${route.access}`), `description of ${route.method} ${route.path}`);
    const expected =
      route.access === 'public'
        ? []
        : route.access === 'timestamp'
          ? [{ Timestamp: [] }]
          : [
              { Token: [], Timestamp: [] },
              { ApiKey: [], Timestamp: [] },
              // A key of the operation's own scope (a metrics key on /metrics) needs no X-Timestamp.
              ...(op['x-api-key-scope'] ? [{ ApiKey: [] }] : []),
            ];
    t.deepEqual(op.security, expected, `security of ${route.method} ${route.path}`);
  }
});

test('the WebSocket operations are exactly the streams the daemon serves', (t) => {
  const doc = openApiDocument() as unknown as Document;
  const streams = operations(doc).filter(({ op }) => op['x-websocket'] === true);
  t.deepEqual(sorted(streams.map((s) => s.path)), sorted(STREAM_PATHS));
  for (const { key, op } of streams) {
    t.true(key.startsWith('GET '), key);
    t.truthy(op.responses['101'], `${key} answers 101`);
    t.truthy(op['x-websocket-messages'], `${key} describes its messages`);
  }
  const routePaths = new Set(appRoutes().map((r) => r.path));
  t.deepEqual(
    streams.filter((s) => routePaths.has(s.path)).map((s) => s.key),
    [],
    'no stream is also an HTTP route',
  );
});

test('the Settings schema names every setting, and only those', (t) => {
  const doc = openApiDocument() as unknown as Document;
  const documented = new Set(Object.keys(doc.components.schemas.Settings.properties));
  const known = new Set<string>(SETTING_KEYS);
  t.deepEqual(sorted([...known].filter((key) => !documented.has(key))), [], 'settings the document leaves out');
  t.deepEqual(sorted([...documented].filter((key) => !known.has(key))), [], 'documented settings that do not exist');
});

test("the streams say who may follow them and every refusal they answer, the rate limit's 429 included", (t) => {
  const doc = openApiDocument() as unknown as Document & { components: { responses: Record<string, any> } };
  const streams = operations(doc).filter(({ op }) => op['x-websocket'] === true);
  for (const { key, op } of streams) {
    // Each takes a token or an API key, and an upgrade with one counts against its limit (rate-limit.test.ts).
    t.is(op.responses['429']?.$ref, '#/components/responses/TooManyRequests', key);
  }
  const limited = doc.components.responses.TooManyRequests;
  t.truthy(limited.headers['Retry-After'], 'Retry-After');
  t.deepEqual(limited.content['application/json'].schema, { $ref: '#/components/schemas/Failure' });

  // The instance's log: the access rule's `logs` (the owner or a superuser), as the HTTP operations state theirs.
  const logs = doc.paths['/tunnelAct/instanceMgr/logs']!.get;
  t.is(logs['x-instance-access'], 'logs');
  t.true(logs.description.includes(`on the instance: ${ACCESS_RULES.logs} (403 otherwise)`), logs.description);
  t.true(logs.responses['403'].description.includes(ACCESS_RULES.logs));
  t.false('x-owner-only' in logs, 'one way of saying it');
  for (const path of ['/system/getLogs', '/system/events'])
    t.false('x-instance-access' in doc.paths[path]!.get, `${path} names no instance`);
});
