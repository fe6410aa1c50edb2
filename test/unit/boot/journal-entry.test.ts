import test from 'ava';
import { parseJournalLine } from '../../../src/boot/journal-entry.js';
import { parseUnitStatuses, restartStateOf } from '../../../src/boot/unit-status.js';

test('output of a tunnel unit: by the unit journald saw it come from', (t) => {
  const line = JSON.stringify({
    __CURSOR: 's=1;i=9',
    _PID: '60',
    _SYSTEMD_UNIT: 'tunnel_12.service',
    _SYSTEMD_INVOCATION_ID: 'inv1',
    MESSAGE: '[I] login to server success',
  });
  t.deepEqual(parseJournalLine(line), {
    cursor: 's=1;i=9',
    output: { id: 12, invocation: 'inv1', text: '[I] login to server success' },
  });
  const bytes = JSON.stringify({ _PID: '61', _SYSTEMD_UNIT: 'tunnel_3.service', MESSAGE: [104, 105, 0xff] });
  t.is(parseJournalLine(bytes).output?.text, 'hi\ufffd', 'a message kept as bytes');
  t.is(parseJournalLine(JSON.stringify({ _PID: '61', _SYSTEMD_UNIT: 'nginx.service' })).output, undefined);
  // PID 1's messages about a unit are not the unit's output, whatever they claim.
  const pid1 = { __CURSOR: 's=1;i=2', _PID: '1', _SYSTEMD_UNIT: 'init.scope', UNIT: 'tunnel_4.service' };
  t.deepEqual(parseJournalLine(JSON.stringify(pid1)), { cursor: 's=1;i=2', output: undefined });
  t.deepEqual(parseJournalLine('not json'), { cursor: undefined, output: undefined });
});

test('systemctl show of several units, and where a restart stands', (t) => {
  const stdout = [
    'Id=tunnel_1.service\nLoadState=loaded\nActiveState=active\nSubState=running\nResult=success\nMainPID=60\nInvocationID=a1',
    'Id=tunnel_2.service\nLoadState=loaded\nActiveState=activating\nSubState=auto-restart\nResult=signal\nMainPID=0\nInvocationID=b2',
    'Id=tunnel_3.service\nLoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\nMainPID=0\nInvocationID=',
    'Id=tunnel_4.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\nResult=success\nMainPID=0\nInvocationID=',
  ].join('\n\n');
  const statuses = parseUnitStatuses(`${stdout}\n`);
  t.deepEqual(
    statuses.map((s) => [s.unit, s.loaded, s.mainPid, s.invocation]),
    [
      ['tunnel_1.service', true, 60, 'a1'],
      ['tunnel_2.service', true, 0, 'b2'],
      ['tunnel_3.service', true, 0, ''],
      ['tunnel_4.service', false, 0, ''],
    ],
  );
  t.deepEqual(statuses.map(restartStateOf), [undefined, 'backoff', 'failed', undefined]);
});
