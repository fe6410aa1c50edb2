import { createHash } from 'node:crypto';
import { hasProcess, type Command, type InstanceState } from '../machines/instance.machine.js';
import { readTunnelConfigText, TunnelConfig, writeTunnelConfig } from '../src/config/tunnel-config.js';
import { AppError, badRequest, conflict } from '../src/errors.js';
import { missingEnvironment, type InstanceEnvStore } from '../src/instances/instance-env.js';
import type { InstanceRecord } from '../src/instances/instance-store.js';
import type { Logger } from '../src/log/logger.js';
import type { SettingsStore } from '../src/settings/settings-store.js';
import { loopbackPortState } from '../src/system/loopback-ports.js';
import { runUserCannotRead } from '../src/system/run-user-access.js';
import { trustedProgram } from '../src/system/trusted-program.js';
import type { Slot } from './instance-queue.js';
import type { InstanceRegistry } from './instance-registry.js';

/** Where the verdict of an instance's last start check is kept (the lifecycle's record of the instance). */
export interface VerdictCache {
  /** The config file and variables as last checked (a digest), and what the check found. */
  checked?: { digest: string; known: number; problem: string | undefined };
}

/**
 * What must hold before a tunnel is started, said by tunnelward for every init system rather than by the tunnel
 * failing to start: the file can be read and parsed, its run user can open it, every `{{ .Envs.NAME }}` has its
 * variable, TunnelPath is a program tunnelward may run, and its admin port is free. One read of the file per start.
 */
export class StartChecks {
  private readonly log: Logger;

  constructor(
    private readonly deps: {
      settings: SettingsStore;
      env: InstanceEnvStore;
      registry: InstanceRegistry;
      stateOf: (id: number) => InstanceState;
      log: Logger;
    },
  ) {
    this.log = deps.log.child({ component: 'start-checks' });
  }

  /**
   * Why the tunnel cannot be started with this file and these variables, if it cannot: a placeholder with no
   * variable. The file's secrets, as the tunnel will read them, are made known for masking
   * first. What the change pipeline asks of a new file before it is written.
   */
  startProblem(
    record: InstanceRecord,
    config: TunnelConfig,
    env: Readonly<Record<string, string>>,
  ): string | undefined {
    const missing = missingEnvironment(config.envPlaceholders(), env);
    if (missing.length === 0) return undefined;
    const names = missing.join(', ');
    return `the config file reads ${missing.map((n) => `{{ .Envs.${n} }}`).join(', ')}, but instance ${record.id} has no environment variable ${names} (set it with: tunnelward env set ${record.name} ${missing[0]}; the API: modify, type environment)`;
  }

  /**
   * Why the tunnel cannot be started as its config file stands (its run user cannot open it, a placeholder with no
   * variable), if it cannot: said here for every init system, rather than by the tunnel failing to start. One read of
   * the file; its verdict is kept while the file and the variables stay as they were.
   */
  async unstartable(record: InstanceRecord, text: string, cache: VerdictCache): Promise<string | undefined> {
    const unreadable = await runUserCannotRead(record.configPath, record.runUser);
    if (unreadable) return unreadable;
    const { env } = this.deps;
    const vars = env.of(record.id);
    // The file and the variables as they were at the last check: its secrets are known, and its verdict stands.
    const digest = createHash('sha256').update(text).update('\0').update(JSON.stringify(vars)).digest('base64');
    const last = cache.checked;
    if (last?.digest === digest && last.known === env.configKnownCount(record.id)) return last.problem;
    const config = this.knowSecrets(record, text);
    const problem = config ? this.startProblem(record, config, vars) : undefined;
    cache.checked = { digest, known: env.configKnownCount(record.id), problem };
    return problem;
  }

  /**
   * The checks of a start, in the instance's slot, before anything is done: the file can be read and parsed, its run
   * user can open it, its placeholders have variables, TunnelPath is trusted; and it gets an admin endpoint on a port
   * no other program holds (instances made before tunnelward managed one have none). One read of the file, handed to
   * the spawn that follows. For a restart this is asked before the stop: a restart that could not start the tunnel
   * again is refused, and the tunnel keeps running (a bad TunnelPath never takes every tunnel down).
   */
  async check(
    slot: Slot,
    record: InstanceRecord,
    command: Command,
    cache: VerdictCache,
  ): Promise<{ problem: AppError } | { text: string }> {
    slot.check();
    const keeps = command === 'restart' ? `instance ${record.id} cannot restart, so it was not stopped: ` : '';
    let text: string;
    let config: TunnelConfig;
    try {
      text = await readTunnelConfigText(record.configPath);
      config = TunnelConfig.parse(text, record.configPath);
      const why = await this.unstartable(record, text, cache);
      if (why) return { problem: badRequest(`${keeps}${why}`) };
    } catch (err) {
      if (err instanceof AppError) return { problem: new AppError(err.status, `${keeps}${err.message}`) };
      throw err;
    }
    const tunnelPath = this.deps.settings.value('TunnelPath');
    const untrusted = await trustedProgram(tunnelPath).then(
      () => undefined,
      (err: Error) => conflict(`${keeps || `instance ${record.id} cannot start: `}TunnelPath ${err.message}`),
    );
    if (untrusted) return { problem: untrusted };
    return { text: await this.ensureAdminEndpoint(slot, record, config, text) };
  }

  /**
   * A tunnel with no process gets an admin endpoint if its file has none, and a new port when another program holds
   * its own (frpc would fail to start on it): written in the slot, with the warning that says so. Only a port found
   * held is replaced: a bind that failed for another reason (no descriptor left in a start of thousands) says nothing
   * of it. Returns the file's text as it is now.
   */
  private async ensureAdminEndpoint(
    slot: Slot,
    record: InstanceRecord,
    config: TunnelConfig,
    text: string,
  ): Promise<string> {
    slot.check();
    const known = config.adminEndpoint();
    if (hasProcess(this.deps.stateOf(record.id))) return text;
    if (known && (await loopbackPortState(known.port)) !== 'held') return text;
    // A process started meanwhile (an init system's restart) may be the one holding it.
    if (hasProcess(this.deps.stateOf(record.id))) return text;
    const reservation = await this.deps.registry.reserve(config, { self: record.id, newPort: true });
    try {
      await writeTunnelConfig(record.configPath, config, record.runUser);
    } catch (err) {
      this.deps.registry.release(reservation);
      throw err;
    }
    this.deps.registry.commit(reservation, record.id, config.adminEndpoint());
    const port = reservation.port;
    if (known) {
      this.log.warn(
        { instanceID: record.id, port: known.port, newPort: port },
        "another program holds the tunnel's admin port: the tunnel gets a new one",
      );
    } else this.log.info({ instanceID: record.id, port }, 'gave the tunnel an admin endpoint on loopback');
    return config.toString();
  }

  /** The config file as read, its secrets made known; undefined when it cannot be read (frpc will say why). */
  knowSecrets(record: InstanceRecord, text: string): TunnelConfig | undefined {
    try {
      const config = TunnelConfig.parse(text, record.configPath);
      this.deps.env.knowConfig(record.id, config);
      return config;
    } catch {
      return undefined;
    }
  }
}
