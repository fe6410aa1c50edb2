import test from 'ava';
import { loginFailedAtStart, readLogLine, withoutStatusReads } from '../../../src/config/proxy-status.js';

// Lines as frpc 0.71.0 prints them (the real-frp tests check that it still does).
// A line that says the connection is gone says all there is: frpc lists no proxy until it is logged in again, and a
// thousand tunnels that lost their server at once are not each asked.
test('the connection as frpc logs it: each login attempt, a lost server, a login that succeeds', (t) => {
  t.deepEqual(readLogLine('try to connect to server...'), { connected: false, lookAgain: false });
  t.deepEqual(readLogLine('[9e2e87f85ee584d9] try to connect to server...'), { connected: false, lookAgain: false });
  t.deepEqual(
    readLogLine('[9e2e87f85ee584d9] connect to server error: dial tcp 127.0.0.1:7000: connect: connection refused'),
    {
      connected: false,
      reason: 'server unreachable: dial tcp: connect: connection refused',
      lookAgain: false,
    },
  );
  t.deepEqual(readLogLine("connect to server error: token in login doesn't match token from configuration"), {
    connected: false,
    reason: "login refused: token in login doesn't match token from configuration",
    lookAgain: false,
  });
  // With loginFailExit, frpc's last words before it exits.
  t.deepEqual(
    readLogLine(
      'login to the server failed: dial tcp: lookup frp.invalid: no such host. With loginFailExit enabled, no additional retries will be attempted',
    ),
    {
      connected: false,
      reason: 'server unreachable: dial tcp: lookup of the server name: no such host',
      lookAgain: false,
    },
  );
  t.deepEqual(readLogLine('[9e2e87f85ee584d9] heartbeat timeout'), {
    connected: false,
    reason: 'server lost: no heartbeat answer',
    lookAgain: false,
  });
  t.deepEqual(readLogLine('[9e2e87f85ee584d9] login to server success, get run id [9e2e87f85ee584d9]'), {
    connected: true,
    lookAgain: true,
  });
  t.deepEqual(readLogLine('[9e2e87f85ee584d9] [ssh] start error: port already used'), { lookAgain: true });
  t.deepEqual(readLogLine('[9e2e87f85ee584d9] proxy added: [ssh web]'), { lookAgain: true });
  t.deepEqual(readLogLine('success reload conf'), { lookAgain: true });
  t.deepEqual(readLogLine('admin server listen on 127.0.0.1:7400'), { lookAgain: false });
});

test('the lines of tunnelward own status reads are left out of the log, nothing else', (t) => {
  const lines = [
    '2026-11-25 22:05:06.908 [I] [http/middleware.go:35] http request: [/api/status]',
    '2026-11-25 22:05:06.908 [I] [http/middleware.go:38] http response [/api/status]: code [200]',
    '2026-11-25 22:05:07.001 [I] [http/middleware.go:35] http request: [/api/reload]',
    '2026-11-25 22:05:07.002 [I] [http/middleware.go:38] http response [/api/status]: code [401]',
    '2026-11-25 22:05:07.003 [I] [client/service.go:312] try to connect to server...',
    '',
  ];
  t.is(withoutStatusReads(lines.join('\n')), lines.slice(2).join('\n'));
  t.is(withoutStatusReads(lines.slice(0, 2).join('\n') + '\n'), '');
  t.is(withoutStatusReads('plain\n'), 'plain\n');
});

test('a failed first login is told from the other exits with code 1 by the line frpc prints last', (t) => {
  t.true(
    loginFailedAtStart([
      'connect to server error: dial tcp 127.0.0.1:7000: connect: connection refused',
      'login to the server failed: dial tcp 127.0.0.1:7000: connect: connection refused. With loginFailExit enabled, no additional retries will be attempted',
    ]),
  );
  t.false(loginFailedAtStart(['json: unknown field "serverAdr"']));
});
