import { join, resolve } from 'node:path';
import { ApiClient } from './api.js';
import { flag, has } from './args.js';
import { print, type Command, type Context } from './command.js';
import { CliError, EXIT, usageError, type ExitCode } from './errors.js';

// Getting frpc: the pinned frp release built with Go into a directory the daemon runs programs from, and the
// daemon's TunnelPath pointed at it.

const USAGE = 'frp install [--version V] [--dir DIR] [--no-set] | frp status';

/** How to point a daemon at `frpc` by hand, later. */
const setLater = (frpc: string) =>
  `tunnelward settings set TunnelPath=${frpc} (as a superuser, once the daemon runs), or ` +
  `TunnelPath = "${frpc}" in the data dir's settings.toml before it starts`;

/** Points the daemon's TunnelPath at `frpc`; what happened, in a line (a daemon not running is not a failure). */
async function setTunnelPath(ctx: Context, frpc: string): Promise<{ set: boolean; message: string }> {
  try {
    await new ApiClient(ctx.url).get('/system/getStatus');
  } catch (err) {
    if (!(err instanceof CliError) || err.exitCode !== EXIT.unreachable) throw err;
    return {
      set: false,
      message: `no daemon answers at ${ctx.url}: TunnelPath not set; set it with ${setLater(frpc)}`,
    };
  }
  try {
    const client = await ctx.client();
    await client.postAsTyped('/settings/set', { TunnelPath: frpc }, { strict: 'true' });
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    // A daemon running as root takes only what root owns: an install by another user is refused there.
    const hint = /is owned by uid/.test(err.message) ? ' (a daemon running as root: run frp install as root)' : '';
    throw new CliError(
      err.exitCode,
      `frpc is installed, but the daemon at ${ctx.url} did not take it as TunnelPath: ${err.message}${hint}; ` +
        `set it with ${setLater(frpc)}`,
      err.status,
    );
  }
  return {
    set: true,
    message:
      `TunnelPath is now ${frpc} at ${ctx.url}: tunnels run it from their next start ` +
      `(running ones keep theirs until then: tunnelward restart --all)`,
  };
}

async function install(ctx: Context): Promise<ExitCode> {
  if (ctx.args.positional.length > 1) throw usageError('frp install takes no arguments but its flags');
  const { defaultFrpDir, frpVersionTag, installFrp, pinnedFrpVersion } = await import('../frpc/frp-install.js');
  const { ABSOLUTE_PATH_PATTERN } = await import('../settings/values.js');
  const asked = flag(ctx.args, 'version');
  const version = asked === undefined ? pinnedFrpVersion() : frpVersionTag(asked);
  if (!version) throw usageError(`--version ${asked} is not a release of frp: give one such as v0.71.0`);
  const dir = resolve(flag(ctx.args, 'dir') ?? defaultFrpDir(version));
  if (!new RegExp(ABSOLUTE_PATH_PATTERN).test(join(dir, 'frpc')))
    throw usageError(`--dir ${dir}: TunnelPath must be an absolute path of letters, digits and _ . / + @ : , = -`);
  const say = (line: string) => {
    if (!ctx.json) ctx.io.out(`${line}\n`);
  };
  let done;
  try {
    done = await installFrp(version, dir, say);
  } catch (err) {
    throw new CliError(EXIT.failed, (err as Error).message);
  }
  say(
    done.built
      ? `installed frpc and frps ${version} in ${dir} (built in ${done.seconds.toFixed(1)} s)`
      : `${dir} already holds frpc and frps ${version}: nothing built`,
  );
  const tunnelPath = has(ctx.args, 'no-set')
    ? { set: false, message: `TunnelPath not changed (--no-set): set it with ${setLater(done.frpc)}` }
    : await setTunnelPath(ctx, done.frpc);
  if (ctx.json) print(ctx, { ...done, tunnelPath });
  else say(tunnelPath.message);
  return EXIT.ok;
}

/** What the daemon at `ctx.url` runs as frpc: its TunnelPath, and the version it answers or why it cannot be used. */
async function daemonFrpc(ctx: Context) {
  const client = await ctx.client();
  const [{ data: setting }, { data: check }] = await Promise.all([
    client.get('/settings/get', { key: 'TunnelPath' }),
    client.get('/system/selfCheck'),
  ]);
  const found = (name: string) => check.checks.find((c) => c.name === name);
  const version = found('tunnelVersion');
  return {
    url: ctx.url,
    tunnelPath: 'key' in setting ? String(setting.value) : '',
    version: version?.ok ? version.message : null,
    message: (version?.ok ? found('tunnelPath') : version)?.message ?? '',
  };
}

async function status(ctx: Context): Promise<ExitCode> {
  if (ctx.args.positional.length > 1) throw usageError('frp status takes no arguments');
  const { defaultFrpDir, pinnedFrpVersion } = await import('../frpc/frp-install.js');
  const { tunnelClientVersion } = await import('../system/tunnel-client.js');
  const pinned = pinnedFrpVersion();
  const local = join(defaultFrpDir(pinned), 'frpc');
  const localVersion = await tunnelClientVersion(local).catch(() => undefined);
  // What is installed here is said even when the daemon cannot be asked.
  let daemon: Awaited<ReturnType<typeof daemonFrpc>> | undefined;
  let unasked: CliError | undefined;
  try {
    daemon = await daemonFrpc(ctx);
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    unasked = err;
  }
  const code = unasked?.exitCode ?? (daemon?.version ? EXIT.ok : EXIT.failed);
  if (ctx.json) {
    const installed = localVersion === undefined ? null : { frpc: local, version: localVersion };
    print(ctx, { pinned, installed, daemon: daemon ?? { url: ctx.url, error: unasked!.message } });
    return code;
  }
  const other = daemon?.version && daemon.version.replace(/^v/, '') !== pinned.slice(1);
  const daemonLine = !daemon
    ? `cannot ask the daemon at ${ctx.url}: ${unasked!.message}`
    : `TunnelPath ${daemon.tunnelPath} at ${ctx.url}: ` +
      (daemon.version ? `frpc ${daemon.version}` : `cannot be used: ${daemon.message}`) +
      (other ? ` (not the pinned ${pinned}: tunnelward frp install)` : '');
  ctx.io.out(
    `pinned:    frp ${pinned} (what this tunnelward is tested with)\n` +
      `installed: ${localVersion === undefined ? `not in ${local} (tunnelward frp install puts it there)` : `${local} ${localVersion}`}\n` +
      `daemon:    ${daemonLine}\n`,
  );
  return code;
}

/** `tunnelward frp install|status`. */
export const frp: Command = {
  usage: USAGE,
  summary:
    'install builds frpc and frps (the pinned frp release unless --version) with Go into a directory the daemon ' +
    'runs programs from (root: /usr/local/lib/tunnelward/frp-VERSION; others: ~/.local/lib/tunnelward/frp-VERSION; ' +
    'or --dir) and sets TunnelPath to that frpc (not with --no-set); status shows the pinned release, the one ' +
    'installed here and the frpc the daemon runs',
  flags: [{ name: 'version', value: true }, { name: 'dir', value: true }, { name: 'no-set' }],
  async run(ctx) {
    const [action] = ctx.args.positional;
    if (action === 'install') return install(ctx);
    if (action === 'status') {
      if (['version', 'dir', 'no-set'].some((name) => has(ctx.args, name)))
        throw usageError('frp status takes no flags but --url and --json');
      return status(ctx);
    }
    throw usageError(action === undefined ? 'frp needs install or status' : `frp has no command ${action}`);
  },
};
