/** Lines of context around each change, as `diff -u` shows them. */
const CONTEXT = 3;
/** Past this many line pairs the longest common subsequence is not worth its memory: the whole text is replaced. */
const MAX_CELLS = 4_000_000;

type Op = { kind: ' ' | '-' | '+'; line: string };

/**
 * The unified diff (`diff -u`) of two texts, '' when they are the same: `---`/`+++` headers named `from` and `to`,
 * then hunks of changed lines with three lines of context.
 */
export function unifiedDiff(before: string, after: string, from = 'before', to = 'after'): string {
  if (before === after) return '';
  const ops = lineOps(splitLines(before), splitLines(after));
  const hunks: string[] = [];
  let i = 0;
  while (i < ops.length) {
    if (ops[i]!.kind === ' ') {
      i++;
      continue;
    }
    // A hunk: context before, then changes until more than twice the context of unchanged lines separates them.
    let start = Math.max(0, i - CONTEXT);
    while (start > 0 && ops[start - 1]!.kind !== ' ') start--;
    let end = i;
    let quiet = 0;
    while (end < ops.length && quiet <= 2 * CONTEXT) {
      quiet = ops[end]!.kind === ' ' ? quiet + 1 : 0;
      end++;
    }
    end -= Math.max(0, quiet - CONTEXT);
    hunks.push(hunk(ops, start, end));
    i = end;
  }
  return `--- ${from}\n+++ ${to}\n${hunks.join('')}`;
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  return (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n');
}

/** The header's line numbers count the lines before the hunk on each side, as `diff -u` does. */
function hunk(ops: Op[], start: number, end: number): string {
  let oldLine = 1;
  let newLine = 1;
  for (const op of ops.slice(0, start)) {
    if (op.kind !== '+') oldLine++;
    if (op.kind !== '-') newLine++;
  }
  const body = ops.slice(start, end);
  const oldCount = body.filter((op) => op.kind !== '+').length;
  const newCount = body.filter((op) => op.kind !== '-').length;
  const range = (line: number, count: number) => `${count === 0 ? line - 1 : line}${count === 1 ? '' : `,${count}`}`;
  return (
    `@@ -${range(oldLine, oldCount)} +${range(newLine, newCount)} @@\n` +
    body.map((op) => `${op.kind}${op.line}\n`).join('')
  );
}

/** The edit script from `a` to `b` by their longest common subsequence (lines kept, removed, added). */
function lineOps(a: string[], b: string[]): Op[] {
  // Equal lines at either end need no table.
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  const keep = (lines: string[]): Op[] => lines.map((line) => ({ kind: ' ', line }));
  let middle: Op[];
  if (midA.length * midB.length > MAX_CELLS) {
    middle = [...midA.map((line): Op => ({ kind: '-', line })), ...midB.map((line): Op => ({ kind: '+', line }))];
  } else {
    const n = midA.length;
    const m = midB.length;
    // lengths[i][j]: the common subsequence of midA[i..] and midB[j..], in one flat array.
    const lengths = new Uint32Array((n + 1) * (m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        lengths[i * (m + 1) + j] =
          midA[i] === midB[j]
            ? lengths[(i + 1) * (m + 1) + j + 1]! + 1
            : Math.max(lengths[(i + 1) * (m + 1) + j]!, lengths[i * (m + 1) + j + 1]!);
    middle = [];
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && midA[i] === midB[j]) {
        middle.push({ kind: ' ', line: midA[i++]! });
        j++;
      } else if (i < n && (j === m || lengths[(i + 1) * (m + 1) + j]! >= lengths[i * (m + 1) + j + 1]!)) {
        middle.push({ kind: '-', line: midA[i++]! });
      } else {
        middle.push({ kind: '+', line: midB[j++]! });
      }
    }
  }
  return [...keep(a.slice(0, head)), ...middle, ...keep(a.slice(a.length - tail))];
}
