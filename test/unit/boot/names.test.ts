import test from 'ava';
import { checkDescription, checkPath, checkRunUser, checkServiceName } from '../../../src/boot/names.js';

test('service names are tunnel_ and 1 to 9 digits', (t) => {
  for (const name of ['tunnel_0', 'tunnel_1', 'tunnel_123456789']) t.is(checkServiceName(name), name);
  for (const name of [
    'tunnel_',
    'tunnel_1234567890',
    'tunnel_1; rm -rf /',
    'tunnel_1\nExecStartPre=/bin/sh',
    'tunnel_1\n',
    'Tunnel_1',
    'tunnel-1',
    'tunnel_1.service',
    '../tunnel_1',
    'tunnel_１',
    '',
  ]) {
    t.throws(
      () => checkServiceName(name),
      { message: /^serviceName must be tunnel_ followed by 1 to 9 digits/ },
      JSON.stringify(name),
    );
  }
});

test('run users follow the useradd pattern', (t) => {
  for (const user of ['root', 'frp', '_frp', 'tunnel-svc', 'svc_1', 'host$', 'a'.repeat(32)])
    t.is(checkRunUser(user), user);
  for (const user of [
    'root\nUser=evil',
    '$(id)',
    '`id`',
    'Root',
    '1user',
    'user name',
    'a'.repeat(33),
    "root'",
    'root;',
    '',
    '-root',
  ]) {
    t.throws(() => checkRunUser(user), { message: /^runUser must be a system user name/ }, JSON.stringify(user));
  }
});

test('paths must be absolute, normalized and made of inert characters', (t) => {
  for (const path of [
    '/usr/bin/frpc',
    '/opt/frp-0.70.1/frpc',
    '/var/lib/tunnelward/instances/tunnel_1.toml',
    '/srv/a+b@c:d,e=f/x',
  ]) {
    t.is(checkPath('tunnelPath', path), path);
  }
  const cases: Array<[string, RegExp]> = [
    ['usr/bin/frpc', /^tunnelPath must be an absolute path/],
    ['', /^tunnelPath must be an absolute path/],
    ['/', /^tunnelPath must be a normalized path/],
    ['/usr//bin/frpc', /^tunnelPath must be a normalized path/],
    ['/usr/./bin/frpc', /^tunnelPath must be a normalized path/],
    ['/usr/../bin/frpc', /^tunnelPath must be a normalized path/],
    ['/usr/bin/', /^tunnelPath must be a normalized path/],
    ['/opt/my frp/frpc', /^tunnelPath contains a character that is not allowed \(" " at index 7\)/],
    ['/opt/frpc\n-c /etc/passwd', /^tunnelPath contains a character that is not allowed \("\\n" at index 9\)/],
    ['/home/%h/frpc', /"%" at index 6/],
    ['/opt/$HOME/frpc', /"\$" at index 5/],
    ['/opt/"frp"/frpc', /"\\"" at index 5/],
    ["/opt/'frp'/frpc", /"'" at index 5/],
    ['/opt/frpc;reboot', /";" at index 9/],
    ['/opt/frpc&', /"&"/],
    ['/opt/frpc|x', /"\|"/],
    ['/opt/`id`', /"`"/],
    ['/opt/frp\\c', /"\\\\"/],
    ['/opt/fr*', /"\*"/],
    ['/opt/frpc\t', /"\\t"/],
    ['/opt/é', /"é"/],
    ['/' + 'a'.repeat(4096), /^tunnelPath must be at most 4096 characters long$/],
  ];
  for (const [path, message] of cases) t.throws(() => checkPath('tunnelPath', path), { message }, JSON.stringify(path));
  t.throws(() => checkPath('configPath', 'x'), { message: /^configPath / });
});

test('descriptions are one printable line without specifiers, variables or quotes', (t) => {
  for (const text of ['tunnel web-1', 'tunnelward tunnel my_site.example (tunnel_12)'])
    t.is(checkDescription(text), text);
  const cases: Array<[string, RegExp]> = [
    ['', /^description must be 1 to 200 characters long$/],
    ['x'.repeat(201), /^description must be 1 to 200 characters long$/],
    ['web\nExecStartPre=/bin/sh', /^description must be printable ASCII on one line \("\\n" at index 3\)/],
    ['web\r', /^description must be printable ASCII/],
    ['web\u0000', /^description must be printable ASCII/],
    ['web é', /^description must be printable ASCII/],
    ['home %h', /^description must not contain % \$ \\ or quotes \("%" at index 5\)/],
    ['$HOME', /^description must not contain/],
    ['a\\', /^description must not contain/],
    ['say "hi"', /^description must not contain/],
    ["it's", /^description must not contain/],
    ['`id`', /^description must not contain/],
    [' web', /^description must not start or end with a space$/],
    ['web ', /^description must not start or end with a space$/],
  ];
  for (const [text, message] of cases) t.throws(() => checkDescription(text), { message }, JSON.stringify(text));
});

test('messages never echo more than 64 characters of the value', (t) => {
  const long = 'x'.repeat(10_000);
  const errors = [
    t.throws(() => checkServiceName(`tunnel_${long}`)),
    t.throws(() => checkRunUser(`U${long}`)),
    t.throws(() => checkPath('tunnelPath', long)),
    t.throws(() => checkPath('tunnelPath', `/${long.slice(0, 3000)}//x`)),
    t.throws(() => checkDescription(`${long}`)),
  ];
  for (const err of errors) {
    t.false(err!.message.includes('x'.repeat(65)), err!.message);
    t.true(err!.message.length < 300, err!.message);
  }
});

test('errors are 400s that callers can show', (t) => {
  const err = t.throws(() => checkRunUser('$(id)'));
  t.is((err as Error & { status?: number }).status, 400);
});

test('non-strings are refused with the field name', (t) => {
  t.throws(() => checkServiceName(1 as unknown as string), { message: 'serviceName must be a string' });
  t.throws(() => checkPath('dataDir', undefined as unknown as string), { message: 'dataDir must be a string' });
});
