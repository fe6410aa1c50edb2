import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { runProgram } from '../../actors/commands.js';
import { tunnelwardUnit } from '../boot/systemd-unit.js';
import { writeFileAtomic } from '../fs/atomic.js';
import { PACKAGE_ROOT } from '../paths.js';
import { SettingsStore } from '../settings/settings-store.js';
import { lookupOsUser, USER_NAME } from '../system/os-users.js';
import { resolveDataDir } from './options.js';

export interface ServiceCommandOptions {
  action: 'install' | 'uninstall';
  print: boolean;
  dataDir?: string;
  user?: string;
}

const UNIT = 'tunnelward.service';

/**
 * `tunnelward service install|uninstall [--print]`: tunnelward's own systemd unit, which starts it at boot and
 * restarts it, without taking the tunnels down with it. `--print` shows the unit and changes nothing.
 */
export async function serviceCommand(options: ServiceCommandOptions, out: (text: string) => void): Promise<void> {
  const dataDir = resolveDataDir({ dataDir: options.dataDir }, process.env);
  if (options.user !== undefined && USER_NAME.test(options.user) && !lookupOsUser(options.user)) {
    throw new Error(
      `user ${options.user} does not exist on this host (not in /etc/passwd): create it first ` +
        `(useradd --system ${options.user}) and give it the data dir, or leave --user out`,
    );
  }
  const unit = tunnelwardUnit({
    nodePath: process.execPath,
    cliPath: join(PACKAGE_ROOT, 'dist', 'src', 'cli.js'),
    dataDir,
    user: options.user,
  });
  if (options.print) {
    out(unit);
    return;
  }
  const { store } = await SettingsStore.load(dataDir);
  const unitDir = store.value('Systemd.UnitDir');
  const systemctl = store.value('Systemd.Systemctl');
  const path = join(unitDir, UNIT);
  if (options.action === 'install') {
    await mkdir(unitDir, { recursive: true });
    await writeFileAtomic(path, unit, { mode: 0o644 });
    await runProgram([systemctl, 'daemon-reload']);
    await runProgram([systemctl, 'enable', UNIT]);
    out(`installed and enabled ${path}; start it with: ${systemctl} start ${UNIT}\n`);
  } else {
    await runProgram([systemctl, 'disable', UNIT]);
    await rm(path, { force: true });
    await runProgram([systemctl, 'daemon-reload']);
    out(`disabled and removed ${path}\n`);
  }
}
