import test from 'ava';
import { clipMiddle } from '../../../src/util/clip-middle.js';

test('a text within the bound is kept whole', (t) => {
  t.is(clipMiddle('short', 500), 'short');
  t.is(clipMiddle('x'.repeat(500), 500), 'x'.repeat(500));
});

test('a longer one keeps its head and its end, exactly the bound, and says how much is left out', (t) => {
  for (const length of [501, 600, 1_000, 99_999, 100_000]) {
    const text = `head ${'.'.repeat(length - 'head  the end'.length)} the end`;
    const clipped = clipMiddle(text, 500);
    t.is(clipped.length, 500, `${length} characters`);
    t.true(clipped.startsWith('head .'));
    t.true(clipped.endsWith('. the end'));
    const left = Number(/ … \((\d+) characters left out\) … /.exec(clipped)?.[1]);
    const gap = / … \(\d+ characters left out\) … /.exec(clipped)![0];
    t.is(left, length - (500 - gap.length), 'the count is what is not shown');
  }
});
