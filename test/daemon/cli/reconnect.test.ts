// `events` and `logs -f` across a restart of the daemon (stopped, then started again on the same port and data dir):
// they reconnect, and resume after the last seq they showed, so nothing the daemon still has is missed or repeated.
import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { loggedIn } from '../../helpers/cli.js';
import { CLI, disposeWithTunnels, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, waitFor } from '../../helpers/instances.js';

/** The CLI as a child process, followed: what it printed so far, and its exit. */
function follow(t: ExecutionContext, args: string[], env: Record<string, string>) {
  const proc = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env, NO_COLOR: '1' } });
  const seen = { out: '', err: '' };
  proc.stdout.on('data', (chunk: Buffer) => (seen.out += chunk.toString()));
  proc.stderr.on('data', (chunk: Buffer) => (seen.err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('close', resolve));
  t.teardown(() => proc.kill('SIGKILL'));
  return { proc, seen, exited };
}

/** Stops the daemon (its tunnels run on) and starts another on the same port and data dir. */
async function restart(daemon: Daemon): Promise<{ daemon: Daemon; root: string }> {
  await daemon.stop();
  const port = new URL(daemon.url).port;
  return startWithRoot({ dataDir: daemon.dataDir, args: ['--port', port], settingsToml: instanceSettings() });
}

const jsonLines = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, any>);

test('events reconnects after a restart of the daemon: what happened since is shown once, what came after too', async (t) => {
  let { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const env = await loggedIn(daemon, t);
  const events = follow(t, ['events', '--json'], env);
  await waitFor(
    async () => events.seen.out,
    (out) => out.includes('events.start'),
  );
  await createInstance(daemon, root, 'ev_before');
  await waitFor(
    async () => events.seen.out,
    (out) => out.includes('"name":"ev_before"'),
  );

  ({ daemon, root } = await restart(daemon));
  // Most likely while the client still waits to try again; shown once either way.
  await createInstance(daemon, root, 'ev_meanwhile');
  const meanwhileBeforeReconnect = !events.seen.err.includes('reconnected');
  await waitFor(
    async () => events.seen.err,
    (err) => err.includes('reconnected'),
    15_000,
  );
  await createInstance(daemon, root, 'ev_after');
  await waitFor(
    async () => events.seen.out,
    (out) => out.includes('"name":"ev_after"'),
  );
  t.log(`the event while away was made ${meanwhileBeforeReconnect ? 'before' : 'after'} the client reconnected`);

  const shown = jsonLines(events.seen.out).filter((e) => e.event === 'instance.created');
  t.deepEqual(
    shown.map((e) => e.name),
    ['ev_before', 'ev_meanwhile', 'ev_after'],
    'each created event once, in order',
  );
  // The new daemon says it started before it answers anyone: an event of the time the client was away, kept.
  t.deepEqual(
    jsonLines(events.seen.out)
      .filter((e) => e.event.startsWith('service.'))
      .map((e) => e.event),
    ['service.stopping', 'service.started'],
  );
  const seqs = jsonLines(events.seen.out)
    .filter((e) => typeof e.seq === 'number')
    .map((e) => e.seq as number);
  t.deepEqual(
    seqs,
    [...new Set(seqs)].sort((a, b) => a - b),
    'no seq twice, in order',
  );
  t.is(events.seen.err.match(/reconnecting\.\.\./g)?.length, 1, events.seen.err);
  t.regex(events.seen.err, /the daemon restarted; events while it was down are not known/);
  events.proc.kill('SIGINT');
  t.is(await events.exited, 0);
});

test('logs -f reconnects after a restart of the daemon: the lines of the new run follow once, in order', async (t) => {
  let { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const env = await loggedIn(daemon, t);
  const inst = await createInstance(daemon, root, 'lg_follow');
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: inst.id }, { token: root });
  const logs = follow(t, ['logs', '-f', '-n', '1', '--json', 'lg_follow'], env);
  await waitFor(
    async () => logs.seen.out,
    (out) => out.includes('\n'),
  );
  const starts = (out: string) => jsonLines(out).filter((e) => /start frpc service/.test(e.content)).length;

  ({ daemon, root } = await restart(daemon));
  const mark = logs.seen.out.length;
  // A restart of the tunnel as soon as the daemon is back: its lines are most likely written before the client is.
  await daemon.post('/tunnelAct/instanceMgr/restart', { instanceID: inst.id }, { token: root });
  await waitFor(
    async () => logs.seen.err,
    (err) => err.includes('reconnected'),
    15_000,
  );
  await waitFor(
    async () => logs.seen.out.slice(mark),
    (out) => starts(out) === 1,
  );
  await daemon.post('/tunnelAct/instanceMgr/restart', { instanceID: inst.id }, { token: root });
  await waitFor(
    async () => logs.seen.out.slice(mark),
    (out) => starts(out) === 2,
  );

  const entries = jsonLines(logs.seen.out);
  const seqs = entries.filter((e) => typeof e.seq === 'number').map((e) => e.seq as number);
  t.deepEqual(
    seqs,
    [...new Set(seqs)].sort((a, b) => a - b),
    'no line twice, in order',
  );
  const after = entries.filter((e) => e.seq > seqs[0]! && Math.floor(e.seq / 1e9) > Math.floor(seqs[0]! / 1e9));
  t.true(after.length > 0, 'lines of the new run');
  t.deepEqual(
    after.map((e) => e.seq % 1e9),
    after.map((_, i) => i + 1),
    'every line of the new run, from its first',
  );
  t.regex(logs.seen.err, /reconnecting\.\.\.\n[^]*reconnected/);
  t.regex(logs.seen.err, /the daemon restarted/);
  logs.proc.kill('SIGINT');
  t.is(await logs.exited, 0);
});
