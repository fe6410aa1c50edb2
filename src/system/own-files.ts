import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CLI_SCRIPT, PACKAGE_ROOT } from '../paths.js';
import { ownersText, untrustedOrUnseen } from './trusted-program.js';

export interface DaemonFile {
  path: string;
  kind: 'file' | 'directory';
}

/**
 * What the daemon runs as its own code: node, its entry script (the path to it covers the dist dir) and the
 * node_modules it loads its libraries from.
 */
export function daemonFiles(): DaemonFile[] {
  const modules = join(PACKAGE_ROOT, 'node_modules');
  return [
    { path: process.execPath, kind: 'file' },
    { path: CLI_SCRIPT, kind: 'file' },
    ...(existsSync(modules) ? [{ path: modules, kind: 'directory' as const }] : []),
  ];
}

/**
 * Why someone other than `owners` can change what the daemon runs, one line per cause (a world-writable /tmp on the
 * way, a checkout owned by another user), naming the files it reaches; empty when nobody else can. The rule
 * `TunnelPath` is held to (`untrustedReason`), applied to the daemon itself: the path to each file and the file,
 * not every file inside node_modules.
 */
export async function exposedDaemonFiles(owners: readonly number[]): Promise<string[]> {
  const reached = new Map<string, string[]>();
  for (const { path, kind } of daemonFiles()) {
    const reason = await untrustedOrUnseen(path, owners, kind);
    if (reason) reached.set(reason, [...(reached.get(reason) ?? []), path]);
  }
  return [...reached].map(([reason, paths]) => `${reason} (for ${paths.join(', ')})`);
}

/** The warning for `exposed` causes, for code that runs as `owners[last]` (root, or a service user). */
export function daemonFilesWarning(exposed: readonly string[], owners: readonly number[]): string {
  const runAs = owners.length === 1 ? 'root' : `uid ${owners[1]}`;
  return (
    `tunnelward's own files can be changed by others than ${ownersText(owners)}: ${exposed.join('; ')}; whoever ` +
    `changes them runs code as ${runAs} at the daemon's next start: put tunnelward where only ` +
    `${ownersText(owners)} can change it (a clone under /opt or /var/lib, or npm install -g)`
  );
}
