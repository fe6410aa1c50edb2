import test from 'ava';
import { prettyLine } from '../../../src/log/pretty-line.js';
import { escapeControlsInJson } from '../../../src/util/terminal-text.js';

const at = new Date(2026, 10, 21, 21, 6, 47, 576).getTime();
/** A line as the logger writes it: pino's JSON with every control character escaped. */
const line = (record: Record<string, unknown>) =>
  `${escapeControlsInJson(JSON.stringify({ level: 30, time: at, pid: 7, ...record }))}\n`;

test('a line for a person: time, level, message and fields, as `tunnelward logs --system` shows it', (t) => {
  t.is(
    prettyLine(line({ component: 'supervisor', instanceID: 3, msg: 'started' }), false),
    '2026-11-21 21:06:47.576 INFO  started (component=supervisor instanceID=3)\n',
  );
  t.is(prettyLine(line({ level: 40, msg: 'careful' }), false), '2026-11-21 21:06:47.576 WARNING careful\n');
});

test('what a client sent acts on no terminal; colours are the only escape codes, and only when asked for', (t) => {
  const hostile = line({ level: 50, msg: 'login failed', username: 'x\u001b]0;owned\u0007\u009b2J\u007f' });
  const plain = prettyLine(hostile, false);
  t.false(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/.test(plain), JSON.stringify(plain));
  t.regex(plain, /^2026-11-21 21:06:47\.576 ERROR login failed \(username=".*"\)\n$/);
  const coloured = prettyLine(hostile, true);
  t.deepEqual(coloured.match(/\x1b\[[0-9;]*m/g), ['\x1b[90m', '\x1b[0m', '\x1b[31m', '\x1b[0m']);
  t.false(coloured.includes('\x1b]'));
});

test("an error's stack follows its line, indented; a line that is not JSON is shown as it is, controls visible", (t) => {
  const err = new Error('boom');
  err.stack = 'Error: boom\n    at one (a.js:1:1)\n    at two \u001b[2J(b.js:2:2)';
  const text = prettyLine(
    line({ level: 60, msg: 'uncaught exception, stopping', err: { message: 'boom', stack: err.stack } }),
    false,
  );
  t.is(
    text,
    '2026-11-21 21:06:47.576 FATAL uncaught exception, stopping (err="boom")\n' +
      '        at one (a.js:1:1)\n' +
      '        at two \\x1b[2J(b.js:2:2)\n',
  );
  t.is(prettyLine('not json \u001b[2J\n', false), 'not json \\x1b[2J\n');
});
