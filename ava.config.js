import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Every test file's process gets a temp dir of its own under this run's parent (test/setup/private-tmpdir.ts), and
// fails when it leaves anything there (short names: paths under it still fit a socket's 108 bytes); the parent goes when the run ends, with whatever a killed file left.
if (!process.env.TUNNELWARD_TEST_TMP_PARENT) {
  const parent = mkdtempSync(join(tmpdir(), 'tw-tests-'));
  chmodSync(parent, 0o755);
  process.env.TUNNELWARD_TEST_TMP_PARENT = parent;
  process.on('exit', () => rmSync(parent, { recursive: true, force: true }));
}

// Tests are compiled by `npm run build:all` (the `pretest` script) and run from dist/.
// A process per file, not worker threads: in worker threads the exit of a child process was seen going unnoticed
// for minutes (a test awaiting a daemon's exit hung until the suite's timeout) on a loaded machine.
export default {
  files: ['dist/test/**/*.test.js'],
  require: ['./dist/test/setup/private-tmpdir.js'],
  timeout: '60s',
  workerThreads: false,
  concurrency: 4,
};
