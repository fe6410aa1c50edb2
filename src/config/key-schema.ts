import { LISTED_ONLY_FIELDS } from './proxy-view.js';
import { COMMON_KEYS, type KeySpec } from './frpc-keys.js';
import {
  ALL_PROXY_KEYS,
  DOMAIN_TYPES,
  PLUGIN_TYPES,
  PROXY_TYPES,
  proxyKeyTable,
  REMOTE_PORT_TYPES,
  requiredPluginKeys,
} from './proxy-keys.js';
import { ANNOTATION_KEY, formatRule, INTEGER_TEXT, MAP_ENTRY_NAME, PORT_TEXT_PATTERN } from './value-check.js';

/**
 * The JSON Schemas of frpc's keys as the API takes them, made from the same key tables (frpc-keys.ts,
 * proxy-keys.ts) that the edits check them with: a proxy per proxy type and per plugin type, and the top-level
 * settings, each listing exactly the keys frpc accepts, nested as frpc's file has them. Rules that only the checks
 * say (a host name's shape, the requirements between keys) are in the descriptions; the checks' 400 names them.
 */

type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

/** null, "" or []: what a request may send for a key it leaves out. */
const LEFT_OUT = 'ProxyKeyLeftOut';

const SAFE_INTEGER = { type: 'integer', minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER };

/** The schema of one key's value, as checkValue (and the proxy edit, for lists) takes it. */
function valueSchema(spec: KeySpec): Json {
  const description = [
    spec.format ? formatRule(spec.format) : undefined,
    spec.why,
    spec.secret ? 'a secret: listed masked; sending the mask back keeps it' : undefined,
  ].filter(Boolean);
  const described = description.length > 0 ? { description: description.join('; ') } : {};
  const text: Json = spec.oneOf ? { type: 'string', enum: [...spec.oneOf] } : { type: 'string' };
  switch (spec.kind) {
    case 'string':
      return { ...text, ...described };
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
    case 'strings':
      return {
        anyOf: [
          { type: 'array', items: text },
          { type: 'string', description: 'the items separated by commas' },
        ],
        ...described,
      };
    case 'stringMap':
    case 'booleanMap':
      return {
        type: 'object',
        propertyNames: { pattern: (spec.annotationEntries ? ANNOTATION_KEY : MAP_ENTRY_NAME).source },
        additionalProperties: spec.kind === 'stringMap' ? { type: 'string' } : valueSchema({ kind: 'boolean' }),
      };
    case 'nameValues':
      return {
        type: 'array',
        items: {
          type: 'object',
          properties: { name: { type: 'string', pattern: MAP_ENTRY_NAME.source }, value: { type: 'string' } },
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
const keysOf = (own: Readonly<Record<string, KeySpec>>, among: Readonly<Record<string, KeySpec>>) =>
  nested(among, (spec, key) => (Object.hasOwn(own, key) ? optional(valueSchema(spec)) : ref(LEFT_OUT)));

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
  const schema = keysOf(pluginOptions(plugin), pluginOptions());
  const required = requiredPluginKeys(plugin);
  return {
    ...schema,
    title: `${plugin} plugin`,
    properties: { type: { const: plugin }, ...(schema.properties as Json) },
    required: ['type'],
    ...(required.length > 0 ? { description: `frpc requires ${words(required)}` } : {}),
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

/** The proxy of one type that a create sends (`outside`: every proxy key outside the plugin table). */
function proxyOfType(type: string, outside: Readonly<Record<string, KeySpec>>): Json {
  const schema = keysOf(proxyKeyTable(type), outside);
  return {
    ...schema,
    title: `${type} proxy`,
    description: requirements(type),
    required: ['name', 'type'],
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
  const schema = keysOf(ALL_PROXY_KEYS, ALL_PROXY_KEYS);
  const properties = schema.properties as Record<string, Json>;
  properties.name = ref('ProxyName');
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

/** frpc's top-level settings, as instance create (additionalProperties) and a configFile modify take them. */
function frpcSettings(): Json {
  const table = Object.fromEntries(Object.entries(COMMON_KEYS).filter(([key]) => !key.startsWith('webServer.')));
  return {
    ...nested(
      table,
      (spec) => removable(valueSchema(spec)),
      '',
      (group) => group,
    ),
    description:
      "frpc's top-level settings (server, auth, transport, log, ...), nested as in frpc's file (or dotted, or by their older snake_case names); null removes one (an entry of a map is removed by its dotted name, \"metadatas.owner\": null). webServer is tunnelward's own. An unknown key or a wrong value is a 400 naming it.",
  };
}

/**
 * The component schemas of frpc's keys: ProxyInfo (what a proxy create sends), ProxyChanges (a proxy modify), their
 * parts, and FrpcSettings (the top-level keys).
 */
export function frpcComponentSchemas(): Record<string, Json> {
  const components: Record<string, Json> = {
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
    FrpcSettings: frpcSettings(),
    [PLUGIN]: {
      description:
        'A plugin serves the connections itself: its type and its options. An object of left-out options is no plugin.',
      oneOf: [
        ...PLUGIN_TYPES.map((plugin) => ref(`${PLUGIN}.${plugin}`)),
        { ...keysOf({}, { type: { kind: 'string' }, ...pluginOptions() }), title: 'no plugin' },
      ],
    },
  };
  const outside = Object.fromEntries(Object.entries(ALL_PROXY_KEYS).filter(([key]) => !key.startsWith('plugin.')));
  for (const type of PROXY_TYPES) components[`ProxyInfo.${type}`] = proxyOfType(type, outside);
  for (const plugin of PLUGIN_TYPES) components[`${PLUGIN}.${plugin}`] = pluginSchema(plugin);
  return components;
}
