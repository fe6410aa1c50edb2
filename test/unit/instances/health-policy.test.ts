import test from 'ava';
import { MAX_WAIT_SECS, restartDueAt, restartReason, waitSecs } from '../../../src/instances/health-policy.js';

const policy = { disconnectedSecs: 60, unreachableSecs: 120 };

test('a tunnel logged in, or a policy at 0, is never due', (t) => {
  t.is(restartDueAt({ connected: true, connectedSince: 0, disconnectReason: null }, policy, 0), undefined);
  t.is(
    restartDueAt(
      { connected: false, connectedSince: 0, disconnectReason: null },
      { disconnectedSecs: 0, unreachableSecs: 0 },
      0,
    ),
    undefined,
  );
});

test("not logged in: due the policy's time after it stopped being, then twice as long for each restart that did not help, up to an hour", (t) => {
  const facts = { connected: false, connectedSince: 1_000, disconnectReason: 'login refused: bad token' };
  t.is(restartDueAt(facts, policy, 0), 61_000);
  t.is(restartDueAt(facts, policy, 1), 121_000);
  t.is(restartDueAt({ ...facts, connected: null }, policy, 2), 241_000);
  t.deepEqual(
    [0, 1, 2, 3, 4, 5, 6, 7, 50].map((streak) => waitSecs(60, streak)),
    [60, 120, 240, 480, 960, 1920, MAX_WAIT_SECS, MAX_WAIT_SECS, MAX_WAIT_SECS],
  );
  // A policy longer than the cap is kept as it is.
  t.is(waitSecs(7200, 3), 7200);
});

test('the reason says what was seen, for how long, why, and when the next would come', (t) => {
  t.is(
    restartReason(
      { connected: false, connectedSince: 0, disconnectReason: 'login refused: bad token' },
      policy,
      0,
      61_400,
    ),
    'not connected to its server for 61 s (login refused: bad token): restarted by the health policy (Health.DisconnectedSecs 60); the first of this outage, the next after 120 s more without a change',
  );
  t.regex(
    restartReason({ connected: null, connectedSince: 0, disconnectReason: null }, policy, 1, 120_000),
    /^not logged in since its start for 120 s: .* restart 2 of this outage, the next after 240 s more without a change$/,
  );
});

test('logged in with a proxy unreachable from outside: due Health.UnreachableSecs after its probes began to fail', (t) => {
  const facts = {
    connected: true,
    connectedSince: 0,
    disconnectReason: null,
    unreachable: { proxy: 'web', since: 5_000, error: 'connection refused' },
  };
  t.is(restartDueAt(facts, policy, 0), 125_000);
  t.is(restartDueAt(facts, { ...policy, unreachableSecs: 0 }, 0), undefined);
  t.is(restartDueAt({ ...facts, unreachable: undefined }, policy, 0), undefined, 'logged in, every probe fine');
  t.is(
    restartReason(facts, policy, 0, 125_000),
    'proxy web unreachable from outside for 120 s (connection refused) while frpc says it runs: restarted by the health policy (Health.UnreachableSecs 120); the first of this outage, the next after 240 s more without a change',
  );
});
