import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../paths.js';

export interface SoftwareInfo {
  Name: string;
  Version: string;
  Developer: string;
  BuildVer: number;
  Description: string;
  BuildType: 'debug' | 'release';
}

/** Read once from package.json: `version`, and `tunnelward.buildVer` / `tunnelward.buildType`. */
export function loadSoftwareInfo(): SoftwareInfo {
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8'));
  const buildVer = Number(pkg.tunnelward?.buildVer);
  return Object.freeze({
    Name: 'tunnelward',
    Version: String(pkg.version),
    Developer: 'tunnelward developers',
    // BuildVer is an int16 in the contract.
    BuildVer: Number.isInteger(buildVer) && buildVer >= 0 && buildVer <= 32767 ? buildVer : 0,
    Description: String(pkg.description),
    BuildType: pkg.tunnelward?.buildType === 'debug' ? 'debug' : 'release',
  });
}
