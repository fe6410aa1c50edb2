import test from 'ava';
import { execFileSync } from 'node:child_process';
import { isIP } from 'node:net';
import { isAbsolute } from 'node:path';
import { holdsPlaceholder, onlyPlaceholders } from '../../../src/config/go-template.js';
import {
  ABSOLUTE_PATH_PATTERN,
  commaListPattern,
  CONTROL_CHAR,
  formattedShape,
  FORMAT_SHAPES,
  hasShape,
  type Shape,
  TEXT_PATTERN,
} from '../../../src/config/string-patterns.js';
import { splitList } from '../../../src/config/toml-tree.js';

// The patterns the checks and the OpenAPI document share, against the rules as written out in code: node's own
// address parser, the label rule, the template scanner of go-template.ts, the proxy edit's list split.

/** A reproducible stream of numbers in [0, 1) (mulberry32). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` strings of up to `length` pieces, each piece drawn from `pieces`. */
function strings(pieces: readonly string[], count: number, length: number, seed: number): string[] {
  const next = random(seed);
  return Array.from({ length: count }, () =>
    Array.from({ length: Math.floor(next() * (length + 1)) }, () => pieces[Math.floor(next() * pieces.length)]).join(
      '',
    ),
  );
}

const HOST_LABEL = /^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$/;
/** A host as the checks read one before they had a pattern: an address node parses, or labels. */
function isHostByCode(value: string): boolean {
  if (isIP(value) !== 0) return true;
  if (value.length > 253 || /^[\d.]+$/.test(value)) return false;
  return value.split('.').every((label) => HOST_LABEL.test(label));
}
const isDomainByCode = (value: string) => isHostByCode(value.startsWith('*.') ? value.slice(2) : value);
const CONTROL = new RegExp(CONTROL_CHAR);
const isTextByCode = (value: string) => onlyPlaceholders(value) && !CONTROL.test(value);

const ADDRESS_PIECES = [...'0123456789abcdefABCDEFxyz_-.:%*', '::', '1.2.3.4', '255', '256', 'ffff:', '::ffff:'];
const HOSTS = [
  ...strings(ADDRESS_PIECES, 20_000, 12, 1),
  '::1',
  'fe80::1%eth0',
  '::ffff:10.0.0.1',
  '1:2:3:4:5:6:7:8',
  '1:2:3:4:5:6:7:8:9',
  '1::2::3',
  '300.1.1.1',
  '01.2.3.4',
  `${'a'.repeat(63)}.com`,
  `${'a'.repeat(64)}.com`,
  `${'a.'.repeat(126)}a`,
  `${'a.'.repeat(126)}ab`,
  '*.example.com',
  '*.*.example.com',
  '_srv.example.com',
];

test('host and domain patterns accept exactly what the address parser and the label rule accept', (t) => {
  t.deepEqual(
    HOSTS.filter((value) => hasShape(value, FORMAT_SHAPES.host) !== isHostByCode(value)),
    [],
  );
  t.deepEqual(
    HOSTS.filter((value) => hasShape(value, FORMAT_SHAPES.domain) !== isDomainByCode(value)),
    [],
  );
  t.true(HOSTS.filter(isHostByCode).length > 500, 'the corpus holds hosts, not only refusals');
});

const TEXT_PIECES = [
  ...'ab {}$.\t\n\u0000\u007f',
  '{{',
  '}}',
  '{{ .Envs.A }}',
  '{{.Envs.b_1}}',
  '{{ .Envs.9 }}',
  '.Envs.',
];

test('the text pattern is the template rule: placeholders only, no control characters', (t) => {
  const text = new RegExp(TEXT_PATTERN);
  const values = strings(TEXT_PIECES, 20_000, 8, 2);
  t.deepEqual(
    values.filter((value) => text.test(value) !== isTextByCode(value)),
    [],
  );
  t.true(values.filter(isTextByCode).length > 1000);
  t.true(values.filter((value) => isTextByCode(value) && holdsPlaceholder(value)).length > 100);
});

test('a format or a placeholder: what the checks take for a formatted string', (t) => {
  const hostOrPlaceholder = formattedShape('host');
  const values = [...strings([...ADDRESS_PIECES, ...TEXT_PIECES], 20_000, 6, 3), 'h{{ .Envs.X }}.example.com'];
  const byCode = (value: string) => isTextByCode(value) && (holdsPlaceholder(value) || isHostByCode(value));
  t.deepEqual(
    values.filter((value) => hasShape(value, hostOrPlaceholder) !== byCode(value)),
    [],
  );
});

test('a comma-separated list: each item trimmed, empty ones dropped, each checked', (t) => {
  const list = new RegExp(commaListPattern());
  const domains = new RegExp(commaListPattern('domain'));
  const values = strings([...ADDRESS_PIECES, ...TEXT_PIECES, ',', ', ', ' ,', '\u00a0', 'a.example.com'], 20_000, 8, 4);
  const items = (value: string) => splitList(value);
  t.deepEqual(
    values.filter((value) => list.test(value) !== items(value).every(isTextByCode)),
    [],
  );
  const domainItem = (item: string) => isTextByCode(item) && (holdsPlaceholder(item) || isDomainByCode(item));
  t.deepEqual(
    values.filter((value) => domains.test(value) !== items(value).every(domainItem)),
    [],
  );
});

test('an included file: an absolute path as path.isAbsolute reads one, or text with a placeholder', (t) => {
  const path = new RegExp(ABSOLUTE_PATH_PATTERN);
  const values = [
    ...strings([...'/\\C:ab .\n', '{{ .Envs.DIR }}', '{{', './'], 5_000, 6, 5),
    '/etc/frp/a.toml',
    'C:\\frp\\a.toml',
    '\\\\server\\share',
  ];
  const byCode = (value: string) => isTextByCode(value) && (holdsPlaceholder(value) || isAbsolute(value));
  t.deepEqual(
    values.filter((value) => path.test(value) !== byCode(value)),
    [],
  );
  t.true(values.filter(byCode).length > 100);
});

test("Python's re reads every pattern and agrees (the conformance run generates values from them)", (t) => {
  const patternsOf = (shape: Shape): string[] => [
    ...(shape.pattern === undefined ? [] : [shape.pattern]),
    ...(shape.anyOf ?? []).flatMap(patternsOf),
  ];
  const patterns = [
    TEXT_PATTERN,
    ...patternsOf(formattedShape('domain')),
    ...patternsOf(FORMAT_SHAPES.bandwidth),
    commaListPattern('domain'),
    ABSOLUTE_PATH_PATTERN,
  ];
  const samples = ['a.example.com', '::1', 'fe80::1%eth0', '300.1.1.1', 'h{{ .Envs.X }}', '{{ .X }}', 'a\tb', '1MB, x'];
  const script =
    'import json,re,sys\nd=json.load(sys.stdin)\nprint(json.dumps([[bool(re.search(p,s)) for s in d["s"]] for p in d["p"]]))';
  const python = JSON.parse(
    execFileSync('python3', ['-c', script], { input: JSON.stringify({ p: patterns, s: samples }) }).toString(),
  ) as boolean[][];
  t.deepEqual(
    python,
    patterns.map((pattern) => samples.map((sample) => new RegExp(pattern).test(sample))),
  );
});
