import test from 'ava';
import {
  checkWindowsPath,
  checkWindowsUser,
  createTaskArgs,
  deleteTaskArgs,
  queryTaskArgs,
  windowsCommandLine,
  type CreateTaskOptions,
} from '../../../src/boot/windows-task.js';

// An independent reading of a command line by the CommandLineToArgvW / MSVCRT rules (as documented by Microsoft:
// 2n backslashes + quote -> n backslashes and a quote toggle; 2n+1 -> n backslashes and a literal quote;
// backslashes not before a quote are literal; "" inside quotes is a literal quote).
function parseCommandLine(line: string): string[] {
  const args: string[] = [];
  let i = 0;
  for (;;) {
    while (line[i] === ' ' || line[i] === '\t') i++;
    if (i >= line.length) return args;
    let arg = '';
    let quoted = false;
    while (i < line.length && (quoted || (line[i] !== ' ' && line[i] !== '\t'))) {
      if (line[i] === '\\') {
        let n = 0;
        while (line[i] === '\\') {
          n++;
          i++;
        }
        if (line[i] === '"') {
          arg += '\\'.repeat(Math.floor(n / 2));
          if (n % 2 === 1) {
            arg += '"';
            i++;
          }
        } else {
          arg += '\\'.repeat(n);
        }
      } else if (line[i] === '"') {
        if (quoted && line[i + 1] === '"') {
          arg += '"';
          i += 2;
        } else {
          quoted = !quoted;
          i++;
        }
      } else {
        arg += line[i++];
      }
    }
    args.push(arg);
  }
}

const GOOD: CreateTaskOptions = {
  taskName: 'tunnel_3',
  runUser: 'SYSTEM',
  tunnelPath: 'C:\\frp\\frpc.exe',
  configPath: 'C:\\ProgramData\\tunnelward\\instances\\tunnel_3.toml',
};

test('create, delete and query arrays', (t) => {
  t.deepEqual(createTaskArgs(GOOD), [
    '/Create',
    '/SC',
    'ONSTART',
    '/TN',
    'tunnel_3',
    '/TR',
    'C:\\frp\\frpc.exe -c C:\\ProgramData\\tunnelward\\instances\\tunnel_3.toml',
    '/RU',
    'SYSTEM',
    '/RL',
    'HIGHEST',
    '/F',
  ]);
  t.deepEqual(deleteTaskArgs('tunnel_3'), ['/Delete', '/TN', 'tunnel_3', '/F']);
  t.deepEqual(queryTaskArgs('tunnelward\\tunnel_3'), ['/Query', '/TN', 'tunnelward\\tunnel_3']);
});

test('the /TR value quotes paths with spaces and reads back as the same argv', (t) => {
  const args = createTaskArgs({
    ...GOOD,
    tunnelPath: 'C:\\Program Files\\frp\\frpc.exe',
    configPath: 'D:\\tunnel configs\\tunnel_3.toml',
    runUser: 'NT AUTHORITY\\SYSTEM',
  });
  const taskRun = args[args.indexOf('/TR') + 1]!;
  t.is(taskRun, '"C:\\Program Files\\frp\\frpc.exe" -c "D:\\tunnel configs\\tunnel_3.toml"');
  t.deepEqual(parseCommandLine(taskRun), [
    'C:\\Program Files\\frp\\frpc.exe',
    '-c',
    'D:\\tunnel configs\\tunnel_3.toml',
  ]);
  t.is(args[args.indexOf('/RU') + 1], 'NT AUTHORITY\\SYSTEM');
});

test('quoting follows the MSVCRT rules', (t) => {
  const cases: Array<[string, string]> = [
    ['plain', 'plain'],
    ['C:\\frp\\frpc.exe', 'C:\\frp\\frpc.exe'], // backslashes alone stay as they are
    ['', '""'],
    ['with space', '"with space"'],
    ['tab\there', '"tab\there"'],
    ['C:\\dir with space\\', '"C:\\dir with space\\\\"'], // trailing backslash doubled before the closing quote
    ['C:\\dir\\', 'C:\\dir\\'], // ...but only when quoting is needed
    ['say "hi"', '"say \\"hi\\""'],
    ['a\\"b', '"a\\\\\\"b"'], // backslash before a quote: doubled, plus one for the quote
    ['a\\\\"b', '"a\\\\\\\\\\"b"'],
    ['"', '"\\""'],
    ['\\', '\\'],
    ['a b\\\\', '"a b\\\\\\\\"'],
  ];
  for (const [arg, expected] of cases) {
    t.is(windowsCommandLine([arg]), expected, JSON.stringify(arg));
    t.deepEqual(parseCommandLine(windowsCommandLine([arg])), [arg], `round trip of ${JSON.stringify(arg)}`);
  }
  const all = cases.map(([arg]) => arg);
  t.deepEqual(parseCommandLine(windowsCommandLine(all)), all);
});

test('Windows users: SYSTEM, plain names, DOMAIN\\user', (t) => {
  for (const user of [
    'SYSTEM',
    'NT AUTHORITY\\SYSTEM',
    'frp',
    'tunnel-svc',
    'CORP\\svc.frp',
    'CORP\\gmsa-frp$',
    'a'.repeat(20),
  ]) {
    t.is(checkWindowsUser(user), user);
  }
  for (const user of [
    '',
    'a'.repeat(21),
    'CORP\\',
    '\\user',
    'A\\B\\C',
    'user\nx',
    'root\nUser=evil',
    '$(id)',
    'a"b',
    'a%USERNAME%',
    'a&b',
    'a|b',
    'a<b',
    'user@corp.example',
    ' user',
    'user ',
    'user.',
    'a/b',
    '.\\user',
  ]) {
    t.throws(
      () => checkWindowsUser(user),
      { message: /^runUser must be SYSTEM, a user name or DOMAIN\\user/ },
      JSON.stringify(user),
    );
  }
});

test('Windows paths: absolute, no quotes, %, newlines or cmd metacharacters', (t) => {
  for (const path of [
    'C:\\frp\\frpc.exe',
    'c:/frp/frpc.exe',
    'C:\\Program Files (x86)\\frp\\frpc.exe',
    '\\\\server\\share\\frpc.exe',
    'D:\\$data\\a;b.toml',
  ]) {
    t.is(checkWindowsPath('tunnelPath', path), path);
  }
  const cases: Array<[string, RegExp]> = [
    ['frpc.exe', /^tunnelPath must be an absolute Windows path/],
    ['C:frpc.exe', /^tunnelPath must be an absolute Windows path/],
    ['\\frp\\frpc.exe', /^tunnelPath must be an absolute Windows path/],
    ['/opt/frpc', /^tunnelPath must be an absolute Windows path/],
    ['C:\\frp\\"frpc".exe', /^tunnelPath must not contain .*\("\\"" at index 7\)/],
    ['C:\\%USERPROFILE%\\frpc.exe', /\("%" at index 3\)/],
    ['C:\\frp\\frpc.exe\n-c x', /\("\\n" at index 15\)/],
    ['C:\\frp\\frpc.exe\r', /\("\\r"/],
    ['C:\\frp&calc.exe', /\("&"/],
    ['C:\\frp|calc.exe', /\("\|"/],
    ['C:\\frp<x', /\("<"/],
    ['C:\\frp>x', /\(">"/],
    ['C:\\fr^p', /\("\^"/],
    ['C:\\frp\\*.exe', /\("\*"/],
    ['C:\\' + 'a'.repeat(300), /^tunnelPath must be at most 260 characters long$/],
  ];
  for (const [path, message] of cases)
    t.throws(() => checkWindowsPath('tunnelPath', path), { message }, JSON.stringify(path));
});

test('createTaskArgs refuses injection attempts, naming the field', (t) => {
  const cases: Array<[keyof CreateTaskOptions, string[]]> = [
    [
      'taskName',
      [
        'tunnel_1; rm -rf /',
        'tunnel_1\nx',
        'tunnel 1',
        'tunnel_1 /RU SYSTEM',
        '..\\tunnel_1',
        'a\\..\\b',
        'tunnel_"1"',
        '%TEMP%',
        '',
      ],
    ],
    ['runUser', ['root\nUser=evil', '$(id)', 'SYSTEM /RP x', '"SYSTEM"', '%USERNAME%']],
    [
      'tunnelPath',
      ['C:\\frp\\frpc.exe" & calc & "', 'C:\\frp\\frpc.exe\nx', 'C:\\%h\\frpc.exe', 'C:\\a"b', 'frpc.exe', 'C:\\a|b'],
    ],
    ['configPath', ['C:\\a.toml" -c "C:\\evil.toml', 'C:\\a.toml\n', 'C:\\%APPDATA%\\a.toml', 'a.toml', 'C:\\a^b']],
  ];
  for (const [field, values] of cases) {
    for (const value of values) {
      t.throws(
        () => createTaskArgs({ ...GOOD, [field]: value }),
        { message: new RegExp(`^${field} `) },
        `${field}=${JSON.stringify(value)}`,
      );
    }
  }
  for (const name of ['tunnel_1; rm -rf /', 'a\nb', '']) {
    t.throws(() => deleteTaskArgs(name), { message: /^taskName / });
    t.throws(() => queryTaskArgs(name), { message: /^taskName / });
  }
});

test('a /TR value longer than schtasks accepts is refused', (t) => {
  const long = `C:\\${'d'.repeat(120)}\\frpc.exe`;
  t.throws(() => createTaskArgs({ ...GOOD, tunnelPath: long, configPath: `C:\\${'c'.repeat(140)}.toml` }), {
    message: /^tunnelPath and configPath together are too long for a scheduled task \(\d+ > 261 characters\)$/,
  });
});
