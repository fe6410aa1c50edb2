// The daemon runs only programs that only root (or its own user) can change, in directories that are the same: the
// tests' stand-ins for frpc, systemctl and the like live in this checkout, so its directories must qualify (a clone
// under /tmp, or in a group-writable directory, does not). Said once here, before hundreds of tests fail for it.
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../dist/src/paths.js';
import { trustedOwners, untrustedReason } from '../../dist/src/system/trusted-program.js';

const fixture = join(PACKAGE_ROOT, 'test', 'fixtures', 'frpc.mjs');
const reason = await untrustedReason(fixture, trustedOwners());
if (reason) {
  process.stderr.write(
    `check-checkout: the daemon would refuse to run the tests' programs from ${PACKAGE_ROOT}: ${reason}.\n` +
      'Clone the project under directories that only root (or the user running the tests) can change.\n',
  );
  process.exit(1);
}
