import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { MALLOC_ENVIRONMENT, NODE_FLAGS } from '../../../src/system/node-flags.js';

test('`npm start` runs the daemon with the same Node flags and allocator settings as its unit and its benchmarks', async (t) => {
  const pkg = JSON.parse(await readFile(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const environment = Object.entries(MALLOC_ENVIRONMENT).map(([name, value]) => `${name}=${value}`);
  t.is(pkg.scripts.start, [...environment, 'node', ...NODE_FLAGS, 'dist/src/cli.js'].join(' '));
});
