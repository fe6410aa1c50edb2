import test from 'ava';
import { escapeControlsInJson, showControls, stripControls } from '../../../src/util/terminal-text.js';

const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

test('stripControls leaves out every kind of sequence and control character, tabs and newlines kept', (t) => {
  const cases: Array<[string, string]> = [
    ['a\x1b[1;34mb\x1b[0m', 'ab'],
    ['a\x1b[?1049hb\x1b[2 qc', 'abc'],
    ['a\x9b2Jb', 'ab'],
    ['a\x1b]0;title\x07b', 'ab'],
    ['a\x1b]52;c;aGk=\x1b\\b', 'ab'],
    ['a\x9d8;;https://x\x9cb', 'ab'],
    ['a\x1bPq#0\x1b\\b \x90q\x9cc', 'ab c'],
    ['a\x1bXsos\x1b\\b\x1b^pm\x1b\\c\x1b_apc\x1b\\d', 'abcd'],
    ['a\x1bcb\x1b(Bc\x1b7d\x1b=e', 'abcde'],
    ['bell\x07 bs\x08 cr\r del\x7f nel\x85 nul\x00', 'bell bs cr del nel nul'],
    ['tab\tnewline\nkept', 'tab\tnewline\nkept'],
    ['an OSC never ended\x1b]0;hides the rest\nof its line only', 'an OSC never ended\nof its line only'],
    ['a lone ESC at the end\x1b', 'a lone ESC at the end'],
    ['plain text, € and 日本', 'plain text, € and 日本'],
  ];
  for (const [text, expected] of cases) t.is(stripControls(text), expected, JSON.stringify(text));
});

test('showControls shows each control character but tab and newline as \\xNN', (t) => {
  t.is(showControls('a\x1b]0;x\x07b\x9b2J\x00\x7f\t\n'), 'a\\x1b]0;x\\x07b\\x9b2J\\x00\\x7f\t\n');
  t.is(showControls('nothing to show'), 'nothing to show');
});

test('escapeControlsInJson leaves the value as it was and no raw control character in the text', (t) => {
  const value = { text: 'a\x1b]0;x\x07\x9b2J\x7f\x85\t\n' };
  const json = `${JSON.stringify(value, null, 2)}\n`;
  t.true(RAW.test(json), 'JSON.stringify leaves C1 and DEL raw');
  const escaped = escapeControlsInJson(json);
  t.false(RAW.test(escaped));
  t.deepEqual(JSON.parse(escaped), value);
  t.true(escaped.endsWith('}\n'));
});
