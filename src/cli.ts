#!/usr/bin/env node
import type { ServeFlags } from './daemon/options.js';
import { loadSoftwareInfo } from './system/software-info.js';

// Only what the command needs is loaded: a client command must not pay for the daemon's modules.
const clientCommands = () => import('./client/commands.js');

const DAEMON_USAGE = `usage: tunnelward [command] [flags]

daemon commands:
  serve                          run the daemon (the default)
  service install [--data-dir DIR] [--host HOST] [--port PORT] [--user USER] [--no-start] [--print]
                                 tunnelward's own systemd unit: runs this tunnelward with these flags, enabled,
                                 started (unless --no-start) and answering; --print shows the unit, changes nothing
  service uninstall [--data-dir DIR]
                                 stops and disables the service and removes its unit
  version                        print the version
  help                           print this text

flags of serve (each overrides its environment variable, which overrides settings.toml):
  --data-dir DIR   data directory, created if missing (TUNNELWARD_DATA_DIR, default ./data)
  --host HOST      address to listen on (TUNNELWARD_HOST, default 127.0.0.1)
  --port PORT      port to listen on, 0 for a free one (TUNNELWARD_PORT, default 7600)
  --tls-cert FILE  serve HTTPS and WSS with this certificate (TUNNELWARD_TLS_CERT, TLS.CertFile); SIGHUP re-reads it
  --tls-key FILE   and this key (TUNNELWARD_TLS_KEY, TLS.KeyFile)
  --log-format pretty|json   the log on standard output: lines for a person or JSON lines (TUNNELWARD_LOG_FORMAT;
                   default pretty on a terminal, JSON anywhere else: a journal, a pipe)
`;

const CLIENT_USAGE_HEAD = `
client commands (talk to a running daemon; --url URL or --context NAME picks it, then TUNNELWARD_URL or
TUNNELWARD_CONTEXT, else the context chosen by context use or the last one logged in to, whichever came last, else
http://127.0.0.1:7600; --json prints JSON; exit codes: 0 ok, 1 failed, 2 usage, 3 not reachable,
4 unauthorised):
`;

async function usage(): Promise<string> {
  const { clientUsage } = await clientCommands();
  return `${DAEMON_USAGE}${CLIENT_USAGE_HEAD}${clientUsage()}\n`;
}

class UsageError extends Error {}

const FLAGS: Record<string, keyof ServeFlags> = {
  '--data-dir': 'dataDir',
  '--host': 'host',
  '--port': 'port',
  '--tls-cert': 'tlsCert',
  '--tls-key': 'tlsKey',
  '--log-format': 'logFormat',
};

function parseServeFlags(args: string[]): ServeFlags {
  const flags: ServeFlags = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    const key = FLAGS[name];
    if (!key) throw new UsageError(`unknown flag ${name}`);
    const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
    if (value === undefined || value === '') throw new UsageError(`${name} needs a value`);
    flags[key] = value;
  }
  return flags;
}

async function serve(args: string[]): Promise<void> {
  const flags = parseServeFlags(args);
  const { startDaemon } = await import('./daemon/daemon.js');
  const daemon = await startDaemon(flags);
  let stopping = false;
  const stop = (signal: string) => {
    // A Ctrl-C may arrive twice (from the terminal and from a keeper passing it on): stop once.
    if (stopping) return;
    stopping = true;
    daemon.stop(signal).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGHUP', () => void daemon.reload('SIGHUP'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('uncaughtException', (err) => {
    daemon.log.fatal({ err }, 'uncaught exception, stopping');
    void daemon.stop('uncaught exception').finally(() => process.exit(1));
  });
  process.on('unhandledRejection', (err) => {
    daemon.log.error({ err }, 'unhandled promise rejection');
  });
}

async function service(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action !== 'install' && action !== 'uninstall') throw new UsageError('service needs install or uninstall');
  let print = false;
  let start = true;
  const values: Record<string, string | undefined> = {};
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (arg === '--print') print = true;
    else if (arg === '--no-start') start = false;
    else if (['--data-dir', '--host', '--port', '--user'].includes(name)) {
      const value = eq > 0 ? arg.slice(eq + 1) : rest[++i];
      if (!value) throw new UsageError(`${name} needs a value`);
      values[name.slice(2)] = value;
    } else throw new UsageError(`unknown flag ${arg}`);
  }
  const { serviceCommand } = await import('./daemon/own-service.js');
  await serviceCommand(
    { action, print, start, dataDir: values['data-dir'], host: values.host, port: values.port, user: values.user },
    { out: (text) => process.stdout.write(text), warn: (text) => process.stderr.write(text) },
  );
}

async function main(argv: string[]): Promise<void> {
  const [first, ...rest] = argv;
  const command = first === undefined || first.startsWith('-') ? 'serve' : first;
  const args = command === first ? rest : argv;
  if (command === 'serve' || command === 'service') {
    const { helpAsked } = await import('./client/args.js');
    if (helpAsked(args)) {
      process.stdout.write(await usage());
      return;
    }
  }
  switch (command) {
    case 'serve':
      return serve(args);
    case 'service':
      return service(args);
    case 'version':
      process.stdout.write(`tunnelward ${loadSoftwareInfo().Version}\n`);
      return;
    case 'help':
      process.stdout.write(await usage());
      return;
  }
  const { CLIENT_COMMANDS, runClientCommand } = await clientCommands();
  if (!Object.hasOwn(CLIENT_COMMANDS, command)) {
    const { withSuggestions } = await import('./util/closest.js');
    const known = [...Object.keys(CLIENT_COMMANDS), 'serve', 'service', 'version', 'help'];
    throw new UsageError(`unknown command ${withSuggestions([command], known)}`);
  }
  const { useColour } = await import('./client/render.js');
  const code = await runClientCommand(command, args, {
    out: (text) => void process.stdout.write(text),
    err: (text) => void process.stderr.write(text),
    env: process.env,
    colour: useColour(),
    terminal: Boolean(process.stdin.isTTY && process.stdout.isTTY),
  });
  // Let the output drain; open handles (a closed stream's socket) must not keep the process.
  process.exitCode = code;
}

main(process.argv.slice(2)).catch(async (err: Error) => {
  // The message can quote an argument or a server's reply: shown as a terminal shows it without acting on it.
  const { forTerminal } = await import('./client/render.js');
  if (err instanceof UsageError) {
    process.stderr.write(
      forTerminal(`tunnelward: ${err.message} (tunnelward help lists the commands and their flags)\n`),
    );
    process.exit(2);
  }
  process.stderr.write(forTerminal(`tunnelward: ${err.message}\n`));
  process.exit(1);
});
