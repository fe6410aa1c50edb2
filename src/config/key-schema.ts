import { LISTED_ONLY_FIELDS, SECRET_MASK } from './proxy-view.js';
import { COMMON_KEYS, FEATURE_GATES, type KeySpec } from './frpc-keys.js';
import {
  ALL_PROXY_KEYS,
  DOMAIN_TYPES,
  PLUGIN_TYPES,
  PROXY_TYPES,
  proxyKeyTable,
  REMOTE_PORT_TYPES,
  requiredPluginKeys,
} from './proxy-keys.js';
import {
  ABSOLUTE_PATH_PATTERN,
  commaListPattern,
  formattedShape,
  NONEMPTY_LIST_PATTERN,
  STRING_FORMATS,
  TEXT_PATTERN,
} from './string-patterns.js';
import { BASE_KEYS, NOT_REMOVABLE } from './tunnel-config.js';
import { ANNOTATION_KEY, formatRule, INTEGER_TEXT, MAP_ENTRY_NAME, PORT_TEXT_PATTERN } from './value-check.js';
import { NOT_RESERVED } from '../util/reserved-keys.js';

/**
 * The JSON Schemas of frpc's keys as the API takes them, made from the same key tables (frpc-keys.ts,
 * proxy-keys.ts) that the edits check them with: a proxy per proxy type and per plugin type, and the top-level
 * settings, each listing exactly the keys frpc accepts, nested as frpc's file has them, each value in the shape the
 * checks take (string-patterns.ts holds the shapes both use). What a proxy or a new instance needs is stated too;
 * what depends on the file a change meets (a key of the proxy's own type, a rule between settings) is in words.
 */

type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

/** null, "" or []: what a request may send for a key it leaves out. */
const LEFT_OUT = 'ProxyKeyLeftOut';

const SAFE_INTEGER = { type: 'integer', minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER };

/** How a key's value is taken where its schema is used. */
interface ValueUse {
  /** A list may also be one comma-separated string (the proxy edit splits it; the settings take arrays only). */
  commaLists?: boolean;
  /** A secret may not be the mask a listing shows (a new proxy has no value for it to keep). */
  noMask?: boolean;
}

/** Text frpc can read, and text of each format: components, for the patterns are long and many keys share them. */
const TEXT = 'FrpcText';
const textComponents = (): Record<string, Json> => ({
  [TEXT]: {
    type: 'string',
    pattern: TEXT_PATTERN,
    description: 'no control characters; "{{" and "}}" only in {{ .Envs.NAME }} placeholders',
  },
  ...Object.fromEntries(
    STRING_FORMATS.map((format) => [
      `${TEXT}.${format}`,
      {
        type: 'string',
        ...formattedShape(format),
        description: `${formatRule(format)}; or text with a {{ .Envs.NAME }} placeholder (frpc checks what it renders to)`,
      },
    ]),
  ),
});

/** A string value: one of its fixed choices, text in its format, or text frpc can read. */
function textSchema(spec: KeySpec): Json {
  if (spec.oneOf) return { type: 'string', enum: [...spec.oneOf] };
  return ref(spec.format ? `${TEXT}.${spec.format}` : TEXT);
}

/** The schema of one key's value, as checkValue (and the proxy edit, for lists) takes it. */
function valueSchema(spec: KeySpec, use: ValueUse = {}): Json {
  const description = [
    spec.format ? formatRule(spec.format) : undefined,
    spec.why,
    spec.secret ? 'a secret: listed masked; sending the mask back keeps it' : undefined,
  ].filter(Boolean);
  const described = description.length > 0 ? { description: description.join('; ') } : {};
  switch (spec.kind) {
    case 'string':
      return {
        ...textSchema(spec),
        ...described,
        ...(spec.secret && use.noMask ? { not: { const: SECRET_MASK } } : {}),
      };
    case 'port':
      return {
        anyOf: [
          { type: 'integer', minimum: 1, maximum: 65535 },
          { type: 'string', pattern: PORT_TEXT_PATTERN },
        ],
        description: 'a port from 1 to 65535, or a string holding one',
      };
    case 'integer':
      return { anyOf: [SAFE_INTEGER, { type: 'string', pattern: INTEGER_TEXT.source }] };
    case 'boolean':
      return { anyOf: [{ type: 'boolean' }, { type: 'string', enum: ['true', 'false'] }] };
    case 'strings': {
      const array = { type: 'array', items: textSchema(spec) };
      if (!use.commaLists) return { ...array, ...described };
      const joined = {
        type: 'string',
        pattern: commaListPattern(spec.format),
        description: 'the items separated by commas',
      };
      return { anyOf: [array, joined], ...described };
    }
    case 'stringMap':
    case 'booleanMap':
      return {
        type: 'object',
        propertyNames: { pattern: (spec.annotationEntries ? ANNOTATION_KEY : MAP_ENTRY_NAME).source, ...NOT_RESERVED },
        additionalProperties: spec.kind === 'stringMap' ? ref(TEXT) : valueSchema({ kind: 'boolean' }),
      };
    case 'nameValues':
      return {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            name: { type: 'string', pattern: MAP_ENTRY_NAME.source },
            value: ref(TEXT),
          },
          required: ['name', 'value'],
          additionalProperties: false,
        },
      };
  }
}

/** A value, or null beside it (which removes the key). */
const removable = (value: Json): Json => beside(value, { type: 'null' });

/** `value`, or `other`: one list of alternatives (a value that already has some gets one more). */
function beside(value: Json, other: Json): Json {
  const { anyOf, ...rest } = value;
  return Array.isArray(anyOf) ? { ...rest, anyOf: [...anyOf, other] } : { anyOf: [value, other] };
}

/** A key the request may leave out: its value, or one of the left-out forms. */
function optional(value: Json): Json {
  return beside(value, ref(LEFT_OUT));
}

/** A key's schema, by its dotted name. */
type Leaf = (spec: KeySpec, key: string) => Json;

/**
 * Dotted keys (`transport.useEncryption`) as the nested objects frpc's file has, each key as `leaf` says, each
 * group as `group` says (a proxy's may be left out whole).
 */
function nested(table: Readonly<Record<string, KeySpec>>, leaf: Leaf, prefix = '', group = optional): Json {
  const properties: Record<string, Json> = {};
  const groups = new Map<string, Record<string, KeySpec>>();
  for (const [key, spec] of Object.entries(table)) {
    const dot = key.indexOf('.');
    if (dot < 0) properties[key] = leaf(spec, prefix + key);
    else {
      const head = key.slice(0, dot);
      groups.set(head, { ...groups.get(head), [key.slice(dot + 1)]: spec });
    }
  }
  for (const [name, keys] of groups) properties[name] = group(nested(keys, leaf, `${prefix}${name}.`, group));
  return { type: 'object', properties, additionalProperties: false };
}

/**
 * The keys of `among`, each with its value when `own` has it, else only left out: a blank is "not given", so a
 * form that sends every key, blank where it does not apply, is taken.
 */
const keysOf = (own: Readonly<Record<string, KeySpec>>, among: Readonly<Record<string, KeySpec>>, use: ValueUse) =>
  nested(among, (spec, key) => (Object.hasOwn(own, key) ? optional(valueSchema(spec, use)) : ref(LEFT_OUT)));

/** A new proxy's keys: no secret can be kept, so the mask is refused. */
const CREATE: ValueUse = { commaLists: true, noMask: true };
/** A proxy's changes: a secret sent back masked keeps its value. */
const CHANGE: ValueUse = { commaLists: true };

/** The key is given: a value, not one of the left-out forms (a list: with an item). */
function has(key: string, spec?: KeySpec): Json {
  const value =
    spec?.kind === 'strings'
      ? {
          anyOf: [
            { type: 'array', minItems: 1 },
            { type: 'string', pattern: NONEMPTY_LIST_PATTERN },
          ],
        }
      : { not: ref(LEFT_OUT) };
  return { required: [key], properties: { [key]: value } };
}

const words = (items: readonly string[]) => items.join(', ');

/** A plugin's options (without `plugin.`): those of `plugin`, or of every plugin when it is undefined. */
function pluginOptions(plugin?: string): Record<string, KeySpec> {
  const table = plugin === undefined ? ALL_PROXY_KEYS : proxyKeyTable(PROXY_TYPES[0], plugin);
  return Object.fromEntries(
    Object.entries(table)
      .filter(([key]) => key.startsWith('plugin.') && key !== 'plugin.type')
      .map(([key, spec]) => [key.slice('plugin.'.length), spec]),
  );
}

/** A plugin of one type, its options beside it (the same for every proxy type). */
function pluginSchema(plugin: string): Json {
  const options = pluginOptions(plugin);
  const schema = keysOf(options, pluginOptions(), CREATE);
  const required = requiredPluginKeys(plugin);
  return {
    ...schema,
    title: `${plugin} plugin`,
    properties: { type: { const: plugin }, ...(schema.properties as Json) },
    required: ['type'],
    ...(required.length > 0
      ? { description: `frpc requires ${words(required)}`, allOf: required.map((key) => has(key, options[key]!)) }
      : {}),
  };
}

/** What frpc's validation asks of a proxy of this type beyond its keys' values. */
function requirements(type: string): string {
  const needs = [
    'name and type',
    REMOTE_PORT_TYPES.includes(type) ? 'remotePort' : undefined,
    DOMAIN_TYPES.includes(type) ? 'customDomains or subdomain' : undefined,
    'localPort unless it has a plugin',
    'healthCheck.path with an http health check',
  ].filter(Boolean);
  return `A ${type} proxy. It needs ${words(needs as string[])}.`;
}

const PLUGIN = 'ProxyPlugin';

/** What checkShape (proxy-edit.ts) asks of a new proxy of this type, as conditions on its keys. */
function needs(type: string): Json[] {
  const table = proxyKeyTable(type);
  const plugin = { required: ['plugin'], properties: { plugin: { type: 'object', ...has('type') } } };
  return [
    ...(REMOTE_PORT_TYPES.includes(type) ? [has('remotePort', table.remotePort!)] : []),
    ...(DOMAIN_TYPES.includes(type)
      ? [{ anyOf: [has('customDomains', table.customDomains!), has('subdomain', table.subdomain!)] }]
      : []),
    { anyOf: [has('localPort', table.localPort!), plugin] },
    {
      if: has('healthCheck'),
      then: {
        properties: {
          healthCheck: { if: { required: ['type'], properties: { type: { const: 'http' } } }, then: has('path') },
        },
      },
    },
  ];
}

/** The proxy of one type that a create sends (`outside`: every proxy key outside the plugin table). */
function proxyOfType(type: string, outside: Readonly<Record<string, KeySpec>>): Json {
  const schema = keysOf(proxyKeyTable(type), outside, CREATE);
  return {
    ...schema,
    title: `${type} proxy`,
    description: requirements(type),
    required: ['name', 'type'],
    allOf: needs(type),
    properties: {
      ...(schema.properties as Json),
      name: ref('ProxyName'),
      type: { const: type },
      plugin: optional(ref(PLUGIN)),
    },
  };
}

/** Every key of every proxy type and plugin: what a modify may change (the type is the proxy's own, or new). */
function proxyChanges(): Json {
  const schema = keysOf(ALL_PROXY_KEYS, ALL_PROXY_KEYS, CHANGE);
  const properties = schema.properties as Record<string, Json>;
  properties.name = ref('ProxyName');
  // A proxy keeps its type: a blank leaves it as it is, null (removing it) is refused.
  properties.type = beside(textSchema(ALL_PROXY_KEYS.type!), {
    anyOf: [{ const: '' }, { type: 'array', maxItems: 0 }],
  });
  // What a listed proxy carries beside its keys is read-only, and ignored when it is sent back.
  for (const key of LISTED_ONLY_FIELDS) properties[key] = { description: 'ignored' };
  for (const key of ['oldName', 'newName'])
    properties[key] = { ...ref('ProxyName'), description: `as ${key} beside proxyInfo` };
  return {
    ...schema,
    description:
      "The keys to change of a proxy of any type (and plugin): a key left out keeps its value, null removes it; a key of another type than the proxy's (or its new type) is a 400.",
  };
}

/** What settingRules (tunnel-config.ts) asks of one setting's value alone, beyond its kind. */
function settingValue(spec: KeySpec, key: string): Json {
  const value = valueSchema(spec);
  if (key === 'featureGates') return { ...value, propertyNames: { enum: [...FEATURE_GATES] } };
  if (key === 'includes') {
    const items = { type: 'string', pattern: ABSOLUTE_PATH_PATTERN };
    return { ...value, items, description: 'absolute paths of files in directories that exist (or placeholders)' };
  }
  return value;
}

const SETTINGS_DESCRIPTION =
  "frpc's top-level settings (server, auth, transport, log, ...), nested as in frpc's file (or dotted, or by their older snake_case names); null removes one (an entry of a map is removed by its dotted name, \"metadatas.owner\": null). webServer is tunnelward's own. An unknown key or a wrong value is a 400 naming it; so is a rule between settings that frpc checks (transport.heartbeatTimeout below transport.heartbeatInterval, virtualNet.address without featureGates.VirtualNet, auth.method oidc without auth.oidc.clientID and auth.oidc.tokenEndpointURL).";

/** frpc's top-level settings, but webServer (tunnelward's own) and those `leftOut` says. */
function frpcSettings(leftOut: ReadonlySet<string> = new Set()): Json {
  const table = Object.fromEntries(
    Object.entries(COMMON_KEYS).filter(([key]) => !key.startsWith('webServer.') && !leftOut.has(key)),
  );
  return nested(
    table,
    (spec, key) => (NOT_REMOVABLE.has(key) ? settingValue(spec, key) : removable(settingValue(spec, key))),
    '',
    (group) => group,
  );
}

/** The settings a create takes beside its server (additionalProperties). */
const additionalSettings = (): Json => ({
  ...frpcSettings(BASE_KEYS),
  description: `${SETTINGS_DESCRIPTION} serverAddr, serverPort and auth.method are the instance's own (instanceInfo), refused here.`,
});

/** A top-level setting's value as text, as a create's instanceInfo sends it (the contract's strings). */
export function settingText(key: string): Json {
  const spec = COMMON_KEYS[key]!;
  if (spec.kind === 'port') return { type: 'string', pattern: PORT_TEXT_PATTERN };
  // Written out rather than referred to: beside other keywords, a reference is met by filtering what they generate.
  if (spec.format) return { type: 'string', ...formattedShape(spec.format) };
  return textSchema(spec);
}

/**
 * The component schemas of frpc's keys: ProxyInfo (what a proxy create sends), ProxyChanges (a proxy modify), their
 * parts, FrpcSettings (the top-level keys a change takes) and FrpcAdditionalSettings (those a create takes).
 */
export function frpcComponentSchemas(): Record<string, Json> {
  const components: Record<string, Json> = {
    ...textComponents(),
    [LEFT_OUT]: {
      description: 'null, "" or []: the key is left out (in a modify, null removes it)',
      anyOf: [{ type: 'null' }, { type: 'string', maxLength: 0 }, { type: 'array', maxItems: 0 }],
    },
    ProxyInfo: {
      description:
        'A proxy: one of the types below, with the keys frpc accepts for it, nested as in frpc\'s file. Booleans may be sent as "true"/"false", numbers as strings, lists as comma-separated strings. An unknown key, or a key of another type or plugin, is a 400 naming it.',
      oneOf: PROXY_TYPES.map((type) => ref(`ProxyInfo.${type}`)),
    },
    ProxyChanges: proxyChanges(),
    FrpcSettings: { ...frpcSettings(), description: SETTINGS_DESCRIPTION },
    FrpcAdditionalSettings: additionalSettings(),
    [PLUGIN]: {
      description:
        'A plugin serves the connections itself: its type and its options. An object of left-out options is no plugin.',
      oneOf: [
        ...PLUGIN_TYPES.map((plugin) => ref(`${PLUGIN}.${plugin}`)),
        { ...keysOf({}, { type: { kind: 'string' }, ...pluginOptions() }, CHANGE), title: 'no plugin' },
      ],
    },
  };
  const outside = Object.fromEntries(Object.entries(ALL_PROXY_KEYS).filter(([key]) => !key.startsWith('plugin.')));
  for (const type of PROXY_TYPES) components[`ProxyInfo.${type}`] = proxyOfType(type, outside);
  for (const plugin of PLUGIN_TYPES) components[`${PLUGIN}.${plugin}`] = pluginSchema(plugin);
  return components;
}
