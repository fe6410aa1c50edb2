/**
 * What the frp client (frpc) v0.71 accepts at the top of its TOML config file and in visitors (the proxy keys
 * are in proxy-keys.ts), and the older snake_case spellings (the INI-era names the API specification still uses)
 * mapped to the current dotted names.
 * frpc refuses unknown keys (strict mode), so only keys listed here are ever written on request
 * (test/e2e/real-frp/verify.test.ts has the real frpc check them). auth.tokenSource and store, structures of their own, are left
 * out: they survive a rewrite when a file has them, but the API cannot set them.
 */

export type ValueKind =
  | 'string'
  | 'port' // TOML integer 1-65535
  | 'integer'
  | 'boolean'
  | 'strings' // array of strings
  | 'stringMap' // table of name -> string
  | 'booleanMap' // table of name -> boolean
  | 'nameValues'; // array of tables { name, value }, both strings

/** Checks of a string's shape beyond its kind. */
export type StringFormat =
  | 'host' // an IP address or a host name
  | 'domain' // a host name, optionally with a leading "*."
  | 'dnsLabel' // one DNS label, no dots
  | 'bandwidth'; // a number with MB or KB, as frpc's BandwidthQuantity reads it

export interface KeySpec {
  kind: ValueKind;
  /** The only values frpc accepts. */
  oneOf?: readonly string[];
  /** Why only those values, when the reason is ours rather than frpc's. */
  why?: string;
  /** Shape of a string value (or of each string in a list). */
  format?: StringFormat;
  /** Entry names of a map follow Kubernetes' annotation keys (`prefix/name`), as frpc checks them. */
  annotationEntries?: boolean;
  /** Holds a secret: its value never appears in a message or a listing. */
  secret?: boolean;
}

/**
 * The longest of `specs`' keys that `path` lies inside (`metadatas` for `metadatas.owner`), if any. Each known key is
 * tried against the path's start, so the cost follows the number of keys, not the number of parts of the path.
 */
export function enclosingKey(specs: Readonly<Record<string, KeySpec>>, path: string): string | undefined {
  let found: string | undefined;
  for (const key of Object.keys(specs)) {
    if (key.length > (found?.length ?? 0) && path.startsWith(`${key}.`)) found = key;
  }
  return found;
}

const string: KeySpec = { kind: 'string' };
const secret: KeySpec = { kind: 'string', secret: true };
const host: KeySpec = { kind: 'string', format: 'host' };
const port: KeySpec = { kind: 'port' };
const integer: KeySpec = { kind: 'integer' };
const boolean: KeySpec = { kind: 'boolean' };
const strings: KeySpec = { kind: 'strings' };
const stringMap: KeySpec = { kind: 'stringMap' };
const oneOf = (...values: string[]): KeySpec => ({ kind: 'string', oneOf: values });

/** The building blocks of a key table, for the proxy table in its own module. */
export const SPECS = { string, secret, host, port, integer, boolean, strings, stringMap, oneOf } as const;

export const AUTH_METHODS = ['token', 'oidc'] as const;

/** Top-level settings (frpc's ClientCommonConfig), by dotted name. */
export const COMMON_KEYS: Readonly<Record<string, KeySpec>> = {
  user: string,
  clientID: string,
  serverAddr: host,
  serverPort: port,
  natHoleStunServer: string,
  dnsServer: string,
  loginFailExit: boolean,
  start: strings,
  includes: strings,
  udpPacketSize: integer,
  metadatas: stringMap,
  featureGates: { kind: 'booleanMap' },
  'auth.method': oneOf(...AUTH_METHODS),
  'auth.token': secret,
  'auth.additionalScopes': { kind: 'strings', oneOf: ['HeartBeats', 'NewWorkConns'] },
  'auth.oidc.clientID': string,
  'auth.oidc.clientSecret': secret,
  'auth.oidc.audience': string,
  'auth.oidc.scope': string,
  'auth.oidc.tokenEndpointURL': string,
  'auth.oidc.additionalEndpointParams': stringMap,
  'auth.oidc.trustedCaFile': string,
  'auth.oidc.insecureSkipVerify': boolean,
  'auth.oidc.proxyURL': secret,
  'log.to': {
    kind: 'string',
    oneOf: ['console'],
    why: "tunnelward captures the tunnel's console output, rotates it and streams it; a log file would bypass that",
  },
  'log.level': oneOf('trace', 'debug', 'info', 'warn', 'error'),
  'log.maxDays': integer,
  'log.disablePrintColor': boolean,
  'webServer.addr': host,
  'webServer.port': port,
  'webServer.user': string,
  'webServer.password': secret,
  'webServer.assetsDir': string,
  'webServer.pprofEnable': boolean,
  'webServer.tls.certFile': string,
  'webServer.tls.keyFile': string,
  'webServer.tls.trustedCaFile': string,
  'webServer.tls.serverName': string,
  'transport.protocol': oneOf('tcp', 'kcp', 'quic', 'websocket', 'wss'),
  'transport.wireProtocol': oneOf('v1', 'v2'),
  'transport.dialServerTimeout': integer,
  'transport.dialServerKeepalive': integer,
  'transport.connectServerLocalIP': host,
  'transport.proxyURL': secret, // may carry a proxy password
  'transport.poolCount': integer,
  'transport.tcpMux': boolean,
  'transport.tcpMuxKeepaliveInterval': integer,
  'transport.heartbeatInterval': integer,
  'transport.heartbeatTimeout': integer,
  'transport.quic.keepalivePeriod': integer,
  'transport.quic.maxIdleTimeout': integer,
  'transport.quic.maxIncomingStreams': integer,
  'transport.tls.enable': boolean,
  'transport.tls.disableCustomTLSFirstByte': boolean,
  'transport.tls.certFile': string,
  'transport.tls.keyFile': string,
  'transport.tls.trustedCaFile': string,
  'transport.tls.serverName': string,
  'virtualNet.address': string,
};

/** The feature gates frpc knows (pkg/policy/featuregate); it refuses a file that names any other. */
export const FEATURE_GATES = ['VirtualNet'] as const;

/** The visitor types frpc v0.71 knows: the client side of stcp, xtcp and sudp proxies. */
export const VISITOR_TYPES = ['stcp', 'xtcp', 'sudp'] as const;

/** What every visitor has (frpc's VisitorBaseConfig); its `plugin` (virtual_net, behind a feature gate) is left out. */
const VISITOR_BASE_KEYS: Readonly<Record<string, KeySpec>> = {
  name: string,
  type: oneOf(...VISITOR_TYPES),
  enabled: boolean,
  'transport.useEncryption': boolean,
  'transport.useCompression': boolean,
  secretKey: secret,
  serverUser: string,
  serverName: string,
  bindAddr: host,
  bindPort: integer, // may be negative: "only receive connections redirected from other visitors"
};

/** What only an xtcp visitor has (frpc's XTCPVisitorConfig). */
const XTCP_VISITOR_KEYS: Readonly<Record<string, KeySpec>> = {
  protocol: oneOf('quic', 'kcp'),
  keepTunnelOpen: boolean,
  maxRetriesAnHour: integer,
  minRetryInterval: integer,
  fallbackTo: string,
  fallbackTimeoutMs: integer,
  'natTraversal.disableAssistedAddrs': boolean,
};

/** Every key a `[[visitors]]` block may hold, by dotted name: what older files are read against. */
export const VISITOR_KEYS: Readonly<Record<string, KeySpec>> = { ...VISITOR_BASE_KEYS, ...XTCP_VISITOR_KEYS };

/** The keys a visitor of this type may hold (frpc decodes each type into its own struct, strictly). */
export function visitorKeyTable(type: string): Readonly<Record<string, KeySpec>> {
  return type === 'xtcp' ? VISITOR_KEYS : VISITOR_BASE_KEYS;
}

/** Older top-level names (INI `[common]` era, and the API's `auth_method`) -> current dotted name. */
export const LEGACY_COMMON_KEYS: Readonly<Record<string, string>> = {
  server_addr: 'serverAddr',
  server_port: 'serverPort',
  auth_method: 'auth.method',
  authentication_method: 'auth.method',
  token: 'auth.token',
  auth_token: 'auth.token',
  oidc_client_id: 'auth.oidc.clientID',
  oidc_client_secret: 'auth.oidc.clientSecret',
  oidc_audience: 'auth.oidc.audience',
  oidc_scope: 'auth.oidc.scope',
  oidc_token_endpoint_url: 'auth.oidc.tokenEndpointURL',
  nat_hole_stun_server: 'natHoleStunServer',
  dns_server: 'dnsServer',
  login_fail_exit: 'loginFailExit',
  udp_packet_size: 'udpPacketSize',
  log_file: 'log.to',
  log_level: 'log.level',
  log_max_days: 'log.maxDays',
  disable_log_color: 'log.disablePrintColor',
  admin_addr: 'webServer.addr',
  admin_port: 'webServer.port',
  admin_user: 'webServer.user',
  admin_pwd: 'webServer.password',
  assets_dir: 'webServer.assetsDir',
  pprof_enable: 'webServer.pprofEnable',
  protocol: 'transport.protocol',
  dial_server_timeout: 'transport.dialServerTimeout',
  dial_server_keepalive: 'transport.dialServerKeepalive',
  connect_server_local_ip: 'transport.connectServerLocalIP',
  http_proxy: 'transport.proxyURL',
  pool_count: 'transport.poolCount',
  tcp_mux: 'transport.tcpMux',
  tcp_mux_keepalive_interval: 'transport.tcpMuxKeepaliveInterval',
  heartbeat_interval: 'transport.heartbeatInterval',
  heartbeat_timeout: 'transport.heartbeatTimeout',
  quic_keepalive_period: 'transport.quic.keepalivePeriod',
  quic_max_idle_timeout: 'transport.quic.maxIdleTimeout',
  quic_max_incoming_streams: 'transport.quic.maxIncomingStreams',
  tls_enable: 'transport.tls.enable',
  disable_custom_tls_first_byte: 'transport.tls.disableCustomTLSFirstByte',
  tls_cert_file: 'transport.tls.certFile',
  tls_key_file: 'transport.tls.keyFile',
  tls_trusted_ca_file: 'transport.tls.trustedCaFile',
  tls_server_name: 'transport.tls.serverName',
};

/** Older proxy keys -> current dotted name. */
export const LEGACY_PROXY_KEYS: Readonly<Record<string, string>> = {
  local_ip: 'localIP',
  local_port: 'localPort',
  remote_port: 'remotePort',
  custom_domains: 'customDomains',
  http_user: 'httpUser',
  http_pwd: 'httpPassword',
  host_header_rewrite: 'hostHeaderRewrite',
  route_by_http_user: 'routeByHTTPUser',
  sk: 'secretKey',
  allow_users: 'allowUsers',
  use_encryption: 'transport.useEncryption',
  use_compression: 'transport.useCompression',
  bandwidth_limit: 'transport.bandwidthLimit',
  bandwidth_limit_mode: 'transport.bandwidthLimitMode',
  proxy_protocol_version: 'transport.proxyProtocolVersion',
  group: 'loadBalancer.group',
  group_key: 'loadBalancer.groupKey',
  health_check_type: 'healthCheck.type',
  health_check_timeout_s: 'healthCheck.timeoutSeconds',
  health_check_max_failed: 'healthCheck.maxFailed',
  health_check_interval_s: 'healthCheck.intervalSeconds',
  health_check_url: 'healthCheck.path',
  plugin: 'plugin.type',
  plugin_unix_path: 'plugin.unixPath',
  plugin_http_user: 'plugin.httpUser',
  plugin_http_passwd: 'plugin.httpPassword',
  plugin_user: 'plugin.username',
  plugin_passwd: 'plugin.password',
  plugin_local_path: 'plugin.localPath',
  plugin_strip_prefix: 'plugin.stripPrefix',
  plugin_local_addr: 'plugin.localAddr',
  plugin_crt_path: 'plugin.crtPath',
  plugin_key_path: 'plugin.keyPath',
  plugin_host_header_rewrite: 'plugin.hostHeaderRewrite',
};

/** Older visitor keys -> current dotted name. */
export const LEGACY_VISITOR_KEYS: Readonly<Record<string, string>> = {
  sk: 'secretKey',
  server_name: 'serverName',
  server_user: 'serverUser',
  bind_addr: 'bindAddr',
  bind_port: 'bindPort',
  use_encryption: 'transport.useEncryption',
  use_compression: 'transport.useCompression',
  keep_tunnel_open: 'keepTunnelOpen',
  max_retries_an_hour: 'maxRetriesAnHour',
  min_retry_interval: 'minRetryInterval',
  fallback_to: 'fallbackTo',
  fallback_timeout_ms: 'fallbackTimeoutMs',
};

/** Older prefixed keys (`meta_foo = "x"`) -> the current table they belong in (`metadatas.foo`). Longest first. */
export const LEGACY_COMMON_PREFIXES: ReadonlyArray<readonly [string, string]> = [['meta_', 'metadatas']];
export const LEGACY_PROXY_PREFIXES: ReadonlyArray<readonly [string, string]> = [
  ['plugin_header_', 'plugin.requestHeaders.set'],
  ['header_', 'requestHeaders.set'],
  ['meta_', 'metadatas'],
];

/**
 * The keys frpc's INI reader (pkg/config/legacy in frp 0.71) reads, by section. go-ini maps a section onto a struct
 * and ignores every other key, so frpc starts with them and they do nothing: `use_encryption` in [common] included.
 */
export const INI_COMMON_KEYS: ReadonlySet<string> = new Set([
  // auth_method and auth_token are the API's spellings, not the INI reader's.
  ...Object.keys(LEGACY_COMMON_KEYS).filter((key) => key !== 'auth_method' && key !== 'auth_token'),
  ...['user', 'start', 'includes', 'log_way', 'authenticate_heartbeats', 'authenticate_new_work_conns'],
]);
export const INI_COMMON_PREFIXES: readonly string[] = ['meta_', 'oidc_additional_'];
export const INI_PROXY_KEYS: ReadonlySet<string> = new Set([
  ...Object.keys(LEGACY_PROXY_KEYS),
  ...['name', 'type', 'role', 'subdomain', 'locations', 'multiplexer'],
]);
export const INI_PROXY_PREFIXES: readonly string[] = ['plugin_header_', 'header_', 'meta_'];
export const INI_VISITOR_KEYS: ReadonlySet<string> = new Set([
  ...Object.keys(LEGACY_VISITOR_KEYS),
  ...['name', 'type', 'role', 'protocol'],
]);
