import test from 'ava';
import { resolveOptions } from '../../../src/daemon/options.js';
import { DAEMON_NICE } from '../../../src/system/priority.js';

const SETTINGS = { ListenAddr: '127.0.0.1', ListenPort: '7600' };
const niceFrom = (value: string | undefined) =>
  resolveOptions({ dataDir: '/tmp/x' }, { TUNNELWARD_DAEMON_NICE: value }, SETTINGS).daemonNice;

test("TUNNELWARD_DAEMON_NICE: unset or empty is the daemon's own priority; a nice value is taken; anything else is refused by name", (t) => {
  t.is(niceFrom(undefined), DAEMON_NICE);
  t.is(niceFrom(''), DAEMON_NICE);
  t.is(niceFrom('0'), 0);
  t.is(niceFrom('-20'), -20);
  t.is(niceFrom('19'), 19);
  for (const bad of ['-21', '20', 'high', '1.5', ' -5', '-', '100'])
    t.throws(() => niceFrom(bad), { message: 'TUNNELWARD_DAEMON_NICE must be a nice value from -20 to 19' }, bad);
});
