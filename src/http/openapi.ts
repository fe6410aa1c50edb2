import { DEFAULTS } from '../settings/defaults.js';
import { loadSoftwareInfo, type SoftwareInfo } from '../system/software-info.js';
import type { Access } from './auth.js';
import { CLOSE, SEQ_PATTERN } from './log-streams.js';
import { jsonSchemaOf, NAMED_SCHEMAS, queryParameters, type Operation } from './operation.js';
import { ID_STRING_PATTERN } from './params.js';
import { componentSchemas, ERRORS, RESPONSES, schema, str, type Json } from './openapi-schemas.js';
import { declaredOperations } from './routes/operations.js';
import { NOT_RESERVED } from '../util/reserved-keys.js';
import { ACCESS_RULES, type InstanceAction } from '../accounts/access.js';
import { API_KEY_SCOPE_RULES, API_KEY_SCOPES, type ApiKeyScope } from '../accounts/rules.js';

/**
 * The OpenAPI 3.1 description of the HTTP API: every operation the routes declare (src/http/operation.ts), and the
 * three WebSocket streams. `test/daemon/http/openapi.test.ts` checks it against the
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

/** The statuses an operation may answer because of its method and access level alone. */
function commonStatuses(method: 'get' | 'post', access: Access): number[] {
  const statuses = [500];
  if (method === 'post') statuses.push(400, 413, 415);
  if (access !== 'public') statuses.push(401);
  // A caller's role may be too low, or its API key scoped to less than the operation (a metrics key elsewhere).
  if (access === 'visitor' || access === 'admin' || access === 'superuser') statuses.push(403, 429);
  return statuses;
}

function errorResponse(status: number, description?: string): Json {
  const known = ERRORS[status];
  if (!known) throw new Error(`no response component for status ${status}`);
  return { $ref: `#/components/responses/${known.name}`, ...(description ? { description } : {}) };
}

/** The access rule on the instance an operation or a stream names, as its description ends. */
const instanceRule = (action: InstanceAction | undefined) =>
  action ? `; on the instance: ${ACCESS_RULES[action]} (403 otherwise)` : '';

/** An API key scope that may call the operation beside an `all` key, as its description ends. */
const keyScopeRule = (scope: ApiKeyScope | undefined) =>
  scope ? `; or an API key of the ${scope} scope (${API_KEY_SCOPE_RULES[scope]})` : '';

const operationId = (path: string) =>
  path
    .slice(1)
    .replace(/^tunnelAct\//, '')
    .replaceAll('/', '.');

/** A declared operation as the document shows it: its schemas turned into JSON Schema. */
function operation(op: Operation): Json {
  const parameters = op.query ? queryParameters(op.query) : [];
  const statuses = new Set([...commonStatuses(op.method, op.access), ...Object.keys(op.errors ?? {}).map(Number)]);
  // A parameter may be malformed, or given twice.
  if (parameters.length > 0) statuses.add(400);
  const responses: Json = { '200': op.ok };
  for (const status of [...statuses].sort((a, b) => a - b)) {
    responses[String(status)] = errorResponse(status, op.errors?.[status]);
  }
  return {
    tags: [op.tag],
    summary: op.summary,
    description: `${op.description ? `${op.description}\n\n` : ''}Access: ${ACCESS_TEXT[op.access]}${instanceRule(op.instanceAccess)}${keyScopeRule(op.keyScope)}.`,
    operationId: operationId(op.path),
    'x-access': op.access,
    ...(op.instanceAccess ? { 'x-instance-access': op.instanceAccess } : {}),
    // A key of the operation's own scope needs no X-Timestamp.
    security: op.keyScope ? [...SECURITY[op.access], { ApiKey: [] }] : SECURITY[op.access],
    ...(op.keyScope ? { 'x-api-key-scope': op.keyScope } : {}),
    ...(op.query ? { parameters } : {}),
    ...(op.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchemaOf(op.body) } } } }
      : {}),
    responses,
  };
}

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
  /** What following it does to the instance it names, which the access rule judges beyond the role (see may). */
  instanceAccess?: InstanceAction;
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
    // Every stream takes a credential (optional on the system log): an upgrade with one counts as one request.
    403: stream.refusals[403] ?? 'An API key scoped to less than every route its role allows (a metrics key).',
    429: "The token or API key is past its rate limit (RateLimit.PerToken, or the key's own); Retry-After says when to try again.",
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
    description: `${stream.description}\n\nA WebSocket: connect with an Upgrade request (a plain GET is a 426, another method a 405). Instead of ?token=, an API key may be sent as Authorization: Bearer <key> on the upgrade request (never in the query string). Every check happens before the upgrade; a refusal is an ordinary HTTP response in the envelope. Close codes:\n${closeCodes}\n\nAccess: ${stream.access}: ${stream.who}${instanceRule(stream.instanceAccess)}.`,
    operationId: operationId(path),
    'x-websocket': true,
    'x-access': stream.access,
    ...(stream.instanceAccess ? { 'x-instance-access': stream.instanceAccess } : {}),
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
        "The last lines of the instance's log first (from the rotated file too when the live one is shorter), then each new line as the tunnel writes it, across restarts and rotations. Each line the daemon read in its current run carries its seq; with since=<the last seq seen>, the lines after it come first instead (those the files still hold, at most 1000), or, for a seq of an earlier run of the daemon, every line of this run.",
      access: 'visitor',
      who: 'a logged-in user, with the token in ?token=',
      instanceAccess: 'logs',
      tokenRequired: true,
      query: [
        {
          name: 'instanceID',
          in: 'query',
          required: true,
          schema: str(undefined, { pattern: ID_STRING_PATTERN }),
        },
        ...replayQuery(String(DEFAULTS.streamReplayLines), 1000),
        {
          name: 'since',
          in: 'query',
          required: false,
          description: 'The last seq the client saw (lines is then not used).',
          schema: str(undefined, { pattern: SEQ_PATTERN }),
        },
      ],
      messages: schema('InstanceLogEntry'),
      refusals: {
        400: 'instanceID is required; invalid instanceID format; lines or follow malformed; since must be a log seq (an integer).',
        401: 'Token is required; Invalid token: the reason; User not found.',
        403: `You don't have access to this instance: only ${ACCESS_RULES.logs} may follow its log.`,
        404: 'Instance not found.',
      },
    },
  ],
];

// ---- The document ----

const DESCRIPTION = `Control plane of tunnelward, which supervises frpc tunnel-client instances.

Every HTTP response is the envelope \`{"success": bool, "message": string, "data"?: ...}\` (except /metrics and this document); a failure is \`{"success": false, "message": ...}\` with the HTTP status each operation lists.

Authentication: \`X-Timestamp\` (Unix time in ms, within ${DEFAULTS.timestampWindowMs} ms of the server clock) and \`X-Token\` (from /login) headers, as each operation's security says. Instead of \`X-Token\`, a personal API key (/apiKeyMgr/create) may be sent as \`Authorization: Bearer twk_...\`: it acts as its owner with its own role, expiry and rate limit, and still needs \`X-Timestamp\`. A key's scope (\`x-api-key-scope\`) narrows what it may call: ${API_KEY_SCOPES.map((scope) => `${scope}: ${API_KEY_SCOPE_RULES[scope]}`).join('; ')}. Roles: superuser > admin > visitor; each operation states its access level in its description and in \`x-access\` (public, timestamp, visitor, admin, superuser). Rate limits (settings RateLimit.*): by default 100 requests per minute per token, 5 /login and 30 /register per minute per IP; past a limit, 429 with Retry-After.

GET parameters are read from the query string, then from an \`X-<name>\` header. POST bodies are JSON objects (Content-Type: application/json; Content-Encoding gzip, deflate or br if compressed; at most ${DEFAULTS.jsonLimit} decompressed, nested at most ${DEFAULTS.jsonMaxDepth} levels; no key, at any depth, named as every object's own properties are: ${NOT_RESERVED.not.enum.map((key) => `\`${key}\``).join(', ')}). Ids are accepted as integers or strings holding one.

Paths are exact and case-sensitive: another case, a trailing or doubled slash, or a path no route serves is a 404 (\`no such endpoint: ...\`); a method a path does not take is a 405 with Allow.

The WebSocket streams are listed as GET operations with \`x-websocket: true\` and a 101 response; their messages are described by \`x-websocket-messages\`.`;

/** The OpenAPI 3.1 document of the whole API, as plain data. */
export function openApiDocument(info: Pick<SoftwareInfo, 'Version'> = loadSoftwareInfo()): Json {
  const paths: Record<string, Json> = {};
  for (const op of declaredOperations()) paths[op.path] = { ...paths[op.path], [op.method]: operation(op) };
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
      schemas: { ...componentSchemas(), ...NAMED_SCHEMAS },
      responses: RESPONSES,
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
