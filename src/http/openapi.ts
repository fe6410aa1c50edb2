import { DEFAULTS } from '../settings/defaults.js';
import { MAX_TRUSTED_PROXIES, PORT_STRING_PATTERN } from '../settings/schema.js';
import { ID_STRING_PATTERN, MAX_IDS } from './params.js';
import { loadSoftwareInfo, type SoftwareInfo } from '../system/software-info.js';
import type { Access } from './auth.js';
import { CLOSE, SEQ_PATTERN } from './log-streams.js';

/**
 * The OpenAPI 3.1 description of the HTTP API, written by hand: every route of `listRoutes(app)` and the three
 * WebSocket streams. `test/http/openapi.test.ts` checks it against the routes the app really serves.
 */

type Json = Record<string, unknown>;

// ---- Small builders, so that the schemas below read like the data they describe ----

const schema = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const str = (description?: string, more: Json = {}): Json => ({ type: 'string', ...described(description), ...more });
const int = (description?: string, more: Json = {}): Json => ({ type: 'integer', ...described(description), ...more });
const num = (description?: string, more: Json = {}): Json => ({ type: 'number', ...described(description), ...more });
const bool = (description?: string): Json => ({ type: 'boolean', ...described(description) });
const dateTime = (description?: string): Json => str(description, { format: 'date-time' });
const arrayOf = (items: Json, description?: string): Json => ({ type: 'array', items, ...described(description) });
const described = (description?: string): Json => (description ? { description } : {});
/** An object of any keys, each value as `values` says (any value when left out). */
const mapOf = (description: string, values?: Json, more: Json = {}): Json => ({
  type: 'object',
  description,
  ...(values ? { additionalProperties: values } : {}),
  ...more,
});

/** An object schema. As in TypeScript, a property whose name ends in `?` is optional; every other one is required. */
function obj(properties: Record<string, Json>, more: Json = {}): Json {
  const entries = Object.entries(properties).map(([key, value]) => [key.replace(/\?$/, ''), value] as const);
  const required = Object.keys(properties).filter((key) => !key.endsWith('?'));
  return {
    type: 'object',
    ...(required.length > 0 ? { required } : {}),
    properties: Object.fromEntries(entries),
    ...more,
  };
}

// ---- Shared schemas ----

const USER_TYPES = ['superuser', 'admin', 'visitor'];
const INSTANCE_STATES = ['stopped', 'starting', 'running', 'stopping', 'backoff', 'failed'];
const INIT_SYSTEMS = ['process', 'systemd', 'init.d', 'windows'];
const CONFIG_FORMATS = ['toml', 'ini', 'yaml', 'json'];

/** What any operation that reads an instance's config file answers when the file was removed behind tunnelward. */
const CONFIG_MISSING = 'Its config file is missing (removed outside tunnelward): restore it, or delete the instance.';

const ABSOLUTE_PATH = 'an absolute path of letters, digits and _ . / + @ : , = - (no .. segment)';
const SUPERUSER_SETS = 'a superuser sets it';
const COMMAND =
  'a command: an absolute path, or a program name looked up on PATH; an executable file owned by root and writable by neither group nor others, in directories that are the same (checked when set and before each use); a superuser sets it';
const secondsFrom = (min: number, max: number, description: string) =>
  num(`${description} (seconds)`, { minimum: min, maximum: max });
const intFrom = (min: number, max: number, description: string) => int(description, { minimum: min, maximum: max });

/** Every persisted setting, under its flat name; /settings/get shows them all, /settings/set takes any of them. */
const SETTINGS: Record<string, Json> = {
  ListenAddr: str('IP address or host name the HTTP API listens on; applies at the next start'),
  ListenPort: str('port the HTTP API listens on (1-65535), as a string; applies at the next start', {
    pattern: PORT_STRING_PATTERN,
  }),
  TunnelPath: str(`the frpc binary: ${COMMAND}`),
  InstancePath: str(`directory of the instance config files: ${ABSOLUTE_PATH}; ${SUPERUSER_SETS}`),
  Debug: bool('DEBUG entries in the system log'),
  'Watchdog.Enabled': bool('restart crashed tunnels'),
  'Watchdog.Port': intFrom(0, 65535, 'kept for the contract; 0: the watchdog runs inside the daemon'),
  'Watchdog.BackoffSecs': secondsFrom(0.01, 3600, 'delay before the second restart in a row; it doubles'),
  'Watchdog.BackoffMaxSecs': secondsFrom(0.01, 86400, 'cap of the restart delay'),
  'Watchdog.StartLimit': intFrom(1, 1000, 'crashes in a row before an instance is failed'),
  'Watchdog.StableSecs': secondsFrom(0.01, 86400, 'uptime that resets the crash count'),
  'Watchdog.NoRetryExitCodes': arrayOf(
    int(undefined, { minimum: 0, maximum: 255 }),
    'exit codes during a start that make the instance failed at once',
  ),
  'Instance.StartSecs': secondsFrom(0, 600, 'a start succeeds once the tunnel stayed up this long'),
  'Instance.StopTimeoutSecs': secondsFrom(0.01, 3600, 'SIGTERM, then SIGKILL after this'),
  'Notification.Enabled': bool('send events to the webhook'),
  'Notification.Method': str('how notifications are sent', { enum: ['webhook'] }),
  'Webhook.Method': str('HTTP method of the webhook request', { enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] }),
  'Webhook.URL': str('http(s) URL of the webhook, or empty', {
    pattern: '^(?:[hH][tT][tT][pP][sS]?://[^\\x00-\\x20\\x7f]+)?$',
  }),
  'Webhook.Headers': mapOf(
    'header name to value; /settings/get shows every value as ******** and sending the mask back keeps the stored value',
    str(),
  ),
  'Webhook.Body': mapOf(
    'body template: {{field}} placeholders are filled from the event; empty sends the event itself',
  ),
  'Webhook.TimeoutSecs': secondsFrom(0.1, 120, 'each delivery attempt gives up after this'),
  'Webhook.Retries': intFrom(0, 20, 'attempts after the first, on network errors and 5xx only'),
  'Alerts.DebounceSecs': secondsFrom(0, 3600, 'a proxy or connection change is announced once it held this long'),
  'Status.PollSecs': secondsFrom(1, 86400, "how often a running tunnel's proxy status is read when its log is quiet"),
  'Log.MaxBytes': intFrom(256, 1024 * 1024 * 1024, 'an instance log is rotated before it passes this size'),
  'Log.Files': intFrom(1, 100, 'rotated log files kept per instance'),
  InitSystem: str('what runs the tunnels; applies at the next start', { enum: ['auto', ...INIT_SYSTEMS] }),
  'Systemd.UnitDir': str(`${ABSOLUTE_PATH}; ${SUPERUSER_SETS}`),
  'Systemd.Systemctl': str(COMMAND),
  'Systemd.Journalctl': str(COMMAND),
  'InitD.ScriptDir': str(`${ABSOLUTE_PATH}; ${SUPERUSER_SETS}`),
  'InitD.UpdateRcD': str(COMMAND),
  'InitD.PidDir': str(`${ABSOLUTE_PATH}; ${SUPERUSER_SETS}`),
  'InitD.LogDir': str(`${ABSOLUTE_PATH}; ${SUPERUSER_SETS}`),
  'Windows.Schtasks': str(COMMAND),
  'RateLimit.Login': intFrom(1, 1_000_000, '/login requests per minute per IP'),
  'RateLimit.PerToken': intFrom(1, 1_000_000, 'requests per minute per token'),
  'RateLimit.Register': intFrom(1, 1_000_000, '/register requests per minute per IP'),
  'Register.Enabled': autoOrBool('whether /register is open'),
  'SystemLog.RequireToken': autoOrBool('whether /system/getLogs needs a token', 'needed off loopback only'),
  'Visitor.ShowDetails': autoOrBool(
    'whether visitors see local addresses and ports, config paths and run-as users, and may export config files',
  ),
  'TLS.CertFile': str(
    `the certificate (PEM, chain after it) HTTPS and WSS are served with; '' for plain HTTP; ${ABSOLUTE_PATH}; re-read on SIGHUP and on a change`,
  ),
  'TLS.KeyFile': str(`its private key; '' for plain HTTP; ${ABSOLUTE_PATH}`),
  TrustedProxies: {
    ...arrayOf(
      str('an IP address or a CIDR'),
      "reverse proxies whose X-Forwarded-For is believed (for rate limits, logs and the audit trail); nobody else's is",
    ),
    maxItems: MAX_TRUSTED_PROXIES,
  },
  'Audit.RetentionDays': intFrom(1, 3650, 'audit entries older than this many days are removed'),
  'Audit.MaxEntries': intFrom(100, 10_000_000, 'the oldest audit entries past this count are removed'),
};

/** A door the contract opens: "auto" keeps it open on loopback and closes it on any other listen address. */
function autoOrBool(what: string, auto = 'open on loopback, closed off loopback'): Json {
  return {
    description: `${what}: true, false, or "auto" (${auto})`,
    oneOf: [bool(), str(undefined, { const: 'auto' })],
  };
}

const ID_INPUT = {
  description: 'An id: an integer, or a string holding one (the contract sends ids as strings).',
  oneOf: [
    int(undefined, { minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
    str(undefined, { pattern: ID_STRING_PATTERN }),
  ],
};

const SCHEMAS: Record<string, Json> = {
  // The envelope
  Envelope: obj(
    {
      success: bool('true when the operation succeeded'),
      message: str('what happened, for a person to read'),
      'data?': { description: 'the result; absent for operations that have none' },
    },
    { description: 'Every HTTP response body except those of /metrics and /openapi.json.' },
  ),
  Done: {
    description: 'Success without data.',
    allOf: [schema('Envelope'), obj({ 'success?': { const: true } }, { not: { required: ['data'] } })],
  },
  Failure: obj({ success: { const: false }, message: str('why, naming the field or resource at fault') }),
  Id: ID_INPUT,

  // System
  SystemStatus: obj({ Status: str(undefined, { enum: ['Online'] }) }),
  SoftwareInfo: obj({
    Name: str(),
    Version: str(),
    Developer: str(),
    BuildVer: int('an int16', { minimum: 0, maximum: 32767 }),
    Description: str(),
    BuildType: str(undefined, { enum: ['debug', 'release'] }),
  }),
  CheckResult: obj({
    name: str('what was checked'),
    ok: bool(),
    severity: str('ok; warn for a problem the daemon works on with; fail for one it does not', {
      enum: ['ok', 'warn', 'fail'],
    }),
    message: str('what was found'),
  }),
  SelfCheck: obj({ ok: bool('true when every check passed'), checks: arrayOf(schema('CheckResult')) }),

  // Accounts, users, sessions
  UserType: str('Roles, highest first: superuser > admin > visitor.', { enum: USER_TYPES }),
  Username: str('3-32 characters of A-Z a-z 0-9 _ . -, unique ignoring case', { minLength: 3, maxLength: 32 }),
  Password: str(
    '8-256 characters with an uppercase letter, a lowercase letter, a digit and one of !@#$%^&*()_+-=[]{}|;:,.<>?',
    { minLength: 8, maxLength: 256 },
  ),
  Credentials: obj({ username: schema('Username'), passwd: schema('Password'), 'type?': schema('UserType') }),
  Account: obj({ userID: int(), username: str(), type: schema('UserType') }),
  LoginResult: obj({
    token: str('send it as X-Token; valid for 1 hour, or until logout or session removal'),
    userID: int(),
    username: str(),
    type: schema('UserType'),
    expireAt: dateTime('when the token expires (ISO 8601)'),
  }),
  WhoAmI: obj({
    userID: int(),
    username: str(),
    type: schema('UserType'),
    expireAt: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'when the token (or API key) stops working; null for a key without an expiry',
    },
    'sessionID?': str('with a token: the session it belongs to (as /sessionMgr/list shows it)'),
    'keyID?': str('with an API key: its public id'),
    'keyName?': str('with an API key: its name'),
  }),
  ApiKeyName: str("1-64 characters of A-Z a-z 0-9 _ . -, unique among the owner's keys ignoring case", {
    minLength: 1,
    maxLength: 64,
  }),
  ApiKey: obj({
    keyID: str('the public id: the middle part of the key, never secret'),
    name: schema('ApiKeyName'),
    userID: int('the owner'),
    username: str(),
    role: {
      ...schema('UserType'),
      description: "the highest role the key acts with; the owner's own role caps it too",
    },
    ratePerMinute: int('requests per minute (the per-token limit unless set)'),
    createdAt: dateTime(),
    createdBy: str('the owner, or the superuser who created it for them'),
    expiresAt: { type: ['string', 'null'], format: 'date-time', description: 'null: it never expires' },
    lastUsedAt: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'the last request made with it (kept on disk to the minute); null: never used',
    },
  }),
  NewApiKey: {
    allOf: [
      schema('ApiKey'),
      obj({
        key: str('the key, `twk_<id>_<secret>`: shown in this reply only; send it as Authorization: Bearer <key>', {
          pattern: '^twk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$',
        }),
      }),
    ],
  },
  User: obj({
    UserID: int(),
    Username: str(),
    Passwd: str('always empty', { const: '' }),
    Type: schema('UserType'),
    CreatedAt: str('YYYY-MM-DD HH:MM:SS', { pattern: '^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}$' }),
  }),
  Session: obj({ ID: str(), UserID: int(), Username: str(), ExpireAt: dateTime() }),

  // Settings
  Settings: obj(SETTINGS, {
    description: 'Every setting under its flat name (dots included).',
    additionalProperties: false,
  }),
  SettingsPatch: {
    type: 'object',
    properties: SETTINGS,
    description:
      'Any settings to change, several per request. Every key is checked first: an invalid value is a 400 naming it, and nothing changes. A key tunnelward does not know is logged as a warning and ignored (a 400 with ?strict=true).',
  },
  Setting: obj({ key: str(), value: { description: 'the value, of the type the Settings schema gives the key' } }),

  // Instances
  InstanceState: str(
    'stopped; starting (spawned, not yet up for Instance.StartSecs); running; stopping; backoff (crashed, the watchdog restarts it); failed (given up, only a manual start leaves it)',
    { enum: INSTANCE_STATES },
  ),
  LastExit: obj({
    code: int(undefined, { type: ['integer', 'null'] }),
    signal: str(undefined, { type: ['string', 'null'] }),
    at: dateTime(),
  }),
  InstanceRuntime: obj(
    {
      state: schema('InstanceState'),
      pid: int('the process id while it has one (starting, running, stopping)', { type: ['integer', 'null'] }),
      'startedAt?': dateTime('while running: when its process started'),
      'uptimeSecs?': int('while running', { minimum: 0 }),
      restarts: int('automatic restarts since the last start by an operator', { minimum: 0 }),
      lastExit: { description: 'the last end of its process', oneOf: [schema('LastExit'), { type: 'null' }] },
      'nextStartAt?': dateTime('in backoff: when the watchdog starts it again'),
      connected: {
        description: 'logged in to its server, as frpc says; null while not running or not yet known',
        type: ['boolean', 'null'],
      },
      proxyStatus: mapOf(
        'how many of its proxies are in each status frpc reports, e.g. {"running": 2, "start error": 1}',
        int(undefined, { minimum: 0 }),
      ),
    },
    { description: 'What every view of an instance shows of its process, beside its record.' },
  ),
  Labels: mapOf(
    'labels of the instance, key to value: a key is [prefix/]name (name 1-63 letters, digits, "-", "_", "." starting and ending with a letter or digit; prefix a DNS subdomain), a value empty or like a name; at most 64',
    str(undefined, { maxLength: 63 }),
  ),
  InstanceSummary: {
    allOf: [
      obj({
        instanceID: int(),
        name: str(),
        createdAt: dateTime(),
        createdBy: str('username of the creator'),
        bootAtStart: bool('started at boot'),
        labels: schema('Labels'),
        isRunning: bool('state is running'),
        'cpuPercent?': num(
          'while running: the share of one core its process used (100 = one core) since the previous list at least a second before, or since it started; read from /proc at most once a second',
          { minimum: 0 },
        ),
        'rssBytes?': int('while running: its resident memory, from /proc', { minimum: 0 }),
      }),
      schema('InstanceRuntime'),
    ],
  },
  InstanceStatus: {
    allOf: [
      obj({
        name: str(),
        initSystem: str('what runs the tunnels', { enum: INIT_SYSTEMS }),
        'serviceName?': str('the service name (absent on Windows)'),
        isRunning: bool('state is running'),
      }),
      schema('InstanceRuntime'),
    ],
  },
  InstanceInfo: {
    allOf: [
      obj({
        instanceID: int(),
        name: str(),
        serviceName: str(),
        createdAt: dateTime(),
        createdBy: str(),
        isRunning: bool(),
        auth_method: str('auth.method of the config file'),
        bootAtStart: bool(),
        labels: schema('Labels'),
        'runUser?': str('left out for a visitor while Visitor.ShowDetails hides details'),
        'configPath?': str('left out for a visitor while Visitor.ShowDetails hides details'),
        'serverAddr?': str('admin and superuser only'),
        'serverPort?': str('admin and superuser only'),
        'environment?': mapOf(
          'admin and superuser only: the names of its environment variables, each value shown as ********',
          str(undefined, { const: '********' }),
        ),
      }),
      schema('InstanceRuntime'),
    ],
  },
  InstanceCreateRequest: obj({
    instanceInfo: obj({
      name: str('1-64 characters, each a letter, a digit, "_", "." or "-"; unique'),
      serverAddr: str('frps address'),
      serverPort: str('frps port'),
      auth_method: str('auth.method towards frps'),
    }),
    'bootAtStart?': bool('start at boot (default false)'),
    'runUser?': str('operating-system user the tunnel runs as (default root)'),
    'labels?': schema('Labels'),
    'additionalProperties?': mapOf(
      "frpc's top-level config keys, nested or dotted; an unknown key or a wrong type is a 400 naming it",
    ),
  }),
  BootServiceFailure: obj(
    {
      'bootServiceError?': str('what failed when creating or removing the boot service'),
      'instanceName?': str(),
    },
    { description: 'Present only when a boot-service operation failed; the request still succeeded.' },
  ),
  InstanceCreated: {
    allOf: [
      obj({ instanceID: int(), name: str(), configPath: str(), bootAtStart: bool(), labels: schema('Labels') }),
      schema('BootServiceFailure'),
    ],
  },
  InstanceDeleted: obj({ instanceID: int(), name: str(), logKept: bool('whether its log was left in place') }),
  InstanceModifyRequest: {
    description: 'One of three kinds of change, chosen by type.',
    oneOf: [
      obj({
        instanceID: schema('Id'),
        type: { const: 'configFile' },
        modifiedData: mapOf(
          "frpc's top-level keys (server, auth, transport, log, ...), nested or dotted; null removes a key. Proxies are untouched.",
        ),
      }),
      obj({
        instanceID: schema('Id'),
        type: { const: 'systemConfig' },
        modifiedData: obj(
          { 'name?': str(), 'bootAtStart?': bool(), 'runUser?': str() },
          {
            additionalProperties: false,
          },
        ),
      }),
      obj({
        instanceID: schema('Id'),
        type: { const: 'environment' },
        modifiedData: mapOf(
          'environment variable NAME to its value (write-only), or null to remove it; the config file reads them as {{ .Envs.NAME }}',
          { type: ['string', 'null'] },
          { minProperties: 1 },
        ),
      }),
      obj({
        instanceID: schema('Id'),
        type: { const: 'labels' },
        modifiedData: mapOf(
          'label key to its new value, or null to remove it (the Labels rules); the others stay as they are',
          { type: ['string', 'null'] },
          { minProperties: 1 },
        ),
      }),
    ],
  },
  InstanceModified: {
    description: 'What the change did, by the type of the request.',
    oneOf: [
      obj(
        {
          instanceID: int(),
          configPath: str(),
          applied: str('a running tunnel is restarted to apply it', { enum: ['restart', 'on next start'] }),
        },
        { title: 'configFile' },
      ),
      {
        title: 'systemConfig',
        allOf: [
          obj({ instanceID: int(), configPath: str(), bootAtStart: bool(), runUser: str() }),
          schema('BootServiceFailure'),
        ],
      },
      obj(
        {
          instanceID: int(),
          environment: mapOf('its variables, each value shown as ********', str(undefined, { const: '********' })),
        },
        { title: 'environment' },
      ),
      obj({ instanceID: int(), labels: schema('Labels') }, { title: 'labels' }),
    ],
  },
  InstanceCommandRequest: {
    description:
      'One instance (instanceID, the contract form), or many (instanceIDs, or all: true); exactly one of them.',
    ...obj({
      'instanceID?': schema('Id'),
      'instanceIDs?': { ...arrayOf(schema('Id'), 'repeated ids count once'), minItems: 1, maxItems: MAX_IDS },
      'all?': { const: true, description: 'every instance' },
    }),
    oneOf: [{ required: ['instanceID'] }, { required: ['instanceIDs'] }, { required: ['all'] }],
  },
  CommandResult: obj({
    instanceID: int(),
    name: str('null for an id that names no instance', { type: ['string', 'null'] }),
    ok: bool('it succeeded, or it was already as asked'),
    state: {
      description: 'its state now; null for an id that names no instance',
      oneOf: [schema('InstanceState'), { type: 'null' }],
    },
    unchanged: bool('it was already as asked (start of a running one, stop of a stopped one): ok, nothing done'),
    message: str('what happened to it'),
  }),
  BulkCommandResult: obj({
    ok: int('instances whose command succeeded, those already as asked included'),
    failed: int('instances whose command failed'),
    unchanged: int('of the ok ones, those already as asked'),
    results: arrayOf(schema('CommandResult')),
  }),
  CommandOutcome: {
    description: 'An empty object for the one-instance form; the outcome of each for the many-instance forms.',
    oneOf: [{ type: 'object', maxProperties: 0 }, schema('BulkCommandResult')],
  },
  InstanceImportRequest: obj({
    name: str('name of the new instance'),
    content: str('the text of an frpc config file'),
    'format?': str('guessed from the content when omitted', { enum: CONFIG_FORMATS }),
    'bootAtStart?': bool('start at boot (default false)'),
    'runUser?': str('operating-system user the tunnel runs as (default root)'),
    'labels?': schema('Labels'),
  }),
  InstanceImported: {
    allOf: [
      obj({
        instanceID: int(),
        name: str(),
        configPath: str(),
        format: str('the format the content was read as', { enum: CONFIG_FORMATS }),
        proxyCount: int('[[proxies]] imported', { minimum: 0 }),
        visitorCount: int('[[visitors]] imported', { minimum: 0 }),
        bootAtStart: bool(),
        labels: schema('Labels'),
      }),
      schema('BootServiceFailure'),
    ],
  },
  InstanceExport: obj({
    instanceID: int(),
    name: str(),
    format: str(undefined, { const: 'toml' }),
    content: str("the config file in frpc's current TOML, without tunnelward's own admin endpoint (webServer)"),
    masked: bool('whether secrets were replaced by ********'),
    version: str('the version of the file (a short hash of what it says); replaceConfig takes it as baseVersion'),
  }),
  InstanceReplaceConfigRequest: obj({
    instanceID: schema('Id'),
    content: str(
      "the whole config file as TOML (an export, edited); a secret left as ******** keeps its value, and webServer stays tunnelward's",
    ),
    'baseVersion?': str('the version the edit started from (export gives it): a file changed since then is a 409'),
    'dryRun?': bool('check and show the diff, write nothing'),
  }),
  InstanceConfigReplaced: obj({
    instanceID: int(),
    configPath: str(),
    changed: bool('false when the text says what the file already said: nothing was written'),
    applied: str(
      'how the change reached the tunnel: frpc reload (only proxies or visitors changed), a restart (top-level settings changed), at its next start (not running); unchanged, or not applied (dry run)',
      { enum: ['reload', 'restart', 'on next start', 'unchanged', 'not applied'] },
    ),
    diff: str('unified diff of the file (secrets masked as in export); empty when nothing changed'),
    version: str('the version of the file now'),
    notes: arrayOf(str(), 'what was kept or changed other than as written (webServer, log.to)'),
  }),

  // Proxies
  Applied: str('how the change reached the tunnel: frpc reload, a restart, or at its next start', {
    enum: ['reload', 'restart', 'on next start'],
  }),
  Proxy: obj(
    {
      name: str('identifies the proxy inside its instance'),
      type: str('tcp, udp, http, https, tcpmux, stcp, sudp or xtcp'),
      localIP: str("'' when absent"),
      localPort: str("'' when absent"),
      remotePort: str("'' when absent"),
      enabled: bool(),
    },
    {
      description:
        'A [[proxies]] entry of the config file; every other key frpc knows for its type follows, nested as in the file, secrets shown as ********.',
      additionalProperties: true,
    },
  ),
  ListedProxy: {
    allOf: [
      schema('Proxy'),
      obj(
        {
          status: str('as frpc reports it: running, start error, check failed, wait start, new, closed', {
            type: ['string', 'null'],
          }),
          err: str("frpc's error, or ''"),
          'remoteAddr?': str("address and port on the server (tcp, udp), or ''; admin and superuser only"),
          statusSince: str('since when it has that status', { type: ['string', 'null'], format: 'date-time' }),
        },
        { description: "null/empty while the tunnel does not run or before frpc's status is known" },
      ),
    ],
  },
  ProxyList: obj({
    instanceID: int(),
    proxyCount: int(),
    proxies: arrayOf({ oneOf: [schema('ListedProxy'), schema('GuestProxy')] }),
    visitorCount: int(),
    visitors: arrayOf(
      { oneOf: [schema('Visitor'), schema('GuestVisitor')] },
      'the [[visitors]] of the file, read-only',
    ),
  }),
  Visitor: obj(
    {
      name: str(),
      type: str('stcp, sudp or xtcp'),
      serverName: str('the proxy it reaches'),
      serverUser: str("the user of that proxy, '' for the same user"),
      bindAddr: str("where it listens; '' when absent (frpc binds 127.0.0.1)"),
      bindPort: str("'' when absent"),
      enabled: bool(),
    },
    { description: 'A [[visitors]] entry of the config file; its secretKey is never shown.' },
  ),
  GuestVisitor: obj(
    { name: str(), type: str(), enabled: bool() },
    {
      description: 'What a visitor is shown of a visitor while Visitor.ShowDetails is off: these fields and no other.',
      additionalProperties: false,
    },
  ),
  GuestProxy: obj(
    {
      name: str(),
      type: str(),
      enabled: bool(),
      status: { type: ['string', 'null'] },
      err: str(),
      statusSince: { type: ['string', 'null'], format: 'date-time' },
    },
    {
      description:
        'What a visitor sees of a proxy while Visitor.ShowDetails hides details: these fields and no other (no address, no port).',
      additionalProperties: false,
    },
  ),
  AuditEntry: obj({
    id: int('pages back with before=<id>'),
    at: dateTime(),
    userID: { type: ['integer', 'null'] },
    username: str("who: the session's user, or the name a login or registration was tried with"),
    ip: str('from where: the client, as TrustedProxies lets it be known'),
    action: str('what: instance.create, instance.start, proxy.modify, settings.set, user.create, login, ...'),
    targetType: {
      type: ['string', 'null'],
      description: 'instance, proxy, user, session, apiKey, settings or service',
    },
    targetID: { type: ['string', 'null'] },
    targetName: { type: ['string', 'null'] },
    detail: {
      type: ['object', 'null'],
      description: 'facts safe to keep: the keys changed (never their values), the kind of modification',
    },
    status: int('the HTTP status of the reply'),
    outcome: str(undefined, { enum: ['ok', 'failed'] }),
    message: str("the reply's message"),
  }),
  AuditPage: obj({
    entries: arrayOf(schema('AuditEntry'), 'newest first'),
    nextBefore: { type: ['integer', 'null'], description: 'before= for the next (older) page; null on the last' },
  }),
  ProxyInfo: obj(
    {
      'name?': str(),
      'type?': str(),
      'localIP?': str(),
      'localPort?': { type: ['string', 'integer'] },
      'remotePort?': { type: ['string', 'integer'] },
      'enabled?': {
        description: 'true or false, also as the strings "true" and "false" (as every frpc boolean here)',
        oneOf: [bool(), str(undefined, { enum: ['true', 'false'] })],
      },
    },
    {
      description:
        'A proxy: name and type (required to create), and any key frpc accepts for its type, nested or dotted; in a modify, a key left out keeps its value and null removes it. Ports are integers or strings holding them, booleans true/false or "true"/"false". Unknown keys and wrong types are a 400 naming them.',
      additionalProperties: true,
    },
  ),
  ProxyCreateRequest: obj({ instanceID: schema('Id'), proxyInfo: schema('ProxyInfo') }),
  ProxyModifyRequest: obj(
    {
      instanceID: schema('Id'),
      proxyInfo: schema('ProxyInfo'),
      'oldName?': str('the proxy to modify, when it is renamed (also accepted inside proxyInfo)'),
      'newName?': str('its new name (also accepted inside proxyInfo)'),
    },
    { description: 'proxyInfo.name selects the proxy, unless oldName is given.' },
  ),
  ProxyDeleteRequest: obj({ instanceID: schema('Id'), proxyName: str() }),
  ProxySetStatusRequest: obj({ instanceID: schema('Id'), proxyName: str(), enabled: bool() }),
  ProxyEdited: obj({ instanceID: int(), configPath: str(), proxyName: str(), applied: schema('Applied') }),

  // Streams
  LogEntry: obj({
    content: str(),
    timestamp: str('YYYY-MM-DD HH:MM:SS.mmm', {
      pattern: '^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}\\.\\d{3}$',
    }),
  }),
  SystemLogEntry: {
    allOf: [
      schema('LogEntry'),
      obj({ level: int('0 DEBUG, 1 INFO, 2 WARNING, 3 ERROR, 4 FATAL', { minimum: 0, maximum: 4 }) }),
    ],
  },
  InstanceLogEntry: {
    allOf: [schema('LogEntry'), obj({ level: str(undefined, { enum: ['DEBUG', 'INFO', 'WARN', 'ERROR'] }) })],
  },
  Event: obj({
    event: str(undefined, {
      enum: [
        'instance.state',
        'instance.started',
        'instance.stopped',
        'instance.crashed',
        'instance.restarting',
        'instance.failed',
        'instance.created',
        'instance.modified',
        'instance.deleted',
        'instance.bootServiceError',
        'instance.logFailed',
        'instance.logRecovered',
        'instance.connected',
        'instance.disconnected',
        'instance.status',
        'proxy.up',
        'proxy.down',
        'service.started',
        'service.stopping',
      ],
    }),
    instanceID: int(undefined, { type: ['integer', 'null'] }),
    name: str(),
    from: str('state before', { type: ['string', 'null'] }),
    to: str('state after (for proxy.up/down: the proxy status)', { type: ['string', 'null'] }),
    exitCode: int(undefined, { type: ['integer', 'null'] }),
    signal: str(undefined, { type: ['string', 'null'] }),
    'attempt?': int('instance.restarting: crashes in a row'),
    'delayMs?': int('instance.restarting: delay before the next start'),
    'message?': str('what happened (bootServiceError, logFailed, logRecovered, modified)'),
    'proxy?': str('proxy.up, proxy.down: which proxy'),
    'err?': str("proxy.down: frpc's error"),
    'connected?': {
      type: ['boolean', 'null'],
      description: 'instance.status: logged in to its server (null: not running or not known)',
    },
    'proxyStatus?': mapOf('instance.status: how many of its proxies are in each status', int()),
    at: dateTime(),
    seq: int('one counter, persisted, shared with the webhooks; only goes up'),
  }),
  EventsStart: obj(
    {
      event: { const: 'events.start' },
      lastSeq: int('the seq of the latest event'),
      'replayed?': int('with since: how many missed events follow'),
      'lost?': { const: true, description: 'with since: some missed events are no longer kept; read the list again' },
      'oldestKept?': int(undefined, { type: ['integer', 'null'] }),
      'message?': str(),
    },
    { description: 'The first message of /system/events: where the stream stands.' },
  ),
};

// ---- Responses ----

const ERRORS: Record<number, { name: string; description: string; headers?: Json }> = {
  400: {
    name: 'BadRequest',
    description: `Invalid request: a missing or malformed field, or a body that is not a JSON object (malformed JSON, nested deeper than ${DEFAULTS.jsonMaxDepth} levels, a lone surrogate); the message names what is wrong.`,
  },
  401: {
    name: 'Unauthorized',
    description: `X-Timestamp missing or more than ${DEFAULTS.timestampWindowMs} ms from the server clock; or X-Token missing, unknown, revoked or expired; or an API key unknown, revoked or expired, or sent together with X-Token; or wrong credentials.`,
  },
  403: { name: 'Forbidden', description: "The caller's role is below what the operation needs." },
  404: { name: 'NotFound', description: 'What the request names does not exist.' },
  405: {
    name: 'MethodNotAllowed',
    description: 'The path does not take this method; Allow lists the ones it takes.',
    headers: { Allow: { schema: str() } },
  },
  409: { name: 'Conflict', description: 'The request conflicts with the current state; the message names with what.' },
  413: { name: 'PayloadTooLarge', description: `The body is larger than ${DEFAULTS.jsonLimit}.` },
  415: { name: 'UnsupportedMediaType', description: 'A body that is not application/json.' },
  429: {
    name: 'TooManyRequests',
    description: 'Rate limited; Retry-After says in how many seconds to try again.',
    headers: { 'Retry-After': { schema: int(undefined, { minimum: 1 }) } },
  },
  500: {
    name: 'InternalError',
    description:
      'An internal failure (never with a stack trace); a change may be made but not yet saved, as the message says.',
  },
  503: { name: 'ServiceUnavailable', description: 'Too many streams are open; try again later.' },
};

const failureContent = { 'application/json': { schema: schema('Failure') } };

const RESPONSES = Object.fromEntries(
  Object.values(ERRORS).map(({ name, description, headers }) => [
    name,
    { description, ...(headers ? { headers } : {}), content: failureContent },
  ]),
);

const envelopeOf = (data: Json): Json => ({
  allOf: [schema('Envelope'), obj({ 'success?': { const: true }, data })],
});

/** A 200 in the envelope, with `data` when the operation has some. */
function ok(description: string, data?: Json): Json {
  return {
    description,
    content: { 'application/json': { schema: data === undefined ? schema('Done') : envelopeOf(data) } },
  };
}

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

function operation(method: 'get' | 'post', path: string, op: Operation): Json {
  const statuses = new Set([...commonStatuses(method, op.access), ...Object.keys(op.errors ?? {}).map(Number)]);
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
  // System
  [
    'get',
    '/system/getStatus',
    { tag: 'system', summary: 'Whether the service is up', access: 'public', ok: ok('Online', schema('SystemStatus')) },
  ],
  [
    'get',
    '/system/getSoftwareInfo',
    {
      tag: 'system',
      summary: 'Name, version and build of the software',
      access: 'public',
      ok: ok('The software info', schema('SoftwareInfo')),
    },
  ],
  [
    'post',
    '/system/restart',
    {
      tag: 'system',
      summary: 'Restart the daemon',
      description:
        'Replies, then a new daemon process with the same arguments takes over; tunnels keep running. No body is needed.',
      access: 'admin',
      ok: ok('Restarting'),
    },
  ],
  [
    'get',
    '/system/selfCheck',
    {
      tag: 'system',
      summary: 'Check the settings, the data and instance dirs, and the frpc binary',
      access: 'admin',
      ok: ok('Each check and its outcome; the message counts the problems', schema('SelfCheck')),
    },
  ],
  [
    'get',
    '/system/audit',
    {
      tag: 'system',
      summary: 'The audit trail',
      description:
        'Every state-changing request (who, from where, what, which object, outcome, when), newest first. Refusals that name nobody (a missing or invalid token, a rate limit) are not recorded; failed logins are. Bounded by Audit.RetentionDays and Audit.MaxEntries.',
      access: 'superuser',
      query: [
        auditParam('user', 'the username'),
        auditParam('action', 'an action, or a prefix ending in a dot (instance.)'),
        auditParam('instanceID', 'entries about this instance', { pattern: '^[0-9]{1,15}$' }),
        auditParam('targetType', 'instance, proxy, user, session, apiKey, settings or service'),
        auditParam('targetID', 'the id of the object'),
        auditParam('outcome', 'ok or failed', { enum: ['ok', 'failed'] }),
        auditParam('ip', 'the client address'),
        auditParam('since', 'from this time on: Unix ms or ISO 8601'),
        auditParam('until', 'up to this time: Unix ms or ISO 8601'),
        auditParam('before', 'entries older than this id (nextBefore of the previous page)', {
          pattern: '^[0-9]{1,15}$',
        }),
        auditParam('limit', 'entries per page, 1-1000 (100 when omitted)', { pattern: '^[0-9]{1,4}$' }),
      ],
      ok: ok('A page of entries', schema('AuditPage')),
      errors: { 400: 'A filter or paging parameter is malformed.' },
    },
  ],
  [
    'get',
    '/metrics',
    {
      tag: 'system',
      summary: 'Prometheus metrics',
      description: 'The Prometheus text format (not in the envelope); every value is read at scrape time.',
      access: 'admin',
      ok: {
        description: 'Metrics in the Prometheus text exposition format',
        content: { 'text/plain; version=0.0.4': { schema: str() } },
      },
    },
  ],
  [
    'get',
    '/openapi.json',
    {
      tag: 'system',
      summary: 'This document',
      description: 'The OpenAPI 3.1 description of the API, as it is (not in the envelope).',
      access: 'public',
      ok: {
        description: 'The OpenAPI document',
        content: { 'application/json': { schema: obj({ openapi: str() }) } },
      },
    },
  ],

  // Accounts
  [
    'post',
    '/register',
    {
      tag: 'accounts',
      summary: 'Create a visitor account for yourself',
      description:
        'Always creates a visitor: another type asked for is not granted, and the message says so. Limited per IP (RateLimit.Register).',
      access: 'timestamp',
      body: schema('Credentials'),
      ok: ok('Registered', schema('Account')),
      errors: {
        400: 'A missing field, a username or password that breaks the rules, or an unknown type.',
        403: 'Self-registration is closed (Register.Enabled; closed by default off loopback).',
        409: 'The username is taken.',
        429: 'Too many registrations from this address, or too many password hashes at once.',
      },
    },
  ],
  [
    'post',
    '/login',
    {
      tag: 'accounts',
      summary: 'Log in and get a token',
      description: 'Limited per IP (RateLimit.Login). A failure takes the same time whether or not the user exists.',
      access: 'timestamp',
      body: obj({ username: str(), passwd: str() }),
      ok: ok('Logged in', schema('LoginResult')),
      errors: {
        400: 'username or passwd missing.',
        401: 'Invalid username or password, or a bad X-Timestamp.',
        429: 'Too many logins from this address, or too many password checks at once.',
      },
    },
  ],
  [
    'get',
    '/whoami',
    {
      tag: 'accounts',
      summary: 'Who the token belongs to, and until when',
      access: 'visitor',
      description:
        "With an API key: the key's owner with the role the key acts with, and the key's id, name and expiry.",
      ok: ok('The user and the expiry of the session or key', schema('WhoAmI')),
    },
  ],
  [
    'get',
    '/logout',
    {
      tag: 'accounts',
      summary: 'End your session',
      access: 'visitor',
      ok: ok('Logged out; the token stops working'),
      errors: { 400: 'Called with an API key, which has no session: revoke the key instead.' },
    },
  ],

  // Users
  [
    'post',
    '/userMgr/create',
    {
      tag: 'users',
      summary: 'Create a user',
      access: 'superuser',
      body: schema('Credentials'),
      ok: ok('Created (type defaults to visitor)', schema('Account')),
      errors: {
        400: 'A missing field, a username or password that breaks the rules, or an unknown type.',
        409: 'The username is taken.',
        429: 'Too many requests for this token, or too many password hashes at once.',
      },
    },
  ],
  [
    'post',
    '/userMgr/remove',
    {
      tag: 'users',
      summary: "Remove a user, end that user's sessions and revoke that user's API keys",
      access: 'superuser',
      body: obj({ targetUserID: schema('Id') }),
      ok: ok('Removed'),
      errors: { 404: 'No such user.', 409: 'The last superuser cannot be removed.' },
    },
  ],
  [
    'post',
    '/userMgr/modify',
    {
      tag: 'users',
      summary: 'Change a username and/or password',
      description:
        "Yourself only; a superuser may modify anyone. A new password ends the user's other sessions and revokes all of the user's API keys. Not with an API key: a password login is needed.",
      access: 'visitor',
      body: obj(
        { userID: schema('Id'), 'username?': schema('Username'), 'passwd?': schema('Password') },
        {
          description: 'At least one of username and passwd.',
        },
      ),
      ok: ok('Modified'),
      errors: {
        400: 'userID missing, nothing to modify, or a username or password that breaks the rules.',
        403: "Another user's account, and the caller is not a superuser; or the caller used an API key.",
        404: 'No such user.',
        409: 'The new username is taken.',
        429: 'Too many requests for this token, or too many password hashes at once.',
      },
    },
  ],
  [
    'post',
    '/userMgr/modifyType',
    {
      tag: 'users',
      summary: "Change a user's role",
      description: "The user's API keys act with the lower of their own scope and the new role.",
      access: 'superuser',
      body: obj({ userID: schema('Id'), newType: schema('UserType') }),
      ok: ok('Changed'),
      errors: { 404: 'No such user.', 409: 'The last superuser cannot be demoted.' },
    },
  ],
  [
    'get',
    '/userMgr/list',
    { tag: 'users', summary: 'List users', access: 'superuser', ok: ok('Every user', arrayOf(schema('User'))) },
  ],

  // Sessions
  [
    'get',
    '/sessionMgr/list',
    {
      tag: 'sessions',
      summary: 'List active sessions',
      access: 'admin',
      ok: ok('Every active session', arrayOf(schema('Session'))),
    },
  ],
  [
    'post',
    '/sessionMgr/remove',
    {
      tag: 'sessions',
      summary: 'End a session; its token stops working at once',
      access: 'superuser',
      body: obj({ sessionID: str() }),
      ok: ok('Removed'),
      errors: { 404: 'No such session.' },
    },
  ],

  // API keys
  [
    'post',
    '/apiKeyMgr/create',
    {
      tag: 'apiKeys',
      summary: 'Create a personal API key',
      description:
        "For yourself; a superuser for anyone (userID). The key is in this reply only: the service keeps a SHA-256 hash of it. Its role defaults to the lower of the creator's and the owner's, and may be neither above the creator's nor above the owner's. Needs a password login: an API key cannot create keys. A ratePerMinute above the per-token limit (RateLimit.PerToken) needs a superuser.",
      access: 'visitor',
      body: obj(
        {
          name: schema('ApiKeyName'),
          'userID?': { ...schema('Id'), description: 'the owner; yourself when left out' },
          'role?': schema('UserType'),
          'expiresIn?': int('seconds until it expires; never when left out', {
            minimum: 1,
            maximum: DEFAULTS.apiKeyMaxLifetimeSecs,
          }),
          'ratePerMinute?': int('requests per minute; the per-token limit when left out', {
            minimum: 1,
            maximum: 1_000_000,
          }),
        },
        { additionalProperties: false },
      ),
      ok: ok('Created; the key is shown this once', schema('NewApiKey')),
      errors: {
        400: "A missing or unknown field, a bad name, expiry or rate, or a role above the owner's.",
        403: "A role above your own; another user's key and the caller is not a superuser; or called with an API key.",
        404: 'No such user.',
        409: `The owner has a key of that name, or already ${DEFAULTS.apiKeysPerUser} keys.`,
      },
    },
  ],
  [
    'get',
    '/apiKeyMgr/list',
    {
      tag: 'apiKeys',
      summary: "A user's API keys, without their secrets",
      description: 'Your own; a superuser may name any user. Expired keys are listed until revoked.',
      access: 'visitor',
      query: [
        {
          name: 'userID',
          in: 'query',
          required: false,
          description: 'whose keys (also accepted as an X-userID header); yourself when left out',
          schema: str(undefined, { pattern: ID_STRING_PATTERN }),
        },
      ],
      ok: ok('The keys, oldest first', arrayOf(schema('ApiKey'))),
      errors: {
        400: 'userID not a positive integer.',
        403: "Another user's keys, and the caller is not a superuser.",
        404: 'No such user.',
      },
    },
  ],
  [
    'post',
    '/apiKeyMgr/revoke',
    {
      tag: 'apiKeys',
      summary: 'Revoke an API key; it stops working at once',
      description:
        "Your own, or any for a superuser; by keyID, or by name (with userID for another user's key). A key may revoke itself. Streams opened with it close with 4401.",
      access: 'visitor',
      body: obj(
        {
          'keyID?': str('the public id of the key'),
          'name?': schema('ApiKeyName'),
          'userID?': { ...schema('Id'), description: 'the owner, with name; yourself when left out' },
        },
        { additionalProperties: false, description: 'keyID, or name.' },
      ),
      ok: ok('Revoked', obj({ keyID: str(), name: str(), userID: int() })),
      errors: {
        400: 'Neither or both of keyID and name, or an unknown field.',
        403: "Another user's key by name, and the caller is not a superuser.",
        404: "No such key (another user's key id is unknown to anyone but a superuser).",
      },
    },
  ],

  // Settings
  [
    'get',
    '/settings/get',
    {
      tag: 'settings',
      summary: 'Read every setting, or one',
      description: 'Values of Webhook.Headers are shown as ********.',
      access: 'admin',
      query: [
        {
          name: 'key',
          in: 'query',
          required: false,
          description: 'One setting to read (also accepted as an X-key header); every setting when omitted.',
          schema: str(undefined, { enum: Object.keys(SETTINGS) }),
        },
      ],
      ok: ok('Without key: every setting; with key: that one', {
        oneOf: [schema('Settings'), schema('Setting')],
      }),
      errors: { 404: 'Unknown setting key: <key>.' },
    },
  ],
  [
    'post',
    '/settings/set',
    {
      tag: 'settings',
      summary: 'Change settings',
      description:
        'The file is written atomically, then the change applies; ListenAddr, ListenPort and InitSystem take effect at the next start, as the message says.',
      access: 'admin',
      query: [
        {
          name: 'strict',
          in: 'query',
          required: false,
          description:
            'true: an unknown key fails the request (400) and nothing changes; otherwise, as the contract says, it is logged as a warning and ignored, and the message names it.',
          schema: str(undefined, { enum: ['true', 'false'] }),
        },
      ],
      body: schema('SettingsPatch'),
      ok: ok(
        'Saved: the message names the settings changed, and each unknown key ignored with the key it most likely meant',
      ),
      errors: {
        400: 'An invalid value or a null, a program setting that is not an executable file only root can change (the message says which path and why), or with strict=true an unknown key (with the key it most likely meant); the message names the key.',
        403: 'An admin changing a setting that names a program tunnelward runs or a directory where it writes what it runs: a superuser only.',
        500: 'Failed to save config: nothing changed.',
      },
    },
  ],

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
  [
    'post',
    '/tunnelAct/proxyMgr/create',
    {
      tag: 'proxies',
      summary: 'Add a proxy to an instance',
      description: 'A running tunnel applies it by frpc reload; if frpc refuses, the file is put back (400).',
      access: 'admin',
      body: schema('ProxyCreateRequest'),
      ok: ok('Added', schema('ProxyEdited')),
      errors: {
        400: 'A missing or invalid key, or frpc refused the reload.',
        404: NO_INSTANCE,
        409: 'The name exists, or the remote port, domain or name is held by a proxy of this or another instance on the same server.',
        500: 'The change is made but the restart that applies it failed.',
      },
    },
  ],
  [
    'post',
    '/tunnelAct/proxyMgr/modify',
    {
      tag: 'proxies',
      summary: 'Change (and maybe rename) a proxy',
      description:
        'Keys left out keep their value; null removes one. A listed proxy sent back as it is modifies cleanly.',
      access: 'admin',
      body: schema('ProxyModifyRequest'),
      ok: ok('Modified', schema('ProxyEdited')),
      errors: {
        400: 'No proxy named, an invalid key, or frpc refused the reload.',
        404: 'No such instance or proxy.',
        409: 'The new name, remote port or domain is held by another proxy.',
        500: 'The change is made but the restart that applies it failed.',
      },
    },
  ],
  [
    'post',
    '/tunnelAct/proxyMgr/delete',
    {
      tag: 'proxies',
      summary: 'Remove a proxy',
      access: 'admin',
      body: schema('ProxyDeleteRequest'),
      ok: ok('Removed', schema('ProxyEdited')),
      errors: {
        400: 'A missing field, or frpc refused the reload.',
        404: 'No such instance or proxy.',
        500: 'The change is made but the restart that applies it failed.',
      },
    },
  ],
  [
    'post',
    '/tunnelAct/proxyMgr/setStatus',
    {
      tag: 'proxies',
      summary: 'Enable or disable a proxy (frpc enabled = false)',
      access: 'admin',
      body: schema('ProxySetStatusRequest'),
      ok: ok('Changed', { allOf: [schema('ProxyEdited'), obj({ enabled: bool() })] }),
      errors: {
        400: 'A missing field, enabled not a boolean, or frpc refused the reload.',
        404: 'No such instance or proxy.',
        409: 'Enabling it would clash with another proxy.',
        500: 'The change is made but the restart that applies it failed.',
      },
    },
  ],
  [
    'get',
    '/tunnelAct/proxyMgr/list',
    {
      tag: 'proxies',
      summary: "An instance's proxies, from its config file, with frpc's live status",
      access: 'visitor',
      query: [instanceIdParam],
      ok: ok('Its proxies', schema('ProxyList')),
      errors: { 400: BAD_ID, 404: NO_INSTANCE, 409: CONFIG_MISSING },
    },
  ],
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
  const refusals: Partial<Record<number, string | undefined>> = { ...stream.refusals, 500: undefined, 503: undefined };
  for (const status of Object.keys(refusals)
    .map(Number)
    .sort((a, b) => a - b)) {
    responses[String(status)] = errorResponse(status, refusals[status]);
  }
  return {
    tags: ['streams'],
    summary: stream.summary,
    description: `${stream.description}\n\nA WebSocket: connect with an Upgrade request (a plain GET is a 404). Instead of ?token=, an API key may be sent as Authorization: Bearer <key> on the upgrade request (never in the query string). Every check happens before the upgrade; a refusal is an ordinary HTTP response in the envelope. Close codes:\n${closeCodes}\n\nAccess: ${stream.access}: ${stream.who}.`,
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

function auditParam(name: string, description: string, more: Json = {}): Json {
  return { name, in: 'query', required: false, description, schema: str(undefined, more) };
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
  for (const [method, path, op] of ROUTES) paths[path] = { ...paths[path], [method]: operation(method, path, op) };
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
      schemas: SCHEMAS,
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
