import { createServer, type Server } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { InstanceSupervisor } from '../../actors/instance-supervisor.js';
import { Prober } from '../../actors/probes.js';
import { bootServiceFor, InitdBootService, SystemdBootService } from '../../actors/boot-services.js';
import { InstanceLogs, logsDirOf } from '../../actors/instance-logs.js';
import { fileSource } from '../../actors/log-sources.js';
import { InitdRunner } from '../../actors/initd-runner.js';
import { ProcessRunner } from '../../actors/process-runner.js';
import { SystemdBus } from '../boot/systemd-bus.js';
import { JournalFollower } from '../../actors/systemd-journal.js';
import { SystemdRunner } from '../../actors/systemd-runner.js';
import { EventHub } from '../../actors/event-hub.js';
import { WebhookNotifier } from '../../actors/webhook-notifier.js';
import { AlertDigest } from '../../actors/alert-digest.js';
import { isWebhookEvent } from '../events/vocabulary.js';
import { publishEvents } from './event-sources.js';
import { AccountService } from '../accounts/account-service.js';
import { ApiKeyService } from '../accounts/api-key-service.js';
import { PasswordHasher } from '../accounts/password-hasher.js';
import { removeStaleTempFiles, writeFileAtomic } from '../fs/atomic.js';
import { createApp } from '../http/app.js';
import { answerClientError } from '../http/client-error.js';
import { LogStreams } from '../http/log-streams.js';
import { RateLimiter } from '../http/rate-limiter.js';
import { createLogger, flushLogger, type Logger } from '../log/logger.js';
import { SecretRedactor } from '../log/secret-redactor.js';
import { SystemLog } from '../log/system-log.js';
import { detectInitSystem, type InitSystem } from '../boot/init-system.js';
import { DEFAULTS } from '../settings/defaults.js';
import { SECRET_KEYS, type Settings } from '../settings/table.js';
import { SettingsStore } from '../settings/settings-store.js';
import { secretSettingValues } from '../settings/schema.js';
import { Database } from '../storage/database.js';
import { countStart, PersistentCounter } from '../storage/meta.js';
import { preferDaemon } from '../system/priority.js';
import { hostBootId } from '../system/proc.js';
import { checkTunnelClient } from '../system/tunnel-client.js';
import { loadSoftwareInfo } from '../system/software-info.js';
import { DataDirLock } from './data-dir-lock.js';
import { prepareDataDir } from './data-dir.js';
import { handOver } from './restart.js';
import { InitialPasswordFile } from './initial-password.js';
import { resolveDataDir, resolveLogFormat, resolveOptions, type DaemonOptions, type ServeFlags } from './options.js';
import { useColour } from '../client/render.js';
import { readTlsMaterial, tlsPaths } from './tls.js';
import { Exposure } from '../http/exposure.js';
import { TrustedProxies } from '../http/client-address.js';
import { AuditTrail } from '../audit/audit-trail.js';

export interface RunningDaemon {
  url: string;
  options: DaemonOptions;
  log: Logger;
  /** Closes connections, flushes the database, releases the data dir. Safe to call more than once. */
  stop(reason: string): Promise<void>;
  /** Reads the TLS certificate and key again (SIGHUP): a renewed certificate is served without a restart. */
  reload(reason: string): Promise<void>;
}

/** Starts everything and listens; resolves once the URL is printed. Throws with a clear message when it cannot. */
export async function startDaemon(flags: ServeFlags, env: NodeJS.ProcessEnv = process.env): Promise<RunningDaemon> {
  const dataDir = resolveDataDir(flags, env);
  await prepareDataDir(dataDir);
  const lock = await DataDirLock.acquire(dataDir);
  const cleanups: Array<() => Promise<void> | void> = [() => lock.release()];
  const undo = async () => {
    for (const fn of cleanups.reverse()) await Promise.resolve(fn()).catch(() => {});
  };
  try {
    return await startLocked(dataDir, flags, env, cleanups);
  } catch (err) {
    await undo();
    throw err;
  }
}

async function startLocked(
  dataDir: string,
  flags: ServeFlags,
  env: NodeJS.ProcessEnv,
  cleanups: Array<() => Promise<void> | void>,
): Promise<RunningDaemon> {
  const { store: settings, unknownKeys } = await SettingsStore.load(dataDir);
  const options = resolveOptions(flags, env, settings.get());
  const systemLog = new SystemLog();
  // Every secret tunnelward knows, masked wherever output leaves it: webhook header values here, the instances'
  // environment values and config-file secrets as the supervisor learns them.
  const secrets = new SecretRedactor();
  secrets.set('settings', secretSettingValues(settings.get()));
  const log = createLogger({
    debug: settings.value('Debug'),
    onEntry: systemLog.onLine,
    redact: secrets.redactJson,
    format: resolveLogFormat(flags, env, Boolean(process.stdout.isTTY)),
    colour: useColour(process.stdout, env),
  });
  if (unknownKeys.length > 0)
    log.warn({ keys: unknownKeys }, 'settings.toml has keys tunnelward does not know; kept as they are');
  // Before the spawner and the thread pool's threads are made: they inherit it (src/system/priority.ts).
  const priority = preferDaemon(options.daemonNice);
  if ('refused' in priority)
    log.info({ reason: priority.refused }, 'the daemon runs at the priority it was given, the same as its tunnels');
  else log.debug({ ...priority }, 'the daemon runs above its tunnels');
  const settingsSub = settings.changes$.subscribe(({ changed, settings: s }) => {
    if (changed.includes('Debug')) log.level = s.Debug ? 'debug' : 'info';
    if (changed.some((key) => SECRET_KEYS.has(key))) secrets.set('settings', secretSettingValues(s));
  });
  cleanups.push(() => settingsSub.unsubscribe());

  // Each running tunnel costs one descriptor (its output pipe); Node itself raises the soft limit on open files
  // to the hard one at start-up, so a thousand tunnels stay clear of EMFILE wherever the hard limit allows.
  // Temp files of writes a crash cut off (the database, the settings): the lock says no other writer is here.
  for (const name of await removeStaleTempFiles(dataDir))
    log.info({ file: join(dataDir, name) }, 'removed the temp file of an interrupted write');
  const db = await Database.open(join(dataDir, 'tunnelward.db'), { journalBytes: options.databaseJournalBytes });
  cleanups.push(() => db.close());
  if (db.recovered.records > 0 || db.recovered.ignoredBytes > 0)
    log.info(
      { ...db.recovered },
      db.recovered.ignoredBytes > 0
        ? 'database journal applied; what follows its last whole record (a write cut off) is dropped'
        : 'database journal applied',
    );
  const hasher = new PasswordHasher(
    DEFAULTS.passwordHashConcurrency,
    DEFAULTS.passwordHashQueue,
    options.hashMemoryKiB,
  );
  const accounts = new AccountService(db, hasher, options.tokenTtlMs);
  const apiKeys = new ApiKeyService(db, accounts, () => settings.value('RateLimit.PerToken'));
  cleanups.push(() => apiKeys.close());
  const initialPassword = await createFirstSuperuser(accounts, options, dataDir, log);
  cleanups.push(() => initialPassword.close());

  const initSystem = detectInitSystem(settings.value('InitSystem'));
  const { runner, boot, source, followers } = runnersFor(initSystem, () => settings.get(), log, dataDir);
  for (const follower of followers) {
    // Following starts before the units are looked at, so nothing that happens in between is missed.
    await follower.start();
    cleanups.push(() => follower.close());
  }
  if (runner instanceof ProcessRunner) {
    const outputSub = settings.changes$.subscribe(({ changed }) => {
      if (changed.some((k) => k.startsWith('Log.'))) runner.outputChanged();
    });
    cleanups.push(() => outputSub.unsubscribe());
  }
  const logs = new InstanceLogs(
    dataDir,
    () => ({ maxBytes: settings.value('Log.MaxBytes'), files: settings.value('Log.Files') }),
    log.child({ component: 'instance-logs' }),
    source,
    secrets.redact,
    await countStart(db, 'log_run'),
  );
  const supervisor = new InstanceSupervisor(
    db,
    settings,
    runner,
    boot,
    logs,
    log,
    { orphaned: join(dataDir, 'orphaned'), revisions: join(dataDir, 'revisions'), scratch: join(dataDir, 'scratch') },
    secrets,
  );
  const counter = new PersistentCounter(db, 'event_seq');
  const events = new EventHub(counter, DEFAULTS.eventHistory, secrets.redactValue);
  const notifier = new WebhookNotifier(() => settings.get(), log);
  // Webhooks get what an instance's life means (started, crashed, ...); the event stream gets every event.
  const digest = new AlertDigest(
    () => settings.get(),
    (id) => supervisor.serverOf(id),
    (e) => notifier.publish(e),
  );
  const notifications = events.events$.subscribe((e) => isWebhookEvent(e) && digest.offer(e));
  // End-to-end probes of the tunnels that have them on: their verdicts go into the health answer.
  const probes = new Prober(() => settings.get(), supervisor, log);
  supervisor.probes = probes;
  supervisor.healthPolicy.watchProbes(probes);
  notifications.add(publishEvents(events, supervisor, logs, probes));
  await supervisor.start(hostBootId(env));
  cleanups.push(() => supervisor.close());
  cleanups.push(() => probes.close());
  cleanups.push(() => notifications.unsubscribe());

  const window = options.rateWindowMs;
  const limits = {
    login: new RateLimiter(() => settings.value('RateLimit.Login'), window),
    register: new RateLimiter(() => settings.value('RateLimit.Register'), window),
    perToken: new RateLimiter(() => settings.value('RateLimit.PerToken'), window),
  };
  // TLS from the start or not at all: a certificate that cannot be read stops the start with the reason.
  const tlsAt = () => tlsPaths(flags, env, settings.get());
  const tlsAtStart = tlsAt();
  const served = tlsAtStart ? await readTlsMaterial(tlsAtStart) : undefined;
  let tlsFault: string | undefined;
  const exposure = new Exposure(
    options.host,
    () => settings.get(),
    () => served !== undefined,
    log.child({ component: 'exposure' }),
  );

  const audit = new AuditTrail(
    db,
    log.child({ component: 'audit' }),
    () => ({
      retentionDays: settings.value('Audit.RetentionDays'),
      maxEntries: settings.value('Audit.MaxEntries'),
    }),
    secrets.redactValue,
  );
  await audit.prune();
  // A tighter retention applies at once, not at the next sweep.
  const auditSub = settings.changes$.subscribe(({ changed }) => {
    if (changed.some((key) => key.startsWith('Audit.')))
      audit.prune().catch((err) => log.error({ err }, 'pruning the audit trail failed'));
  });
  cleanups.push(() => auditSub.unsubscribe());

  let restartRequested = false;
  const app = createApp({
    accounts,
    apiKeys,
    supervisor,
    settings,
    limits,
    info: loadSoftwareInfo(),
    dataDir,
    timestampWindowMs: DEFAULTS.timestampWindowMs,
    jsonLimit: DEFAULTS.jsonLimit,
    jsonMaxDepth: DEFAULTS.jsonMaxDepth,
    log,
    faults: {
      database: () => db.failing?.reason,
      instanceLogs: () =>
        logs
          .failing()
          .map(({ instanceID, fault }) => `instance ${instanceID}: ${fault.reason}, ${fault.lostBytes} bytes dropped`),
      tls: () => tlsFault,
      openDoors: () => exposure.openDoors(),
    },
    exposure,
    trustedProxies: new TrustedProxies(() => settings.value('TrustedProxies')),
    audit,
    redactor: secrets,
    webhookStats: () => notifier.stats,
    logTotals: () => logs.totals,
    restart: () => {
      if (restartRequested) return;
      restartRequested = true;
      void restartInPlace(daemon);
    },
  });

  // node:https (and OpenSSL's contexts) only for a daemon that serves TLS.
  const server: Server | HttpsServer = served
    ? (await import('node:https')).createServer(served, app.callback())
    : createServer(app.callback());
  const reloadTls = async (reason: string) => {
    const paths = tlsAt();
    if (!served || !paths) {
      if (paths || served) log.warn({ reason }, 'turning TLS on or off takes effect at the next start');
      return;
    }
    try {
      (server as HttpsServer).setSecureContext(await readTlsMaterial(paths));
      tlsFault = undefined;
      log.info({ reason, cert: paths.cert }, 'TLS certificate reloaded');
    } catch (err) {
      tlsFault = (err as Error).message;
      log.error({ reason, problem: tlsFault }, 'TLS certificate not reloaded; the previous one is still served');
    }
  };
  const tlsSub = settings.changes$.subscribe(({ changed }) => {
    if (changed.includes('TLS.CertFile') || changed.includes('TLS.KeyFile')) void reloadTls('settings changed');
  });
  cleanups.push(() => tlsSub.unsubscribe());
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerClientError);
  const streams = new LogStreams(server, {
    accounts,
    apiKeys,
    supervisor,
    systemLog,
    events,
    log,
    exposure,
    perToken: limits.perToken,
  });
  await listen(server, options.port, options.host);
  cleanups.push(() => closeServer(server));
  // Cleanups run in reverse: streams close before the server waits for its connections.
  cleanups.push(() => streams.close());
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `${served ? 'https' : 'http'}://${host}:${port}`;

  const sweep = setInterval(() => {
    accounts.sweepExpiredSessions().catch((err) => log.error({ err }, 'sweeping expired sessions failed'));
    audit.prune().catch((err) => log.error({ err }, 'pruning the audit trail failed'));
    for (const limiter of Object.values(limits)) limiter.sweep();
  }, DEFAULTS.sweepIntervalMs);
  sweep.unref();
  cleanups.push(() => clearInterval(sweep));

  const pidFile = join(dataDir, 'tunnelward.pid');
  await writeFileAtomic(pidFile, `${process.pid}\n`, { mode: 0o644 });
  cleanups.push(() => rm(pidFile, { force: true }));

  let stopping: Promise<void> | undefined;
  const daemon: RunningDaemon = {
    url,
    options,
    log,
    stop(reason) {
      stopping ??= (async () => {
        log.info({ reason }, 'stopping');
        for (const fn of cleanups.reverse()) {
          await Promise.resolve(fn()).catch((err) => log.error({ err }, 'error while stopping'));
        }
        log.info('stopped');
        flushLogger(log);
      })();
      return stopping;
    },
    reload: reloadTls,
  };
  cleanups.push(async () => {
    events.publish(serviceEvent('service.stopping'));
    await digest.flush();
    await notifier.drain(DEFAULTS.shutdownGraceMs);
  });
  events.publish(serviceEvent('service.started'));
  log.info({ url, dataDir }, 'listening');
  for (const door of exposure.openDoors()) log.warn({ listen: options.host }, `open door: ${door}`);
  process.stdout.write(`tunnelward listening on ${url}\n`);
  // Said now, and again when the setting changes, rather than at the first start of a tunnel; never holds the start up.
  void reportTunnelClient(settings.value('TunnelPath'), log);
  const tunnelPathSub = settings.changes$.subscribe(({ changed, settings: s }) => {
    if (changed.includes('TunnelPath')) void reportTunnelClient(s.TunnelPath, log);
  });
  cleanups.push(() => tunnelPathSub.unsubscribe());
  return daemon;
}

/** One line on the tunnel client of the TunnelPath setting: its version, or a warning saying why it cannot be run. */
async function reportTunnelClient(tunnelPath: string, log: Logger): Promise<void> {
  try {
    const { path, version } = await checkTunnelClient(tunnelPath);
    log.info({ tunnelPath: path, version }, 'tunnel client found');
  } catch (err) {
    log.warn(
      { tunnelPath, problem: (err as Error).message },
      'the tunnel client (TunnelPath) cannot be run: no instance will start until it can',
    );
  }
}

/** Creates the first superuser when there are no users; keeps the generated password's file only while it applies. */
async function createFirstSuperuser(
  accounts: AccountService,
  options: DaemonOptions,
  dataDir: string,
  log: Logger,
): Promise<InitialPasswordFile> {
  let created;
  try {
    created = await accounts.ensureFirstSuperuser(options.adminUser, options.adminPassword);
  } catch (err) {
    throw new Error(
      `cannot create the first superuser from TUNNELWARD_ADMIN_USER/PASSWORD: ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  if (!created?.generatedPassword) {
    if (created) log.info({ username: created.user.username }, 'created the first superuser');
    return InitialPasswordFile.resume(accounts, dataDir, log);
  }
  log.info({ username: created.user.username }, 'created the first superuser');
  const { user, generatedPassword } = created;
  const file = await InitialPasswordFile.write(accounts, dataDir, user.id, generatedPassword, log);
  // Printed once, on standard output only: it never enters the log stream.
  process.stdout.write(
    `first superuser: ${user.username}, password: ${generatedPassword} ` +
      `(also in ${join(dataDir, 'initial-admin-password')} until it is changed)\n`,
  );
  return file;
}

const serviceEvent = (event: 'service.started' | 'service.stopping') => ({
  event,
  instanceID: null,
  name: 'tunnelward',
  from: null,
  to: null,
  exitCode: null,
  signal: null,
});

/**
 * The runner, the boot service and the log source that go with an init system, and what follows the init system
 * (systemd's signals and its journal).
 */
function runnersFor(initSystem: InitSystem, settings: () => Readonly<Settings>, log: Logger, dataDir: string) {
  // Environment files sit with the database that holds the same values: in the data dir, never in the unit dirs.
  const boot = bootServiceFor(initSystem, settings, join(dataDir, 'boot-env'));
  const runnerLog = log.child({ component: 'runner' });
  if (boot instanceof SystemdBootService) {
    const journal = new JournalFollower(() => settings()['Systemd.Journalctl'], log);
    const bus = new SystemdBus(log);
    return {
      runner: new SystemdRunner(boot, settings, bus, runnerLog),
      boot,
      source: (id: number, onText: (text: string) => void) => journal.output(id, onText),
      followers: [bus, journal],
    };
  }
  if (boot instanceof InitdBootService) {
    return {
      runner: new InitdRunner(boot, runnerLog),
      boot,
      source: fileSource((id) => boot.logFile(id), log.child({ component: 'log-source' })),
      followers: [],
    };
  }
  // While the daemon is away, the spawner keeps the tunnels' output flowing into their log files.
  const output = () => ({
    dir: logsDirOf(dataDir),
    maxBytes: settings()['Log.MaxBytes'],
    files: settings()['Log.Files'],
  });
  return { runner: new ProcessRunner(runnerLog, output), boot, source: undefined, followers: [] };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why =
        err.code === 'EADDRINUSE' ? 'the address is in use' : err.code === 'EACCES' ? 'permission denied' : err.message;
      reject(new Error(`cannot listen on ${host}:${port}: ${why}`));
    });
    // A deep accept queue: a burst of clients (a thousand starts at once) must not overflow it, or their
    // connections wait for the kernel's SYN retry, seconds later.
    server.listen({ port, host, backlog: 4096 }, () => resolve());
  });
}

/** Stops accepting, lets open requests finish for a grace period, then closes what is left. */
function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    const force = setTimeout(() => server.closeAllConnections(), DEFAULTS.shutdownGraceMs);
    force.unref();
    server.close(() => {
      clearTimeout(force);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/** Stops this daemon, then hands over to a new one with the same arguments and environment. */
async function restartInPlace(daemon: RunningDaemon): Promise<void> {
  await daemon.stop('restart requested');
  handOver();
}
