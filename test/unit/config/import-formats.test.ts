import test from 'ava';
import { parse } from 'smol-toml';
import { AppError } from '../../../src/errors.js';
import { readConfigText } from '../../../src/config/import-formats.js';
import { TunnelConfig } from '../../../src/config/tunnel-config.js';

type Tree = Record<string, any>;

const SECRET = 'never-in-a-message-7x2q';

/** The file an import of `text` writes (before tunnelward adds its admin endpoint), parsed back. */
async function imported(text: string, format?: string): Promise<{ format: string; file: Tree; notes: string[] }> {
  const read = await readConfigText(text, format);
  const { config, notes } = TunnelConfig.imported(read.tree, read);
  return { format: read.format, file: parse(config.toString()) as Tree, notes };
}

async function refusal(text: string, format?: string): Promise<string> {
  const err = await Promise.resolve()
    .then(() => imported(text, format))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  if (!(err instanceof AppError)) throw new Error(`expected a refusal, got ${String(err)}`);
  if (err.status !== 400) throw new Error(`expected a 400, got ${err.status}: ${err.message}`);
  if (err.message.includes(SECRET)) throw new Error(`the message shows the secret: ${err.message}`);
  return err.message;
}

test('INI as go-ini reads it for frpc: quotes, ":" delimiters, bare keys, comments, inline text kept', async (t) => {
  const { format, file, notes } = await imported(
    [
      '; comment',
      '[common]',
      'server_addr: "frp.example.com"',
      "server_port = '7000'",
      `token = ${SECRET}`,
      'tls_enable',
      'log_way = file',
      'log_file = console',
      'authenticate_heartbeats = false',
      'authenticate_new_work_conns = true',
      'oidc_additional_audience = api://frp',
      'user = edge # not a comment for frpc',
      '',
      '[ssh]',
      '# the type defaults to tcp',
      'local_port = 22',
      'remote_port = 6000',
      '',
      '[ssh]',
      'use_encryption = true',
    ].join('\n'),
  );
  t.is(format, 'ini');
  t.deepEqual(notes, [
    'loginFailExit = false was added: a server that cannot be reached at start is tried again, not fatal',
  ]);
  t.like(file, {
    serverAddr: 'frp.example.com',
    serverPort: 7000,
    user: 'edge # not a comment for frpc',
    auth: {
      token: SECRET,
      additionalScopes: ['NewWorkConns'],
      oidc: { additionalEndpointParams: { audience: 'api://frp' } },
    },
    transport: { tls: { enable: true } },
    log: { to: 'console' },
  });
  t.deepEqual(file.proxies, [
    {
      name: 'ssh',
      type: 'tcp',
      localIP: '127.0.0.1',
      localPort: 22,
      remotePort: 6000,
      transport: { useEncryption: true },
    },
  ]);
});

test('guessing: INI written in valid TOML, TOML with a typo under a table, YAML, JSON', async (t) => {
  const iniAsToml = await imported(
    '[common]\nserver_port = 7000\nserver_addr = "a.example.com"\n[ssh]\nlocal_port = 22\nremote_port = 6000\n',
  );
  t.is(iniAsToml.format, 'ini');
  t.is(iniAsToml.file.proxies[0].name, 'ssh');
  const olderToml = await imported('[common]\nserver_addr = "a.example.com"\n[auth]\nmethod = "token"\n');
  t.is(olderToml.format, 'toml');
  const typo = await refusal(`serverAddr = "a.example.com"\n[auth]\ntoken = "${SECRET}\n`);
  t.regex(typo, /^content is in none of the formats frpc reads \(as TOML: line 3, column \d+: /);
  t.is((await imported('serverAddr: a.example.com\nserverPort: 7001\n')).format, 'yaml');
  t.is((await imported(' \n{"serverAddr": "a.example.com"}')).format, 'json');
  t.is((await imported('\uFEFFserverAddr = "a.example.com"\n')).format, 'toml');
});

test('YAML and JSON: null means not set; a mapping is required', async (t) => {
  const { file } = await imported(
    'serverAddr: a.example.com\nuser: ~\nproxies:\n  - {name: s, type: tcp, localPort: 22, remotePort: 6000, localIP: null}\n',
  );
  t.false('user' in file);
  t.is(file.proxies[0].localIP, '127.0.0.1');
  t.regex(await refusal('- a\n- b\n', 'yaml'), /content is YAML but not a mapping/);
  t.regex(await refusal('"just text"', 'json'), /content is JSON but not a mapping/);
});

test('refusals name the line or key and never show a value', async (t) => {
  t.regex(
    await refusal(`[common]\nserver_addr = a\ntoken = ${SECRET}\n`, 'toml'),
    /^content is not valid TOML \(line 2/,
  );
  t.regex(await refusal(`token = ${SECRET}\n[common]\n`, 'ini'), /line 1: a setting before any \[section\]/);
  t.regex(await refusal(`[common]\n[DEFAULT]\nx = 1\n`, 'ini'), /\[DEFAULT\]/);
  t.regex(
    await refusal(`[common]\nauthenticate_heartbeats = ${SECRET}\n`, 'ini'),
    /authenticate_heartbeats must be true or false/,
  );
  t.regex(
    await refusal(`[common]\nserver_addr = a\ntoken = ${SECRET}\n[[proxies]]\n`, 'ini'),
    /line 4: \[\[\.\.\.\]\] is TOML's array table/,
  );
  t.regex(await refusal(`{"auth": {"token": "${SECRET}"}, "serverAddr": ${SECRET}}`), /^content is not valid JSON/);
  t.regex(
    await refusal(`auth:\n  token: "${SECRET}\n`, 'yaml'),
    /^content is not valid YAML \(line \d+, column \d+: [a-z ]+\)$/,
  );
  // A document that contains itself, or nests thousands deep, is refused before it costs anything.
  t.regex(await refusal(`serverAddr: a\nx: &a [*a]\n`, 'yaml'), /nests deeper than 32 levels/);
  t.regex(await refusal(`a: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`, 'yaml'), /nests deeper than 32 levels/);
  t.regex(await refusal(`{"a": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`), /nests deeper than 32 levels/);
  t.regex(
    await refusal(`serverAddr = "a"\nauth.token = "${SECRET}"\ntransport.tls.enable = "${SECRET}"\n`),
    /^top level: transport\.tls\.enable must be true or false$/,
  );
  t.regex(await refusal(`[common]\nserver_addr = a\n[web]\ntype = http\nlocal_port = 80\n`, 'ini'), /^\[web\]: /);
});

test('INI keys frpc reads nowhere, or not in that section, are left out and named; TOML text kept only when unchanged', async (t) => {
  const ini = await imported(
    '[common]\nserver_addr = a\nuse_encryption = true\nserverPort = 7001\n[ssh]\nlocal_port = 22\nremote_port = 6000\nplugin_nope = 1\n',
    'ini',
  );
  t.is(ini.file.serverPort, 7000, 'frpc reads no serverPort in INI');
  t.regex(ini.notes[0]!, /left out: \[common\] use_encryption, serverPort; \[ssh\] plugin_nope$/);
  t.regex(ini.notes[1]!, /^use_encryption in \[common\] set nothing/);

  const kept = await readConfigText(
    '# mine\nserverAddr = "a"\n[[proxies]]\nname = "ssh"\ntype = "tcp"\nlocalPort = 22\nremotePort = 6000\n',
  );
  t.true(TunnelConfig.imported(kept.tree, kept).config.toString().startsWith('# mine\nserverAddr = "a"\n'));
  // A value tunnelward changes on the way in (a port written as a string) is changed in place, the rest kept.
  const changed = await readConfigText('# mine\nserverAddr = "a"  # the server\nserverPort = "7000"\n');
  const written = TunnelConfig.imported(changed.tree, changed).config.toString();
  t.true(written.startsWith('# mine\nserverAddr = "a"  # the server\nserverPort = 7000\n'), written);
});
