import test from 'ava';
import type { Health } from '../../../src/instances/health.js';
import {
  bootCheck,
  failedCheck,
  filesCheck,
  shortReason,
  summarise,
  tunnelsCheck,
  type TunnelFinding,
} from '../../../src/system/tunnel-checks.js';

const tunnel = (name: string, state: Health['state'], reason: string | null = null, more = {}): TunnelFinding => ({
  name,
  health: { state, reason, since: 1 },
  bootAtStart: false,
  ...more,
});

const LOGIN = "not connected to the server: login refused: token in login doesn't match token from configuration";
const UNREACHABLE = 'not connected to the server: server unreachable: dial tcp: connect: connection refused';

test("a reason in one line: the exit and frpc's last line, without its time and source position", (t) => {
  t.is(shortReason(LOGIN), LOGIN);
  t.is(
    shortReason(
      'exited with code 1; last log lines:\n2025-01-02 10:00:00.123 [I] [sub/root.go:142] start frpc\n' +
        '2025-01-02 10:00:00.456 [E] [client/service.go:295] login to the server failed: EOF',
    ),
    'exited with code 1: login to the server failed: EOF',
  );
  t.is(shortReason('x'.repeat(300), 20), `${'x'.repeat(19)}…`);
});

test('a thousand tunnels make one line: grouped by reason, the biggest first, three names each, the rest counted', (t) => {
  const items = [
    ...Array.from({ length: 7 }, (_, i) => ({ name: `u${i}`, reason: UNREACHABLE })),
    ...Array.from({ length: 30 }, (_, i) => ({ name: `t${i}`, reason: LOGIN })),
  ];
  t.is(
    summarise(items, '37 tunnels down'),
    `37 tunnels down: 30 ${LOGIN} (t0, t1, t2 and 27 more); 7 ${UNREACHABLE} (u0, u1, u2 and 4 more)`,
  );
  const many = Array.from({ length: 1000 }, (_, i) => ({ name: `n${i}`, reason: `reason ${i % 10}` }));
  const line = summarise(many, '1000 tunnels down');
  t.true(line.length < 400, line);
  t.regex(line, /^1000 tunnels down: 100 reason 0 \(n0, n10, n20 and 97 more\); .*; 600 more for 6 other reasons$/);
  t.is(summarise([{ name: 'a', reason: 'r' }], '1 tunnel down'), '1 tunnel down: 1 r (a)');
});

test('tunnels down fail the check, degraded ones warn, none: ok with the count up', (t) => {
  t.like(tunnelsCheck([tunnel('a', 'up'), tunnel('b', 'stopped')]), {
    severity: 'ok',
    ok: true,
    message: 'none down or degraded (1 up, 1 stopped)',
  });
  t.like(tunnelsCheck([]), { severity: 'ok', message: 'no tunnels' });
  t.like(tunnelsCheck([tunnel('a', 'degraded', 'proxy web: start error')]), {
    severity: 'warn',
    message: '1 tunnel degraded: 1 proxy web: start error (a)',
  });
  const down = tunnelsCheck([tunnel('a', 'down', LOGIN), tunnel('b', 'degraded', 'proxy x: closed')]);
  t.like(down, { name: 'tunnels', severity: 'fail', ok: false });
  t.is(down.message, `1 tunnel down: 1 ${LOGIN} (a). 1 tunnel degraded: 1 proxy x: closed (b)`);
});

test('failed tunnels fail the check with the cause of the last exit', (t) => {
  t.like(failedCheck([tunnel('a', 'up')]), { severity: 'ok' });
  const failed = failedCheck([
    tunnel('a', 'failed', 'exited with code 1; last log lines:\nfixture: exiting with code 1'),
    tunnel('b', 'failed', 'exited with code 1; last log lines:\nfixture: exiting with code 1'),
  ]);
  t.like(failed, { name: 'failedTunnels', severity: 'fail' });
  t.regex(
    failed.message,
    /^2 tunnels failed \(the watchdog gave up.*\): 2 exited with code 1: fixture: exiting with code 1 \(a, b\)$/,
  );
});

test('start at boot while tunnelward itself does not start at boot warns, saying why and what a reboot does', (t) => {
  const unit = '/etc/systemd/system/tunnelward.service';
  const booted = [tunnel('a', 'up', null, { bootAtStart: true }), tunnel('b', 'up')];
  t.like(bootCheck([tunnel('b', 'up')], { unit, installed: false, enabled: undefined }, 'process'), {
    severity: 'ok',
  });
  t.like(bootCheck(booted, { unit, installed: true, enabled: true }, 'systemd'), { severity: 'ok' });
  const missing = bootCheck(booted, { unit, installed: false, enabled: undefined }, 'process');
  t.like(missing, { name: 'bootAtStart', severity: 'warn' });
  t.regex(missing.message, /^1 instance set to start at boot \(a\), but tunnelward itself does not start at boot: /);
  t.regex(
    missing.message,
    /not installed \(no \/etc\/systemd\/system\/tunnelward\.service: tunnelward service install\)/,
  );
  t.regex(missing.message, /stay down until tunnelward is started$/);
  const disabled = bootCheck(booted, { unit, installed: true, enabled: false, said: 'disabled' }, 'systemd');
  t.regex(disabled.message, /installed but not enabled \(disabled: systemctl enable/);
  t.regex(disabled.message, /their units start them, but nothing watches them/);
});

test("files the TunnelPath frpc refuses warn, naming its version and the unknown key's likely cause", (t) => {
  const refused = { verified: false as const, refused: 'json: unknown field "newKey"' };
  const ok = { verified: true as const };
  t.like(filesCheck([tunnel('a', 'up', null, { verdict: ok })], '0.71.0'), {
    severity: 'ok',
    message: 'the TunnelPath frpc (0.71.0) accepts every config file (1)',
  });
  const found = filesCheck(
    [
      tunnel('a', 'up', null, { verdict: refused }),
      tunnel('b', 'up', null, {
        verdict: { verified: false, skipped: 'it reads T from the environment, not set yet' },
      }),
      tunnel('c', 'up', null, { unread: 'ENOENT' }),
    ],
    '0.52.0',
  );
  t.like(found, { name: 'tunnelFiles', severity: 'warn' });
  t.regex(
    found.message,
    /^the TunnelPath frpc \(0\.52\.0\) refuses 1 config file: 1 json: unknown field "newKey" \(a\)\. /,
  );
  t.regex(found.message, /a key newer than this frpc: install a newer one/);
  t.regex(found.message, /2 config files not checked: 1 it reads T .* \(b\); 1 cannot read it: ENOENT \(c\)$/);
});
