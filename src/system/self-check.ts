import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, stat, unlink, writeFile } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';
import { promisify } from 'node:util';
import { SettingsStore } from '../settings/settings-store.js';

const run = promisify(execFile);

export interface CheckResult {
  name: string;
  ok: boolean;
  message: string;
}

/** Finds an executable the way a shell would: a path as it is, a bare name on PATH. */
export async function resolveExecutable(command: string): Promise<string> {
  const candidates =
    command.includes('/') || isAbsolute(command)
      ? [command]
      : (process.env.PATH ?? '')
          .split(delimiter)
          .filter(Boolean)
          .map((dir) => join(dir, command));
  for (const candidate of candidates) {
    try {
      const info = await stat(candidate);
      if (!info.isFile()) continue;
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not this one
    }
  }
  const where = candidates.length === 1 ? candidates[0] : `${command} on PATH`;
  throw new Error(`${where} is missing or not an executable file`);
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
  const results = await Promise.all([
    check('settings', async () => {
      await SettingsStore.load(dataDir);
      return `${settings.path} is valid`;
    }),
    check('dataDir', () => writable(dataDir)),
    check('instancePath', () => writable(settings.value('InstancePath'))),
    check('tunnelPath', async () => `${await resolveExecutable(tunnelPath)} is executable`),
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
  const binary = results[3]!.ok ? tunnelPath : undefined;
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
