import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder holding tunnelward's package.json, found from this module whether it runs from src or dist. */
export const PACKAGE_ROOT: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the package.json of tunnelward');
    dir = parent;
  }
  return dir;
})();

/** The command-line entry point of this tunnelward (what `serve` and a service's unit run). */
export const CLI_SCRIPT: string = join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
