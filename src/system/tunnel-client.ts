import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { trustedProgram } from './trusted-program.js';

const run = promisify(execFile);

/** How long the tunnel client may take to say its version. */
const VERSION_TIMEOUT_MS = 5000;

/** Asks the tunnel client for its version (`frpc -v` prints `0.71.0`); fails when what answers is not frpc. */
export async function tunnelClientVersion(binary: string, timeoutMs = VERSION_TIMEOUT_MS): Promise<string> {
  let stdout: string;
  try {
    ({ stdout } = await run(binary, ['-v'], { timeout: timeoutMs, maxBuffer: 64 * 1024 }));
  } catch (err) {
    const e = err as Error & { killed?: boolean; code?: unknown };
    if (e.killed) throw new Error(`${binary} -v did not answer within ${timeoutMs} ms: is it frpc?`, { cause: err });
    const how = typeof e.code === 'number' ? `exit ${e.code}` : e.message;
    throw new Error(`${binary} -v failed (${how}): is it frpc?`, { cause: err });
  }
  const version = stdout.trim().split('\n')[0]!.trim();
  if (!/^v?\d+\.\d+\.\d+\S*$/.test(version)) {
    throw new Error(
      version
        ? `${binary} -v answered ${JSON.stringify(version.slice(0, 80))}, not a version: is it frpc?`
        : `${binary} -v printed nothing: is it frpc?`,
    );
  }
  return version;
}

/** The tunnel client of the TunnelPath setting, found and asked its version; the reason when it cannot be used. */
export async function checkTunnelClient(tunnelPath: string): Promise<{ path: string; version: string }> {
  const path = await trustedProgram(tunnelPath);
  return { path, version: await tunnelClientVersion(path) };
}
