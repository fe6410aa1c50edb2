import test from 'ava';
import { unifiedDiff } from '../../../src/util/unified-diff.js';

const lines = (count: number, change: (i: number) => string | undefined = () => undefined) =>
  Array.from({ length: count }, (_, i) => change(i + 1) ?? `line ${i + 1}`).join('\n') + '\n';

test('the same texts have no diff', (t) => {
  t.is(unifiedDiff('a\nb\n', 'a\nb\n'), '');
});

test('a changed line in a long text: one hunk with three lines of context each side, as diff -u numbers it', (t) => {
  const diff = unifiedDiff(
    lines(20),
    lines(20, (i) => (i === 10 ? 'line ten' : undefined)),
    'old',
    'new',
  );
  t.is(
    diff,
    [
      '--- old',
      '+++ new',
      '@@ -7,7 +7,7 @@',
      ' line 7',
      ' line 8',
      ' line 9',
      '-line 10',
      '+line ten',
      ' line 11',
      ' line 12',
      ' line 13',
      '',
    ].join('\n'),
  );
});

test('changes far apart make separate hunks; near ones share one; additions at the end count from the last line', (t) => {
  const far = unifiedDiff(
    lines(30),
    lines(30, (i) => (i === 2 || i === 25 ? `changed ${i}` : undefined)),
  );
  t.deepEqual(
    far.split('\n').filter((l) => l.startsWith('@@')),
    ['@@ -1,5 +1,5 @@', '@@ -22,7 +22,7 @@'],
  );
  const near = unifiedDiff(
    lines(30),
    lines(30, (i) => (i === 10 || i === 14 ? `changed ${i}` : undefined)),
  );
  t.deepEqual(
    near.split('\n').filter((l) => l.startsWith('@@')),
    ['@@ -7,11 +7,11 @@'],
  );
  const added = unifiedDiff('a\nb\n', 'a\nb\nc\n');
  t.is(added, '--- before\n+++ after\n@@ -1,2 +1,3 @@\n a\n b\n+c\n');
  t.is(unifiedDiff('', 'x\n'), '--- before\n+++ after\n@@ -0,0 +1 @@\n+x\n');
});
