import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { statFields } from './proc.js';

/**
 * The daemon's CPU priority above its tunnels'. When a server goes, every tunnel of it retries its login at once: at
 * 1000 tunnels on 2 cores the thousand frpc took both cores for ~0.8 s, and the daemon's event loop, which needs
 * ~0.35 s of CPU to read all their lines, waited ~0.85 s for a CPU among them (bench real-frp, logged -> status event
 * p99 906 ms at the same priority; 963 ms at nice -5; 515 ms at nice -10, where it waited 443 ms; a reconnect
 * 839 / 477 / 277 ms). Its work is small and comes in bursts, so a higher priority takes nothing from the tunnels on
 * a machine that is not saturated, and on one that is it lets the supervisor see and act before the processes it
 * supervises run on. Nice -10 is about nine times a tunnel's weight in Linux's scheduler; not more, so that a daemon
 * that went wrong and spun could not take the machine from its tunnels. The tunnels run at the priority the daemon
 * was given (0 unless its caller chose otherwise): src/spawner/spawner-process.ts puts itself back there before it
 * starts any. (A thousand runnable frpc still outweigh any nice value: the daemon and its tunnels as two groups of
 * the scheduler, cgroups, would be the next step.)
 */
export const DAEMON_NICE = -10;

/** The priority this process was given, before `preferDaemon` raised it: the tunnels'. */
let given: number | undefined;

/**
 * Gives the daemon its priority. On Linux a nice value is a thread's: every thread is set, and threads made later
 * inherit it from the one that makes them. Where the kernel groups each session (autogroup: kernel.
 * sched_autogroup_enabled, on in Debian's and Ubuntu's kernels), a thread's nice value weighs only within its session,
 * and every tunnel leads a session of its own (it is started detached): the daemon's session is given the weight too,
 * when the daemon leads it (a service manager starts it so; never a session it shares with the shell it was typed
 * in). Lowering a nice value needs root or CAP_SYS_NICE: without, the daemon runs at the priority it was given, and
 * the answer says why.
 */
export function preferDaemon(
  nice: number = DAEMON_NICE,
): { nice: number; session: 'set' | 'not its own' | 'no autogroup' } | { refused: string } {
  given ??= getPriority();
  let threads: number[];
  try {
    threads = readdirSync('/proc/self/task').map(Number);
  } catch {
    threads = [0];
  }
  try {
    for (const tid of threads) setPriority(tid, nice);
  } catch (err) {
    return { refused: (err as Error).message };
  }
  return { nice, session: preferSession(nice) };
}

/** Sets the autogroup's nice value of the session this process leads (see `preferDaemon`). */
function preferSession(nice: number): 'set' | 'not its own' | 'no autogroup' {
  try {
    // state, ppid, pgrp, session.
    if (Number(statFields(process.pid)?.[3]) !== process.pid) return 'not its own';
    if (readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'latin1').trim() !== '1') return 'no autogroup';
    writeFileSync('/proc/self/autogroup', String(nice));
    return 'set';
  } catch {
    return 'no autogroup';
  }
}

/** The nice value the tunnels run at: the one this process was given. */
export const tunnelNice = (): number => given ?? getPriority();

/** Where the spawner reads it (its environment holds nothing else of the daemon's). */
export const TUNNEL_NICE_VARIABLE = 'TUNNELWARD_TUNNEL_NICE';
