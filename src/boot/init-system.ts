import { existsSync } from 'node:fs';

export type InitSystem = 'process' | 'systemd' | 'init.d' | 'windows';

/**
 * Which init system runs the tunnels: the `InitSystem` setting when it names one, else systemd where it is the
 * running init (/run/systemd/system exists), Windows on Windows, and otherwise tunnelward itself. init.d is used
 * only when chosen, and only where /etc/init.d (or the configured script dir) exists.
 */
export function detectInitSystem(
  setting: string,
  platform: NodeJS.Platform = process.platform,
  exists: (path: string) => boolean = existsSync,
): InitSystem {
  if (setting === 'process' || setting === 'systemd' || setting === 'init.d' || setting === 'windows') return setting;
  if (platform === 'win32') return 'windows';
  if (platform === 'linux' && exists('/run/systemd/system')) return 'systemd';
  return 'process';
}
