import test from 'ava';
import { signalName, UnitSignals, type BusSignal, type UnitEvent } from '../../../src/boot/unit-signals.js';

// Signals as systemd 252 sends them for a Type=exec unit with Restart=on-failure (the properties read, trimmed).
const path = (id: number) => `/org/freedesktop/systemd1/unit/tunnel_5f${id}_2eservice`;
const inv = (n: number) => Buffer.alloc(16, n);
const hex = (n: number) => inv(n).toString('hex');
const service = (id: number, mainPid: number, result = 'success', execCode = 0, execStatus = 0): BusSignal => ({
  path: path(id),
  interface: 'org.freedesktop.DBus.Properties',
  member: 'PropertiesChanged',
  body: [
    'org.freedesktop.systemd1.Service',
    { MainPID: mainPid, Result: result, ExecMainCode: execCode, ExecMainStatus: execStatus, NRestarts: 0 },
    ['ExecStart'],
  ],
});
const unit = (id: number, active: string, sub: string, invocation: number): BusSignal => ({
  path: path(id),
  interface: 'org.freedesktop.DBus.Properties',
  member: 'PropertiesChanged',
  body: ['org.freedesktop.systemd1.Unit', { ActiveState: active, SubState: sub, InvocationID: inv(invocation) }, []],
});
const jobRemoved = (unitName: string, result: string): BusSignal => ({
  path: '/org/freedesktop/systemd1',
  interface: 'org.freedesktop.systemd1.Manager',
  member: 'JobRemoved',
  body: [41, '/org/freedesktop/systemd1/job/41', unitName, result],
});

function feed(reader: UnitSignals, signals: BusSignal[]): UnitEvent[] {
  return signals.flatMap((s) => reader.read(s));
}

const startRun = (id: number, pid: number, invocation: number): BusSignal[] => [
  service(id, pid),
  unit(id, 'inactive', 'dead', invocation),
  service(id, pid),
  unit(id, 'activating', 'start', invocation),
  service(id, pid),
  unit(id, 'active', 'running', invocation),
  jobRemoved(`tunnel_${id}.service`, 'done'),
  service(id, pid),
  unit(id, 'active', 'running', invocation),
];

test('a start, a crash restarted by systemd, a stop: each run up once and ended once, with how it ended', (t) => {
  const reader = new UnitSignals();
  t.deepEqual(feed(reader, startRun(7, 67, 1)), [{ kind: 'started', id: 7, invocation: hex(1) }]);
  const crash = [
    service(7, 0, 'signal', 2, 9),
    unit(7, 'failed', 'failed', 1),
    service(7, 0, 'signal', 2, 9),
    unit(7, 'activating', 'auto-restart', 1),
    service(7, 0, 'signal', 2, 9),
    unit(7, 'activating', 'auto-restart', 1),
  ];
  t.deepEqual(feed(reader, crash), [
    { kind: 'ended', id: 7, invocation: hex(1), success: false, result: 'signal', code: null, signal: 'SIGKILL' },
  ]);
  t.deepEqual(feed(reader, startRun(7, 70, 2)), [{ kind: 'started', id: 7, invocation: hex(2) }]);
  const stop = [service(7, 70), unit(7, 'deactivating', 'stop-sigterm', 2), service(7, 0, 'success', 1, 0)];
  t.deepEqual(feed(reader, [...stop, unit(7, 'inactive', 'dead', 2), unit(7, 'inactive', 'dead', 2)]), [
    { kind: 'ended', id: 7, invocation: hex(2), success: true, result: 'success', code: 0, signal: null },
  ]);
});

test('an exit code, the start limit, and a run whose end was merged into the next one', (t) => {
  const reader = new UnitSignals();
  feed(reader, startRun(3, 50, 1));
  t.like(feed(reader, [service(3, 0, 'exit-code', 1, 3), unit(3, 'failed', 'failed', 1)]), [
    { kind: 'ended', success: false, result: 'exit-code', code: 3, signal: null },
  ]);
  // The restart past the start limit: the same invocation goes inactive then failed; the restart job fails.
  const limit = [
    service(3, 0, 'exit-code', 1, 3),
    unit(3, 'inactive', 'dead', 1),
    unit(3, 'failed', 'failed', 1),
    jobRemoved('tunnel_3.service', 'failed'),
  ];
  t.deepEqual(feed(reader, limit), [{ kind: 'startFailed', id: 3, invocation: hex(1) }]);
  // Pictures merged under load: the next run is up before the end of this one was seen.
  feed(reader, startRun(3, 60, 2));
  t.deepEqual(feed(reader, [service(3, 61), unit(3, 'active', 'running', 3)]), [
    { kind: 'ended', id: 3, invocation: hex(2), success: false, result: 'unknown', code: null, signal: null },
    { kind: 'started', id: 3, invocation: hex(3) },
  ]);
});

test('a run that was up before the signals began ends; other units, other signals and no run yet say nothing', (t) => {
  const reader = new UnitSignals();
  // The first news of a tunnel taken over at start-up is its crash.
  t.like(feed(reader, [service(9, 0, 'signal', 2, 15), unit(9, 'failed', 'failed', 5)]), [
    { kind: 'ended', id: 9, invocation: hex(5), signal: 'SIGTERM' },
  ]);
  const other = { ...unit(9, 'active', 'running', 6), path: '/org/freedesktop/systemd1/unit/nginx_2eservice' };
  t.deepEqual(feed(reader, [other, unit(4, 'inactive', 'dead', 0), jobRemoved('nginx.service', 'failed')]), []);
  t.deepEqual(feed(reader, [jobRemoved('tunnel_4.service', 'done'), { member: 'Reloading', body: [true] }]), []);
  t.is(signalName(15), 'SIGTERM');
  t.is(signalName(99), 'SIG99');
});
