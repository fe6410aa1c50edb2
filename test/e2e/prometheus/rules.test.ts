// The example alert rules (examples/prometheus/): checked and unit-tested by Debian's promtool, as an operator would.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { EXAMPLES, PROMTOOL } from '../../helpers/prometheus.js';

const run = async (...args: string[]) => {
  try {
    const { stdout, stderr } = await promisify(execFile)(PROMTOOL, args, { cwd: EXAMPLES });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const { code, stdout, stderr } = err as { code: number; stdout: string; stderr: string };
    return { code, output: stdout + stderr };
  }
};

test('promtool check rules: the example rules are valid', async (t) => {
  const { code, output } = await run('check', 'rules', join(EXAMPLES, 'tunnelward-rules.yml'));
  t.is(code, 0, output);
  t.regex(output, /SUCCESS: 7 rules found/);
});

test('promtool test rules: each alert fires on the series tunnelward exposes, and only then', async (t) => {
  const { code, output } = await run('test', 'rules', 'tunnelward-rules.test.yml');
  t.is(code, 0, output);
  t.regex(output, /SUCCESS/);
});
