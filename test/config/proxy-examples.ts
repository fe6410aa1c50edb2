// One proxy per type and per plugin with its type-specific keys, as the API sends it and as the file must hold
// it, shared by the config unit tests and the API tests. Inputs mix the shapes the API accepts: string and
// integer ports, nested and dotted keys, a comma-separated list, an entry of a map.

type Tree = Record<string, any>;

export interface ProxyExample {
  /** proxyInfo for create. */
  input: Tree;
  /** The `[[proxies]]` block the file must hold after create. */
  file: Tree;
  /** Dotted paths of secrets: masked in the list, never in a reply or a log. */
  secrets: string[];
  /** proxyInfo for modify (the name is added by the test). */
  modify: Tree;
  /** What that modify changes in the block, merged over `file`. */
  modified: Tree;
}

export const PROXY_EXAMPLES: ProxyExample[] = [
  {
    input: {
      name: 'ex_tcp',
      type: 'tcp',
      localIP: '127.0.0.1',
      localPort: '22',
      remotePort: '6022',
      transport: { useEncryption: true, useCompression: true, bandwidthLimit: '1MB', bandwidthLimitMode: 'server' },
      'transport.proxyProtocolVersion': 'v2',
      'loadBalancer.group': 'ssh',
      'loadBalancer.groupKey': 'lb-group-secret',
      healthCheck: { type: 'tcp', timeoutSeconds: 3, maxFailed: '2', intervalSeconds: 10 },
      metadatas: { owner: 'ops' },
      annotations: { 'example.com/team': 'infra' },
      enabled: false,
    },
    file: {
      name: 'ex_tcp',
      type: 'tcp',
      localIP: '127.0.0.1',
      localPort: 22,
      remotePort: 6022,
      transport: {
        useEncryption: true,
        useCompression: true,
        bandwidthLimit: '1MB',
        bandwidthLimitMode: 'server',
        proxyProtocolVersion: 'v2',
      },
      loadBalancer: { group: 'ssh', groupKey: 'lb-group-secret' },
      healthCheck: { type: 'tcp', timeoutSeconds: 3, maxFailed: 2, intervalSeconds: 10 },
      metadatas: { owner: 'ops' },
      annotations: { 'example.com/team': 'infra' },
      enabled: false,
    },
    secrets: ['loadBalancer.groupKey'],
    modify: { localPort: 2222 },
    modified: { localPort: 2222 },
  },
  {
    input: {
      name: 'ex_udp',
      type: 'udp',
      localIP: '127.0.0.1',
      localPort: 53,
      remotePort: '6053',
      'transport.useEncryption': true,
    },
    file: {
      name: 'ex_udp',
      type: 'udp',
      localIP: '127.0.0.1',
      localPort: 53,
      remotePort: 6053,
      transport: { useEncryption: true },
    },
    secrets: [],
    modify: { remotePort: '6054' },
    modified: { remotePort: 6054 },
  },
  {
    input: {
      name: 'ex_http',
      type: 'http',
      localPort: '8080',
      customDomains: ['www.example.com'],
      subdomain: 'www',
      locations: ['/', '/api'],
      httpUser: 'alice',
      httpPassword: 'http-basic-secret',
      hostHeaderRewrite: 'backend.local',
      requestHeaders: { set: { 'x-from-where': 'frp' } },
      'responseHeaders.set': { 'x-served-by': 'frp' },
      routeByHTTPUser: 'alice',
      healthCheck: { type: 'http', path: '/health', httpHeaders: [{ name: 'Host', value: 'backend.local' }] },
    },
    file: {
      name: 'ex_http',
      type: 'http',
      localIP: '127.0.0.1',
      localPort: 8080,
      customDomains: ['www.example.com'],
      subdomain: 'www',
      locations: ['/', '/api'],
      httpUser: 'alice',
      httpPassword: 'http-basic-secret',
      hostHeaderRewrite: 'backend.local',
      requestHeaders: { set: { 'x-from-where': 'frp' } },
      responseHeaders: { set: { 'x-served-by': 'frp' } },
      routeByHTTPUser: 'alice',
      healthCheck: { type: 'http', path: '/health', httpHeaders: [{ name: 'Host', value: 'backend.local' }] },
    },
    secrets: ['httpPassword'],
    modify: { hostHeaderRewrite: 'other.local', 'requestHeaders.set.x-extra': 'yes' },
    modified: {
      hostHeaderRewrite: 'other.local',
      requestHeaders: { set: { 'x-from-where': 'frp', 'x-extra': 'yes' } },
    },
  },
  {
    input: {
      name: 'ex_https',
      type: 'https',
      localPort: 8443,
      customDomains: 'secure.example.com',
      subdomain: 'secure',
      'transport.proxyProtocolVersion': 'v1',
    },
    file: {
      name: 'ex_https',
      type: 'https',
      localIP: '127.0.0.1',
      localPort: 8443,
      customDomains: ['secure.example.com'],
      subdomain: 'secure',
      transport: { proxyProtocolVersion: 'v1' },
    },
    secrets: [],
    modify: { subdomain: 'secure2' },
    modified: { subdomain: 'secure2' },
  },
  {
    input: {
      name: 'ex_tcpmux',
      type: 'tcpmux',
      multiplexer: 'httpconnect',
      localPort: 8081,
      customDomains: ['mux.example.com'],
      httpUser: 'bob',
      httpPassword: 'mux-basic-secret',
      routeByHTTPUser: 'bob',
    },
    file: {
      name: 'ex_tcpmux',
      type: 'tcpmux',
      localIP: '127.0.0.1',
      multiplexer: 'httpconnect',
      localPort: 8081,
      customDomains: ['mux.example.com'],
      httpUser: 'bob',
      httpPassword: 'mux-basic-secret',
      routeByHTTPUser: 'bob',
    },
    secrets: ['httpPassword'],
    modify: { routeByHTTPUser: 'carol' },
    modified: { routeByHTTPUser: 'carol' },
  },
  {
    input: {
      name: 'postgres',
      type: 'stcp',
      localIP: '127.0.0.1',
      localPort: '5432',
      secretKey: 'pg-visitor-secret',
      allowUsers: ['*'],
      transport: { useEncryption: true, useCompression: true },
    },
    file: {
      name: 'postgres',
      type: 'stcp',
      localIP: '127.0.0.1',
      localPort: 5432,
      secretKey: 'pg-visitor-secret',
      allowUsers: ['*'],
      transport: { useEncryption: true, useCompression: true },
    },
    secrets: ['secretKey'],
    modify: { allowUsers: ['alice', 'bob'] },
    modified: { allowUsers: ['alice', 'bob'] },
  },
  {
    input: {
      name: 'ex_sudp',
      type: 'sudp',
      localPort: '53',
      secretKey: 'sudp-visitor-secret',
      allowUsers: 'alice, bob',
    },
    file: {
      name: 'ex_sudp',
      type: 'sudp',
      localIP: '127.0.0.1',
      localPort: 53,
      secretKey: 'sudp-visitor-secret',
      allowUsers: ['alice', 'bob'],
    },
    secrets: ['secretKey'],
    modify: { localIP: '10.0.0.5' },
    modified: { localIP: '10.0.0.5' },
  },
  {
    input: {
      name: 'ex_xtcp',
      type: 'xtcp',
      localPort: 22,
      secretKey: 'p2p-visitor-secret',
      allowUsers: ['*'],
      'natTraversal.disableAssistedAddrs': true,
    },
    file: {
      name: 'ex_xtcp',
      type: 'xtcp',
      localIP: '127.0.0.1',
      localPort: 22,
      secretKey: 'p2p-visitor-secret',
      allowUsers: ['*'],
      natTraversal: { disableAssistedAddrs: true },
    },
    secrets: ['secretKey'],
    modify: { natTraversal: { disableAssistedAddrs: false } },
    modified: { natTraversal: { disableAssistedAddrs: false } },
  },
  {
    input: {
      name: 'ex_uds',
      type: 'tcp',
      remotePort: 6100,
      plugin: { type: 'unix_domain_socket', unixPath: '/var/run/docker.sock' },
    },
    file: {
      name: 'ex_uds',
      type: 'tcp',
      remotePort: 6100,
      plugin: { type: 'unix_domain_socket', unixPath: '/var/run/docker.sock' },
    },
    secrets: [],
    modify: { 'plugin.unixPath': '/run/docker.sock' },
    modified: { plugin: { unixPath: '/run/docker.sock' } },
  },
  {
    input: {
      name: 'ex_http_proxy',
      type: 'tcp',
      remotePort: '6101',
      plugin: { type: 'http_proxy', httpUser: 'u', httpPassword: 'forward-proxy-secret' },
    },
    file: {
      name: 'ex_http_proxy',
      type: 'tcp',
      remotePort: 6101,
      plugin: { type: 'http_proxy', httpUser: 'u', httpPassword: 'forward-proxy-secret' },
    },
    secrets: ['plugin.httpPassword'],
    modify: { 'plugin.httpUser': 'u2' },
    modified: { plugin: { httpUser: 'u2' } },
  },
  {
    input: {
      name: 'ex_socks5',
      type: 'tcp',
      remotePort: 6102,
      'plugin.type': 'socks5',
      'plugin.username': 'u',
      'plugin.password': 'socks-secret',
    },
    file: {
      name: 'ex_socks5',
      type: 'tcp',
      remotePort: 6102,
      plugin: { type: 'socks5', username: 'u', password: 'socks-secret' },
    },
    secrets: ['plugin.password'],
    modify: { plugin: { username: 'u2' } },
    modified: { plugin: { username: 'u2' } },
  },
  {
    input: {
      name: 'ex_static_file',
      type: 'tcp',
      remotePort: 6103,
      plugin: {
        type: 'static_file',
        localPath: '/srv/files',
        stripPrefix: 'static',
        httpUser: 'u',
        httpPassword: 'files-secret',
      },
    },
    file: {
      name: 'ex_static_file',
      type: 'tcp',
      remotePort: 6103,
      plugin: {
        type: 'static_file',
        localPath: '/srv/files',
        stripPrefix: 'static',
        httpUser: 'u',
        httpPassword: 'files-secret',
      },
    },
    secrets: ['plugin.httpPassword'],
    modify: { 'plugin.stripPrefix': 'files' },
    modified: { plugin: { stripPrefix: 'files' } },
  },
  ...(['https2http', 'https2https'] as const).map((type, i) => {
    // The plugin table is written exactly as given.
    const plugin = {
      type,
      localAddr: `127.0.0.1:${8000 + i}`,
      hostHeaderRewrite: '127.0.0.1',
      requestHeaders: { set: { 'x-from-where': 'frp' } },
      enableHTTP2: true,
      crtPath: '/etc/frp/server.crt',
      keyPath: '/etc/frp/server.key',
    };
    return {
      input: { name: `ex_${type}`, type: 'https', customDomains: [`${type}.example.com`], plugin },
      file: {
        name: `ex_${type}`,
        type: 'https',
        customDomains: [`${type}.example.com`],
        plugin: structuredClone(plugin),
      },
      secrets: [],
      modify: { 'plugin.enableHTTP2': false },
      modified: { plugin: { enableHTTP2: false } },
    };
  }),
  ...(['http2https', 'http2http'] as const).map((type, i) => ({
    input: {
      name: `ex_${type}`,
      type: 'http',
      subdomain: type,
      plugin: {
        type,
        localAddr: `127.0.0.1:${9000 + i}`,
        hostHeaderRewrite: 'backend',
        'requestHeaders.set': { 'x-from-where': 'frp' },
      },
    },
    file: {
      name: `ex_${type}`,
      type: 'http',
      subdomain: type,
      plugin: {
        type,
        localAddr: `127.0.0.1:${9000 + i}`,
        hostHeaderRewrite: 'backend',
        requestHeaders: { set: { 'x-from-where': 'frp' } },
      },
    },
    secrets: [],
    modify: { 'plugin.hostHeaderRewrite': 'other', 'plugin.requestHeaders.set.x-from-where': null },
    modified: { plugin: { hostHeaderRewrite: 'other', requestHeaders: undefined } },
  })),
  {
    input: {
      name: 'ex_tls2raw',
      type: 'https',
      customDomains: ['raw.example.com'],
      plugin: { type: 'tls2raw', localAddr: '127.0.0.1:22', crtPath: '/etc/frp/raw.crt', keyPath: '/etc/frp/raw.key' },
    },
    file: {
      name: 'ex_tls2raw',
      type: 'https',
      customDomains: ['raw.example.com'],
      plugin: { type: 'tls2raw', localAddr: '127.0.0.1:22', crtPath: '/etc/frp/raw.crt', keyPath: '/etc/frp/raw.key' },
    },
    secrets: [],
    modify: { 'plugin.crtPath': '/etc/frp/other.crt' },
    modified: { plugin: { crtPath: '/etc/frp/other.crt' } },
  },
];

/** The user's stcp proxy whose secret used to be lost. */
export const POSTGRES = PROXY_EXAMPLES.find((example) => example.input.name === 'postgres')!;

/** Visitors as a file may hold them: no endpoint edits them, and every edit must keep them. */
export const VISITORS_TOML = `
[[visitors]]
name = "pg_visitor"
type = "stcp"
serverName = "postgres"
secretKey = "pg-visitor-secret"
bindAddr = "127.0.0.1"
bindPort = 15432

[[visitors]]
name = "p2p_visitor"
type = "xtcp"
serverName = "p2p"
secretKey = "p2p-visitor-secret"
bindPort = 16000
keepTunnelOpen = true
transport.useEncryption = true
`;

/** `base` with `patch` laid over it, table by table; an undefined value removes the key. */
export function merged(base: Tree, patch: Tree): Tree {
  const out: Tree = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) delete out[key];
    else if (isPlainTable(value) && isPlainTable(out[key])) out[key] = merged(out[key], value);
    else out[key] = value;
  }
  return out;
}

/** The list entry the API must show for a block: the five fields as strings, `enabled`, secrets masked. */
export function expectedView(file: Tree, secrets: string[]): Tree {
  const text = (value: unknown) => (value === undefined ? '' : String(value));
  const view: Tree = merged(structuredClone(file), {
    localIP: text(file.localIP),
    localPort: text(file.localPort),
    remotePort: text(file.remotePort),
    enabled: file.enabled !== false,
  });
  for (const secret of secrets) {
    const path = secret.split('.');
    const parent = path.slice(0, -1).reduce((table, key) => table[key], view);
    parent[path[path.length - 1]!] = '********';
  }
  return view;
}

function isPlainTable(value: unknown): value is Tree {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
