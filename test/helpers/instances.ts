import { until } from './until.js';
import { execFile } from 'node:child_process';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../../src/paths.js';
import type { Daemon } from './daemon.js';

export const FIXTURE_FRPC = join(PACKAGE_ROOT, 'test', 'fixtures', 'frpc.mjs');

const run = promisify(execFile);

/**
 * settings.toml for a daemon whose tunnels are the fixture (or the program given), with short timings so tests stay
 * quick.
 */
export function instanceSettings(
  extra: Record<string, string | number | boolean> = {},
  tunnelPath = FIXTURE_FRPC,
): string {
  const values: Record<string, string | number | boolean> = {
    'Instance.StartSecs': 0.3,
    'Instance.StopTimeoutSecs': 2,
    'Watchdog.BackoffSecs': 0.1,
    'Watchdog.BackoffMaxSecs': 0.4,
    'Watchdog.StartLimit': 3,
    'RateLimit.Login': 1000,
    'RateLimit.PerToken': 100000,
    ...extra,
  };
  const lines = [`TunnelPath = ${JSON.stringify(tunnelPath)}`];
  for (const [key, value] of Object.entries(values)) {
    lines.push(`${JSON.stringify(key)} = ${typeof value === 'string' ? JSON.stringify(value) : value}`);
  }
  return lines.join('\n') + '\n';
}

export interface CreatedInstance {
  id: string;
  configPath: string;
}

let servers = 0;

/**
 * Creates an instance (fixture controls go in `metadatas`) and returns its id as the API takes it: a string. Each
 * gets a server of its own (a port of its own), so proxies of different tests never meet on one server, unless
 * `extra.serverPort` names one.
 */
export async function createInstance(
  daemon: Daemon,
  token: string,
  name: string,
  additionalProperties: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Promise<CreatedInstance> {
  const { serverPort = String(20000 + ++servers), ...rest } = extra;
  const res = await daemon.post(
    '/tunnelAct/instanceMgr/create',
    {
      instanceInfo: { name, serverAddr: '127.0.0.1', serverPort, auth_method: 'token' },
      additionalProperties,
      ...rest,
    },
    { token },
  );
  if (!res.body.success) throw new Error(`create ${name} failed: ${res.body.message}`);
  return { id: String(res.body.data.instanceID), configPath: res.body.data.configPath };
}

/** What the fixture's frpc-style validation says of a file: ok, or the error it prints. */
export async function frpcVerify(configPath: string): Promise<{ ok: boolean; output: string }> {
  try {
    const { stdout } = await run(FIXTURE_FRPC, ['verify', '-c', configPath]);
    return { ok: true, output: stdout };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** Pids of live (not zombie) fixture processes running a given config file, read from /proc. */
export function tunnelPids(configPath: string): Promise<number[]> {
  return fixturePids((path) => path === configPath);
}

/**
 * Ends every tunnel (the fixture or the real frpc) running a config file under `dir`: for a test whose last daemon
 * is killed, so that no tunnel outlives it.
 */
export async function killTunnelsUnder(dir: string): Promise<void> {
  for (const pid of await tunnelProcesses(
    (path) => path.startsWith(`${dir}/`),
    () => true,
  )) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

function fixturePids(runs: (configPath: string) => boolean): Promise<number[]> {
  return tunnelProcesses(runs, (args) => args.some((a) => a.endsWith('frpc.mjs')));
}

/** Live (not zombie) processes with `-c <config path>` in their arguments, read from /proc. */
async function tunnelProcesses(runs: (configPath: string) => boolean, is: (args: string[]) => boolean) {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'latin1').catch(() => '');
    const args = cmdline.split('\0');
    if (!args.includes('-c') || !is(args) || !runs(args[args.indexOf('-c') + 1] ?? '')) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'latin1').catch(() => '');
    if (stat && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z') pids.push(Number(entry));
  }
  return pids;
}

/**
 * The bytes of an instance's log, its rotated files included; a file rotated away between the listing and its
 * reading counts as empty (the next look finds it under its new name).
 */
export async function logBytes(dataDir: string, id: string): Promise<number> {
  const logs = join(dataDir, 'logs');
  let total = 0;
  for (const name of (await readdir(logs)).filter((n) => n.startsWith(`tunnel_${id}.log`)))
    total += await stat(join(logs, name)).then(
      (s) => s.size,
      () => 0,
    );
  return total;
}

/** Owner, group and permission bits of a file, and the uids its ACL names (`aclUsers`, only when it names any). */
export async function fileAccess(
  path: string,
): Promise<{ uid: number; gid: number; mode: number; aclUsers?: number[] }> {
  const info = await stat(path);
  const access = { uid: info.uid, gid: info.gid, mode: info.mode & 0o777 };
  const { stdout } = await run('getfacl', ['--omit-header', '--numeric', '--no-effective', '--', path]);
  const aclUsers = [...stdout.matchAll(/^user:(\d+):/gm)].map((m) => Number(m[1]));
  return aclUsers.length > 0 ? { ...access, aclUsers } : access;
}

/**
 * A config file whose tunnel runs as nobody: root's, group root with no access, and an ACL entry that lets nobody
 * alone read it (nobody's primary group, nogroup, is sync's and _apt's too on Debian, so the group would not do).
 */
export const READABLE_BY_NOBODY = { uid: 0, gid: 0, mode: 0o640, aclUsers: [65534] };

/** The real user and group of a process, from the text of its `/proc/<pid>/status`. */
export function processIds(status: string): { uid: number; gid: number } {
  return { uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]), gid: Number(/^Gid:\s+(\d+)/m.exec(status)?.[1]) };
}

/** Waits until `check(await probe())` holds (see until). */
export function waitFor<T>(probe: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  return until(probe, check, { timeoutMs });
}

export const statusOf = (daemon: Daemon, token: string, id: string) =>
  daemon.get(`/tunnelAct/instanceMgr/status?instanceID=${id}`, { token }).then((r) => r.body.data);

/** A tcp proxy as the proxy API takes it (ports as strings, as the contract has them). */
export const tcpProxy = (name: string, remotePort: number, localPort = 22) => ({
  name,
  type: 'tcp',
  localIP: '127.0.0.1',
  localPort: String(localPort),
  remotePort: String(remotePort),
});
