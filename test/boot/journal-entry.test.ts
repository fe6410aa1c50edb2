import test from 'ava';
import { parseJournalLine, signalName } from '../../src/boot/journal-entry.js';
import { parseUnitStatuses, restartStateOf } from '../../src/boot/unit-status.js';

// Entries as journalctl -o json prints them under systemd 252 (trimmed to the fields that are read).
const pid1 = (fields: Record<string, unknown>) =>
  JSON.stringify({ __CURSOR: 's=1;i=2', _PID: '1', _SYSTEMD_UNIT: 'init.scope', INVOCATION_ID: 'inv1', ...fields });

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
    event: { kind: 'output', id: 12, invocation: 'inv1', text: '[I] login to server success' },
  });
  const bytes = JSON.stringify({ _PID: '61', _SYSTEMD_UNIT: 'tunnel_3.service', MESSAGE: [104, 105, 0xff] });
  t.is((parseJournalLine(bytes).event as { text: string }).text, 'hi\ufffd', 'a message kept as bytes');
  t.is(parseJournalLine(JSON.stringify({ _PID: '61', _SYSTEMD_UNIT: 'nginx.service' })).event, undefined);
});

test("systemd's messages about a unit: exits, the end of a run, starts done or failed", (t) => {
  const exit = pid1({
    UNIT: 'tunnel_4.service',
    MESSAGE_ID: '98e322203f7a4ed290d09fe03c09fe15',
    EXIT_CODE: 'killed',
    EXIT_STATUS: '9',
  });
  t.deepEqual(parseJournalLine(exit).event, { kind: 'exit', id: 4, invocation: 'inv1', code: null, signal: 'SIGKILL' });
  const code = pid1({
    UNIT: 'tunnel_4.service',
    MESSAGE_ID: '98e322203f7a4ed290d09fe03c09fe15',
    EXIT_CODE: 'exited',
    EXIT_STATUS: '3',
  });
  t.like(parseJournalLine(code).event, { kind: 'exit', code: 3, signal: null });
  t.deepEqual(
    parseJournalLine(
      pid1({ UNIT: 'tunnel_4.service', MESSAGE_ID: 'd9b373ed55a64feb8242e02dbe79a49c', UNIT_RESULT: 'signal' }),
    ).event,
    { kind: 'ended', id: 4, invocation: 'inv1', success: false, result: 'signal' },
  );
  t.like(parseJournalLine(pid1({ UNIT: 'tunnel_4.service', MESSAGE_ID: '7ad2d189f7e94e70a38c781354912448' })).event, {
    kind: 'ended',
    success: true,
  });
  const started: Record<string, string> = {
    UNIT: 'tunnel_4.service',
    MESSAGE_ID: '39f53479d3a045ac8e11786248231fbf',
    JOB_TYPE: 'start',
  };
  t.like(parseJournalLine(pid1({ ...started, JOB_RESULT: 'done' })).event, { kind: 'started', id: 4 });
  t.like(parseJournalLine(pid1({ UNIT: 'tunnel_4.service', MESSAGE_ID: 'be02cf6855d2428ba40df7e9d022f03d' })).event, {
    kind: 'startFailed',
    id: 4,
  });
  // Other units, other messages, and anything not from PID 1 that claims to be about a unit.
  t.is(parseJournalLine(pid1({ ...started, JOB_RESULT: 'done', UNIT: 'tunnelward.slice' })).event, undefined);
  t.is(parseJournalLine(pid1({ UNIT: 'tunnel_4.service', MESSAGE: 'Sent signal SIGKILL' })).event, undefined);
  const forged = JSON.stringify({ _PID: '700', _SYSTEMD_UNIT: 'evil.service', UNIT: 'tunnel_4.service', ...started });
  t.is(parseJournalLine(forged).event, undefined);
  t.deepEqual(parseJournalLine('not json'), { cursor: undefined, event: undefined });
  t.is(signalName(15), 'SIGTERM');
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
