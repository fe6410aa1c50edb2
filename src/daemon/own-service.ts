import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { join, sep } from 'node:path';
import { runProgram } from '../system/run-program.js';
import { tunnelwardUnit } from '../boot/systemd-unit.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { CLI_SCRIPT, PACKAGE_ROOT } from '../paths.js';
import { DEFAULTS } from '../settings/defaults.js';
import { SettingsStore } from '../settings/settings-store.js';
import { lookupOsUser, USER_NAME } from '../system/os-users.js';
import { daemonFilesWarning, exposedDaemonFiles } from '../system/own-files.js';
import type { OwnServiceState } from '../system/tunnel-checks.js';
import { parsePort, resolveDataDir, resolveOptions } from './options.js';
import { tlsPaths } from './tls.js';

export interface ServiceCommandOptions {
  action: 'install' | 'uninstall';
  print: boolean;
  dataDir?: string;
  /** Where the service listens, as `serve --host/--port` take them. */
  host?: string;
  port?: string;
  user?: string;
  /** Start (or restart) the service and wait until it answers; install only. */
  start: boolean;
  /** How long to wait for it to answer. */
  waitMs?: number;
}

/** Where the command writes: what it did, and warnings (apart, so `--print`'s output stays the unit alone). */
export interface ServiceCommandIo {
  out: (text: string) => void;
  warn: (text: string) => void;
}

const UNIT = 'tunnelward.service';

/**
 * `tunnelward service install|uninstall`: tunnelward's own systemd unit, which starts it at boot and restarts it,
 * without taking the tunnels down with it. Install runs what runs this command, with the data dir, address and port
 * given to it (flags, else the same environment variables `serve` reads), starts it and waits until it answers.
 * `--print` shows the unit and changes nothing. Uninstall stops and disables the service and removes the unit.
 * Install (and `--print`) warns when what the unit would run can be changed by others than the user it runs as.
 */
export async function serviceCommand(
  options: ServiceCommandOptions,
  { out, warn }: ServiceCommandIo,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const dataDir = resolveDataDir({ dataDir: options.dataDir }, env);
  const runUser = options.user === undefined ? undefined : lookupOsUser(options.user);
  if (options.user !== undefined && USER_NAME.test(options.user) && !runUser) {
    throw new Error(
      `user ${options.user} does not exist on this host (not in /etc/passwd): create it first ` +
        `(useradd --system ${options.user}) and give it the data dir, or leave --user out`,
    );
  }
  const host = options.host ?? (env.TUNNELWARD_HOST || undefined);
  const portText = options.port ?? (env.TUNNELWARD_PORT || undefined);
  const port = portText === undefined ? undefined : parsePort(portText, options.port ? '--port' : 'TUNNELWARD_PORT');
  if (port === 0) throw new Error('a service needs a fixed port: port 0 would pick another one at every start');
  const program = runningProgram();
  const unit = tunnelwardUnit({
    nodePath: process.execPath,
    cliPath: program.cliPath,
    dataDir,
    host,
    port,
    user: options.user,
  });
  if (options.action === 'install') {
    // The unit runs as root unless --user names another: whoever else can change what it runs becomes that user.
    const owners = runUser && runUser.uid !== 0 ? [0, runUser.uid] : [0];
    const exposed = await exposedDaemonFiles(owners);
    if (exposed.length > 0) warn(`warning: ${daemonFilesWarning(exposed, owners)}\n`);
  }
  if (options.print) {
    out(unit);
    return;
  }
  const { store } = await SettingsStore.load(dataDir);
  const unitDir = store.value('Systemd.UnitDir');
  const systemctl = store.value('Systemd.Systemctl');
  const path = join(unitDir, UNIT);
  if (options.action === 'uninstall') {
    if (!existsSync(path)) {
      out(`${path} does not exist: ${UNIT} is not installed\n`);
      return;
    }
    // --now: stopped as well as disabled. Its tunnels are let be, as at every stop of tunnelward. Where systemd
    // cannot be asked (it does not run here), the file still goes: it is what install left.
    const disabled = await runProgram([systemctl, 'disable', '--now', UNIT]).then(
      () => undefined,
      (err: Error) => err.message,
    );
    await rm(path, { force: true });
    if (disabled !== undefined) {
      out(`removed ${path}; ${UNIT} could not be stopped or disabled (${disabled})\n`);
      return;
    }
    await runProgram([systemctl, 'daemon-reload']);
    out(
      `stopped and disabled ${UNIT}, removed ${path}\n` +
        `tunnels it started keep running: stop them first (tunnelward stop --all) when they should end with it\n`,
    );
    return;
  }

  await mkdir(unitDir, { recursive: true });
  await writeFileAtomic(path, unit, { mode: 0o644 });
  try {
    await runProgram([systemctl, 'daemon-reload']);
    await runProgram([systemctl, 'enable', UNIT]);
  } catch (err) {
    // systemd does not run this host's services (no systemd as PID 1, a container): nothing stays half installed.
    await rm(path, { force: true });
    throw new Error(
      `${(err as Error).message}: ${UNIT} was not installed (${path} removed). Where systemd does not run the ` +
        `services, start tunnelward by what does (an init script, a supervisor, a container's entry point): ` +
        `${process.execPath} ${program.cliPath} serve --data-dir ${dataDir}`,
      { cause: err },
    );
  }
  const listen = resolveOptions(
    { dataDir, host, port: port === undefined ? undefined : String(port) },
    {},
    store.get(),
  );
  out(
    `installed ${path} and enabled it (it starts at boot)\n` +
      `it runs ${program.description}\n` +
      `  with --data-dir ${dataDir}, listening on ${listen.host}:${listen.port}${options.user ? `, as user ${options.user}` : ''}\n`,
  );
  if (!options.start) {
    out(`not started (--no-start): start it with ${systemctl} start ${UNIT}\n`);
    return;
  }
  // Restart rather than start: a service installed again runs with what it was installed with now.
  await runProgram([systemctl, 'restart', UNIT]);
  const tls = tlsPaths({}, {}, store.get()) !== undefined;
  const url = probeUrl(tls, listen.host, listen.port);
  const began = Date.now();
  await waitUntilAnswering(
    url,
    systemctl,
    store.value('Systemd.Journalctl'),
    options.waitMs ?? DEFAULTS.serviceStartWaitMs,
  );
  out(`started ${UNIT}: it answers at ${url} (after ${((Date.now() - began) / 1000).toFixed(1)} s)\n`);
  const passwordFile = join(dataDir, 'initial-admin-password');
  if (existsSync(passwordFile)) out(`the first superuser's password is in ${passwordFile}\n`);
}

/** What the unit runs: this checkout's build, or the copy npm installed (globally or in a project). */
function runningProgram(): { cliPath: string; description: string } {
  const cliPath = CLI_SCRIPT;
  const node = `node ${process.version} (${process.execPath})`;
  const installed = PACKAGE_ROOT.split(sep).includes('node_modules');
  return {
    cliPath,
    description: installed
      ? `the tunnelward installed at ${PACKAGE_ROOT} (${cliPath}) with ${node}; ` +
        `an upgrade of that copy (npm install -g tunnelward) takes effect at the next restart of the service`
      : `this checkout's ${cliPath} with ${node}; keep the checkout where it is and built ` +
        `(npm run build, then systemctl restart ${UNIT}, upgrades it)`,
  };
}

/** The address a client on this host reaches the service at: loopback when it listens on every address. */
function probeUrl(tls: boolean, host: string, port: number): string {
  const reachable = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `${tls ? 'https' : 'http'}://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

/** Any HTTP answer counts: the daemon is up. A certificate is not checked here (it may be for another name). */
function answers(url: string): Promise<boolean> {
  const get = url.startsWith('https:') ? httpsGet : httpGet;
  return new Promise((resolve) => {
    const req = get(`${url}/system/getStatus`, { timeout: 2000, rejectUnauthorized: false }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('timeout', () => req.destroy(new Error('no answer')));
    req.on('error', () => resolve(false));
  });
}

/** Polls the service until it answers; fails early, with its last journal lines, when it exited. */
async function waitUntilAnswering(url: string, systemctl: string, journalctl: string, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (await answers(url)) return;
    const { stdout } = await runProgram([systemctl, 'show', '--property=ActiveState,SubState,NRestarts', UNIT]);
    const state = Object.fromEntries(
      stdout
        .trim()
        .split('\n')
        .map((line) => line.split('=', 2) as [string, string]),
    );
    // Restart=always: an exit shows as a wait to restart (auto-restart), then as a restart counted.
    const exited = state.ActiveState === 'failed' || state.SubState === 'auto-restart' || Number(state.NRestarts) > 0;
    if (exited || Date.now() > deadline) {
      const why = exited ? 'it exited' : `it does not answer at ${url} after ${waitMs / 1000} s`;
      const journal = await runProgram([journalctl, '-u', UNIT, '-n', '15', '--no-pager', '-o', 'cat']).then(
        (r) => r.stdout.trim(),
        (err: Error) => `(its journal cannot be read: ${err.message})`,
      );
      throw new Error(`${UNIT} is installed and enabled, but ${why}; its last lines:\n${journal}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Whether tunnelward's own service starts it at boot: its unit in `unitDir` (as `service install` writes it), and
 * what `systemctl is-enabled` says of it (exit 0 and `enabled`: it does; any other answer is said as it came).
 */
export async function ownServiceState(unitDir: string, systemctl: string): Promise<OwnServiceState> {
  const unit = join(unitDir, UNIT);
  if (!existsSync(unit)) return { unit, installed: false, enabled: undefined };
  try {
    const said = (await runProgram([systemctl, 'is-enabled', UNIT], 10_000)).stdout.trim();
    return said === 'enabled'
      ? { unit, installed: true, enabled: true }
      : { unit, installed: true, enabled: false, said };
  } catch (err) {
    // `disabled` exits 1; systemctl that cannot be run (no systemd here) says nothing of the unit.
    const message = (err as Error).message;
    return /exit code 1$/.test(message)
      ? { unit, installed: true, enabled: false, said: 'disabled' }
      : { unit, installed: true, enabled: undefined, said: message };
  }
}
