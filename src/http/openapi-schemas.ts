import { API_KEY_SCOPE_RULES, API_KEY_SCOPES } from '../accounts/rules.js';
import { HEALTH_STATES } from '../instances/health.js';
import { DEFAULTS } from '../settings/defaults.js';
import { INSTANCE_NAME, ONLY_DIGITS } from '../../actors/instance-catalogue.js';
import { IMPORT_FORMATS } from '../config/import-formats.js';
import { PROXY_NAME } from '../config/proxy-edit.js';
import { frpcComponentSchemas } from '../config/key-schema.js';
import { LABEL_KEY_PATTERN, LABEL_VALUE_PATTERN, MAX_LABELS } from '../instances/labels.js';
import { z } from 'zod';
import { SETTING_KEYS, settingDocument } from '../settings/table.js';
import { jsonSchemaOf } from './operation.js';
import { ID_STRING_PATTERN, MAX_IDS } from './params.js';
import { NOT_RESERVED } from '../util/reserved-keys.js';

/**
 * The pieces of the OpenAPI document that operations share: the component schemas of what the API answers, the
 * error responses, and small builders that make a schema read like the data it describes.
 */

export type Json = Record<string, unknown>;

// ---- Small builders, so that the schemas below read like the data they describe ----

export const schema = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
export const str = (description?: string, more: Json = {}): Json => ({
  type: 'string',
  ...described(description),
  ...more,
});
export const int = (description?: string, more: Json = {}): Json => ({
  type: 'integer',
  ...described(description),
  ...more,
});
export const num = (description?: string, more: Json = {}): Json => ({
  type: 'number',
  ...described(description),
  ...more,
});
export const bool = (description?: string): Json => ({ type: 'boolean', ...described(description) });
export const dateTime = (description?: string): Json => str(description, { format: 'date-time' });
export const arrayOf = (items: Json, description?: string): Json => ({
  type: 'array',
  items,
  ...described(description),
});
const described = (description?: string): Json => (description ? { description } : {});
/** An object of any keys, each value as `values` says (any value when left out). */
export const mapOf = (description: string, values?: Json, more: Json = {}): Json => ({
  type: 'object',
  description,
  additionalProperties: values ?? true,
  ...more,
});

/** An object schema. As in TypeScript, a property whose name ends in `?` is optional; every other one is required. */
export function obj(properties: Record<string, Json>, more: Json = {}): Json {
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

/** What any operation that reads an instance's config file answers when the file was removed behind tunnelward. */
export const CONFIG_MISSING =
  'Its config file is missing (removed outside tunnelward): restore it, or delete the instance.';

/** Every persisted setting, under its flat name, as its table entry declares it (src/settings/table.ts). */
const settingsDocument = (): Record<string, Json> =>
  Object.fromEntries(SETTING_KEYS.map((key) => [key, settingDocument(key, jsonSchemaOf)]));

/** A body the handler and the config check field by field, as the named component documents it. */
export const documentedBy = (component: string) =>
  z.looseObject({}).meta({ $ref: `#/components/schemas/${component}` });

export const NO_INSTANCE = 'No instance with that id.';

/** What every view of an instance shows of its expiries (src/instances/expiry.ts), each only when set. */
const EXPIRY_VIEW: Record<string, Json> = {
  'expiresAt?': dateTime('when it is stopped by itself (and taken off boot); absent when it does not expire'),
  'proxyExpiries?': mapOf(
    'when each of its proxies that has an expiry is disabled by itself, by proxy name',
    dateTime(),
  ),
};
/** A change that the running tunnel could not take: put back, file and tunnel, and said why. */
export const APPLY_FAILED =
  'The tunnel did not come up with the new file (the restart that applies it ended in an exit): the file was put back as it was, the tunnel restarted on it, and the message says both.';

const ID_INPUT = {
  description: 'An id: an integer, or a string holding one (the contract sends ids as strings).',
  oneOf: [
    int(undefined, { minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
    str(undefined, { pattern: ID_STRING_PATTERN }),
  ],
};

/** The component schemas, built when the document is (not at start-up: the settings' come from zod). */
export function componentSchemas(): Record<string, Json> {
  const SETTINGS = settingsDocument();
  return {
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
    SystemSummary: obj(
      {
        version: str('the software version (SoftwareInfo.Version)'),
        startedAt: dateTime('when this daemon process started'),
        uptimeSecs: int('seconds since then', { minimum: 0 }),
        tunnels: schema('HealthCounts'),
      },
      { description: 'One host at a glance: what a fleet view shows of it.' },
    ),
    CheckResult: obj({
      name: str('what was checked'),
      ok: bool(),
      severity: str('ok; warn for a problem the daemon works on with; fail for one it does not', {
        enum: ['ok', 'warn', 'fail'],
      }),
      message: str('what was found'),
    }),
    SelfCheck: obj({
      ok: bool('true when every check passed'),
      checks: arrayOf(schema('CheckResult')),
      counts: obj(
        { tunnels: schema('HealthCounts'), proxies: schema('HealthCounts') },
        { description: "the instances and every proxy of their files, by health (a disabled proxy's is stopped)" },
      ),
    }),

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
      scope: str(
        `what it may be used for: ${API_KEY_SCOPES.map((scope) => `${scope}, ${API_KEY_SCOPE_RULES[scope]}`).join('; ')}`,
        { enum: [...API_KEY_SCOPES] },
      ),
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
        'lastError?': str(
          "resting after a run or a start that ended (backoff, failed, stopped by itself): why, as the exit and the tunnel's last lines or the spawn's refusal (a missing environment variable) said it",
        ),
        connected: {
          description: 'logged in to its server, as frpc says; null while not running or not yet known',
          type: ['boolean', 'null'],
        },
        proxyStatus: mapOf(
          'how many of its proxies are in each status frpc reports, e.g. {"running": 2, "start error": 1}',
          int(undefined, { minimum: 0 }),
        ),
        health: schema('Health'),
        healthRestarts: int(
          'restarts the health policy made (Health.DisconnectedSecs) since tunnelward started, counted apart from `restarts`',
          { minimum: 0 },
        ),
        proxyHealth: schema('HealthCounts'),
      },
      { description: 'What every view of an instance shows of its process, beside its record.' },
    ),
    HealthCounts: obj(Object.fromEntries(HEALTH_STATES.map((state) => [state, int(undefined, { minimum: 0 })])), {
      description:
        "How many are in each health state (each proxy's health: a tunnel down makes every enabled proxy of it down; in an instance's view, its enabled proxies)",
    }),
    InstancePolicy: obj(
      {
        'disconnectedSecs?': num('its own Health.DisconnectedSecs'),
        'unreachableSecs?': num('its own Health.UnreachableSecs'),
        'memoryMaxMB?': int('its own Instance.MemoryMaxMB'),
      },
      {
        description:
          "An instance's own supervision figures over the settings (systemConfig policy); each absent follows its setting.",
        additionalProperties: false,
      },
    ),
    Health: obj(
      {
        state: {
          type: 'string',
          enum: [...HEALTH_STATES],
          description:
            'up: running, logged in, every proxy running; degraded: some proxies not running; down: meant to run and carrying nothing (starting, restarting, not logged in, no proxy running); stopped; failed: the watchdog gave up',
        },
        reason: str(
          'why it is not up, in words taken from what frpc said (login refused: ..., server unreachable: dial tcp ..., proxy web: start error: port already used, the exit that made the watchdog give up); null when up or stopped',
          { type: ['string', 'null'] },
        ),
        since: str('since when this answer holds, as this tunnelward saw it (null: not known)', {
          type: ['string', 'null'],
          format: 'date-time',
        }),
      },
      { description: 'Is the tunnel up, and if not, why: the one answer every view shows.' },
    ),
    Labels: mapOf(
      `labels of the instance, key to value: a key is [prefix/]name (name 1-63 letters, digits, "-", "_", "." starting and ending with a letter or digit; prefix a DNS subdomain), a value empty or like a name; at most ${MAX_LABELS}`,
      str(undefined, { pattern: LABEL_VALUE_PATTERN }),
      { propertyNames: { pattern: LABEL_KEY_PATTERN, maxLength: 317, ...NOT_RESERVED }, maxProperties: MAX_LABELS },
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
          ...EXPIRY_VIEW,
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
          queued: int('commands and changes of the instance queued or running: they run one at a time, in order', {
            minimum: 0,
          }),
          revision: int('the revision of its config file it stands at (0: none recorded yet)', { minimum: 0 }),
          ...EXPIRY_VIEW,
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
          probes: bool('its proxies are probed end to end while it runs (systemConfig probes)'),
          policy: schema('InstancePolicy'),
          labels: schema('Labels'),
          revision: int('the revision of its config file it stands at; changes take it as baseRevision', {
            minimum: 0,
          }),
          ...EXPIRY_VIEW,
          access: obj(
            {
              operate: bool('may start, stop and restart it'),
              change: bool('may change (and delete) it: its owner or a superuser'),
              secrets: bool('reads its secrets in clear'),
              logs: bool('may follow its log'),
            },
            { description: 'what the caller may do to it (the access rule)' },
          ),
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
    InstanceModified: {
      description: 'What the change did, by the type of the request.',
      oneOf: [
        {
          title: 'configFile',
          allOf: [
            obj({ instanceID: int(), configPath: str(), diff: str('unified diff of the file (secrets masked)') }),
            schema('ChangeOutcome'),
          ],
        },
        {
          title: 'systemConfig',
          allOf: [
            obj({
              instanceID: int(),
              configPath: str(),
              bootAtStart: bool(),
              runUser: str(),
              probes: bool(),
              policy: schema('InstancePolicy'),
              'expiresAt?': {
                type: ['string', 'null'],
                format: 'date-time',
                description: 'when the request set expires: when it expires now (null: it does not)',
              },
            }),
            schema('BootServiceFailure'),
          ],
        },
        obj(
          {
            instanceID: int(),
            environment: mapOf('its variables, each value shown as ********', str(undefined, { const: '********' })),
            'dryRun?': bool('true when the change was checked only: nothing changed'),
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
    InstanceImported: {
      allOf: [
        obj({
          instanceID: int(),
          name: str(),
          configPath: str(),
          format: str('the format the content was read as', { enum: [...IMPORT_FORMATS] }),
          proxyCount: int('[[proxies]] imported', { minimum: 0 }),
          visitorCount: int('[[visitors]] imported', { minimum: 0 }),
          bootAtStart: bool(),
          labels: schema('Labels'),
        }),
        schema('BootServiceFailure'),
      ],
    },
    InstanceImportChecked: obj({
      name: str(),
      format: str('the format the content was read as', { enum: [...IMPORT_FORMATS] }),
      proxyCount: int('[[proxies]] it would import', { minimum: 0 }),
      visitorCount: int('[[visitors]] it would import', { minimum: 0 }),
      notes: arrayOf(str(), 'what would be changed in it (webServer, loginFailExit, log.to)'),
      dryRun: { type: 'boolean', const: true },
      verify: obj({ verified: bool(), 'skipped?': str() }),
    }),
    InstanceExport: obj({
      instanceID: int(),
      name: str(),
      format: str(undefined, { const: 'toml' }),
      content: str("the config file in frpc's current TOML, without tunnelward's own admin endpoint (webServer)"),
      masked: bool('whether secrets were replaced by ********'),
      version: str('the version of the file (a short hash of what it says); replaceConfig takes it as baseVersion'),
      revision: int('the revision the instance stands at; every change takes it as baseRevision', { minimum: 0 }),
    }),
    InstanceConfigReplaced: {
      allOf: [
        obj({
          instanceID: int(),
          configPath: str(),
          changed: bool('false when the text says what the file already said: nothing was written'),
          diff: str('unified diff of the file (secrets masked as in export); empty when nothing changed'),
          version: str('the version of the file now'),
        }),
        schema('ChangeOutcome'),
      ],
    },
    ChangeOutcome: obj({
      applied: str(
        'how the change reached the tunnel: frpc reload (only proxies or visitors changed), a restart (top-level settings changed), at its next start (not running); unchanged, or not applied (dry run)',
        { enum: ['reload', 'restart', 'on next start', 'unchanged', 'not applied'] },
      ),
      plan: obj({
        action: str('none, file only, reload or restart', { enum: ['none', 'file only', 'reload', 'restart'] }),
        reason: str('why, in words'),
      }),
      revision: int('the revision the instance stands at now (the new one when the change made one)', { minimum: 0 }),
      dryRun: bool('true when nothing was written or applied: the answer says what would happen'),
      verify: obj({
        verified: bool('whether the real frpc verify accepted the new file'),
        'skipped?': str('why frpc verify was not asked (TunnelPath not usable, or nothing changed)'),
      }),
      notes: arrayOf(str(), 'what was kept or changed other than as written (webServer, log.to), or what to know'),
      'observed?': mapOf('after a reload: the status frpc reports for each proxy it added or changed', str()),
    }),
    Revision: obj({
      revision: int(undefined, { minimum: 1 }),
      at: dateTime(),
      by: str('the user who made it; tunnelward for a file it found changed on disk'),
      'apiKey?': str('the API key it came through'),
      kind: str(
        'what kind of change: create, import, config.set, config.replace, proxy.create, proxy.modify, proxy.rename, proxy.delete, proxy.enable, proxy.disable, rollback, found',
      ),
      request: { type: 'object', description: 'what was asked: names and keys, never a value' },
      plan: str(undefined, { enum: ['none', 'file only', 'reload', 'restart'] }),
      reason: str(),
      outcome: str(),
      version: str('the version of the file it made'),
      current: bool('whether the instance stands at it now'),
    }),
    RevisionList: obj({
      instanceID: int(),
      current: int('the revision the instance stands at (0: none recorded yet)', { minimum: 0 }),
      total: int('revisions kept (Revisions.Keep bounds them)', { minimum: 0 }),
      revisions: arrayOf(schema('Revision'), 'newest first'),
    }),
    RevisionShown: {
      allOf: [
        schema('Revision'),
        obj({
          instanceID: int(),
          content: str(
            "its config file, without tunnelward's admin endpoint; secrets masked unless the caller is a superuser",
          ),
          masked: bool(),
        }),
      ],
    },
    RevisionDiff: obj({
      instanceID: int(),
      from: int(undefined, { minimum: 1 }),
      to: { oneOf: [int(undefined, { minimum: 1 }), str('the file as it is now', { const: 'live' })] },
      diff: str('unified diff; empty when the two are the same'),
      masked: bool(),
    }),

    // Proxies
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
            health: schema('Health'),
            status: str('as frpc reports it: running, start error, check failed, wait start, new, closed', {
              type: ['string', 'null'],
            }),
            err: str("frpc's error, or ''"),
            'remoteAddr?': str("address and port on the server (tcp, udp), or ''; admin and superuser only"),
            statusSince: str('since when it has that status', { type: ['string', 'null'], format: 'date-time' }),
            'expiresAt?': dateTime('when it is disabled by itself (setExpiry); absent when it does not expire'),
          },
          { description: "null/empty while the tunnel does not run or before frpc's status is known" },
        ),
      ],
    },
    ProxyExpirySet: obj({
      instanceID: int(),
      proxyName: str(),
      expiresAt: { type: ['string', 'null'], format: 'date-time', description: 'null: it does not expire' },
    }),
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
        description:
          'What a visitor is shown of a visitor while Visitor.ShowDetails is off: these fields and no other.',
        additionalProperties: false,
      },
    ),
    GuestProxy: obj(
      {
        name: str(),
        type: str(),
        enabled: bool(),
        health: schema('Health'),
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
    ...frpcComponentSchemas(),
    ProxyCreateRequest: obj({ instanceID: schema('Id'), proxyInfo: schema('ProxyInfo') }),
    ProxyModifyRequest: obj(
      {
        instanceID: schema('Id'),
        proxyInfo: schema('ProxyChanges'),
        'oldName?': {
          ...schema('ProxyName'),
          description: 'the proxy to modify, when it is renamed (also accepted inside proxyInfo)',
        },
        'newName?': { ...schema('ProxyName'), description: 'its new name (also accepted inside proxyInfo)' },
      },
      {
        description: 'proxyInfo.name selects the proxy, unless oldName is given.',
        anyOf: [
          { required: ['oldName'] },
          { properties: { proxyInfo: { required: ['name'], properties: { name: schema('ProxyName') } } } },
        ],
      },
    ),
    ProxyDeleteRequest: obj({ instanceID: schema('Id'), proxyName: schema('ProxyName') }),
    ProxySetStatusRequest: obj({ instanceID: schema('Id'), proxyName: schema('ProxyName'), enabled: bool() }),
    ProxyName: str('1-64 characters, each a letter, a digit, "_", "." or "-"; unique in its instance', {
      pattern: PROXY_NAME.source,
    }),
    InstanceName: {
      ...str('1-64 characters, each a letter, a digit, "_", "." or "-", not only digits; unique', {
        pattern: INSTANCE_NAME.source,
      }),
      not: { pattern: ONLY_DIGITS.source },
    },
    ProxyEdited: {
      allOf: [
        obj({
          instanceID: int(),
          configPath: str(),
          proxyName: str(),
          diff: str('unified diff of the file (secrets masked)'),
        }),
        schema('ChangeOutcome'),
      ],
    },

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
      allOf: [
        schema('LogEntry'),
        obj({
          level: str(undefined, { enum: ['DEBUG', 'INFO', 'WARN', 'ERROR'] }),
          'seq?': int(
            "the line's place in the log, for a line the daemon read in its current run: the run (the daemon's starts counted) times 1000000000 plus the line's number in that run",
          ),
        }),
      ],
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
          'instance.healthRestart',
          'instance.status',
          'proxy.up',
          'proxy.down',
          'instance.expired',
          'proxy.expired',
          'proxy.unreachable',
          'proxy.reachable',
          'service.started',
          'service.stopping',
        ],
      }),
      instanceID: int(undefined, { type: ['integer', 'null'] }),
      name: str(),
      from: str('state before', { type: ['string', 'null'] }),
      to: str(
        'state after (for proxy.up/down: the proxy status; proxy.unreachable: unreachable from outside or local service down; proxy.reachable: reachable)',
        { type: ['string', 'null'] },
      ),
      exitCode: int(undefined, { type: ['integer', 'null'] }),
      signal: str(undefined, { type: ['string', 'null'] }),
      'attempt?': int('instance.restarting: crashes in a row'),
      'delayMs?': int('instance.restarting: delay before the next start'),
      'message?': str(
        'what happened (bootServiceError, logFailed, logRecovered, modified, expired, healthRestart: why)',
      ),
      'proxy?': str('proxy.up, proxy.down, proxy.unreachable, proxy.reachable, proxy.expired: which proxy'),
      'err?': str("proxy.down: frpc's error; proxy.unreachable: the probe's reason; instance.disconnected: why"),
      'connected?': {
        type: ['boolean', 'null'],
        description: 'instance.status: logged in to its server (null: not running or not known)',
      },
      'proxyStatus?': mapOf('instance.status: how many of its proxies are in each status', int()),
      'health?': schema('Health'),
      'proxyHealth?': schema('HealthCounts'),
      at: dateTime(),
      seq: int('one counter, persisted, shared with the webhooks; only goes up'),
    }),
    EventsStart: obj(
      {
        event: { const: 'events.start' },
        lastSeq: int('the seq of the latest event'),
        'replayed?': int('with since: how many missed events follow'),
        'lost?': { const: true, description: 'with since: some missed events are no longer kept; read the list again' },
        'restarted?': {
          const: true,
          description:
            'with since: the seq is from before the daemon last started; the events replayed are those since, and what happened while it was down is not known',
        },
        'oldestKept?': int(undefined, { type: ['integer', 'null'] }),
        'message?': str(),
      },
      { description: 'The first message of /system/events: where the stream stands.' },
    ),
  };
}

// ---- Responses ----

export const ERRORS: Record<number, { name: string; description: string; headers?: Json }> = {
  400: {
    name: 'BadRequest',
    description: `Invalid request: a missing or malformed field, or a body that is not a JSON object (malformed JSON, nested deeper than ${DEFAULTS.jsonMaxDepth} levels, a lone surrogate); the message names what is wrong.`,
  },
  401: {
    name: 'Unauthorized',
    description: `X-Timestamp missing or more than ${DEFAULTS.timestampWindowMs} ms from the server clock; or X-Token missing, unknown, revoked or expired; or an API key unknown, revoked or expired, or sent together with X-Token; or wrong credentials.`,
  },
  403: {
    name: 'Forbidden',
    description: "The caller's role is below what the operation needs, or its API key's scope does not cover it.",
  },
  404: { name: 'NotFound', description: 'What the request names does not exist.' },
  405: {
    name: 'MethodNotAllowed',
    description: 'The path does not take this method; Allow lists the ones it takes.',
    headers: { Allow: { schema: str() } },
  },
  409: { name: 'Conflict', description: 'The request conflicts with the current state; the message names with what.' },
  413: { name: 'PayloadTooLarge', description: `The body is larger than ${DEFAULTS.jsonLimit}.` },
  415: {
    name: 'UnsupportedMediaType',
    description: 'A body that is not application/json, or compressed otherwise than gzip, deflate or br.',
  },
  426: {
    name: 'UpgradeRequired',
    description: 'A WebSocket stream asked for by a plain request: connect with Upgrade: websocket.',
    headers: { Upgrade: { schema: str(undefined, { const: 'websocket' }) } },
  },
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
  502: {
    name: 'TunnelFailed',
    description:
      'Nothing failed in tunnelward: the tunnel (frpc) exited before its start was confirmed. The message says how it ended, its last log lines and what follows (a retry after a backoff, failed, or stopped); for a change, that the file and the tunnel were put back.',
  },
  503: { name: 'ServiceUnavailable', description: 'Too many streams are open; try again later.' },
};

const failureContent = { 'application/json': { schema: schema('Failure') } };

export const RESPONSES = Object.fromEntries(
  Object.values(ERRORS).map(({ name, description, headers }) => [
    name,
    { description, ...(headers ? { headers } : {}), content: failureContent },
  ]),
);

const envelopeOf = (data: Json): Json => ({
  allOf: [schema('Envelope'), obj({ 'success?': { const: true }, data })],
});

/** A 200 in the envelope, with `data` when the operation has some. */
export function ok(description: string, data?: Json): Json {
  return {
    description,
    content: { 'application/json': { schema: data === undefined ? schema('Done') : envelopeOf(data) } },
  };
}
