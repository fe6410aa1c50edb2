// The connection to PID 1 (src/boot/systemd-bus.ts) against a real systemd (test/systemd/host.sh): many fresh
// connections in a row, each subscribed and answered at once. systemd's server leaves a first message unread when it
// arrives in one read with a late BEGIN, so a client that sent BEGIN after the OK hung on most connections.
import test from 'ava';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { SystemdHost } from '../../helpers/systemd-host.js';

const CONNECTIONS = 50;

test(`${CONNECTIONS} connections in a row: each is subscribed and its first call answered within a second`, async (t) => {
  const host = await SystemdHost.boot();
  t.teardown(() => host.shutdown());
  const module = join(PACKAGE_ROOT, 'dist', 'src', 'boot', 'systemd-bus.js');
  // Runs inside the host: connect, subscribe, one call, close; a warning (a subscription not answered) is a failure.
  const program = `
    import { SystemdBus } from ${JSON.stringify(module)};
    const log = { child: () => log, debug() {}, info() {}, warn: (o) => { throw new Error(JSON.stringify(o)); }, error() {} };
    const times = [];
    for (let i = 0; i < ${CONNECTIONS}; i++) {
      const t0 = performance.now();
      const bus = new SystemdBus(log);
      await bus.start();
      await bus.resetFailed('no-such-unit.service');
      times.push(performance.now() - t0);
      bus.close();
    }
    console.log(JSON.stringify(times));`;
  const run = await host.run('timeout', '60', 'node', '--input-type=module', '-e', program);
  t.is(run.code, 0, run.stderr);
  const times = JSON.parse(run.stdout) as number[];
  t.is(times.length, CONNECTIONS);
  t.true(Math.max(...times) < 1000, `slowest connection ${Math.max(...times).toFixed(0)} ms`);
});

test('two starts of one unit merged into one job are both answered; a job that does not end in time is given up', async (t) => {
  const host = await SystemdHost.boot();
  t.teardown(() => host.shutdown());
  // A unit whose start takes a second (a oneshot), so that a second start merges into the first's job.
  const unit = '[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sleep 1\n';
  t.is((await host.run('sh', '-c', `printf '${unit}' > /etc/systemd/system/slow-start.service`)).code, 0);
  // Another such unit for the time limit, started fresh (not just after a stop of the first, which a loaded machine
  // saw answered 'failed').
  t.is((await host.run('sh', '-c', `printf '${unit}' > /etc/systemd/system/slow-again.service`)).code, 0);
  t.is((await host.systemctl('daemon-reload')).code, 0);
  const module = join(PACKAGE_ROOT, 'dist', 'src', 'boot', 'systemd-bus.js');
  const program = `
    import { SystemdBus } from ${JSON.stringify(module)};
    const log = { child: () => log, debug() {}, info() {}, warn() {}, error() {} };
    const bus = new SystemdBus(log);
    await bus.start();
    const merged = await Promise.all([bus.startUnit('slow-start.service'), bus.startUnit('slow-start.service')]);
    await bus.stopUnit('slow-start.service', true);
    bus.close();
    const hasty = new SystemdBus(log, undefined, 300);
    await hasty.start();
    const late = await hasty.startUnit('slow-again.service');
    hasty.close();
    console.log(JSON.stringify({ merged, late }));`;
  const run = await host.run('timeout', '30', 'node', '--input-type=module', '-e', program);
  t.is(run.code, 0, run.stderr);
  const { merged, late } = JSON.parse(run.stdout) as { merged: string[]; late: string };
  t.deepEqual(merged, ['done', 'done'], 'both calls of the merged job are answered');
  t.regex(late, /StartUnit slow-again\.service: its job did not end within 300 ms/, 'a 1 s start outlives 300 ms');
});
