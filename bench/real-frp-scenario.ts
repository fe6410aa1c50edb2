// The real frpc (and one real frps on loopback): many tunnels started and stopped in one request each, what the
// daemon costs beside the frpc processes it runs, how fresh the API's `connected` is when the server goes and comes
// back, bytes through one tunnel with the daemon running and with it stopped, and a new daemon taking over every
// running tunnel. frpc and frps are built by test/setup/build-frp.sh (once; it returns at once when they are).
// TUNNELWARD_BENCH_REAL_FRP_TUNNELS sets how many tunnels run (200 by default, 20 with --quick).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse as parseToml } from 'smol-toml';
import { WebSocket } from 'ws';
import { PACKAGE_ROOT } from '../src/paths.js';
import { ADMIN_PORTS_FROM } from '../src/system/loopback-ports.js';
import { echoServer, Frps, frpVersion, REAL_FRPC, roundTrip } from '../test/helpers/frp.js';
import { BenchDaemon } from './lib/daemon.js';
import { percentile } from './lib/load.js';
import { childrenOf, processesByConfig } from './lib/procs.js';
import { inParallel, LIFTED, sleep } from './lib/tunnels.js';
import type { Row } from './run.js';
import type { Scenario } from './scenarios.js';

type Rows = Omit<Row, 'scenario'>[];

const run = promisify(execFile);

/** How often the list is read while waiting for a change: the resolution of every time to the API below. */
const POLL_MS = 50;

/** A list entry, as far as it is read here. */
interface Listed {
  instanceID: number;
  state: string;
  connected: boolean | null;
  proxyStatus: Record<string, number>;
}

// ---- /proc readings -------------------------------------------------------------------------------------------

function statusField(pid: number, field: string): number {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'latin1');
    return Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN) / 1024;
  } catch {
    return NaN;
  }
}

/** Resident memory in MiB (NaN when the process is gone). */
const rssMiB = (pid: number) => statusField(pid, 'VmRSS');

/** Proportional set size in MiB: resident memory with each shared page divided among its sharers. */
function pssMiB(pid: number): number {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1');
    return Number(/^Pss:\s+(\d+)/m.exec(text)?.[1] ?? NaN) / 1024;
  } catch {
    return NaN;
  }
}

/** CPU seconds (user + system) a process has used. */
/**
 * The daemon's main thread as the scheduler saw it (/proc/PID/task/PID/schedstat): ms on a CPU, and ms it was
 * ready to run but waiting for one. The second tells a daemon starved by its tunnels from one that is busy.
 */
function schedMs(pid: number): { ran: number; waited: number } {
  try {
    const [ran, waited] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'latin1').split(' ').map(Number);
    return { ran: ran! / 1e6, waited: waited! / 1e6 };
  } catch {
    return { ran: NaN, waited: NaN };
  }
}

function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

const sum = (values: number[]) => values.reduce((a, b) => a + (Number.isNaN(b) ? 0 : b), 0);

/** The daemon's spawner (its child that starts the tunnels and is their parent), if it runs. */
function spawnerOf(daemonPid: number): number | undefined {
  return childrenOf(daemonPid).find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes('spawner-process');
    } catch {
      return false;
    }
  });
}

/** The daemon's own pids: itself and its spawner. */
function daemonPids(daemon: BenchDaemon): number[] {
  const spawner = spawnerOf(daemon.pid);
  return spawner === undefined ? [daemon.pid] : [daemon.pid, spawner];
}

// ---- ports and local services ---------------------------------------------------------------------------------

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * Ports for the proxies on frps: below the range tunnelward draws admin ports from (ADMIN_PORTS_FROM up to the
 * kernel's ephemeral range), from a random start so that two runs at once rarely pick the same. (Drawn from that
 * range, frps bound remote ports that frpc processes starting later had as their admin port: 46 of 1000 exited at
 * their start.)
 */
async function remotePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  let port = 10000 + Math.floor(Math.random() * 8000);
  while (ports.length < count) {
    if (port >= ADMIN_PORTS_FROM) port = 10000;
    if (await bindable(port)) ports.push(port);
    port++;
  }
  return ports;
}

/** An echo server on a fixed port that can be closed (connections to it refused) and opened again. */
class SwitchableEcho {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  async open(): Promise<void> {
    const server = createServer((socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => socket.destroy());
      socket.pipe(socket);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}

// ---- traffic ----------------------------------------------------------------------------------------------------

interface Transfer {
  bytes: number;
  ms: number;
  stalled: boolean;
}

/**
 * `bytes` sent through 127.0.0.1:`port` to an echo server and all of them read back, written and read at once:
 * as many bytes each way. A transfer that moves nothing for `stallMs` is given up as stalled.
 */
function bulkTransfer(port: number, bytes: number, stallMs: number): Promise<Transfer> {
  return new Promise((resolve, reject) => {
    const chunk = Buffer.alloc(1024 * 1024, 0x5a);
    let sent = 0;
    let received = 0;
    let last = performance.now();
    let t0 = 0;
    let done = false;
    const socket = connect(port, '127.0.0.1');
    const finish = (stalled: boolean) => {
      if (done) return;
      done = true;
      clearInterval(watch);
      socket.destroy();
      resolve({ bytes: received, ms: performance.now() - t0, stalled });
    };
    const watch = setInterval(() => {
      if (performance.now() - last > stallMs) finish(true);
    }, 100);
    const write = () => {
      while (sent < bytes && !done) {
        const piece = bytes - sent >= chunk.length ? chunk : chunk.subarray(0, bytes - sent);
        sent += piece.length;
        if (!socket.write(piece)) return;
      }
    };
    socket.on('drain', write);
    socket.on('data', (c: Buffer) => {
      received += c.length;
      last = performance.now();
      if (received >= bytes) finish(false);
    });
    socket.once('connect', () => {
      t0 = performance.now();
      last = t0;
      write();
    });
    socket.on('error', (err) => {
      if (done) return;
      done = true;
      clearInterval(watch);
      reject(err);
    });
    socket.on('close', () => finish(received < bytes));
  });
}

/** A connection to 127.0.0.1:`port` whose far end closes it (nothing behind the proxy): ms until then. */
function closedByFarEnd(port: number, timeoutMs: number): Promise<{ ms: number; socket: Socket }> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const socket = connect(port, '127.0.0.1');
    const timer = setTimeout(() => resolve({ ms: Infinity, socket }), timeoutMs);
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ ms: performance.now() - t0, socket });
    });
  });
}

// ---- the API and the logs ---------------------------------------------------------------------------------------

/**
 * Reads the list every POLL_MS until each of `tests` holds for every instance in `ids` (or `timeoutMs` passes):
 * for each test, when (Date.now()) it was first seen to hold for each instance.
 */
async function watchList(
  daemon: BenchDaemon,
  ids: string[],
  tests: Record<string, (item: Listed) => boolean>,
  timeoutMs: number,
  until: Promise<unknown> = Promise.resolve(),
): Promise<Record<string, Map<string, number>>> {
  const seen: Record<string, Map<string, number>> = {};
  for (const name of Object.keys(tests)) seen[name] = new Map();
  const wanted = new Set(ids);
  const deadline = Date.now() + timeoutMs;
  let settled = false;
  void until.finally(() => (settled = true));
  for (;;) {
    const asked = Date.now();
    const list = await daemon.call('GET', '/tunnelAct/instanceMgr/list').catch((err: Error) => ({
      success: false,
      message: err.message,
    }));
    const at = Date.now();
    listMs.push(at - asked);
    if (!list.success) {
      // A read refused or lost (a daemon too busy to answer within the timestamp window): counted, and read again.
      failedReads.push(list.message);
      if (at > deadline) break;
      await sleep(POLL_MS);
      continue;
    }
    for (const item of list.data as Listed[]) {
      const id = String(item.instanceID);
      if (!wanted.has(id)) continue;
      for (const [name, test] of Object.entries(tests)) if (!seen[name]!.has(id) && test(item)) seen[name]!.set(id, at);
    }
    const complete = Object.values(seen).every((m) => m.size === ids.length);
    if ((complete && settled) || at > deadline) break;
    await sleep(POLL_MS);
  }
  return seen;
}

/** How long each list read of `watchList` took (ms): what a poll of the whole list adds to a lag it measures. */
const listMs: number[] = [];

/** List reads that failed while waiting (their messages), reported once at the end. */
const failedReads: string[] = [];

/** frpc's own timestamps are local time with milliseconds: `2026-11-21 21:06:47.576 [I] ...`. */
const FRPC_TIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{3}) /;

function frpcTime(line: string): number | undefined {
  const m = FRPC_TIME.exec(line);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, ms] = m.map(Number) as number[];
  return new Date(y!, mo! - 1, d!, h!, mi!, s!, ms!).getTime();
}

/** The lines of a tunnel's log file (`<data dir>/logs/tunnel_<id>.log`) with frpc's time, from `since` on. */
async function logLines(dataDir: string, id: string, since: number): Promise<Array<{ at: number; text: string }>> {
  const text = await readFile(join(dataDir, 'logs', `tunnel_${id}.log`), 'utf8').catch(() => '');
  const out: Array<{ at: number; text: string }> = [];
  for (const line of text.split('\n')) {
    const at = frpcTime(line);
    // frpc's clock is read in whole milliseconds and printed truncated: allow for one.
    if (at !== undefined && at >= since - 1) out.push({ at, text: line });
  }
  return out;
}

/** When frpc first logged a line matching `pattern` at or after `since`, per tunnel (those that did). */
async function firstLogged(
  dataDir: string,
  ids: string[],
  pattern: RegExp,
  since: number,
): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  await inParallel(ids.length, 16, async (i) => {
    const hit = (await logLines(dataDir, ids[i]!, since)).find((l) => pattern.test(l.text));
    if (hit) found.set(ids[i]!, hit.at);
  });
  return found;
}

/** Delays (ms) from `from` (one time for all, or one per tunnel) to `to`, for the tunnels that have both; sorted. */
function delays(to: Map<string, number>, from: number | Map<string, number>): number[] {
  const out: number[] = [];
  for (const [id, at] of to) {
    const start = typeof from === 'number' ? from : from.get(id);
    if (start !== undefined) out.push(at - start);
  }
  return out.sort((a, b) => a - b);
}

const p50p99 = (sorted: number[]) =>
  sorted.length === 0 ? 'none' : `${percentile(sorted, 50).toFixed(0)} / ${percentile(sorted, 99).toFixed(0)}`;

/** The frpc processes of this daemon's instances, by config file. */
const tunnelProcesses = (dataDir: string) => processesByConfig(join(dataDir, 'instances', 'tunnel_'));

/** A tunnel's admin API (frpc's webServer) as tunnelward wrote it into the tunnel's config file. */
async function adminEndpoint(
  dataDir: string,
  id: string,
): Promise<{ addr?: string; port?: number; user?: string; password?: string }> {
  const config = parseToml(await readFile(join(dataDir, 'instances', `tunnel_${id}.toml`), 'utf8')) as {
    webServer?: { addr?: string; port?: number; user?: string; password?: string };
  };
  return config.webServer ?? {};
}

/** Whether a tunnel's admin API (its address and password from its config file) answers within `timeoutMs`. */
async function adminAnswers(dataDir: string, id: string, timeoutMs: number): Promise<boolean> {
  const web = await adminEndpoint(dataDir, id);
  const auth = Buffer.from(`${web.user ?? ''}:${web.password ?? ''}`).toString('base64');
  return fetch(`http://${web.addr ?? '127.0.0.1'}:${web.port}/api/status`, {
    headers: { Authorization: `Basic ${auth}` },
    signal: AbortSignal.timeout(timeoutMs),
  }).then(
    (res) => res.ok,
    () => false,
  );
}

// ---- the scenario -----------------------------------------------------------------------------------------------

export const realFrp: Scenario = {
  name: 'real-frp',
  async run({ quick }) {
    failedReads.length = 0;
    // A fresh machine builds frpc and frps here (Go needed); a built one returns at once.
    await run('sh', [join(PACKAGE_ROOT, 'test', 'setup', 'build-frp.sh')], { maxBuffer: 16 * 1024 * 1024 }).catch(
      (err: { stderr?: string; message: string }) => {
        throw new Error(`cannot build frp: ${err.stderr?.trim() || err.message}`);
      },
    );
    const count = Number(process.env.TUNNELWARD_BENCH_REAL_FRP_TUNNELS ?? (quick ? 20 : 200));
    const bulkBytes = (quick ? 32 : 256) * 1024 * 1024;
    const idleSecs = quick ? 10 : 30;
    const downSecs = quick ? 5 : 10;
    const rows: Rows = [];
    const began = Date.now();
    const step = (what: string) =>
      process.stderr.write(`bench: real-frp: ${((Date.now() - began) / 1000).toFixed(1)} s: ${what}\n`);
    rows.push({ metric: `frpc / frps version`, value: await frpVersion(), unit: '' });

    // What was started, undone in reverse order at the end however the run ends.
    const cleanups: Array<() => Promise<void>> = [];
    const undo = async () => {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    };
    const token = `bench-${process.pid}`;
    let frps: Frps;
    let echo: Awaited<ReturnType<typeof echoServer>>;
    // The last tunnel's own local service: closed while the daemon is away, to make frpc log (see the probe).
    const probeEcho = new SwitchableEcho();
    try {
      frps = await Frps.start({ token });
      cleanups.push(() => frps.stop());
      echo = await echoServer();
      cleanups.push(() => echo.close());
      await probeEcho.open();
      cleanups.push(() => probeEcho.close());
    } catch (err) {
      await undo();
      throw err;
    }
    /** Events as received: `at` when the bench read it, `sent` when the daemon published it. */
    const events: Array<{ event: string; instanceID: number; at: number; sent: number; connected?: boolean | null }> =
      [];
    let ws: WebSocket | undefined;
    // Defaults but for the path of frpc, tunnelward running the tunnels itself, and rate limits out of the way;
    // Alerts.DebounceSecs (5) and Status.PollSecs (300) are tunnelward's own defaults.
    const settings = `TunnelPath = ${JSON.stringify(REAL_FRPC)}\nInitSystem = "process"\n${LIFTED}`;
    let daemon = await BenchDaemon.start({ settingsToml: settings }).catch(async (err: Error) => {
      await undo();
      throw err;
    });
    const dataDir = daemon.dataDir;
    try {
      await daemon.login();
      const ports = await remotePorts(count);
      // One create at a time: concurrent creates can give two instances the same admin port (and pass the
      // same-server proxy name check), and a tunnel that cannot start would spoil every figure below.
      const ids = await inParallel(count, 1, async (i) => {
        const res = await daemon.call('POST', '/tunnelAct/instanceMgr/create', {
          instanceInfo: { name: `rf_${i}`, ...frps.client, auth_method: 'token' },
          additionalProperties: { 'auth.token': token },
        });
        if (!res.success) throw new Error(`create: ${res.message}`);
        const id = String(res.data.instanceID);
        const proxy = await daemon.call('POST', '/tunnelAct/proxyMgr/create', {
          instanceID: id,
          proxyInfo: {
            // frps knows proxies by name across all its clients: each needs its own.
            name: `echo_${i}`,
            type: 'tcp',
            localIP: '127.0.0.1',
            localPort: String(i === count - 1 ? probeEcho.port : echo.port),
            remotePort: String(ports[i]),
          },
        });
        if (!proxy.success) throw new Error(`proxy: ${proxy.message}`);
        return id;
      });
      const adminPorts = await Promise.all(ids.map(async (id) => (await adminEndpoint(dataDir, id)).port));
      rows.push({
        metric: 'admin ports given to two instances',
        value: adminPorts.length - new Set(adminPorts).size,
        unit: 'ports',
        goal: '0',
      });
      const rssNone = sum(daemonPids(daemon).map(rssMiB));

      ws = new WebSocket(`${daemon.url.replace(/^http/, 'ws')}/system/events?token=${daemon.token}`);
      ws.on('message', (data) => {
        const e = JSON.parse(data.toString()) as {
          event?: string;
          instanceID?: number;
          connected?: boolean | null;
          at?: string;
        };
        if (e.event && e.instanceID !== undefined)
          events.push({
            event: e.event,
            instanceID: e.instanceID,
            at: Date.now(),
            sent: Date.parse(e.at ?? ''),
            connected: e.connected,
          });
      });
      await new Promise((resolve, reject) => {
        ws!.once('open', resolve);
        ws!.once('error', reject);
      });

      // One request starts them all: when the API shows each running, connected (frpc logged in) and its proxy
      // running; twice, with a stop of all in between.
      const started = async (round: number) => {
        const t0 = Date.now();
        const cpu0 = sum(daemonPids(daemon).map(cpuSeconds));
        const reply = daemon.post('/tunnelAct/instanceMgr/start', { all: true });
        let replyMs = NaN;
        let cpu = NaN;
        const answered = reply.then((r) => {
          replyMs = Date.now() - t0;
          cpu = sum(daemonPids(daemon).map(cpuSeconds)) - cpu0;
          return r;
        });
        const seen = await watchList(
          daemon,
          ids,
          {
            running: (i) => i.state === 'running',
            connected: (i) => i.connected === true,
            proxy: (i) => i.proxyStatus.running === 1,
          },
          180_000,
          answered,
        );
        const res = await answered;
        const label = `start #${round}${round === 1 ? '' : ' (after stop all)'}:`;
        rows.push({ metric: `${label} one request, ${count}: reply`, value: replyMs, unit: 'ms' });
        if (!res.success || res.data?.ok !== count) {
          const first = (res.data?.results as Array<{ ok: boolean }> | undefined)?.find((r) => !r.ok);
          rows.push({ metric: `  started ok in that reply`, value: res.data?.ok ?? res.message, unit: 'inst' });
          // Whole: the tunnel's last lines at the end are what says why.
          if (first) rows.push({ metric: `  first failure: ${JSON.stringify(first)}`, value: '', unit: '' });
        }
        for (const [name, what] of [
          ['running', 'running'],
          ['connected', 'connected'],
          ['proxy', 'proxy running'],
        ] as const) {
          const times = delays(seen[name]!, t0);
          rows.push({
            metric: `  ${what} p50 / all ${count}`,
            value:
              times.length === count
                ? `${percentile(times, 50).toFixed(0)} / ${times[times.length - 1]!.toFixed(0)}`
                : `${times.length} of ${count} in 180 s`,
            unit: 'ms',
          });
        }
        rows.push({ metric: '  daemon + spawner CPU until the reply', value: cpu, unit: 's' });
      };
      /** How many of the tunnels carry an echo round trip now. */
      const echoThroughEach = async (label: string) =>
        (
          await inParallel(count, 32, (i) =>
            roundTrip(ports[i]!, `${label} ${i}`, 10_000).then(
              () => true,
              () => false,
            ),
          )
        ).filter(Boolean).length;
      step(`${count} instances created; starting all`);
      await started(1);
      const procs1 = await tunnelProcesses(dataDir);
      rows.push({ metric: 'frpc processes, one per tunnel', value: procs1.size, unit: 'proc', goal: String(count) });
      rows.push({
        metric: 'echo round trip through each tunnel',
        value: await echoThroughEach('hello'),
        unit: 'ok',
        goal: String(count),
      });

      const s0 = Date.now();
      const stop = await daemon.post('/tunnelAct/instanceMgr/stop', { all: true });
      rows.push({ metric: `one request stops ${count}`, value: Date.now() - s0, unit: 'ms' });
      if (!stop.success || stop.data?.ok !== count)
        rows.push({ metric: 'stopped ok in that reply', value: stop.data?.ok ?? stop.message, unit: 'inst' });
      rows.push({
        metric: 'frpc processes left after stopping all',
        value: (await tunnelProcesses(dataDir)).size,
        unit: 'proc',
        goal: '0',
      });
      step('stopped all; starting all again');
      await started(2);

      // What it costs once settled: the daemon (and its spawner) beside the frpc processes it runs.
      await sleep(quick ? 3000 : 10_000);
      const procs = await tunnelProcesses(dataDir);
      const frpcPids = [...procs.values()].flat();
      const own = daemonPids(daemon);
      const cpuOwn0 = sum(own.map(cpuSeconds));
      const cpuFrpc0 = sum(frpcPids.map(cpuSeconds));
      const cpuFrps0 = cpuSeconds(frps.pid!);
      await sleep(idleSecs * 1000);
      const pct = (now: number, then: number) => ((now - then) / idleSecs) * 100;
      const daemonRss = rssMiB(daemon.pid);
      const spawner = own[1];
      const spawnerRss = spawner === undefined ? 0 : rssMiB(spawner);
      const frpcRss = sum(frpcPids.map(rssMiB));
      const frpcPss = sum(frpcPids.map(pssMiB));
      rows.push({ metric: `daemon RSS, ${count} stopped`, value: rssNone, unit: 'MiB' });
      rows.push({
        metric: `daemon RSS / spawner RSS, ${count} running`,
        value: `${daemonRss.toFixed(1)} / ${spawnerRss.toFixed(1)}`,
        unit: 'MiB',
      });
      rows.push({
        metric: `frpc RSS summed / PSS summed (${frpcPids.length} proc)`,
        value: `${frpcRss.toFixed(0)} / ${frpcPss.toFixed(0)}`,
        unit: 'MiB',
      });
      rows.push({
        metric: 'per tunnel: tunnelward (daemon+spawner RSS / N)',
        value: ((daemonRss + spawnerRss) * 1024) / count,
        unit: 'KiB',
      });
      rows.push({
        metric: 'per tunnel: tunnelward, running minus stopped',
        value: ((daemonRss + spawnerRss - rssNone) * 1024) / count,
        unit: 'KiB',
      });
      rows.push({
        metric: 'per tunnel: frpc RSS / PSS',
        value: `${((frpcRss * 1024) / frpcPids.length).toFixed(0)} / ${((frpcPss * 1024) / frpcPids.length).toFixed(0)}`,
        unit: 'KiB',
      });
      const threads = sum(frpcPids.map((pid) => statusField(pid, 'Threads') * 1024));
      rows.push({
        metric: 'frpc threads (each takes a pid; pid_max 32768)',
        value: `${threads} (${(threads / frpcPids.length).toFixed(1)} each)`,
        unit: 'threads',
      });
      rows.push({ metric: `frps RSS (${count} clients)`, value: rssMiB(frps.pid!), unit: 'MiB' });
      rows.push({
        metric: `CPU idle over ${idleSecs} s: daemon+spawner / all frpc / frps`,
        value: `${pct(sum(own.map(cpuSeconds)), cpuOwn0).toFixed(2)} / ${pct(sum(frpcPids.map(cpuSeconds)), cpuFrpc0).toFixed(2)} / ${pct(cpuSeconds(frps.pid!), cpuFrps0).toFixed(2)}`,
        unit: '%',
      });

      // frps goes away, then comes back on the same ports: when the API says each tunnel lost it and has it
      // again, beside when frpc itself logged so (its retries back off up to 20 s, which the `back` figure holds).
      // Followed: the tunnels connected now (all of them, unless something above went wrong).
      /** When the event stream first said `connected` of each of `ids` at or after `since`. */
      const statusEvents = (ids: string[], since: number, connected: boolean, when: 'at' | 'sent' = 'at') => {
        const wanted = new Set(ids);
        const first = new Map<string, number>();
        for (const e of events) {
          const id = String(e.instanceID);
          if (e.event === 'instance.status' && e.at >= since && e.connected === connected && wanted.has(id))
            if (!first.has(id)) first.set(id, e[when]);
        }
        return first;
      };
      const listed = (await daemon.call('GET', '/tunnelAct/instanceMgr/list')).data as Listed[];
      const watched = listed.filter((i) => i.connected === true).map((i) => String(i.instanceID));
      const n = watched.length;
      if (n < count) rows.push({ metric: 'connected before frps stops', value: n, unit: 'inst', goal: String(count) });
      step('stopping frps');
      const down0 = Date.now();
      listMs.length = 0;
      const sched0 = schedMs(daemon.pid);
      // Read while frps goes, not after: a first read that began once it was gone would see every tunnel at once.
      const down = frps.down();
      const lost = await watchList(daemon, watched, { lost: (i) => i.connected === false }, 60_000, down);
      await down;
      const sched1 = schedMs(daemon.pid);
      const lostLogged = await firstLogged(dataDir, watched, /try to connect to server|connect to server error/, down0);
      const lostApi = delays(lost.lost!, down0);
      rows.push({
        metric: `frps stopped: connected false in the API p50 / p99`,
        value: lostApi.length === n ? p50p99(lostApi) : `${lostApi.length} of ${n} in 60 s`,
        unit: 'ms',
        goal: '< 2000',
      });
      rows.push({
        metric: `  of which frpc's own (its first retry logged)`,
        value: p50p99(delays(lostLogged, down0)),
        unit: 'ms',
      });
      rows.push({
        metric: `  of which tunnelward's own (logged -> API)`,
        value: p50p99(delays(lost.lost!, lostLogged)),
        unit: 'ms',
        goal: 'p99 < 1000',
      });
      rows.push({
        metric: `    the list read that saw it (${n} items a read, every ${POLL_MS} ms) p50 / p99`,
        value: p50p99([...listMs].sort((a, b) => a - b)),
        unit: 'ms',
      });
      rows.push({
        metric: `    logged -> instance.status event received (connected false)`,
        value: p50p99(delays(statusEvents(watched, down0, false), lostLogged)),
        unit: 'ms',
        goal: 'p99 < 250',
      });
      rows.push({
        metric: `      of which logged -> event published (the daemon's clock)`,
        value: p50p99(delays(statusEvents(watched, down0, false, 'sent'), lostLogged)),
        unit: 'ms',
      });
      rows.push({
        metric: `    the daemon's main thread until all were seen: ran / waited for a CPU`,
        value: `${(sched1.ran - sched0.ran).toFixed(0)} / ${(sched1.waited - sched0.waited).toFixed(0)}`,
        unit: 'ms',
      });
      await sleep(Math.max(0, down0 + downSecs * 1000 - Date.now()));
      step('starting frps again');
      const up0 = Date.now();
      listMs.length = 0;
      await frps.up();
      const back = await watchList(
        daemon,
        watched,
        { back: (i) => i.connected === true, proxy: (i) => i.proxyStatus.running === 1 },
        90_000,
      );
      const loginLogged = await firstLogged(dataDir, watched, /login to server success/, up0);
      const backApi = delays(back.back!, up0);
      rows.push({
        metric: `frps back after ${((up0 - down0) / 1000).toFixed(0)} s: connected true p50 / p99`,
        value: backApi.length === n ? p50p99(backApi) : `${backApi.length} of ${n} in 90 s`,
        unit: 'ms',
      });
      rows.push({
        metric: `  of which frpc's own (login logged; backoff)`,
        value: p50p99(delays(loginLogged, up0)),
        unit: 'ms',
      });
      rows.push({
        metric: `  of which tunnelward's own (logged -> API)`,
        value: p50p99(delays(back.back!, loginLogged)),
        unit: 'ms',
        goal: 'p99 < 1000',
      });
      rows.push({
        metric: `    the list read that saw it p50 / p99`,
        value: p50p99([...listMs].sort((a, b) => a - b)),
        unit: 'ms',
      });
      rows.push({
        metric: `    logged -> instance.status event received (connected true)`,
        value: p50p99(delays(statusEvents(watched, up0, true), loginLogged)),
        unit: 'ms',
        goal: 'p99 < 250',
      });
      rows.push({
        metric: `      of which logged -> event published (the daemon's clock)`,
        value: p50p99(delays(statusEvents(watched, up0, true, 'sent'), loginLogged)),
        unit: 'ms',
      });
      rows.push({ metric: '  proxy running again p50 / p99', value: p50p99(delays(back.proxy!, up0)), unit: 'ms' });
      await sleep(6000);
      const eventDelays = (event: string, from: number) =>
        events
          .filter((e) => e.event === event && e.at >= from)
          .map((e) => e.at - from)
          .sort((a, b) => a - b);
      const disconnectedEvents = eventDelays('instance.disconnected', down0);
      const connectedEvents = eventDelays('instance.connected', up0);
      rows.push({
        metric: `events disconnected / connected (Debounce 5 s)`,
        value: `${disconnectedEvents.length} / ${connectedEvents.length}`,
        unit: 'events',
        goal: `${n} / ${n}`,
      });
      rows.push({
        metric: '  instance.disconnected after frps stop p50 / p99',
        value: p50p99(disconnectedEvents),
        unit: 'ms',
      });
      rows.push({
        metric: '  instance.connected after frps start p50 / p99',
        value: p50p99(connectedEvents),
        unit: 'ms',
      });

      // Bytes through one tunnel, with the daemon running and with it stopped (the tunnels run on).
      const transfer = async (label: string) => {
        const cpu0 = sum(daemonPids(daemon).map(cpuSeconds));
        const got = await bulkTransfer(ports[0]!, bulkBytes, 15_000);
        const mibs = got.bytes / 1048576 / (got.ms / 1000);
        rows.push({
          metric: `${bulkBytes / 1048576} MiB each way through one tunnel, ${label}`,
          value: got.stalled ? `stalled at ${(got.bytes / 1048576).toFixed(1)} MiB` : mibs,
          unit: 'MiB/s',
          goal: label.startsWith('daemon stopped') ? 'no stall' : undefined,
        });
        return { ...got, cpu: sum(daemonPids(daemon).map(cpuSeconds)) - cpu0 };
      };
      step('transfer, daemon running');
      const withDaemon = await transfer('daemon running');
      rows.push({ metric: '  daemon + spawner CPU during it', value: withDaemon.cpu, unit: 's' });
      ws.close();
      const before = await tunnelProcesses(dataDir);
      const away0 = Date.now();
      const stopping = performance.now();
      await daemon.stop('SIGTERM');
      rows.push({ metric: 'SIGTERM: daemon exited in', value: performance.now() - stopping, unit: 'ms' });
      await sleep(1000);
      const running = await tunnelProcesses(dataDir);
      rows.push({
        metric: 'tunnels still running with the daemon gone',
        value: running.size,
        unit: 'inst',
        goal: String(count),
      });
      step('transfer, daemon stopped');
      await transfer('daemon stopped');

      // With the daemon away only the keeper reads the tunnels' output pipes; if nobody did, a full pipe would stall
      // frpc. At frpc's default level a healthy tunnel logs nothing per connection, but a proxy whose local service
      // is down logs an error for each: the last tunnel's service is closed, connections are made through it in
      // batches, and after each batch frpc's admin API (which logs every request before answering it) is asked for
      // its status. It answers all along while the output flows (up to 3000 connections are tried).
      step('probe: refused local connections, daemon stopped');
      await probeEcho.close();
      const probeId = ids[count - 1]!;
      const probePort = ports[count - 1]!;
      let refused = 0;
      let adminHungAfter: number | undefined;
      while (refused < 3000) {
        for (let i = 0; i < 50; i++) {
          await closedByFarEnd(probePort, 3000);
          refused++;
        }
        if (!(await adminAnswers(dataDir, probeId, 2000))) {
          adminHungAfter = refused;
          break;
        }
      }
      rows.push({
        metric: "daemon away: refused conns until frpc's API hangs",
        value: adminHungAfter ?? `answers after ${refused}`,
        unit: 'conns',
      });
      await probeEcho.open();
      const probeTrip = await roundTrip(probePort, 'after the hang', 5000).then(
        () => 'ok',
        (err: Error) => `fails: ${err.message}`,
      );
      rows.push({ metric: '  then echo through that tunnel', value: probeTrip, unit: '' });

      // frps restarts while the daemon is away: a tunnel is back when its proxy carries bytes again.
      step('frps restart with the daemon away');
      await frps.down();
      await sleep(1000);
      const upAway = Date.now();
      await frps.up();
      const backAt = new Map<number, number>();
      const others = ids.length - 1;
      while (Date.now() - upAway < 40_000) {
        const pending = ports.map((_, i) => i).filter((i) => !backAt.has(i));
        await inParallel(pending.length, 32, async (k) => {
          const i = pending[k]!;
          const ok = await roundTrip(ports[i]!, `back ${i}`, 1000).then(
            () => true,
            () => false,
          );
          if (ok) backAt.set(i, Date.now() - upAway);
        });
        const othersBack = [...backAt.keys()].filter((i) => i !== count - 1).length;
        // The probed tunnel is given 10 s more than the others took.
        if (backAt.size === count || (othersBack === others && Date.now() - upAway > 10_000)) break;
        await sleep(200);
      }
      const otherTimes = [...backAt]
        .filter(([i]) => i !== count - 1)
        .map(([, ms]) => ms)
        .sort((a, b) => a - b);
      rows.push({
        metric: 'daemon away, frps restarted: other tunnels back',
        value: `${otherTimes.length} of ${others}${otherTimes.length ? `, all in ${otherTimes[otherTimes.length - 1]} ms` : ''}`,
        unit: '',
        goal: `${others} of ${others}`,
      });
      rows.push({
        metric: '  the tunnel that logged the most back',
        value: backAt.has(count - 1) ? `in ${backAt.get(count - 1)} ms` : 'no',
        unit: '',
      });
      const awayFor = Date.now() - away0;

      // A new daemon on the same data dir takes over every tunnel: none started twice, none restarted.
      step('restarting the daemon');
      const r0 = Date.now();
      daemon = await BenchDaemon.start({ dataDir });
      rows.push({ metric: 'restart: daemon listening again', value: Date.now() - r0, unit: 'ms' });
      await daemon.login();
      const adopted = await watchList(
        daemon,
        ids,
        { running: (i) => i.state === 'running', connected: (i) => i.connected === true },
        60_000,
      );
      const readopt = (name: string) => {
        const times = delays(adopted[name]!, r0);
        return times.length === count ? times[times.length - 1]!.toFixed(0) : `${times.length} of ${count} in 60 s`;
      };
      rows.push({ metric: `restart: all ${count} running`, value: readopt('running'), unit: 'ms' });
      rows.push({ metric: `restart: all ${count} connected`, value: readopt('connected'), unit: 'ms' });
      const after = await tunnelProcesses(dataDir);
      const twice = [...after.values()].filter((pids) => pids.length > 1).length;
      const replaced = [...before].filter(([config, pids]) => after.get(config)?.[0] !== pids[0]).length;
      rows.push({ metric: 'restart: tunnels running twice', value: twice, unit: 'inst', goal: '0' });
      rows.push({ metric: 'restart: frpc processes replaced', value: replaced, unit: 'proc', goal: '0' });
      const probeBack = adopted.connected!.get(probeId);
      rows.push({
        metric: '  the probed tunnel connected',
        value: probeBack === undefined ? 'no' : `after ${probeBack - r0} ms`,
        unit: '',
      });
      const awayLines = await Promise.all(
        ids.map(async (id) => (await logLines(dataDir, id, away0)).filter((l) => l.at <= away0 + awayFor)),
      );
      const quiet = awayLines.slice(0, -1);
      rows.push({
        metric: `frpc lines logged in the ${(awayFor / 1000).toFixed(0)} s away: others`,
        value: `${sum(quiet.map((l) => l.length))} (max ${Math.max(...quiet.map((l) => l.length))})`,
        unit: 'lines',
      });
      rows.push({
        metric: '  the probed tunnel (bytes), all read back',
        value: `${awayLines[count - 1]!.length} (${sum(awayLines[count - 1]!.map((l) => l.text.length + 1))})`,
        unit: 'lines',
      });
      rows.push({
        metric: 'restart: echo round trip through each tunnel',
        value: await echoThroughEach('again'),
        unit: 'ok',
        goal: String(count),
      });

      step('stopping all');
      const stopAll = await daemon.post('/tunnelAct/instanceMgr/stop', { all: true });
      if (!stopAll.success) throw new Error(`stop all: ${stopAll.message}`);
      rows.push({
        metric: 'frpc processes left at the end',
        value: (await tunnelProcesses(dataDir)).size,
        unit: 'proc',
        goal: '0',
      });
      if (failedReads.length)
        rows.push({
          metric: `list reads that failed (first: ${failedReads[0]})`,
          value: failedReads.length,
          unit: 'reads',
          goal: '0',
        });
    } catch (err) {
      // The figures so far are kept: a failure late in the run must not lose them.
      process.stderr.write(`bench: real-frp failed: ${(err as Error).stack ?? err}\n`);
      rows.push({ metric: `FAILED: ${(err as Error).message}`, value: '', unit: '' });
    } finally {
      ws?.terminate();
      await daemon.stop().catch(() => undefined);
      for (const pids of (await tunnelProcesses(dataDir)).values()) {
        for (const pid of pids) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone meanwhile
          }
        }
      }
      await undo();
      await daemon.remove();
    }
    return rows;
  },
};
