import test from 'ava';
import { AppError } from '../../../src/errors.js';
import { quoteBarePlaceholders } from '../../../src/config/go-template.js';
import { parseTomlDocument, TunnelConfig } from '../../../src/config/tunnel-config.js';

// The text of a config file as tunnelward writes it: the operator's comments and layout kept through every change,
// and frpc's template placeholders wherever frpc reads them (frp's own README writes a port as a bare placeholder).

const FRP_README_EXAMPLE = [
  '# frpc.toml',
  'serverAddr = "{{ .Envs.FRP_SERVER_ADDR }}"',
  'serverPort = 7000',
  '',
  '[[proxies]]',
  'name = "ssh"',
  'type = "tcp"',
  'localIP = "127.0.0.1"',
  'localPort = 22',
  'remotePort = {{ .Envs.FRP_SSH_REMOTE_PORT }}',
  '',
].join('\n');

const read = (text: string) => parseTomlDocument(text, 'test');

test("frp's own example reads: a placeholder as a whole address, and one standing bare for a port", (t) => {
  const config = TunnelConfig.parse(FRP_README_EXAMPLE);
  t.like(config.proxies()[0], { name: 'ssh', localPort: '22', remotePort: '{{ .Envs.FRP_SSH_REMOTE_PORT }}' });
  t.like(read(config.toString()), { serverAddr: '{{ .Envs.FRP_SERVER_ADDR }}' });
  t.deepEqual(config.envPlaceholders(), ['FRP_SERVER_ADDR', 'FRP_SSH_REMOTE_PORT']);
  // Written back as it was read: the port bare (frpc reads the number it renders to), the address quoted.
  t.is(config.toString(), FRP_README_EXAMPLE);
  config.modifyProxy('ssh', { localPort: 2222 });
  const text = config.toString();
  t.regex(text, /^remotePort = \{\{ \.Envs\.FRP_SSH_REMOTE_PORT \}\}$/m);
  t.regex(text, /^serverAddr = "\{\{ \.Envs\.FRP_SERVER_ADDR \}\}"$/m);
  t.regex(text, /^localPort = 2222$/m);
});

test('a placeholder may stand for any number or boolean, set through the API too, and is written bare', (t) => {
  const config = TunnelConfig.parse(FRP_README_EXAMPLE);
  config.addProxy({
    name: 'web',
    type: 'tcp',
    localPort: '{{ .Envs.WEB_PORT }}',
    remotePort: '{{ .Envs.WEB_REMOTE }}',
  });
  config.setCommon({
    serverPort: '{{ .Envs.FRP_PORT }}',
    loginFailExit: '{{ .Envs.STRICT }}',
    user: 'u-{{ .Envs.ME }}',
  });
  const text = config.toString();
  for (const line of [
    'serverPort = {{ .Envs.FRP_PORT }}',
    'loginFailExit = {{ .Envs.STRICT }}',
    'localPort = {{ .Envs.WEB_PORT }}',
    'remotePort = {{ .Envs.WEB_REMOTE }}',
    'user = "u-{{ .Envs.ME }}"',
  ])
    t.true(text.split('\n').includes(line), `${line} in\n${text}`);
  // Read again, it is the same config.
  t.deepEqual(read(TunnelConfig.parse(text).toString()), read(text));
  // Only a whole placeholder stands for a number; a fixed choice (a proxy's type, log.to) stays literal.
  for (const [change, message] of [
    [() => config.setCommon({ serverPort: '70{{ .Envs.P }}' }), /^serverPort must be a port number/],
    [() => config.setCommon({ 'log.to': '{{ .Envs.LOG }}' }), /^log\.to must be "console"/],
    [() => config.addProxy({ name: 'x', type: '{{ .Envs.T }}', localPort: 1 }), /^type must be one of/],
  ] as const) {
    const err = t.throws(change, { instanceOf: AppError });
    t.regex(err.message, message);
  }
  // One variable both as a string and bare cannot be told apart in the file: refused when written.
  config.setCommon({ user: '{{ .Envs.FRP_PORT }}' });
  t.throws(() => config.toString(), { message: /stands both for a number or true\/false and for a whole string/ });
});

test('placeholders inside strings and comments are left as they are', (t) => {
  const text = [
    'a = "x {{ .Envs.A }}" # {{ .Envs.B }}',
    "c = '''{{ .Envs.C }}'''",
    'd = """ "" {{ .Envs.D }} """',
    "e = 'it''s {{ .Envs.E }}'",
    'f = [{{ .Envs.F }}, 2]',
    'g = {{ .Envs.G }}',
  ].join('\n');
  t.is(
    quoteBarePlaceholders(text),
    [
      'a = "x {{ .Envs.A }}" # {{ .Envs.B }}',
      "c = '''{{ .Envs.C }}'''",
      'd = """ "" {{ .Envs.D }} """',
      "e = 'it''s {{ .Envs.E }}'",
      'f = ["{{ .Envs.F }}", 2]',
      'g = "{{ .Envs.G }}"',
    ].join('\n'),
  );
});

test("the operator's comments and layout stay through every kind of change", (t) => {
  const original = [
    '# office tunnels',
    'serverAddr = "frp.example.com"  # the server',
    'serverPort = 7000',
    'auth.token = "tok-123456"   # rotate yearly',
    '',
    '# the bastion',
    '[[proxies]]',
    'name = "ssh"',
    'type = "tcp"',
    'localPort = 22  # sshd',
    'remotePort = 6000',
    '',
    '# goes away',
    '[[proxies]]',
    'name = "old"',
    'type = "tcp"',
    'localPort = 23',
    'remotePort = 6001',
    '',
  ].join('\n');
  const config = TunnelConfig.parse(original);
  config.modifyProxy('ssh', { remotePort: 6022 });
  config.deleteProxy('old');
  config.addProxy({ name: 'web', type: 'tcp', localPort: 80, remotePort: 6080 });
  config.setCommon({ 'auth.token': 'tok-654321', serverPort: 7001 });
  const text = config.toString();
  for (const kept of [
    '# office tunnels',
    'serverAddr = "frp.example.com"  # the server',
    'auth.token = "tok-654321"   # rotate yearly',
    '# the bastion',
    'localPort = 22  # sshd',
  ])
    t.true(text.includes(kept), `${kept} in\n${text}`);
  t.false(text.includes('name = "old"'));
  t.like(read(text), { serverPort: 7001, auth: { token: 'tok-654321' } });
  t.deepEqual(
    (read(text).proxies as Array<{ name: string }>).map((p) => p.name),
    ['ssh', 'web'],
  );
  // The whole file replaced by an edit keeps the edit's own comments.
  const edited = config.replacedBy(`${text}# added by hand\n`).config;
  t.true(edited.toString().includes('# added by hand'));
});

test("an import's includes: the included proxies and visitors come into the file, which keeps its comments", (t) => {
  const text =
    '# main\nserverAddr = "a.example.com"\nincludes = ["./confd/*.toml"]\n\n[[proxies]]\nname = "ssh"\ntype = "tcp"\nlocalPort = 22\nremotePort = 6000\n';
  const included = [
    {
      path: '/etc/frp/confd/web.toml',
      tree: read('[[proxies]]\nname = "web"\ntype = "tcp"\nlocalPort = 80\nremotePort = 6080\n'),
    },
    {
      path: '/etc/frp/confd/visit.toml',
      tree: read(
        'user = "x"\n[[visitors]]\nname = "v"\ntype = "stcp"\nserverName = "s"\nsecretKey = "sk-1234"\nbindPort = 9000\n',
      ),
    },
  ];
  const { config, notes, proxyCount, visitorCount } = TunnelConfig.imported(read(text), {
    format: 'toml',
    text,
    included,
  });
  t.is(proxyCount, 2);
  t.is(visitorCount, 1);
  t.regex(
    notes.join('\n'),
    /includes: the 2 proxies and visitors of web\.toml, visit\.toml were brought into the file/,
  );
  t.regex(notes.join('\n'), /settings in visit\.toml were left out/);
  // The first [[visitors]] is a new array of tables: written after the patched text.
  config.setAdminEndpoint(7401, 'tunnelward', 'p'.repeat(32));
  const written = config.toString();
  t.true(written.startsWith('# main\nserverAddr = "a.example.com"\n'), written);
  t.false(written.includes('includes'));
  t.like(read(written), {
    proxies: [{ name: 'ssh' }, { name: 'web' }],
    visitors: [{ name: 'v' }],
    webServer: { port: 7401 },
  });
  // Without the included files (an API call that did not send them): refused, saying how.
  const refused = t.throws(() => TunnelConfig.imported(read(text), { format: 'toml', text }), { instanceOf: AppError });
  t.regex(refused.message, /includes: the included files were not sent: the CLI's import reads and sends them/);
});
