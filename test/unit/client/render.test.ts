import test from 'ava';
import { forTerminal, paint, table } from '../../../src/client/render.js';

test("forTerminal shows the text's control characters and makes paint's colours real", (t) => {
  const painted = paint('x\x1b]0;t\x07', 'green', true);
  t.is(forTerminal(`${painted} \x1b[31mred?\x1b[0m\n`), '\x1b[32mx\\x1b]0;t\\x07\x1b[0m \\x1b[31mred?\\x1b[0m\n');
  t.is(forTerminal(paint('x', 'green', false)), 'x', 'no colour asked, none given');
  // A colour named by a server is looked up as an own key only.
  t.is(forTerminal(paint('x', 'constructor' as never, true)), 'x');
});

test('forTerminal in JSON escapes what JSON leaves raw, as JSON', (t) => {
  const json = JSON.stringify({ name: '\x1b\x9b\x7f' });
  t.is(forTerminal(json, true), '{"name":"\\u001b\\u009b\\u007f"}');
});

test('a table lines up its columns with the cells as shown', (t) => {
  const text = table(
    ['name', 'state'],
    [
      ['a\x1bb', 'running'],
      ['plain', 'stopped'],
    ],
  );
  const lines = forTerminal(text).split('\n');
  t.deepEqual(lines, ['name    state', 'a\\x1bb  running', 'plain   stopped', '']);
});
