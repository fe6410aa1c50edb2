import { DEFAULTS } from '../settings/defaults.js';
import { loadSoftwareInfo, type SoftwareInfo } from '../system/software-info.js';
import type { Access } from './auth.js';
import { CLOSE, SEQ_PATTERN } from './log-streams.js';
import { jsonSchemaOf, NAMED_SCHEMAS, queryParameters, type Operation as DeclaredOperation } from './operation.js';
import { ID_STRING_PATTERN, MAX_IDS } from './params.js';
import {
  arrayOf,
  bool,
  CONFIG_MISSING,
  ERRORS,
  obj,
  ok,
  RESPONSES,
  schema,
  SCHEMAS,
  str,
  type Json,
} from './openapi-schemas.js';
import { declaredOperations } from './routes/operations.js';

/**
 * The OpenAPI 3.1 description of the HTTP API: every operation the routes declare (src/http/operation.ts), the
 * routes still described here, and the three WebSocket streams. `test/http/openapi.test.ts` checks it against the
 * routes the app really serves.
 */

// ---- Operations ----

const ACCESS_TEXT: Record<Access, string> = {
  public: 'public: no X-Token, no X-Timestamp',
  timestamp: 'timestamp: X-Timestamp only, no token',
  visitor: 'visitor: any logged-in user (X-Token or an API key, and X-Timestamp)',
  admin: 'admin: an admin or a superuser (X-Token or an API key scoped admin or higher, and X-Timestamp)',
  superuser: 'superuser: a superuser only (X-Token or a superuser-scoped API key, and X-Timestamp)',
};

const SECURITY: Record<Access, Json[]> = {
  public: [],
  timestamp: [{ Timestamp: [] }],
  visitor: [
    { Token: [], Timestamp: [] },
    { ApiKey: [], Timestamp: [] },
  ],
  admin: [
    { Token: [], Timestamp: [] },
    { ApiKey: [], Timestamp: [] },
  ],
  superuser: [
    { Token: [], Timestamp: [] },
    { ApiKey: [], Timestamp: [] },
  ],
};

interface Operation {
  tag: string;
  summary: string;
  description?: string;
  access: Access;
  /** Query parameters (a GET's; each may also come as an `X-<name>` header). */
  query?: Json[];
  /** The JSON body of a POST. */
  body?: Json;
  ok: Json;
  /** Statuses this operation answers beyond those every operation of its method and access level may. */
  errors?: Partial<Record<number, string>>;
}

/** The statuses an operation may answer because of its method and access level alone. */
function commonStatuses(method: 'get' | 'post', access: Access): number[] {
  const statuses = [500];
  if (method === 'post') statuses.push(400, 413, 415);
  if (access !== 'public') statuses.push(401);
  if (access === 'visitor' || access === 'admin' || access === 'superuser') statuses.push(429);
  if (access === 'admin' || access === 'superuser') statuses.push(403);
  return statuses;
}

function errorResponse(status: number, description?: string): Json {
  const known = ERRORS[status];
  if (!known) throw new Error(`no response component for status ${status}`);
  return { $ref: `#/components/responses/${known.name}`, ...(description ? { description } : {}) };
}

const operationId = (path: string) =>
  path
    .slice(1)
    .replace(/^tunnelAct\//, '')
    .replaceAll('/', '.');

/** A declared operation as the document shows it: its schemas turned into JSON Schema. */
function declared(op: DeclaredOperation): [method: 'get' | 'post', path: string, Operation] {
  const { method, path, query, body, ...rest } = op;
  return [
    method,
    path,
    { ...rest, ...(query ? { query: queryParameters(query) } : {}), ...(body ? { body: jsonSchemaOf(body) } : {}) },
  ];
}

function operation(method: 'get' | 'post', path: string, op: Operation): Json {
  const statuses = new Set([...commonStatuses(method, op.access), ...Object.keys(op.errors ?? {}).map(Number)]);
  // A parameter may be malformed, or given twice.
  if (op.query?.length) statuses.add(400);
  const responses: Json = { '200': op.ok };
  for (const status of [...statuses].sort((a, b) => a - b)) {
    responses[String(status)] = errorResponse(status, op.errors?.[status]);
  }
  return {
    tags: [op.tag],
    summary: op.summary,
    description: `${op.description ? `${op.description}\n\n` : ''}Access: ${ACCESS_TEXT[op.access]}.`,
    operationId: operationId(path),
    'x-access': op.access,
    security: SECURITY[op.access],
    ...(op.query ? { parameters: op.query } : {}),
    ...(op.body ? { requestBody: { required: true, content: { 'application/json': { schema: op.body } } } } : {}),
    responses,
  };
}

const instanceIdParam = { $ref: '#/components/parameters/InstanceID' };

const NO_INSTANCE = 'No instance with that id.';
const BAD_ID = 'instanceID missing or not a positive integer.';

/** Every Koa route: [method, path, operation]. */
const ROUTES: Array<['get' | 'post', string, Operation]> = [
  // Instances
  [
    'post',
    '/tunnelAct/instanceMgr/create',
    {
      tag: 'instances',
      summary: 'Create an instance and its config file',
      access: 'admin',
      body: schema('InstanceCreateRequest'),
      ok: ok('Created; bootServiceError says when its boot service could not be set up', schema('InstanceCreated')),
      errors: {
        400: 'A missing or invalid field (a name of digits only is refused: it would read as an id), an unknown runUser, or a config key frpc would refuse.',
        409: 'An instance with that name exists.',
        500: 'The config file could not be written.',
      },
    },
  ],
  [
    'post',
    '/tunnelAct/instanceMgr/import',
    {
      tag: 'instances',
      summary: 'Create an instance from an existing frpc config file',
      description:
        "The content is read in its format (guessed when not given) and stored in frpc's current TOML, with its proxies and visitors, every key checked as the other operations check it. Nothing is created when any part is refused. Its own webServer gives way to tunnelward's admin endpoint; the message notes what was changed.",
      access: 'admin',
      body: schema('InstanceImportRequest'),
      ok: ok('Imported', schema('InstanceImported')),
      errors: {
        400: 'A missing field, content that does not parse, or something in it that cannot be represented (the message names it).',
        409: 'An instance with that name exists, or a proxy would clash with one of another instance on the same server.',
      },
    },
  ],
  [
    'post',
    '/tunnelAct/instanceMgr/delete',
    {
      tag: 'instances',
      summary: 'Stop an instance (or several) and remove its config file and record (and its log, with purge)',
      description:
        'With instanceIDs each instance is deleted on its own and the reply says how each went; one failing is that instance’s, not the request’s. There is no all form.',
      access: 'admin',
      body: {
        ...obj({
          'instanceID?': schema('Id'),
          'instanceIDs?': { ...arrayOf(schema('Id'), 'repeated ids count once'), minItems: 1, maxItems: MAX_IDS },
          'purge?': bool('remove their logs too (default false: the logs are kept)'),
        }),
        oneOf: [{ required: ['instanceID'] }, { required: ['instanceIDs'] }],
      },
      ok: ok('Deleted', { oneOf: [schema('InstanceDeleted'), schema('BulkCommandResult')] }),
      errors: {
        400: `${BAD_ID} Or both forms, or all.`,
        404: `${NO_INSTANCE} (With instanceIDs, an unknown id is a failed result instead.)`,
        500: 'Its tunnel could not be stopped.',
      },
    },
  ],
  [
    'post',
    '/tunnelAct/instanceMgr/modify',
    {
      tag: 'instances',
      summary: "Change an instance's config file, record or environment",
      description:
        'configFile changes top-level frpc keys (a running tunnel is restarted to apply them); systemConfig changes name, bootAtStart and runUser (and the boot service: a failure still succeeds, with bootServiceError); environment sets write-only variables; labels sets (a string) or removes (null) labels.',
      access: 'admin',
      body: schema('InstanceModifyRequest'),
      ok: ok('Modified', schema('InstanceModified')),
      errors: {
        400: 'An invalid field, an unknown type or key, or a value frpc would refuse.',
        404: NO_INSTANCE,
        409: 'The new name is taken, or a proxy would clash with one of another instance on the same server.',
        500: 'The change is made but the restart that applies it failed.',
      },
    },
  ],
  [
    'post',
    '/tunnelAct/instanceMgr/replaceConfig',
    {
      tag: 'instances',
      summary: "Replace an instance's whole config file",
      description:
        "Every key, the rules between keys, every proxy and visitor are checked as the other edits check them, and what the proxies hold on their server against the other instances; the file is written atomically. tunnelward's admin endpoint (webServer) is kept whatever the text says (a note says so). A running tunnel applies a change of proxies or visitors by frpc reload (rolled back with a 400 if frpc refuses it) and a change of top-level settings by a restart; applied says which.",
      access: 'admin',
      body: schema('InstanceReplaceConfigRequest'),
      ok: ok('Replaced (or unchanged): the diff and how it was applied', schema('InstanceConfigReplaced')),
      errors: {
        400: 'content missing or not TOML, a key or value frpc would refuse (every problem named), or frpc refused the reload.',
        404: NO_INSTANCE,
        409: 'The file changed since baseVersion, or a proxy would clash with one of this or another instance on the same server.',
        500: 'The change is made but the restart that applies it failed.',
      },
    },
  ],
  ...(['start', 'stop', 'restart'] as const).map((command): ['post', string, Operation] => [
    'post',
    `/tunnelAct/instanceMgr/${command}`,
    {
      tag: 'instances',
      summary: `${command[0]!.toUpperCase()}${command.slice(1)} one instance, several, or all`,
      description:
        'Replies once the outcome is known. With instanceIDs or all, each instance gets its own command and the reply says how each went; one failing is that instance’s, not the request’s.',
      access: 'admin',
      body: schema('InstanceCommandRequest'),
      ok: ok(`${command}: the outcome`, schema('CommandOutcome')),
      errors: {
        400: 'More than one of instanceID, instanceIDs, all; an invalid id; or a config file that cannot start (its runUser cannot reach or read it, a placeholder with no variable).',
        404: `${NO_INSTANCE} (In the many-instance forms, an unknown id is a failed result instead.)`,
        409: 'The state refuses the command (starting a running instance, or another command in progress).',
        500: 'The command failed: the message says how (exit code, signal, last log lines).',
      },
    },
  ]),
  [
    'get',
    '/tunnelAct/instanceMgr/status',
    {
      tag: 'instances',
      summary: "An instance's state and process",
      access: 'visitor',
      query: [instanceIdParam],
      ok: ok('Its status', schema('InstanceStatus')),
      errors: { 400: BAD_ID, 404: NO_INSTANCE },
    },
  ],
  [
    'get',
    '/tunnelAct/instanceMgr/list',
    {
      tag: 'instances',
      summary: "Every user's instances",
      access: 'visitor',
      ok: ok('Every instance', arrayOf(schema('InstanceSummary'))),
    },
  ],
  [
    'get',
    '/tunnelAct/instanceMgr/getInfo',
    {
      tag: 'instances',
      summary: "An instance's record and server",
      description: 'serverAddr, serverPort and environment are shown to admins and superusers only.',
      access: 'visitor',
      query: [instanceIdParam],
      ok: ok('Its details', schema('InstanceInfo')),
      errors: { 400: BAD_ID, 404: NO_INSTANCE, 409: CONFIG_MISSING },
    },
  ],
  [
    'get',
    '/tunnelAct/instanceMgr/export',
    {
      tag: 'instances',
      summary: "An instance's config file, as TOML",
      description:
        'Secrets are shown as ******** unless the caller is a superuser (masked says which). A visitor may export only while Visitor.ShowDetails shows details, and without serverAddr and serverPort (as getInfo).',
      access: 'visitor',
      query: [instanceIdParam],
      ok: ok('The config file', schema('InstanceExport')),
      errors: {
        400: BAD_ID,
        403: 'A visitor, while Visitor.ShowDetails hides details.',
        404: NO_INSTANCE,
        409: CONFIG_MISSING,
      },
    },
  ],

  // Proxies
];

// ---- WebSocket streams ----

const closeCodes = [
  `${CLOSE.sessionEnded}: the session ended (token expired, logged out, session removed, user removed, password changed), or the API key was revoked or expired`,
  `${CLOSE.accessWithdrawn}: the role no longer gives access to the instance`,
  `${CLOSE.instanceDeleted}: the instance was deleted`,
  `${CLOSE.tooSlow}: the client cannot keep up`,
  `${CLOSE.shuttingDown}: tunnelward is stopping`,
  '1000: end of log (follow=0, once the earlier entries are sent)',
]
  .map((line) => `- ${line}`)
  .join('\n');

interface Stream {
  summary: string;
  description: string;
  access: Access;
  /** Who may connect, in words: the access level alone does not say it for a stream. */
  who: string;
  /** Only the instance's creator (and superusers), whatever the access level: `x-owner-only` says it to a machine. */
  ownerOnly?: boolean;
  tokenRequired: boolean;
  query?: Json[];
  messages: Json;
  refusals: Partial<Record<number, string>>;
}

function streamOperation(path: string, stream: Stream): Json {
  const responses: Json = {
    '101': {
      description:
        'Switching Protocols: the connection is a WebSocket. Each text message the server sends is one JSON object (see x-websocket-messages).',
    },
  };
  const refusals: Partial<Record<number, string | undefined>> = {
    ...stream.refusals,
    426: undefined,
    500: undefined,
    503: undefined,
  };
  for (const status of Object.keys(refusals)
    .map(Number)
    .sort((a, b) => a - b)) {
    responses[String(status)] = errorResponse(status, refusals[status]);
  }
  return {
    tags: ['streams'],
    summary: stream.summary,
    description: `${stream.description}\n\nA WebSocket: connect with an Upgrade request (a plain GET is a 426, another method a 405). Instead of ?token=, an API key may be sent as Authorization: Bearer <key> on the upgrade request (never in the query string). Every check happens before the upgrade; a refusal is an ordinary HTTP response in the envelope. Close codes:\n${closeCodes}\n\nAccess: ${stream.access}: ${stream.who}.`,
    operationId: operationId(path),
    'x-websocket': true,
    'x-access': stream.access,
    ...(stream.ownerOnly ? { 'x-owner-only': true } : {}),
    'x-websocket-messages': stream.messages,
    security: stream.tokenRequired ? [{ TokenQuery: [] }, { ApiKey: [] }] : [{}, { TokenQuery: [] }, { ApiKey: [] }],
    ...(stream.query ? { parameters: stream.query } : {}),
    responses,
  };
}

/** `?lines=` and `?follow=` of the log streams. */
function replayQuery(fallback: string, max: number): Json[] {
  return [
    {
      name: 'lines',
      in: 'query',
      required: false,
      description: `How many earlier entries to send first (${fallback} when omitted, at most ${max}).`,
      schema: str(undefined, { pattern: '^[0-9]{1,6}$' }),
    },
    {
      name: 'follow',
      in: 'query',
      required: false,
      description: '0 or false: send the earlier entries, then close with 1000 "end of log"; default 1.',
      schema: str(undefined, { enum: ['0', '1', 'true', 'false'] }),
    },
  ];
}

const STREAMS: Array<[string, Stream]> = [
  [
    '/system/getLogs',
    {
      summary: "The daemon's own log",
      description:
        'Sends the latest entries first (the last 100 are kept), then each new one. DEBUG entries exist only while Debug is on. The token is optional on loopback and required on any other listen address (SystemLog.RequireToken); an invalid one is refused.',
      access: 'public',
      who: 'anyone on loopback (a token in ?token= is optional, and checked when given); off loopback, a logged-in user',
      tokenRequired: false,
      query: replayQuery('all those kept', 100),
      messages: schema('SystemLogEntry'),
      refusals: {
        400: 'lines or follow malformed.',
        401: 'Token is required (off loopback); Invalid token: the reason, or User not found.',
      },
    },
  ],
  [
    '/system/events',
    {
      summary: 'Every event as it happens',
      description:
        'The first message is events.start (where the stream stands); then every event, numbered by seq. With since=<the last seq seen>, the missed events come first (replayed: n), or lost: true when some are no longer kept.',
      access: 'visitor',
      who: 'any logged-in user, with the token in ?token=',
      tokenRequired: true,
      query: [
        {
          name: 'since',
          in: 'query',
          required: false,
          description: 'The last seq the client saw.',
          schema: str(undefined, { pattern: SEQ_PATTERN }),
        },
      ],
      messages: { oneOf: [schema('EventsStart'), schema('Event')] },
      refusals: {
        400: 'since must be an event seq (an integer).',
        401: 'Token is required; Invalid token: the reason; User not found.',
      },
    },
  ],
  [
    '/tunnelAct/instanceMgr/logs',
    {
      summary: "An instance's output",
      description:
        "The last lines of the instance's log first (from the rotated file too when the live one is shorter), then each new line as the tunnel writes it, across restarts and rotations.",
      access: 'visitor',
      who: "the instance's creator or a superuser, with the token in ?token=",
      ownerOnly: true,
      tokenRequired: true,
      query: [
        {
          name: 'instanceID',
          in: 'query',
          required: true,
          schema: str(undefined, { pattern: ID_STRING_PATTERN }),
        },
        ...replayQuery(String(DEFAULTS.streamReplayLines), 1000),
      ],
      messages: schema('InstanceLogEntry'),
      refusals: {
        400: 'instanceID is required; invalid instanceID format; lines or follow malformed.',
        401: 'Token is required; Invalid token: the reason; User not found.',
        403: "You don't have access to this instance.",
        404: 'Instance not found.',
      },
    },
  ],
];

// ---- The document ----

const DESCRIPTION = `Control plane of tunnelward, which supervises frpc tunnel-client instances.

Every HTTP response is the envelope \`{"success": bool, "message": string, "data"?: ...}\` (except /metrics and this document); a failure is \`{"success": false, "message": ...}\` with the HTTP status each operation lists.

Authentication: \`X-Timestamp\` (Unix time in ms, within ${DEFAULTS.timestampWindowMs} ms of the server clock) and \`X-Token\` (from /login) headers, as each operation's security says. Instead of \`X-Token\`, a personal API key (/apiKeyMgr/create) may be sent as \`Authorization: Bearer twk_...\`: it acts as its owner with its own role scope, expiry and rate limit, and still needs \`X-Timestamp\`. Roles: superuser > admin > visitor; each operation states its access level in its description and in \`x-access\` (public, timestamp, visitor, admin, superuser). Rate limits (settings RateLimit.*): by default 100 requests per minute per token, 5 /login and 30 /register per minute per IP; past a limit, 429 with Retry-After.

GET parameters are read from the query string, then from an \`X-<name>\` header. POST bodies are JSON objects (Content-Type: application/json, at most ${DEFAULTS.jsonLimit}, nested at most ${DEFAULTS.jsonMaxDepth} levels). Ids are accepted as integers or strings holding one.

Paths are exact and case-sensitive: another case, a trailing or doubled slash, or a path no route serves is a 404 (\`no such endpoint: ...\`); a method a path does not take is a 405 with Allow.

The WebSocket streams are listed as GET operations with \`x-websocket: true\` and a 101 response; their messages are described by \`x-websocket-messages\`.`;

/** The OpenAPI 3.1 document of the whole API, as plain data. */
export function openApiDocument(info: Pick<SoftwareInfo, 'Version'> = loadSoftwareInfo()): Json {
  const paths: Record<string, Json> = {};
  for (const [method, path, op] of [...declaredOperations().map(declared), ...ROUTES])
    paths[path] = { ...paths[path], [method]: operation(method, path, op) };
  for (const [path, stream] of STREAMS) paths[path] = { ...paths[path], get: streamOperation(path, stream) };
  return {
    openapi: '3.1.0',
    info: {
      title: 'tunnelward',
      version: info.Version,
      description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/', description: 'the daemon that serves this document' }],
    tags: [
      { name: 'system', description: 'Status, software info, restart, self-check, metrics, this document' },
      { name: 'accounts', description: 'Registration, login, logout' },
      { name: 'users', description: 'User management' },
      { name: 'sessions', description: 'Login sessions' },
      { name: 'apiKeys', description: 'Personal API keys: long-lived credentials for machines' },
      { name: 'settings', description: 'Persisted settings' },
      { name: 'instances', description: 'frpc instances: records, config files, lifecycle' },
      { name: 'proxies', description: 'The [[proxies]] entries of an instance config file' },
      { name: 'streams', description: 'WebSocket log and event streams' },
    ],
    paths,
    components: {
      schemas: { ...SCHEMAS, ...NAMED_SCHEMAS },
      responses: RESPONSES,
      parameters: {
        InstanceID: {
          name: 'instanceID',
          in: 'query',
          required: true,
          description: 'The instance (also accepted as an X-instanceID header).',
          schema: str(undefined, { pattern: ID_STRING_PATTERN }),
        },
      },
      securitySchemes: {
        Token: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Token',
          description: 'The token from /login; valid for 1 hour, or until logout or session removal.',
        },
        Timestamp: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Timestamp',
          description: `The request time in Unix milliseconds (an integer); refused when more than ${DEFAULTS.timestampWindowMs} ms from the server clock.`,
        },
        ApiKey: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'twk_<id>_<secret>',
          description:
            'A personal API key from /apiKeyMgr/create, as Authorization: Bearer <key>; never together with X-Token.',
        },
        TokenQuery: {
          type: 'apiKey',
          in: 'query',
          name: 'token',
          description: 'The token from /login, for the WebSocket streams.',
        },
      },
    },
  };
}

let serialized: string | undefined;

/** The document as JSON, serialized once. */
export function openApiJson(): string {
  serialized ??= JSON.stringify(openApiDocument());
  return serialized;
}
