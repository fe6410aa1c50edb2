// How the doc test reads a page: which blocks run, their marks, where a command ends, how output is matched.
import test from 'ava';
import { missingLine, shellBlocks } from './doc-blocks.js';

const PAGE = [
  'Text.',
  '',
  '```console',
  '$ tunnelward ls',
  'id  name  state',
  '1   web   running',
  "$ cat > a.toml <<'EOF'",
  'serverPort = 7000',
  'EOF',
  '$ curl -s localhost:7600/x \\',
  '    -H "X-Token: $TOKEN"',
  '$ frps -c frps.toml &',
  '$ tunnelward logs -f web   # not run: follows until Ctrl-C',
  '```',
  '',
  '<!-- doctest: retry -->',
  '<!-- doctest: exit 1 -->',
  '```console',
  '$ tunnelward start nothing',
  '```',
  '',
  '<!-- doctest: skip needs a public DNS name -->',
  '```sh',
  'certbot certonly',
  '```',
  '',
  '```sh',
  'echo unmarked',
  '```',
  '',
  '```nginx',
  'location / {}',
  '```',
].join('\n');

test('console blocks are split into commands, with their output, continuations, here-documents and marks', (t) => {
  const blocks = shellBlocks(PAGE);
  t.deepEqual(
    blocks.map((b) => [b.line, b.lang, b.skip, b.retry, b.exit, b.commands.length]),
    [
      [3, 'console', undefined, false, 0, 5],
      [18, 'console', undefined, true, 1, 1],
      [23, 'sh', 'needs a public DNS name', false, 0, 0],
      [27, 'sh', undefined, false, 0, 0],
    ],
  );
  const [ls, cat, curl, frps, logs] = blocks[0]!.commands;
  t.like(ls, { line: 4, text: 'tunnelward ls', expected: ['id  name  state', '1   web   running'] });
  t.is(cat!.text, "cat > a.toml <<'EOF'\nserverPort = 7000\nEOF");
  t.deepEqual(cat!.expected, []);
  t.is(curl!.text, 'curl -s localhost:7600/x \\\n    -H "X-Token: $TOKEN"');
  t.like(frps, { background: true });
  t.like(logs, { text: 'tunnelward logs -f web', notRun: 'follows until Ctrl-C', background: false });
  t.false(curl!.background);
});

test('expected lines are found in order, with ... for any text and any run of spaces', (t) => {
  const printed = 'id  name    state\n1   office  running  41250\n2   web     stopped\n';
  t.is(missingLine(['id name state', '1 office running ...', '...', '2 web ...'], printed), undefined);
  t.is(missingLine(['2 web ...', '1 office ...'], printed), '1 office ...', 'out of order');
  t.is(missingLine(['3 shop running'], printed), '3 shop running');
  t.is(missingLine(['1 office (running)'], printed), '1 office (running)', 'regex characters are literal');
});
