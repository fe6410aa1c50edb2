import test from 'ava';
import { dispose, startDaemon } from '../../helpers/daemon.js';

// A real daemon: the bound is about many clients arriving at once while argon2 works, which needs its own process.
test('a flood of logins is bounded: excess attempts get 429 and other requests still answer', async (t) => {
  // argon2 at its production cost: the bound is about the real work of each check.
  const daemon = await startDaemon({
    settingsToml: '[RateLimit]\nLogin = 100000\n',
    env: { TUNNELWARD_ARGON2_MEMORY_KIB: '65536' },
  });
  t.teardown(() => dispose(daemon));
  const flood = Array.from({ length: 80 }, () => daemon.post('/login', { username: 'admin', passwd: 'Wrong123!x' }));
  const status = await daemon.get('/system/getStatus');
  t.is(status.status, 200, 'the event loop is not starved while argon2 works');
  const results = await Promise.all(flood);
  const busy = results.filter((r) => r.status === 429);
  const rejected = results.filter((r) => r.status === 401);
  // 2 running + 32 queued at most: the first 34 always get their check, and what comes on top of a full queue is
  // refused at once instead of piling up (how many depends on how fast the 80 arrive).
  t.true(rejected.length >= 34, `${rejected.length} got their password checked`);
  t.true(busy.length > 0, 'some were refused as excess');
  t.is(busy.length + rejected.length, 80);
  t.regex(busy[0]!.body.message, /too many password checks/);
});
