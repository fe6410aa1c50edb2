import { existsSync } from 'node:fs';

export type InitSystem = 'process' | 'systemd' | 'init.d' | 'windows';

/**
 * Which init system runs the tunnels: the `InitSystem` setting when it names one, else systemd where it is the
 * running init (/run/systemd/system exists) and tunnelward runs as root (only root manages system units),
 * Windows on Windows, and otherwise tunnelward itself. init.d is used only when chosen.
 */
export function detectInitSystem(
  setting: string,
  platform: NodeJS.Platform = process.platform,
  exists: (path: string) => boolean = existsSync,
  isRoot: boolean = process.getuid?.() === 0,
): InitSystem {
  if (setting === 'process' || setting === 'systemd' || setting === 'init.d' || setting === 'windows') return setting;
  if (platform === 'win32') return 'windows';
  if (platform === 'linux' && isRoot && exists('/run/systemd/system')) return 'systemd';
  return 'process';
}
