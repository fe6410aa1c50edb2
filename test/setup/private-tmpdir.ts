// Loaded by ava (`require` in ava.config.js) in each test file's process before the file itself: gives the file a
// TMPDIR of its own, which everything it starts (daemons, CLIs, tunnels) inherits, and fails the file when anything
// is left in it at exit. A temp dir a test forgets holds tokens and keys; the failure names what was left.
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';

export default function privateTmpdir(): void {
  const file = relative(process.cwd(), fileURLToPath(test.meta.file));
  // Under the run's parent (ava.config.js makes it) or the system's temp dir when ava runs without that config.
  const parent = process.env.TUNNELWARD_TEST_TMP_PARENT || tmpdir();
  const dir = mkdtempSync(`${parent}/`);
  // As open as /tmp: tests run daemons and tunnels as other users, which make temp files of their own.
  chmodSync(dir, 0o1777);
  process.env.TMPDIR = dir;
  process.on('exit', () => {
    const left = readdirSync(dir);
    rmSync(dir, { recursive: true, force: true });
    if (left.length === 0) return;
    process.stderr.write(`${file}: left in its temp dir (remove them in a teardown): ${left.sort().join(', ')}\n`);
    // ava reports a file whose process exits non-zero as a failure (a `not ok` line in TAP).
    process.exitCode = 1;
  });
}
