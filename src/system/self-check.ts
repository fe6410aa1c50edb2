import { execFile } from 'node:child_process';
import { mkdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SettingsStore } from '../settings/settings-store.js';
import { trustedProgram } from './trusted-program.js';

const run = promisify(execFile);

export interface CheckResult {
  name: string;
  ok: boolean;
  message: string;
}

async function check(name: string, probe: () => Promise<string>): Promise<CheckResult> {
  try {
    return { name, ok: true, message: await probe() };
  } catch (err) {
    return { name, ok: false, message: (err as Error).message };
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

/**
 * The self-check: settings file valid, data and instance dirs writable, the database saved, every instance log
 * writable, the tunnel client present and its version.
 */
export async function selfCheck(
  dataDir: string,
  settings: SettingsStore,
  faults: RuntimeFaults,
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
    check('tls', async () => {
      const reason = faults.tls();
      if (reason) throw new Error(`${reason}; the previous certificate is still served`);
      return 'no certificate reload has failed';
    }),
    check('exposure', async () => {
      const doors = faults.openDoors();
      if (doors.length > 0) throw new Error(`open to whoever reaches the port: ${doors.join('; ')}`);
      return 'nothing is open beyond what the settings chose (or only this host reaches the daemon)';
    }),
  ]);
  const binary = results[3]!.ok ? program : undefined;
  results.push(
    await check('tunnelVersion', async () => {
      if (!binary) throw new Error('no tunnel client to ask');
      const { stdout } = await run(binary, ['-v'], { timeout: 5000, maxBuffer: 64 * 1024 });
      const version = stdout.trim().split('\n')[0];
      if (!version) throw new Error(`${binary} -v printed nothing`);
      return version;
    }),
  );
  return results;
}
