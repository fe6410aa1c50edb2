// `npm test` after its setup (pretest): runs ava here, or, when this checkout sits where the daemon refuses to run
// programs (under /tmp, in a group- or world-writable directory: the tests' stand-ins for frpc, systemctl and the like
// live in the checkout), from a copy of it in a directory that qualifies, removed afterwards. Arguments go to ava.
import { spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, sep } from 'node:path';
import { PACKAGE_ROOT } from '../../dist/src/paths.js';
import { trustedOwners, untrustedReason } from '../../dist/src/system/trusted-program.js';

const owners = trustedOwners();
const fixture = (root) => join(root, 'test', 'fixtures', 'frpc.mjs');

/** Runs ava in `root` with this run's arguments; resolves with its exit code. */
function ava(root) {
  const bin = join(root, 'node_modules', 'ava', 'entrypoints', 'cli.mjs');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const reason = await untrustedReason(fixture(PACKAGE_ROOT), owners);
if (!reason) process.exit(await ava(PACKAGE_ROOT));

// Where a copy qualifies: /var/lib for root, the user's own cache dir otherwise (if its directories qualify).
const base = process.getuid?.() === 0 ? '/var/lib' : join(homedir(), '.cache');
mkdirSync(base, { recursive: true });
const copy = mkdtempSync(join(base, 'tunnelward-tests-'));
chmodSync(copy, 0o755);
const cleanUp = () => rmSync(copy, { recursive: true, force: true });
process.on('SIGINT', () => {
  cleanUp();
  process.exit(130);
});
try {
  process.stderr.write(
    `run-tests: the daemon refuses programs in ${PACKAGE_ROOT} (${reason}): the tests run from a copy in ${copy}\n`,
  );
  // The history and the programs the tests write for themselves stay behind.
  const skipped = ['.git', '.test-programs'].map((name) => join(PACKAGE_ROOT, name));
  // Everything the tests use: sources, the build, node_modules, frp and schemathesis as the setup made them.
  cpSync(PACKAGE_ROOT, copy, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (src) => !skipped.some((dir) => src === dir || src.startsWith(dir + sep)),
  });
  chmodSync(copy, 0o755);
  const blocked = await untrustedReason(fixture(copy), owners);
  if (blocked) {
    process.stderr.write(
      `run-tests: the copy does not qualify either (${blocked}): clone the project under directories that only root or you can change\n`,
    );
    process.exitCode = 1;
  } else {
    process.exitCode = await ava(copy);
  }
} finally {
  cleanUp();
}
