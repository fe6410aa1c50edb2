import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { parse } from 'smol-toml';
import type { Access } from '../../../src/http/auth.js';
import { STREAM_PATHS } from '../../../src/http/log-streams.js';
import { appRoutes } from '../../helpers/routes.js';
import { ADMIN, dispose, startDaemon, type Daemon, type Response } from '../../helpers/daemon.js';
import { createInstance, instanceSettings } from '../../helpers/instances.js';
import { openStream, wsUrl } from '../../helpers/streams.js';

/** Who may call each route: the contract's Endpoints and Authentication sections, and DESIGN.md where it shows nothing. */
const CONTRACT: Record<string, Access> = {
  'GET /system/getStatus': 'public',
  'GET /system/getSoftwareInfo': 'public',
  'GET /system/summary': 'visitor',
  'POST /register': 'timestamp',
  'POST /login': 'timestamp',
  'GET /logout': 'visitor',
  'POST /userMgr/create': 'superuser',
  'POST /userMgr/remove': 'superuser',
  'POST /userMgr/modify': 'visitor',
  'POST /userMgr/modifyType': 'superuser',
  'GET /userMgr/list': 'superuser',
  'GET /sessionMgr/list': 'admin',
  'POST /sessionMgr/remove': 'superuser',
  'POST /tunnelAct/instanceMgr/create': 'admin',
  'POST /tunnelAct/instanceMgr/delete': 'admin',
  'POST /tunnelAct/instanceMgr/modify': 'admin',
  'POST /tunnelAct/instanceMgr/start': 'admin',
  'POST /tunnelAct/instanceMgr/stop': 'admin',
  'POST /tunnelAct/instanceMgr/restart': 'admin',
  'GET /tunnelAct/instanceMgr/status': 'visitor',
  'GET /tunnelAct/instanceMgr/list': 'visitor',
  'GET /tunnelAct/instanceMgr/getInfo': 'visitor',
  'POST /tunnelAct/proxyMgr/create': 'admin',
  'POST /tunnelAct/proxyMgr/modify': 'admin',
  'POST /tunnelAct/proxyMgr/delete': 'admin',
  'GET /tunnelAct/proxyMgr/list': 'visitor',
  'GET /settings/get': 'admin',
  'POST /settings/set': 'admin',
  'POST /system/restart': 'admin',
  'GET /system/selfCheck': 'admin',
  'POST /tunnelAct/proxyMgr/setStatus': 'admin',
  'POST /tunnelAct/proxyMgr/setExpiry': 'admin',
  'GET /metrics': 'admin',
  'GET /whoami': 'visitor',
  'POST /tunnelAct/instanceMgr/import': 'admin',
  'GET /tunnelAct/instanceMgr/export': 'visitor',
  'POST /tunnelAct/instanceMgr/replaceConfig': 'admin',
  'GET /tunnelAct/instanceMgr/history': 'visitor',
  'GET /tunnelAct/instanceMgr/revision': 'visitor',
  'GET /tunnelAct/instanceMgr/diff': 'visitor',
  'POST /tunnelAct/instanceMgr/rollback': 'admin',
  'POST /tunnelAct/instanceMgr/apply': 'admin',
  'GET /tunnelAct/instanceMgr/exportAll': 'admin',
  'GET /openapi.json': 'public',
  'GET /system/audit': 'superuser',
  'POST /apiKeyMgr/create': 'visitor',
  'GET /apiKeyMgr/list': 'visitor',
  'POST /apiKeyMgr/revoke': 'visitor',
};

type Identity = 'none' | 'visitor' | 'admin' | 'superuser';
const IDENTITIES: Identity[] = ['none', 'visitor', 'admin', 'superuser'];
const RANK: Record<Identity, number> = { none: -1, visitor: 0, admin: 1, superuser: 2 };

/** Paths that name the route to a lenient matcher but are not the route's exact path. */
function variants(path: string): string[] {
  const segments = path.split('/').slice(1);
  const last = segments.length - 1;
  const join = (parts: string[]) => '/' + parts.join('/');
  const list = [
    join(segments.map((s, i) => (i === 0 ? s[0]!.toUpperCase() + s.slice(1) : s))),
    join(segments.map((s, i) => (i < last ? s.toUpperCase() : s))),
    join(segments.map((s, i) => (i === last ? s.toUpperCase() : s))),
    path.toUpperCase(),
    path + '/',
    '/' + path,
    join([...segments.slice(0, last), '', segments[last]!]),
    join([...segments.slice(0, last), `%${segments[last]!.charCodeAt(0).toString(16)}${segments[last]!.slice(1)}`]),
    join([segments[0]!, '..', ...segments]),
    join([...segments.slice(0, last), '.', segments[last]!]),
  ];
  return [...new Set(list)].filter((v) => v !== path);
}

const VARIANT_BODY = {
  TunnelPath: '/walk/variant/executable',
  instanceID: '1',
  username: 'walker',
  passwd: 'Walk3r!pass',
};

let daemon: Daemon;
const tokens: Record<Identity, string | undefined> = {
  none: undefined,
  visitor: undefined,
  admin: undefined,
  superuser: undefined,
};
let settingsText = '';
let instanceId = '';

const settingsFile = () => readFile(join(daemon.dataDir, 'settings.toml'), 'utf8');

test.before(async () => {
  daemon = await startDaemon({
    settingsToml: instanceSettings(),
    // Restart then only ends this process: no successor outlives the test.
    env: { TUNNELWARD_SUPERVISED: 'systemd' },
  });
  tokens.superuser = await daemon.login();
  tokens.admin = (await daemon.userWithToken(tokens.superuser, 'walk_admin', 'admin')).token;
  tokens.visitor = (await daemon.userWithToken(tokens.superuser, 'walk_visitor', 'visitor')).token;
  instanceId = (await createInstance(daemon, tokens.admin, 'walk_instance')).id;
  settingsText = await settingsFile();
});
test.after.always(() => dispose(daemon));

test.serial('the routers hold exactly the contract routes, each with the contract access level', (t) => {
  const declared = Object.fromEntries(appRoutes().map((r) => [`${r.method} ${r.path}`, r.access]));
  t.deepEqual(declared, CONTRACT);
});

test.serial('OPTIONS, TRACE and other unrouted methods on a known path: 405 with Allow, in the envelope', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['OPTIONS', '/settings/get', 'GET, HEAD'],
    ['TRACE', '/settings/get', 'GET, HEAD'],
    ['OPTIONS', '/settings/set', 'POST'],
    ['TRACE', '/settings/set', 'POST'],
    ['PUT', '/settings/set', 'POST'],
    ['DELETE', '/tunnelAct/instanceMgr/delete', 'POST'],
    ['PATCH', '/userMgr/modify', 'POST'],
    ['PROPFIND', '/system/getStatus', 'GET, HEAD'],
    ['GET', '/login', 'POST'],
  ];
  for (const [method, path, allow] of cases) {
    for (const token of [undefined, tokens.superuser]) {
      const res = await daemon.rawRequest(method, path, { token, body: method === 'GET' ? undefined : VARIANT_BODY });
      const what = `${method} ${path}${token ? ' with a token' : ''}`;
      t.is(res.status, 405, what);
      t.is(res.headers.get('allow'), allow, what);
      t.deepEqual(res.body, { success: false, message: `${method} is not allowed on ${path}` }, what);
    }
  }
  const head = await daemon.rawRequest('HEAD', '/settings/set', { token: tokens.superuser });
  t.is(head.status, 405);
  t.is(head.headers.get('allow'), 'POST');
  t.is((await daemon.rawRequest('HEAD', '/system/getStatus')).status, 200, 'HEAD goes with GET');
  const unknown = await daemon.rawRequest('OPTIONS', '/settings/nothing');
  t.is(unknown.status, 404);
  t.deepEqual(unknown.body, { success: false, message: 'no such endpoint: OPTIONS /settings/nothing' });
  t.is(await settingsFile(), settingsText);
});

test.serial(
  'a stream path without an upgrade: a GET is 426 with how to connect, another method 405 (Allow: GET)',
  async (t) => {
    for (const path of STREAM_PATHS) {
      const plain = await daemon.rawRequest('GET', `${path}?instanceID=${instanceId}`, { token: tokens.superuser });
      t.is(plain.status, 426, path);
      t.is(plain.headers.get('upgrade'), 'websocket', path);
      t.deepEqual(plain.body, {
        success: false,
        message: `${path} is a WebSocket stream: connect with Upgrade: websocket`,
      });
      for (const method of ['POST', 'TRACE', 'OPTIONS']) {
        const res = await daemon.rawRequest(method, path, { token: tokens.superuser });
        t.is(res.status, 405, `${method} ${path}`);
        t.is(res.headers.get('allow'), 'GET', `${method} ${path}`);
      }
    }
  },
);

test.serial(
  'walk: every changed spelling of every path is a 404; the exact path gives the contract answer',
  async (t) => {
    const routes = appRoutes();
    const walked: Array<{ method: string; path: string; access?: Access }> = [
      ...routes,
      ...STREAM_PATHS.map((path) => ({ method: 'GET', path })),
    ];
    const tunnelPath = (parse(settingsText) as { TunnelPath: string }).TunnelPath;

    const send = (method: string, path: string, who: Identity, body: unknown): Promise<Response> =>
      daemon.rawRequest(method, method === 'GET' ? `${path}?instanceID=${instanceId}&key=TunnelPath` : path, {
        token: tokens[who],
        body: method === 'GET' ? undefined : body,
      });

    for (const route of walked) {
      for (const variant of variants(route.path)) {
        for (const who of IDENTITIES) {
          const res = await send(route.method, variant, who, VARIANT_BODY);
          const what = `${route.method} ${variant} as ${who}`;
          t.is(res.status, 404, what);
          t.deepEqual(res.body, { success: false, message: `no such endpoint: ${route.method} ${variant}` }, what);
          const now = await settingsFile();
          t.is(now, settingsText, `settings file unchanged after ${what}`);
          t.is((parse(now) as { TunnelPath: string }).TunnelPath, tunnelPath);
        }
      }
    }

    // The exact paths, with a body that names nothing, so that an allowed call changes nothing either.
    const ending = new Set(['GET /logout', 'POST /system/restart']);
    for (const route of routes.filter((r) => !ending.has(`${r.method} ${r.path}`))) {
      for (const who of IDENTITIES) {
        const res = await daemon.rawRequest(route.method, route.path, {
          token: tokens[who],
          body: route.method === 'POST' ? {} : undefined,
        });
        expectAnswer(t, route, who, res);
      }
      if (route.access !== 'public') {
        const stale = await daemon.rawRequest(route.method, route.path, {
          token: tokens.superuser,
          timestamp: null,
          body: route.method === 'POST' ? {} : undefined,
        });
        t.is(stale.status, 401, `${route.method} ${route.path} without X-Timestamp`);
        t.is(stale.body.message, 'X-Timestamp is required');
      }
    }

    // Logging out ends the session it is called with: each identity logs in afresh for it.
    for (const who of IDENTITIES) {
      const fresh = who === 'none' ? undefined : await daemon.login(...credentials(who));
      const res = await daemon.rawRequest('GET', '/logout', { token: fresh });
      expectAnswer(t, { method: 'GET', path: '/logout', access: 'visitor' }, who, res);
    }

    const logs = (query: string) =>
      openStream(wsUrl(daemon.url, `/tunnelAct/instanceMgr/logs${query}`)).then(
        (stream) => (stream.ws.close(), { status: 101, body: undefined as any }),
        ({ status, body }: { status: number; body: any }) => ({ status, body }),
      );
    const system = await openStream(wsUrl(daemon.url, '/system/getLogs'));
    system.ws.close();
    t.deepEqual(await logs(`?instanceID=${instanceId}`), {
      status: 401,
      body: { success: false, message: 'Token is required' },
    });
    t.deepEqual(await logs(`?instanceID=${instanceId}&token=${tokens.visitor}`), {
      status: 403,
      body: { success: false, message: "You don't have access to this instance" },
    });
    t.is((await logs(`?instanceID=${instanceId}&token=${tokens.admin}`)).status, 101, 'the owner streams');
    t.is((await logs(`?instanceID=${instanceId}&token=${tokens.superuser}`)).status, 101, 'a superuser streams');

    // Last: an allowed restart ends this daemon, so only the lowest allowed role makes it.
    for (const who of ['none', 'visitor'] as const) {
      const res = await daemon.rawRequest('POST', '/system/restart', { token: tokens[who], body: {} });
      expectAnswer(t, { method: 'POST', path: '/system/restart', access: 'admin' }, who, res);
    }
    const restart = await daemon.rawRequest('POST', '/system/restart', { token: tokens.admin, body: {} });
    t.deepEqual(restart.body, { success: true, message: 'restarting' });
    t.is((await daemon.exited).code, 0);
    t.is(await settingsFile(), settingsText, 'no request of the walk changed the settings');
  },
);

function credentials(who: Exclude<Identity, 'none'>): [string, string] {
  return who === 'superuser' ? [ADMIN.username, ADMIN.passwd] : [`walk_${who}`, 'Passw0rd!x'];
}

/** The answer the contract gives `who` on a route's exact path. */
function expectAnswer(
  t: ExecutionContext,
  route: { method: string; path: string; access?: Access },
  who: Identity,
  res: Response,
) {
  const what = `${route.method} ${route.path} as ${who}: ${res.status} ${res.body?.message}`;
  // Every answer is the envelope, but for the Prometheus text that /metrics serves to those allowed and the
  // OpenAPI document.
  const metrics = route.path === '/metrics' && res.status === 200;
  if (route.path === '/openapi.json') t.is((res.body as { openapi?: string } | undefined)?.openapi, '3.1.0', what);
  else t.is(metrics ? typeof res.body : typeof res.body?.success, metrics ? 'string' : 'boolean', what);
  if (route.access === 'public') {
    t.is(res.status, 200, what);
  } else if (route.access === 'timestamp') {
    t.false([401, 403, 404, 405].includes(res.status), what);
  } else if (who === 'none') {
    t.is(res.status, 401, what);
    t.is(res.body.message, 'X-Token is required', what);
  } else if (RANK[who] < RANK[route.access!]) {
    t.is(res.status, 403, what);
    t.regex(res.body.message, /^this needs the \w+ role/, what);
  } else {
    t.false([401, 403, 404, 405].includes(res.status), what);
  }
}
