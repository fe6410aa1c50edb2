import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { writeFileAtomic } from '../fs/atomic.js';
import { AUTH_METHODS } from '../config/frpc-keys.js';
import { ApiClient, type Reply } from './api.js';
import type { components } from '../generated/api-types.js';
import { followResuming, haltOnSignal } from './streams.js';
import { flag, has, helpAsked, keyValues, parseArgs } from './args.js';
import { outcomeLine, print, type Command, type Context, type Io } from './command.js';
import { configDir, Credentials, type ChosenServer } from './credentials.js';
import { DRY_RUN_FLAG, dryRun, EDIT_COMMANDS } from './edit-commands.js';
import { REVISION_COMMANDS } from './revision-commands.js';
import { ACCOUNT_COMMANDS } from './account-commands.js';
import { CliError, EXIT, usageError, type ExitCode } from './errors.js';
import {
  ID_FLAG,
  LABEL_FLAG,
  listInstances,
  onlyInstance,
  resolveAll,
  selected,
  selects,
  type Resolved,
  type Target,
} from './instance-refs.js';
import { label, newLabels } from './label-command.js';
import { logs } from './logs-command.js';
import { readIncludes } from './import-includes.js';
import { doctor } from './doctor.js';
import { frp } from './frp-command.js';
import { keys, loginWithKey } from './key-commands.js';
import { ask } from './prompt.js';
import { proxyTable, visitorTable } from './proxy-tables.js';
import { detailLines, forTerminal, paint, table } from './render.js';
import { expire } from './expire-command.js';
import { instanceTable } from './instance-table.js';
import { context } from './context-commands.js';
import { fleet } from './fleet-command.js';
import { wait } from './wait-command.js';
import { APPLY_COMMANDS, exportAll } from './apply-commands.js';
import { SELECTION_USAGE } from './instance-refs.js';

export type { Io } from './command.js';

/** A message of several lines (a tunnel's last log lines) under its outcome line, indented. */
const indented = (text: string) => text.replaceAll('\n', '\n    ');

const login: Command = {
  usage: 'login [--url URL] [--user NAME] | login --key',
  summary:
    'log in and keep the token for this server (password from TUNNELWARD_PASSWORD or asked); with --key, keep an API key instead (from TUNNELWARD_API_KEY, standard input or asked): no hourly login again',
  flags: [{ name: 'user', short: 'u', value: true }, { name: 'key' }],
  async run(ctx) {
    if (has(ctx.args, 'key')) return loginWithKey(ctx);
    const username = flag(ctx.args, 'user') || ctx.io.env.TUNNELWARD_USER || (await ask('username: '));
    const passwd = ctx.io.env.TUNNELWARD_PASSWORD ?? (await ask(`password for ${username}: `, true));
    const client = new ApiClient(ctx.url);
    const { data } = await client.post('/login', {
      username,
      passwd,
    });
    await ctx.credentials.save(ctx.url, {
      token: data.token,
      username: data.username,
      type: data.type,
      at: Date.now(),
    });
    if (ctx.json) print(ctx, { url: ctx.url, username: data.username, type: data.type });
    else ctx.io.out(`logged in to ${ctx.url} as ${data.username} (${data.type})\n`);
  },
};

const logout: Command = {
  usage: 'logout',
  summary: 'end the session and forget its token',
  async run(ctx) {
    const stored = await ctx.credentials.login(ctx.url);
    if (!stored) throw new CliError(EXIT.failed, `not logged in to ${ctx.url}`);
    let note = '';
    try {
      // A key has no session to end: it is only forgotten here, and works until it is revoked.
      if (stored.keyName !== undefined)
        note = ` (API key ${stored.keyName} still valid: tunnelward keys rm revokes it)`;
      else await new ApiClient(ctx.url, stored.token).get('/logout');
    } catch (err) {
      // The token is forgotten all the same: an expired one is already useless, an unreachable server ends it later.
      if (!(err instanceof CliError) || err.exitCode === EXIT.failed) throw err;
      note = ` (${err.message})`;
    }
    await ctx.credentials.forget(ctx.url);
    if (ctx.json) print(ctx, { url: ctx.url, loggedOut: true });
    else ctx.io.out(`logged out of ${ctx.url}${note}\n`);
  },
};

const whoami: Command = {
  usage: 'whoami',
  summary: 'who the stored token belongs to, and until when it is valid',
  async run(ctx) {
    const client = await ctx.client();
    const { data } = await client.get('/whoami');
    if (ctx.json) print(ctx, { url: ctx.url, ...data });
    else if (data.keyName === undefined) {
      ctx.io.out(`${data.username} (${data.type}) at ${ctx.url}, session valid until ${data.expireAt}\n`);
    } else {
      const until = data.expireAt === null ? 'without expiry' : `valid until ${data.expireAt}`;
      ctx.io.out(`${data.username} (${data.type}) at ${ctx.url}, API key ${data.keyName} ${until}\n`);
    }
  },
};

const ls: Command = {
  usage: `ls [${SELECTION_USAGE}]`,
  summary:
    "every instance, or those selected (a quoted pattern such as 'web-*', labels; several --label must all match): state, health (up, degraded, down, stopped, failed), boot, pid, uptime, CPU, memory, restarts, proxies up/total, labels, and why one is not up",
  flags: [ID_FLAG, LABEL_FLAG],
  async run(ctx) {
    const list = await listInstances(await ctx.client());
    let shown = list;
    let unknown: Resolved['unknown'] = [];
    if (selects(ctx.args)) {
      const chosen = selected(ctx.args, list);
      const ids = new Set(chosen.found.map((t) => t.id));
      shown = list.filter((i) => ids.has(i.instanceID));
      unknown = chosen.unknown;
    }
    if (ctx.json) print(ctx, shown);
    else if (shown.length === 0) ctx.io.out('no instances\n');
    else ctx.io.out(instanceTable(shown, ctx.io.colour));
    for (const u of unknown) ctx.io.err(`${u.ref}: ${u.message}\n`);
    return unknown.length > 0 ? EXIT.failed : EXIT.ok;
  },
};

const status: Command = {
  usage: 'status [<name|#id>...] [--id ID]...',
  summary: 'the list, or each named instance in detail',
  flags: [ID_FLAG],
  async run(ctx) {
    const ids = ctx.args.flags.get('id') ?? [];
    if (ctx.args.positional.length === 0 && ids.length === 0) return ls.run(ctx);
    const client = await ctx.client();
    const infos = [];
    for (const { id } of await resolveAll(client, ctx.args.positional, ids))
      infos.push((await client.get('/tunnelAct/instanceMgr/getInfo', { instanceID: id })).data);
    if (ctx.json) return print(ctx, infos);
    for (const info of infos) ctx.io.out(`${detailLines(info as Record<string, unknown>)}\n`);
  },
};

/** How one instance of a command on many went, as the server says: `ok`/`failed` and what happened to it. */
type BulkResults = components['schemas']['BulkCommandResult'];

/** The reply to a command sent with instanceIDs or all, which the server answers in the bulk form. */
function bulkReply(reply: Reply<object | undefined>): { message: string; data: BulkResults } {
  if (reply.data === undefined || !('results' in reply.data))
    throw new CliError(
      EXIT.failed,
      `the server answered a command on several instances with no results: ${reply.message}`,
    );
  return reply as { message: string; data: BulkResults };
}

/** Each instance's outcome line, then the server's summary (made of the same results); exit 1 when any failed. */
function reportBulk(
  ctx: Context,
  command: string,
  reply: { message: string; data: BulkResults },
  unknown: Resolved['unknown'],
): ExitCode {
  const { message, data } = reply;
  if (ctx.json) print(ctx, unknown.length > 0 ? { ...data, unknown } : data);
  else {
    for (const r of data.results) {
      const failure = command === 'delete' ? 'not deleted' : `could not ${command}`;
      const what = r.ok ? r.message : `${failure}: ${r.message}${r.state ? `; now ${r.state}` : ''}`;
      outcomeLine(ctx, r.ok, `${r.name ?? r.instanceID} (${r.instanceID}): ${indented(what)}`);
    }
    for (const u of unknown) outcomeLine(ctx, false, `${u.ref}: ${u.message}`);
    ctx.io.out(`${message}\n`);
  }
  return data.failed === 0 && unknown.length === 0 ? EXIT.ok : EXIT.failed;
}

function lifecycle(command: 'start' | 'stop' | 'restart'): Command {
  return {
    usage: `${command} ${SELECTION_USAGE} | --all`,
    summary: `${command} instances: those named or matched, or every one (one request for all of them)`,
    flags: [{ name: 'all' }, ID_FLAG, LABEL_FLAG],
    async run(ctx) {
      const all = has(ctx.args, 'all');
      if (all === selects(ctx.args))
        throw usageError(`${command} needs instance names, ids, patterns or labels, or --all`);
      const client = await ctx.client();
      const { found, unknown } = all ? { found: [], unknown: [] } : selected(ctx.args, await listInstances(client));
      const target = all ? { all: true as const } : { instanceIDs: found.map((t) => t.id) };
      const reply = await client.post(`/tunnelAct/instanceMgr/${command}`, target);
      return reportBulk(ctx, command, bulkReply(reply), unknown);
    },
  };
}

/** What frpc reports of an instance, in a few words: `connected, proxies 2/3 running`. */
function statusText(connected: boolean | null, proxyStatus: Record<string, number> = {}): string {
  const counts = Object.values(proxyStatus);
  const total = counts.reduce((a, b) => a + b, 0);
  const link = connected === null ? 'not known' : connected ? 'connected' : 'disconnected';
  return total > 0 ? `${link}, proxies ${proxyStatus.running ?? 0}/${total} running` : link;
}

const events: Command = {
  usage: 'events [--since SEQ]',
  summary:
    'follow instance state changes and other events as they happen (across restarts of the daemon: it reconnects and resumes after the last one shown)',
  flags: [{ name: 'since', value: true }],
  async run(ctx) {
    const client = await ctx.client();
    const since = flag(ctx.args, 'since');
    return followResuming(ctx, client, '/system/events', {
      what: 'stream',
      follow: true,
      halt: haltOnSignal(),
      start: since === undefined || !/^\d{1,15}$/.test(since) ? undefined : Number(since),
      // A malformed --since is the server's to refuse, with its message.
      query: (last): Record<string, string | number> =>
        last !== undefined ? { since: last } : since !== undefined ? { since } : {},
      // Where a stream opened without a seq stands: what it resumes from after a drop.
      position: (e, last) =>
        e.event === 'events.start' && last === undefined && typeof e.lastSeq === 'number' ? e.lastSeq : undefined,
      show: (e) => showEvent(ctx, e),
    });
  },
};

function showEvent(ctx: Context, e: Record<string, unknown>): void {
  if (e.event === 'events.start') {
    if (e.lost) ctx.io.err('some events since then are no longer kept: read the list again (tunnelward ls)\n');
    if (e.restarted) ctx.io.err('the daemon restarted; events while it was down are not known\n');
  }
  if (ctx.json) return ctx.io.out(`${JSON.stringify(e)}\n`);
  if (e.event === 'events.start') return;
  const who = e.name !== undefined ? `${e.name} (${e.instanceID})` : '';
  const why = typeof e.err === 'string' && e.err !== '' ? `: ${e.err}` : '';
  const what =
    e.event === 'instance.state'
      ? `${e.from} -> ${e.to}`
      : e.event === 'instance.status'
        ? statusText(e.connected as boolean | null, e.proxyStatus as Record<string, number>)
        : e.event === 'proxy.up' || e.event === 'proxy.down'
          ? `proxy ${String(e.proxy)}: ${e.from ?? 'new'} -> ${e.to}${why}`
          : e.event === 'proxy.unreachable' || e.event === 'proxy.reachable'
            ? `proxy ${String(e.proxy)}: ${e.to}${typeof e.err === 'string' ? ` (${e.err})` : ''}`
            : e.event === 'instance.disconnected'
              ? `not connected${why}`
              : typeof e.message === 'string'
                ? e.message
                : '';
  const at = typeof e.at === 'string' ? e.at : new Date().toISOString();
  ctx.io.out(`${paint(at, 'grey', ctx.io.colour)} #${e.seq} ${String(e.event)} ${who} ${what}`.trimEnd() + '\n');
}

const proxies: Command = {
  usage: 'proxies <name|#id>',
  summary:
    "an instance's proxies with what frpc says of each (its error text, where each is reached), and its visitors",
  flags: [ID_FLAG],
  async run(ctx) {
    const client = await ctx.client();
    const { id } = await onlyInstance(client, ctx.args);
    const [{ data }, info] = await Promise.all([
      client.get('/tunnelAct/proxyMgr/list', { instanceID: id }),
      client.get('/tunnelAct/instanceMgr/getInfo', { instanceID: id }),
    ]);
    if (ctx.json) return print(ctx, data.proxies);
    const visitors = data.visitors ?? [];
    // Only an admin is shown the server's address; others see where on it (`:6000`).
    const serverAddr = info.data.serverAddr ?? '';
    ctx.io.out(data.proxies.length === 0 ? 'no proxies\n' : proxyTable(data.proxies, serverAddr, ctx.io.colour));
    if (visitors.length > 0) ctx.io.out(`\n${visitorTable(visitors, ctx.io.colour)}`);
  },
};

const create: Command = {
  usage:
    'create <name> --server HOST:PORT [--auth-method token|oidc] [--set KEY=VALUE]... [--label KEY=VALUE]... [--boot] [--run-user USER]',
  summary: 'a new instance (config keys through --set, e.g. --set auth.token=...)',
  flags: [
    { name: 'server', value: true },
    { name: 'auth-method', value: true },
    { name: 'set', value: true, repeat: true },
    LABEL_FLAG,
    { name: 'boot' },
    { name: 'run-user', value: true },
  ],
  async run(ctx) {
    const [name, ...extra] = ctx.args.positional;
    const labels = newLabels(ctx.args.flags.get('label') ?? []);
    if (!name || extra.length > 0) throw usageError('create takes one name');
    const server = flag(ctx.args, 'server');
    const match = server?.match(/^(.+):(\d{1,5})$/);
    if (!match) throw usageError('--server HOST:PORT is required');
    const authMethod = AUTH_METHODS.find((method) => method === (flag(ctx.args, 'auth-method') ?? 'token'));
    if (!authMethod) throw usageError(`--auth-method must be ${AUTH_METHODS.join(' or ')}`);
    const client = await ctx.client();
    const { message, data } = await client.post('/tunnelAct/instanceMgr/create', {
      instanceInfo: {
        name,
        serverAddr: match[1]!.replace(/^\[(.*)\]$/, '$1'),
        serverPort: match[2]!,
        auth_method: authMethod,
      },
      bootAtStart: has(ctx.args, 'boot'),
      ...(flag(ctx.args, 'run-user') ? { runUser: flag(ctx.args, 'run-user') } : {}),
      additionalProperties: keyValues(ctx.args.flags.get('set') ?? [], '--set'),
      ...(labels ? { labels } : {}),
    });
    if (ctx.json) print(ctx, data);
    else ctx.io.out(`${message} (id ${data.instanceID})\n`);
  },
};

const rm: Command = {
  usage: `rm ${SELECTION_USAGE} [--yes] [--purge]`,
  summary:
    'delete instances, in one request: stop them, remove their files and boot services (running ones are asked about unless --yes; the log is kept unless --purge)',
  flags: [{ name: 'yes', short: 'y' }, { name: 'purge' }, ID_FLAG, LABEL_FLAG],
  async run(ctx) {
    if (!selects(ctx.args)) throw usageError('rm needs instance names, ids, patterns or labels');
    const client = await ctx.client();
    const { found, unknown } = selected(ctx.args, await listInstances(client));
    const refusal = await runningRefusal(ctx, found);
    const refused = refusal ? found.filter(isRunning) : [];
    const deleted = found.filter((t) => !refused.includes(t));
    const none = { message: 'delete: nothing to delete', data: { ok: 0, failed: 0, unchanged: 0, results: [] } };
    const reply =
      deleted.length === 0
        ? none
        : bulkReply(
            await client.post('/tunnelAct/instanceMgr/delete', {
              instanceIDs: deleted.map((t) => t.id),
              ...(has(ctx.args, 'purge') ? { purge: true } : {}),
            }),
          );
    // Those not confirmed are this command's failures, reported as the server reports its own.
    const results: BulkResults['results'] = [
      ...reply.data.results,
      ...refused.map((t) => ({
        instanceID: t.id,
        name: t.name,
        ok: false,
        state: null,
        unchanged: false,
        message: refusal!(t),
      })),
    ];
    const data = { ...reply.data, failed: reply.data.failed + refused.length, results };
    return reportBulk(ctx, 'delete', { message: reply.message, data }, unknown);
  },
};

const isRunning = (t: Target) => t.state !== 'stopped' && t.state !== 'failed';

/**
 * Why the running instances among `targets` are not deleted: not confirmed (asked once for all of them, on a
 * terminal), or no terminal to ask on and no --yes; undefined when they may be.
 */
async function runningRefusal(ctx: Context, targets: readonly Target[]): Promise<((t: Target) => string) | undefined> {
  const running = targets.filter(isRunning);
  if (running.length === 0 || has(ctx.args, 'yes')) return undefined;
  if (!process.stdin.isTTY)
    return (t) => `it is ${t.state}, and there is no terminal to confirm on (give --yes to delete running instances)`;
  const which =
    running.length === 1
      ? `instance ${running[0]!.name} (${running[0]!.id}) is ${running[0]!.state}: stop and delete it?`
      : `${running.length} instances are running (${running
          .slice(0, 10)
          .map((t) => t.name)
          .join(', ')}${running.length > 10 ? ', …' : ''}): stop and delete them?`;
  const answer = await ask(`${which} [y/N] `);
  return /^y(es)?$/i.test(answer.trim()) ? undefined : () => 'not confirmed';
}

const FORMATS: Record<string, string> = {
  '.toml': 'toml',
  '.ini': 'ini',
  '.yaml': 'yaml',
  '.yml': 'yaml',
  '.json': 'json',
};

const importCommand: Command = {
  usage:
    'import <file> [--name NAME] [--format toml|ini|yaml|json] [--label KEY=VALUE]... [--boot] [--run-user USER] [--dry-run]',
  summary:
    "an existing frpc config file as a new instance (name from the file name unless given); the proxies and visitors of the files its includes name (relative to the file's directory) come into it; --dry-run checks it, frpc verify included, and creates nothing",
  flags: [
    DRY_RUN_FLAG,
    { name: 'name', value: true },
    { name: 'format', value: true },
    LABEL_FLAG,
    { name: 'boot' },
    { name: 'run-user', value: true },
  ],
  async run(ctx) {
    const [file, ...extra] = ctx.args.positional;
    if (!file || extra.length > 0) throw usageError('import takes one file');
    const labels = newLabels(ctx.args.flags.get('label') ?? []);
    let content: string;
    try {
      content = await readFile(file, 'utf8');
    } catch (err) {
      throw new CliError(
        EXIT.failed,
        `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    const name = flag(ctx.args, 'name') ?? basename(file, extname(file));
    const format = flag(ctx.args, 'format') ?? FORMATS[extname(file).toLowerCase()];
    const includedFiles = await readIncludes(file, content, format);
    const client = await ctx.client();
    const { message, data } = await client.postAsTyped('/tunnelAct/instanceMgr/import', {
      name,
      content,
      ...(format ? { format } : {}),
      ...(includedFiles.length > 0 ? { includedFiles } : {}),
      ...(labels ? { labels } : {}),
      ...(has(ctx.args, 'boot') ? { bootAtStart: true } : {}),
      ...(flag(ctx.args, 'run-user') ? { runUser: flag(ctx.args, 'run-user') } : {}),
      ...dryRun(ctx.args),
    });
    if (ctx.json) print(ctx, data);
    else ctx.io.out(`${message}\n`);
  },
};

const exportCommand: Command = {
  usage: 'export <name|#id> [-o FILE] | export --all [-o FILE] [--format yaml|toml]',
  summary:
    "an instance's config file in frpc's TOML (secrets masked unless you are a superuser); --all: every instance as a desired-state file for apply (a secret you may not read becomes a {{ .Envs.NAME }} reference)",
  flags: [{ name: 'output', short: 'o', value: true }, ID_FLAG, { name: 'all' }, { name: 'format', value: true }],
  async run(ctx) {
    if (has(ctx.args, 'all')) {
      if (ctx.args.positional.length > 0) throw usageError('export --all takes no instance');
      return exportAll(ctx);
    }
    const client = await ctx.client();
    const { id } = await onlyInstance(client, ctx.args);
    const { data } = await client.get('/tunnelAct/instanceMgr/export', {
      instanceID: id,
    });
    const output = flag(ctx.args, 'output');
    if (ctx.json) print(ctx, data);
    else if (output) {
      await writeFileAtomic(output, data.content, { mode: 0o600 });
      ctx.io.err(`written to ${output}${data.masked ? ' (secrets masked: only a superuser exports them)' : ''}\n`);
    } else ctx.io.out(data.content);
  },
};

const users: Command = {
  usage: 'users',
  summary: 'every user (superuser)',
  async run(ctx) {
    const { data } = await (await ctx.client()).get('/userMgr/list');
    if (ctx.json) return print(ctx, data);
    const rows = data.map((u) => [String(u.UserID), String(u.Username), String(u.Type), String(u.CreatedAt)]);
    ctx.io.out(table(['id', 'username', 'type', 'created'], rows, () => undefined, ctx.io.colour));
  },
};

/** A value for a setting, typed like its current value (the server checks it). */
function settingValue(raw: string, current: unknown): unknown {
  if (typeof current === 'string') return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

const settings: Command = {
  usage: 'settings get [KEY] | settings set KEY=VALUE...',
  summary: "the daemon's settings (admin)",
  async run(ctx) {
    const [action, ...rest] = ctx.args.positional;
    const client = await ctx.client();
    if (action === 'get') {
      if (rest.length > 1) throw usageError('settings get takes one key at most');
      const { data } = await client.get('/settings/get', rest[0] ? { key: rest[0] } : {});
      if (ctx.json) return print(ctx, data);
      const entries = rest[0] && 'key' in data ? [[data.key, data.value] as const] : Object.entries(data);
      const rows = entries.map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]);
      return ctx.io.out(rest[0] ? `${rows[0]![1]}\n` : table(['key', 'value'], rows, () => undefined, ctx.io.colour));
    }
    if (action === 'set') {
      if (rest.length === 0) throw usageError('settings set needs KEY=VALUE');
      const current: Record<string, unknown> = (await client.get('/settings/get')).data;
      const patch: Record<string, unknown> = {};
      for (const pair of rest) {
        const eq = pair.indexOf('=');
        if (eq <= 0) throw usageError(`settings set takes KEY=VALUE, not ${pair}`);
        const key = pair.slice(0, eq);
        patch[key] = settingValue(pair.slice(eq + 1), current[key]);
      }
      const { message } = await client.postAsTyped('/settings/set', patch, { strict: 'true' });
      if (ctx.json) print(ctx, { message });
      else ctx.io.out(`${message}\n`);
      return;
    }
    throw usageError('settings get [KEY] or settings set KEY=VALUE...');
  },
};

export const CLIENT_COMMANDS: Record<string, Command> = {
  login,
  logout,
  whoami,
  ls,
  list: ls,
  status,
  start: lifecycle('start'),
  stop: lifecycle('stop'),
  restart: lifecycle('restart'),
  wait,
  logs,
  proxies,
  events,
  create,
  rm,
  import: importCommand,
  export: exportCommand,
  ...APPLY_COMMANDS,
  ...EDIT_COMMANDS,
  ...REVISION_COMMANDS,
  label,
  expire,
  users,
  ...ACCOUNT_COMMANDS,
  keys,
  settings,
  doctor,
  frp,
  context,
  fleet,
};

/** The client commands' lines of the usage text. */
export function clientUsage(): string {
  const seen = new Set<Command>();
  const lines: string[] = [];
  for (const command of Object.values(CLIENT_COMMANDS)) {
    if (seen.has(command)) continue;
    seen.add(command);
    lines.push(`  ${command.usage}\n      ${command.summary}`);
  }
  return lines.join('\n');
}

/**
 * Runs one client command; resolves with its exit code, reporting a failure on stderr (and as JSON with --json).
 * Whatever it writes, the server's text and the user's own, reaches the terminal through `forTerminal`.
 */
export async function runClientCommand(name: string, argv: string[], terminal: Io): Promise<ExitCode> {
  const command = CLIENT_COMMANDS[name]!;
  let json = false;
  const io: Io = {
    ...terminal,
    out: (text) => terminal.out(forTerminal(text, json)),
    err: (text) => terminal.err(forTerminal(text)),
  };
  if (helpAsked(argv)) {
    io.out(`usage: tunnelward ${command.usage}\n  ${command.summary}\n`);
    return EXIT.ok;
  }
  try {
    const args = parseArgs(argv, command.flags ?? []);
    json = has(args, 'json');
    const credentials = new Credentials(configDir(io.env));
    let target: ChosenServer = { url: '' };
    // A command of no one server reads --url and --context as its own (context add --url) or refuses them.
    if (command.oneServer !== false) {
      const chosen = { url: flag(args, 'url'), context: flag(args, 'context') };
      if (chosen.url && chosen.context) throw usageError('give --url or --context, not both');
      try {
        target = await credentials.target(chosen, io.env);
      } catch (err) {
        throw usageError((err as Error).message);
      }
    }
    const { url } = target;
    const ctx: Context = {
      args,
      io,
      json,
      credentials,
      url,
      client: async () => {
        // A context's own key goes to its server only; else the environment's key first, as TUNNELWARD_URL comes
        // before the stored server: what a job is given wins.
        const own = target.context !== undefined ? await credentials.contextKey(target.context) : undefined;
        const credential = own ?? (io.env.TUNNELWARD_API_KEY || (await credentials.login(url))?.token);
        if (!credential)
          throw new CliError(EXIT.unauthorised, `not logged in to ${url}: run tunnelward login --url ${url}`);
        return new ApiClient(url, credential);
      },
    };
    const code = await command.run(ctx);
    return typeof code === 'number' ? code : EXIT.ok;
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    if (json) io.out(`${JSON.stringify({ success: false, message: err.message, exitCode: err.exitCode })}\n`);
    io.err(`tunnelward ${name}: ${err.message}\n`);
    if (err.exitCode === EXIT.usage) io.err(`usage: tunnelward ${command.usage}\n`);
    return err.exitCode;
  }
}
