import { mkdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SettingsStore } from '../settings/settings-store.js';
import { tunnelClientVersion } from './tunnel-client.js';
import { daemonFiles, daemonFilesWarning, exposedDaemonFiles } from './own-files.js';
import { ownersText, trustedOwners, trustedProgram } from './trusted-program.js';
import {
  bootCheck,
  failedCheck,
  filesCheck,
  tunnelsCheck,
  type OwnServiceState,
  type TunnelFinding,
} from './tunnel-checks.js';

/** What a check found: `warn` is a problem the daemon works on with (an open door, a stale certificate). */
export type Severity = 'ok' | 'warn' | 'fail';

export interface CheckResult {
  name: string;
  ok: boolean;
  severity: Severity;
  message: string;
}

async function check(
  name: string,
  probe: () => Promise<string>,
  problem: Exclude<Severity, 'ok'> = 'fail',
): Promise<CheckResult> {
  try {
    return { name, ok: true, severity: 'ok', message: await probe() };
  } catch (err) {
    return { name, ok: false, severity: problem, message: (err as Error).message };
  }
}

async function writable(dir: string): Promise<string> {
  // The same mode the daemon creates these dirs with: searchable, not listable.
  await mkdir(dir, { recursive: true, mode: 0o711 });
  const probe = join(dir, `.selfcheck-${process.pid}`);
  await writeFile(probe, 'ok');
  await unlink(probe);
  return `${dir} is writable`;
}

/** Faults the daemon lives with while it keeps serving: each makes a failed check until its cause goes away. */
export interface RuntimeFaults {
  /** Why the database cannot be saved, if it cannot. */
  database(): string | undefined;
  /** Instance log files that cannot be written. */
  instanceLogs(): string[];
  /** Why the last reload of the TLS certificate failed (the previous one is still served), if it did. */
  tls(): string | undefined;
  /** What is open to whoever reaches the port when the daemon listens beyond loopback; empty on loopback. */
  openDoors(): string[];
}

/** What the self-check knows of the tunnels (gathered by actors/tunnel-survey.ts and the own-service probe). */
export interface TunnelsToCheck {
  tunnels: readonly TunnelFinding[];
  ownService: OwnServiceState;
  initSystem: string;
}

/**
 * The self-check: settings file valid, data and instance dirs writable, the database saved, every instance log
 * writable, the daemon's own files out of others' reach, the tunnel client present and its version; then, with
 * `tunnels`, the tunnels down, degraded or failed, start at boot that cannot happen, and the files the tunnel client
 * refuses.
 */
export async function selfCheck(
  dataDir: string,
  settings: SettingsStore,
  faults: RuntimeFaults,
  tunnels?: TunnelsToCheck,
): Promise<CheckResult[]> {
  const tunnelPath = settings.value('TunnelPath');
  /** The path checked is the path asked for its version. */
  let program: string | undefined;
  const results = await Promise.all([
    check('settings', async () => {
      await SettingsStore.load(dataDir);
      return `${settings.path} is valid`;
    }),
    check('dataDir', () => writable(dataDir)),
    check('instancePath', () => writable(settings.value('InstancePath'))),
    check('tunnelPath', async () => `${(program = await trustedProgram(tunnelPath))} is executable`),
    check('database', async () => {
      const reason = faults.database();
      if (reason) throw new Error(`the database cannot be saved (${reason}): recent changes are held in memory only`);
      return 'the database is saved';
    }),
    check('instanceLogs', async () => {
      const failing = faults.instanceLogs();
      if (failing.length > 0)
        throw new Error(`log files that cannot be written (output dropped): ${failing.join('; ')}`);
      return 'every instance log file is writable';
    }),
    check(
      'tls',
      async () => {
        const reason = faults.tls();
        if (reason) throw new Error(`${reason}; the previous certificate is still served`);
        return 'no certificate reload has failed';
      },
      'warn',
    ),
    check(
      'exposure',
      async () => {
        const doors = faults.openDoors();
        if (doors.length > 0) throw new Error(`open to whoever reaches the port: ${doors.join('; ')}`);
        return 'nothing is open beyond what the settings chose (or only this host reaches the daemon)';
      },
      'warn',
    ),
    check(
      'daemonFiles',
      async () => {
        const owners = trustedOwners();
        const exposed = await exposedDaemonFiles(owners);
        if (exposed.length > 0) throw new Error(daemonFilesWarning(exposed, owners));
        return `${daemonFiles()
          .map((f) => f.path)
          .join(', ')}: only ${ownersText(owners)} can change them`;
      },
      'warn',
    ),
  ]);
  const binary = results[3]!.ok ? program : undefined;
  const version = await check('tunnelVersion', async () => {
    if (!binary) throw new Error('no tunnel client to ask');
    return tunnelClientVersion(binary);
  });
  results.push(version);
  if (tunnels) {
    results.push(
      tunnelsCheck(tunnels.tunnels),
      failedCheck(tunnels.tunnels),
      bootCheck(tunnels.tunnels, tunnels.ownService, tunnels.initSystem),
      filesCheck(tunnels.tunnels, version.ok ? version.message : undefined),
    );
  }
  return results;
}
