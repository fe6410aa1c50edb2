import { enclosingKey, SPECS, type KeySpec } from './frpc-keys.js';

/**
 * The keys of a `[[proxies]]` block as frpc v0.70 decodes them (pkg/config/v1/proxy.go and proxy_plugin.go).
 * Each proxy type and each plugin type is its own Go struct decoded strictly, so a key of another type is as
 * fatal to frpc as a misspelt one. Left out on purpose, being unsure of them in v0.70: the `virtual_net`
 * plugin (behind a feature gate) and any plugin option not listed below.
 */

type KeyTable = Readonly<Record<string, KeySpec>>;

const { string, secret, host, port, integer, boolean, strings, stringMap, oneOf } = SPECS;

/** The proxy types frpc knows. */
export const PROXY_TYPES = ['tcp', 'udp', 'http', 'https', 'stcp', 'xtcp', 'sudp', 'tcpmux'] as const;
export type ProxyType = (typeof PROXY_TYPES)[number];

/** The plugin types frpc knows (`[proxies.plugin] type = ...`). */
export const PLUGIN_TYPES = [
  'unix_domain_socket',
  'http_proxy',
  'socks5',
  'static_file',
  'https2http',
  'https2https',
  'http2https',
  'http2http',
  'tls2raw',
] as const;
export type PluginType = (typeof PLUGIN_TYPES)[number];

/** Types that take a `remotePort`. */
export const REMOTE_PORT_TYPES: readonly string[] = ['tcp', 'udp'];
/** Types that route by host name and need `customDomains` or `subdomain`. */
export const DOMAIN_TYPES: readonly string[] = ['http', 'https', 'tcpmux'];

/** ProxyBaseConfig with its ProxyBackend: every type has these. */
const BASE_KEYS: KeyTable = {
  name: string,
  type: oneOf(...PROXY_TYPES),
  enabled: boolean,
  localIP: host,
  localPort: port,
  metadatas: stringMap,
  annotations: { kind: 'stringMap', annotationEntries: true },
  'transport.useEncryption': boolean,
  'transport.useCompression': boolean,
  'transport.bandwidthLimit': { kind: 'string', format: 'bandwidth' },
  'transport.bandwidthLimitMode': oneOf('client', 'server'),
  'transport.proxyProtocolVersion': oneOf('v1', 'v2'),
  'loadBalancer.group': string,
  'loadBalancer.groupKey': secret,
  'healthCheck.type': oneOf('tcp', 'http'),
  'healthCheck.timeoutSeconds': integer,
  'healthCheck.maxFailed': integer,
  'healthCheck.intervalSeconds': integer,
  'healthCheck.path': string,
  'healthCheck.httpHeaders': { kind: 'nameValues' },
  'plugin.type': oneOf(...PLUGIN_TYPES),
};

const DOMAIN_KEYS: KeyTable = {
  customDomains: { kind: 'strings', format: 'domain' },
  subdomain: { kind: 'string', format: 'dnsLabel' },
};
const SECRET_ACCESS_KEYS: KeyTable = { secretKey: secret, allowUsers: strings };

/** What each type adds to the base keys. */
const TYPE_KEYS: Readonly<Record<ProxyType, KeyTable>> = {
  tcp: { remotePort: port },
  udp: { remotePort: port },
  http: {
    ...DOMAIN_KEYS,
    locations: strings,
    httpUser: string,
    httpPassword: secret,
    hostHeaderRewrite: string,
    'requestHeaders.set': stringMap,
    'responseHeaders.set': stringMap,
    routeByHTTPUser: string,
  },
  https: DOMAIN_KEYS,
  tcpmux: {
    ...DOMAIN_KEYS,
    multiplexer: oneOf('httpconnect'),
    httpUser: string,
    httpPassword: secret,
    routeByHTTPUser: string,
  },
  stcp: SECRET_ACCESS_KEYS,
  sudp: SECRET_ACCESS_KEYS,
  xtcp: { ...SECRET_ACCESS_KEYS, 'natTraversal.disableAssistedAddrs': boolean },
};

interface PluginSpec {
  /** Options under `plugin.`, besides `type`. */
  keys: KeyTable;
  /** Options frpc's validation refuses to go without. */
  required: readonly string[];
}

const TLS_TERMINATION: KeyTable = {
  localAddr: string,
  hostHeaderRewrite: string,
  'requestHeaders.set': stringMap,
  enableHTTP2: boolean,
  crtPath: string,
  keyPath: string,
};
const HTTP_REWRITE: KeyTable = { localAddr: string, hostHeaderRewrite: string, 'requestHeaders.set': stringMap };

const PLUGIN_KEYS: Readonly<Record<PluginType, PluginSpec>> = {
  unix_domain_socket: { keys: { unixPath: string }, required: ['unixPath'] },
  http_proxy: { keys: { httpUser: string, httpPassword: secret }, required: [] },
  socks5: { keys: { username: string, password: secret }, required: [] },
  static_file: {
    keys: { localPath: string, stripPrefix: string, httpUser: string, httpPassword: secret },
    required: ['localPath'],
  },
  https2http: { keys: TLS_TERMINATION, required: ['localAddr'] },
  https2https: { keys: TLS_TERMINATION, required: ['localAddr'] },
  http2https: { keys: HTTP_REWRITE, required: ['localAddr'] },
  http2http: { keys: HTTP_REWRITE, required: ['localAddr'] },
  tls2raw: { keys: { localAddr: string, crtPath: string, keyPath: string }, required: ['localAddr'] },
};

const isProxyType = (type: string): type is ProxyType => (PROXY_TYPES as readonly string[]).includes(type);
const isPluginType = (type: string): type is PluginType => (PLUGIN_TYPES as readonly string[]).includes(type);

const prefixed = (table: KeyTable): KeyTable =>
  Object.fromEntries(Object.entries(table).map(([key, spec]) => [`plugin.${key}`, spec]));

/** The keys a proxy of this type (and plugin type, when it has a plugin) may hold, by dotted name. */
export function proxyKeyTable(type: string, pluginType?: string): KeyTable {
  const own = isProxyType(type) ? TYPE_KEYS[type] : {};
  const plugin = pluginType !== undefined && isPluginType(pluginType) ? prefixed(PLUGIN_KEYS[pluginType].keys) : {};
  return { ...BASE_KEYS, ...own, ...plugin };
}

/** Every key any proxy may hold: what older files are read against. */
export const ALL_PROXY_KEYS: KeyTable = Object.assign(
  {},
  BASE_KEYS,
  ...Object.values(TYPE_KEYS),
  ...Object.values(PLUGIN_KEYS).map((plugin) => prefixed(plugin.keys)),
);

/** The proxy types that have this key (for a message when it is given to another type). */
export function typesWithKey(key: string): ProxyType[] {
  return PROXY_TYPES.filter((type) => Object.hasOwn(BASE_KEYS, key) || Object.hasOwn(TYPE_KEYS[type], key));
}

/** The plugin types that have this option (key given without `plugin.`). */
export function pluginsWithKey(key: string): PluginType[] {
  return PLUGIN_TYPES.filter((type) => Object.hasOwn(PLUGIN_KEYS[type].keys, key));
}

/** Plugin options frpc requires, without `plugin.`; none for an unknown plugin type. */
export function requiredPluginKeys(pluginType: string): readonly string[] {
  return isPluginType(pluginType) ? PLUGIN_KEYS[pluginType].required : [];
}

/** The table a dotted key points into when it is not a key itself but an entry of a map key (`metadatas.owner`). */
export function mapKeyOf(path: string): string | undefined {
  const key = enclosingKey(ALL_PROXY_KEYS, path);
  return key !== undefined && ALL_PROXY_KEYS[key]!.kind === 'stringMap' ? key : undefined;
}

/** True when a dotted path is a table of known keys (`plugin`, `transport`), which `null` removes whole. */
export function isKeyGroup(path: string): boolean {
  return Object.keys(ALL_PROXY_KEYS).some((key) => key.startsWith(`${path}.`));
}
