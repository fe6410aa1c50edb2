import { execFile } from 'node:child_process';
import { trustedProgram } from './trusted-program.js';

export interface CommandResult {
  stdout: string;
  stderr: string;
}

/**
 * Runs a program named by a setting (systemctl, journalctl, update-rc.d, schtasks) as `runCommand` does, once it is
 * found to be a file only root can change: the path checked is the path run.
 */
export async function runProgram(argv: readonly string[], timeoutMs?: number): Promise<CommandResult> {
  const [command, ...args] = argv;
  return runCommand([await trustedProgram(command!), ...args], timeoutMs);
}

/**
 * Runs a command as an argument array, never through a shell, with a time limit. A failure says which command
 * failed and the first line of what it printed on standard error.
 */
export function runCommand(argv: readonly string[], timeoutMs = 30_000): Promise<CommandResult> {
  const [file, ...args] = argv;
  return new Promise((resolve, reject) => {
    execFile(file!, args, { timeout: timeoutMs, maxBuffer: 1024 * 1024 }, (err, stdout, stderr) => {
      if (!err) {
        resolve({ stdout, stderr });
        return;
      }
      const e = err as NodeJS.ErrnoException & { killed?: boolean };
      const why =
        e.code === 'ENOENT'
          ? 'command not found'
          : e.killed
            ? `no answer within ${timeoutMs} ms`
            : stderr.trim().split('\n')[0] || `exit code ${e.code}`;
      reject(new Error(`${argv.join(' ')} failed: ${why}`));
    });
  });
}
