import { spawn } from 'node:child_process';
import { constants } from 'node:os';

/** What a daemon started by a keeper exits with to ask it for a fresh one. */
const RESTART_EXIT_CODE = 75;
const SUPERVISED = 'TUNNELWARD_SUPERVISED';

/**
 * After the daemon has stopped: hands over to a new daemon with the same arguments and environment.
 *
 * - Under tunnelward's own systemd unit, systemd (Restart=always) starts the new one: exit 0.
 * - Under a keeper (below): exit with RESTART_EXIT_CODE and the keeper starts the new one.
 * - Otherwise this process becomes the keeper: it keeps its pid, its terminal and its process group (Ctrl-C and a
 *   shell's job control still reach the daemon, a container's PID 1 stays up), starts the new daemon as its child,
 *   passes signals on, and exits as the daemon does. At most two processes, however many restarts follow.
 */
export function handOver(): void {
  const supervisor = process.env[SUPERVISED];
  if (supervisor === 'systemd') process.exit(0);
  if (supervisor === 'keeper') process.exit(RESTART_EXIT_CODE);
  keep();
}

function keep(): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.removeAllListeners(signal);
    // A Ctrl-C reaches the whole foreground process group, the daemon too; a signal sent to this pid alone is
    // passed on. The daemon stops once however many it gets.
    process.on(signal, () => current?.kill(signal));
  }
  let current: ReturnType<typeof spawn> | undefined;
  const start = () => {
    current = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
      stdio: 'inherit',
      env: { ...process.env, [SUPERVISED]: 'keeper' },
    });
    current.once('error', (err) => {
      process.stderr.write(`tunnelward: cannot start the new daemon: ${err.message}\n`);
      process.exit(1);
    });
    current.once('exit', (code, signal) => {
      if (code === RESTART_EXIT_CODE) start();
      else process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0));
    });
  };
  start();
}
