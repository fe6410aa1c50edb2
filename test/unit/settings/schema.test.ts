import test from 'ava';
import { checkSetting, type SettingKey } from '../../../src/settings/table.js';
import { CIDR_PATTERN, parseCidr } from '../../../src/settings/values.js';

const accepted: Array<[SettingKey, unknown]> = [
  ['TunnelPath', 'frpc'],
  ['TunnelPath', 'frpc-0.70'],
  ['TunnelPath', '/usr/local/bin/frpc'],
  ['InstancePath', '/var/lib/tunnelward/instances'],
  ['ListenAddr', '0.0.0.0'],
  ['ListenAddr', '::1'],
  ['ListenAddr', 'localhost'],
  ['ListenAddr', 'host-1.example.org'],
  ['Systemd.Systemctl', 'systemctl'],
  ['Systemd.Journalctl', '/usr/bin/journalctl'],
  ['Webhook.Headers', { Authorization: 'Bearer abc.DEF-123', 'X-Tab': 'a\tb' }],
  ['Webhook.URL', 'https://hooks.example.org/t/abc?x=1'],
];

const refused: Array<[SettingKey, unknown, RegExp]> = [
  ['TunnelPath', 'bin/frpc', /absolute path, or a program name/],
  ['TunnelPath', '.', /absolute path, or a program name/],
  ['TunnelPath', '/opt/frpc\n', /absolute path, or a program name/],
  ['InstancePath', '../escaped', /absolute path/],
  ['InstancePath', '/srv/../etc', /absolute path/],
  ['InstancePath', '', /absolute path/],
  ['ListenAddr', '127.0.0.1\r\n', /IP address or a host name/],
  ['ListenAddr', '', /IP address or a host name/],
  ['Windows.Schtasks', 'schtasks\u0000', /absolute path, or a program name/],
  ['Webhook.Headers', { 'X-A': 'caf\u00e9' }, /printable ASCII/],
  ['Webhook.Headers', { 'X-A': 'line\r\nX-B: 1' }, /printable ASCII/],
  ['Webhook.Headers', { 'X-A': '\u007f' }, /printable ASCII/],
  ['Webhook.URL', 'http://a.example/\tpath', /control characters/],
];

test('path, command, address and header settings: what is accepted', (t) => {
  for (const [key, value] of accepted) t.is(checkSetting(key, value), undefined, `${key} = ${JSON.stringify(value)}`);
});

test('path, command, address and header settings: what is refused, with the key named', (t) => {
  for (const [key, value, reason] of refused) {
    const problem = checkSetting(key, value);
    t.truthy(problem, `${key} = ${JSON.stringify(value)}`);
    t.true(problem!.startsWith(`${key} `));
    t.regex(problem!, reason);
  }
});

test("TrustedProxies: the document's pattern and the check agree, entry by entry", (t) => {
  const pattern = new RegExp(CIDR_PATTERN);
  const entries = [
    ...['10.0.0.1', '10.0.0.0/8', '10.0.0.0/08', '0.0.0.0/0', '255.255.255.255/32', '::1', '::', 'fd00::/8', '1::'],
    ...['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:1.2.3.4', '::ffff:10.1.2.3', 'fe80::1/128', '2001:db8::/032'],
    ...['1.2.3.4/33', '01.2.3.4', '1.2.3', '256.1.1.1', 'fe80::1/129', '1:2:3:4:5:6:7:8:9', '::g', '', ' 1.2.3.4'],
    ...['10.0.0.0/', '10.0.0.0/1/2', 'localhost', '1.2.3.4/0008'],
  ];
  for (const entry of entries) t.is(pattern.test(entry), parseCidr(entry) !== undefined, JSON.stringify(entry));
});
