// tunnelward stopped while real frpc tunnels log a lot (debug level, many connections): the tunnels keep carrying
// bytes and answering, because their output keeps flowing into their log files while no daemon reads it (frpc writes
// its log synchronously: a pipe left full would stall it). The daemon stays away until each tunnel has logged 16
// pipefuls (1 MiB), or a minute at most.
import test from 'ava';
import { dispose, startDaemon, type Daemon } from '../../helpers/daemon.js';
import { echoServer, freePort, roundTrip } from '../../helpers/frp.js';
import { killTunnelsUnder, logBytes } from '../../helpers/instances.js';
import { adminGet } from '../../../src/frpc/admin-api.js';
import {
  addProxy,
  adminEndpointOf,
  createTunnel,
  frpsFor,
  realFrpSettings,
  start,
  statusUntil,
  tcpTo,
} from '../../helpers/real-frp.js';

const AWAY_MS = 60_000;
/** What each tunnel logs while the daemon is away: 16 pipefuls, where one left unread would stall frpc. */
const AWAY_BYTES = 1024 * 1024;
const BOOT = { TUNNELWARD_BOOT_ID: 'real-frp-away-boot' };

/** frpc's admin API: it logs every request before it answers, so it stops answering once its output is stuck. */
async function adminAnswers(configPath: string): Promise<boolean> {
  const res = await adminGet(await adminEndpointOf(configPath), '/api/status').catch(() => undefined);
  return res?.status === 200;
}

test('the daemon stopped while frpc logs a lot (1 MiB each): the tunnels carry bytes and answer all along', async (t) => {
  t.timeout(AWAY_MS + 90_000);
  const frps = await frpsFor(t);
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const first = await startDaemon({ settingsToml: realFrpSettings(), env: BOOT });
  const daemons: Daemon[] = [first];
  t.teardown(async () => {
    for (const d of daemons) await d.stop('SIGKILL');
    await killTunnelsUnder(first.dataDir);
    await dispose(first);
  });
  const token = await first.login();
  const tunnels: Array<{ id: string; configPath: string; good: number; broken: number }> = [];
  for (let i = 0; i < 2; i++) {
    const [good, broken] = [await freePort(), await freePort()];
    const made = await createTunnel(first, token, frps, `rf_away_${i}`, { 'log.level': 'debug' });
    await addProxy(first, token, made.id, tcpTo(`echo_${i}`, echo.port, good));
    // A local service that is down: each connection through it costs frpc a few lines of log.
    await addProxy(first, token, made.id, tcpTo(`down_${i}`, await freePort(), broken));
    await start(first, token, made.id);
    await statusUntil(first, token, made.id, (s) => s.connected === true && s.proxyStatus.running === 2, 2000);
    tunnels.push({ ...made, good, broken });
  }
  const before = await Promise.all(tunnels.map((x) => logBytes(first.dataDir, x.id)));

  await first.stop('SIGTERM');
  const until = Date.now() + AWAY_MS;
  let rounds = 0;
  let failures = 0;
  const logged = async () =>
    (await Promise.all(tunnels.map((x) => logBytes(first.dataDir, x.id)))).map((n, i) => n - before[i]!);
  while (Date.now() < until && (rounds % 20 !== 0 || (await logged()).some((n) => n < AWAY_BYTES))) {
    await Promise.all(
      tunnels.flatMap((x) => [
        ...Array.from({ length: 3 }, () => roundTrip(x.broken, 'nobody answers').catch(() => undefined)),
        roundTrip(x.good, `round ${rounds}`, 3000).catch(() => failures++),
      ]),
    );
    rounds++;
    if (rounds % 50 === 0)
      for (const x of tunnels) t.true(await adminAnswers(x.configPath), `frpc answers after ${rounds} rounds`);
  }
  t.is(failures, 0, `every one of ${rounds} round trips per tunnel came back while the daemon was away`);
  const written = await logged();
  t.log(`${rounds} rounds; written to the logs while away: ${written.join(', ')} bytes`);
  t.true(
    written.every((n) => n >= AWAY_BYTES),
    'each tunnel logged 16 pipefuls while no daemon read them',
  );
  for (const x of tunnels) t.true(await adminAnswers(x.configPath));

  const second = await startDaemon({ dataDir: first.dataDir, env: BOOT });
  daemons.push(second);
  const token2 = await second.login();
  for (const x of tunnels) {
    await statusUntil(second, token2, x.id, (s) => s.state === 'running' && s.connected === true, 5000);
    await roundTrip(x.good, 'after the daemon came back');
  }
});
