import test from 'ava';
import {
  attributeChanges,
  desiredAttributes,
  readDesiredState,
  referencesForMasked,
  writeDesiredState,
  type DesiredInstance,
} from '../../../src/config/desired-state.js';
import { maskSecrets } from '../../../src/config/secret-mask.js';

const YAML = `instances:
  - name: web
    labels: { team: web }
    env: [FRP_TOKEN]
    frpc:
      serverAddr: 127.0.0.1
      auth: { token: "{{ .Envs.FRP_TOKEN }}" }
      proxies:
        - { name: ssh, type: tcp, localPort: 22, remotePort: 6000 }
`;

const TOML = `[[instances]]
name = "web"
env = ["FRP_TOKEN"]
labels = { team = "web" }

[instances.frpc]
serverAddr = "127.0.0.1"
auth = { token = "{{ .Envs.FRP_TOKEN }}" }

[[instances.frpc.proxies]]
name = "ssh"
type = "tcp"
localPort = 22
remotePort = 6000
`;

test('YAML and TOML read to the same desired state, each format guessed or named', (t) => {
  t.deepEqual(readDesiredState(YAML), readDesiredState(TOML));
  t.deepEqual(readDesiredState(YAML, 'yaml'), readDesiredState(TOML, 'toml'));
});

test('a file that breaks the schema is refused whole, the field named', (t) => {
  const refused = (text: string, format: 'yaml' | 'toml' = 'yaml') =>
    t.throws(() => readDesiredState(text, format))?.message ?? '';
  t.regex(
    refused('instances:\n  - { name: a, frpc: {} }\n  - { name: a, frpc: {} }\n'),
    /instances\.1\.name: a is named twice/,
  );
  t.regex(refused('instances:\n  - { name: a }\n'), /give frpc .* or configFile/);
  t.regex(refused('instances:\n  - { name: a, frpc: {}, configFile: x.toml }\n'), /give frpc .* or configFile/);
  t.regex(refused('instances:\n  - { name: a, frpc: {}, expires: 2h }\n'), /expires: must be an ISO 8601 time/);
  t.regex(refused('instances:\n  - { name: a, frpc: {}, colour: red }\n'), /colour/);
  t.regex(refused('instances: [\n'), /not YAML: .* at line 2, column 1$/);
  const toml = refused('instances = "secret-x"\nb = = 1\n', 'toml');
  t.regex(toml, /not TOML: invalid value at line 2, column 5$/);
  t.false(toml.includes('secret-x'), 'the file is not quoted');
});

test('attributes left out are the defaults a create gives; changes are said by name, never by an environment value', (t) => {
  const base = { name: 'web', frpc: {} } as DesiredInstance;
  const defaults = desiredAttributes(base);
  t.deepEqual(defaults, {
    bootAtStart: false,
    runUser: 'root',
    labels: {},
    env: [],
    policy: {},
    probes: false,
    expiresAt: null,
  });
  const wanted = desiredAttributes({
    ...base,
    labels: { team: 'web' },
    env: ['B', 'A', 'A'],
    policy: { memoryMaxMB: 64 },
    expires: '2031-01-01T00:00:00Z',
  });
  t.deepEqual(wanted.env, ['A', 'B']);
  t.deepEqual(attributeChanges(defaults, defaults, []), []);
  t.deepEqual(attributeChanges({ ...defaults, env: ['B', 'C'] }, wanted, ['B']), [
    'labels.team: (none) -> web',
    'policy.memoryMaxMB: (none) -> 64',
    'expires: (none) -> 2031-01-01T00:00:00.000Z',
    'env A: set',
    'env B: changed',
    'env C: removed',
  ]);
});

test('a masked export gets a reference for each secret it does not carry, and keeps a reference as it is', (t) => {
  const clear = {
    serverAddr: '127.0.0.1',
    auth: { method: 'token', token: 'literal-secret' },
    proxies: [
      { name: 'web', type: 'http', localPort: 80, httpPassword: '{{ .Envs.WEB_PASS }}' },
      { name: 'st', type: 'stcp', localPort: 22, secretKey: 'another-secret' },
    ],
  };
  const names: string[] = [];
  const out = referencesForMasked(maskSecrets(clear), clear, 'edge-1', names);
  t.deepEqual(out, {
    serverAddr: '127.0.0.1',
    auth: { method: 'token', token: '{{ .Envs.EDGE_1_AUTH_TOKEN }}' },
    proxies: [
      { name: 'web', type: 'http', localPort: 80, httpPassword: '{{ .Envs.WEB_PASS }}' },
      { name: 'st', type: 'stcp', localPort: 22, secretKey: '{{ .Envs.EDGE_1_PROXIES_ST_SECRETKEY }}' },
    ],
  });
  t.deepEqual(names, ['EDGE_1_AUTH_TOKEN', 'EDGE_1_PROXIES_ST_SECRETKEY']);
  t.false(JSON.stringify(out).includes('********'));
  const digits: string[] = [];
  referencesForMasked(maskSecrets(clear), clear, '9lives', digits);
  t.is(digits[0], '_9LIVES_AUTH_TOKEN', 'a name that starts with a digit is made a variable name');
});

test('what writeDesiredState writes reads back the same, in YAML and in TOML (which leaves out what is null)', (t) => {
  const state = {
    instances: [
      { ...readDesiredState(YAML).instances[0]!, expires: null, frpc: { serverAddr: 'x' } } as DesiredInstance,
    ],
  };
  t.deepEqual(readDesiredState(writeDesiredState(state, 'yaml'), 'yaml'), state);
  const { expires: _, ...withoutNull } = state.instances[0]!;
  t.deepEqual(readDesiredState(writeDesiredState(state, 'toml'), 'toml'), { instances: [withoutNull] });
});
