import test from 'ava';
import { checkSetting } from '../../src/settings/schema.js';
import type { SettingKey } from '../../src/settings/defaults.js';

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
