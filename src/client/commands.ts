import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { writeFileAtomic } from '../fs/atomic.js';
import { ApiClient, type StreamEnd } from './api.js';
import { countFlag, flag, has, keyValues, parseArgs } from './args.js';
import { outcomeLine, print, type Command, type Context, type Io } from './command.js';
import { configDir, Credentials } from './credentials.js';
import { EDIT_COMMANDS } from './edit-commands.js';
import { CliError, EXIT, usageError, type ExitCode } from './errors.js';
import {
  ID_FLAG,
  listInstances,
  onlyInstance,
  resolveAll,
  resolveInstances,
  type Listed,
  type Target,
} from './instance-refs.js';
import { doctor } from './doctor.js';
import { keys, loginWithKey } from './key-commands.js';
import { ask } from './prompt.js';
import { proxyTable, visitorTable } from './proxy-tables.js';
import { STATE_COLOURS, forTerminal, logLine, paint, shortDuration, table } from './render.js';

export type { Io } from './command.js';

function proxiesCell(i: Listed): string {
  const counts = Object.values(i.proxyStatus ?? {});
  if (counts.length === 0) return '-';
  const total = counts.reduce((a, b) => a + b, 0);
  return `${i.proxyStatus.running ?? 0}/${total}`;
}

function instanceTable(ctx: Context, list: Listed[]): string {
  const rows = list.map((i) => [
    String(i.instanceID),
    i.name,
    i.state,
    i.pid === null ? '-' : String(i.pid),
    i.uptimeSecs === undefined ? '-' : shortDuration(i.uptimeSecs),
    String(i.restarts),
    proxiesCell(i),
  ]);
  return table(
    ['id', 'name', 'state', 'pid', 'uptime', 'restarts', 'proxies'],
    rows,
    (r, c) => (c === 2 ? STATE_COLOURS[list[r]!.state] : undefined),
    ctx.io.colour,
  );
}

/** Several instances: when none of them is known, that is the command's failure; else the unknown ones are reported with the rest. */
async function someInstances(client: ApiClient, refs: string[], ids: string[]) {
  const resolved = await resolveInstances(client, refs, ids);
  if (resolved.found.length === 0) throw new CliError(EXIT.failed, resolved.unknown.map((u) => u.message).join('; '));
  return resolved;
}

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
    const { data } = await client.post<{ token: string; username: string; type: string }>('/login', {
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
    const { data } = await client.get<{
      userID: number;
      username: string;
      type: string;
      expireAt: string | null;
      keyName?: string;
    }>('/whoami');
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
  usage: 'ls',
  summary: 'every instance: state, pid, uptime, restarts, proxies up/total',
  async run(ctx) {
    const list = await listInstances(await ctx.client());
    if (ctx.json) print(ctx, list);
    else if (list.length === 0) ctx.io.out('no instances\n');
    else ctx.io.out(instanceTable(ctx, list));
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
      infos.push(
        (await client.get<Record<string, unknown>>('/tunnelAct/instanceMgr/getInfo', { instanceID: id })).data,
      );
    if (ctx.json) return print(ctx, infos);
    for (const info of infos) {
      const shown = Object.entries(info).filter(([, v]) => v !== null && v !== undefined && v !== '');
      const width = Math.max(...shown.map(([k]) => k.length));
      ctx.io.out(
        `${shown.map(([k, v]) => `${k.padEnd(width)}  ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`).join('\n')}\n\n`,
      );
    }
  },
};

const WANTED = { start: 'running', stop: 'stopped', restart: undefined } as const;

function lifecycle(command: 'start' | 'stop' | 'restart'): Command {
  return {
    usage: `${command} <name|#id>... [--id ID]... | --all`,
    summary: `${command} instances (one request for all of them)`,
    flags: [{ name: 'all' }, ID_FLAG],
    async run(ctx) {
      const all = has(ctx.args, 'all');
      const ids = ctx.args.flags.get('id') ?? [];
      if (all === ctx.args.positional.length + ids.length > 0)
        throw usageError(`${command} needs instance names or ids, or --all`);
      const client = await ctx.client();
      const { found, unknown } = all
        ? { found: [], unknown: [] }
        : await someInstances(client, ctx.args.positional, ids);
      const target = all ? { all: true } : { instanceIDs: found.map((t) => t.id) };
      const { message, data } = await client.post<{
        results: Array<{ instanceID: number; name: string | null; ok: boolean; state: string | null; message: string }>;
      }>(`/tunnelAct/instanceMgr/${command}`, target);
      // Starting what already runs (stopping what is stopped) leaves it as asked: not a failure for a script.
      const settled = (r: (typeof data.results)[number]) => r.ok || (r.state !== null && r.state === WANTED[command]);
      if (ctx.json) print(ctx, unknown.length > 0 ? { ...data, unknown } : data);
      else {
        for (const r of data.results) {
          const line = `${r.name ?? r.instanceID} (${r.instanceID}): ${r.message}${r.state && r.state !== r.message ? `, now ${r.state}` : ''}`;
          outcomeLine(ctx, settled(r), line);
        }
        for (const u of unknown) outcomeLine(ctx, false, `${u.ref}: ${u.message}`);
        ctx.io.out(`${message}\n`);
      }
      return data.results.every(settled) && unknown.length === 0 ? EXIT.ok : EXIT.failed;
    },
  };
}

interface LogEntry {
  level: string | number;
  content: string;
  timestamp: string;
}

const logs: Command = {
  usage: 'logs [-f] [-n N] <name|#id> | --system',
  summary: "an instance's log (the last N lines, then new ones with -f), or the daemon's own with --system",
  flags: [{ name: 'follow', short: 'f' }, { name: 'lines', short: 'n', value: true }, { name: 'system' }, ID_FLAG],
  async run(ctx) {
    const client = await ctx.client();
    const follow = has(ctx.args, 'follow');
    const lines = countFlag(ctx.args, 'lines', 20);
    let path = '/system/getLogs';
    const query: Record<string, string | number> = { lines, follow: follow ? 1 : 0 };
    if (has(ctx.args, 'system')) {
      if (ctx.args.positional.length > 0) throw usageError('--system takes no instance');
    } else {
      path = '/tunnelAct/instanceMgr/logs';
      query.instanceID = (await onlyInstance(client, ctx.args)).id;
    }
    const stream = client.stream(path, query, (message) => {
      const entry = message as LogEntry;
      if (ctx.json) return ctx.io.out(`${JSON.stringify(entry)}\n`);
      ctx.io.out(`${logLine(entry, ctx.io.colour)}\n`);
    });
    stopOnSignal(stream.stop);
    const end = await stream.ended;
    return endOfStream(ctx, end, follow);
  },
};

/** Ctrl-C ends a followed stream cleanly. */
function stopOnSignal(stop: () => void): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, stop);
}

function endOfStream(ctx: Context, end: StreamEnd, follow: boolean): ExitCode {
  if (end.code === 1000 || end.code === 1005 || !follow) return EXIT.ok;
  ctx.io.err(`stream ended: ${end.reason || `code ${end.code}`}\n`);
  return end.code === 4401 || end.code === 4403 ? EXIT.unauthorised : EXIT.failed;
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
  summary: 'follow instance state changes and other events as they happen',
  flags: [{ name: 'since', value: true }],
  async run(ctx) {
    const client = await ctx.client();
    const since = flag(ctx.args, 'since');
    const stream = client.stream('/system/events', since === undefined ? {} : { since }, (message) => {
      const e = message as Record<string, unknown>;
      if (ctx.json) return ctx.io.out(`${JSON.stringify(e)}\n`);
      if (e.event === 'events.start') {
        if (e.lost) ctx.io.err('some events since then are no longer kept: read the list again (tunnelward ls)\n');
        return;
      }
      const who = e.name !== undefined ? `${e.name} (${e.instanceID})` : '';
      const what =
        e.event === 'instance.state'
          ? `${e.from} -> ${e.to}`
          : e.event === 'instance.status'
            ? statusText(e.connected as boolean | null, e.proxyStatus as Record<string, number>)
            : typeof e.message === 'string'
              ? e.message
              : '';
      const at = typeof e.at === 'string' ? e.at : new Date().toISOString();
      ctx.io.out(`${paint(at, 'grey', ctx.io.colour)} #${e.seq} ${String(e.event)} ${who} ${what}`.trimEnd() + '\n');
    });
    stopOnSignal(stream.stop);
    return endOfStream(ctx, await stream.ended, true);
  },
};

const proxies: Command = {
  usage: 'proxies <name|#id>',
  summary:
    "an instance's proxies with what frpc says of each (its error text, where each is reached), and its visitors",
  flags: [ID_FLAG],
  async run(ctx) {
    const client = await ctx.client();
    const { id } = await onlyInstance(client, ctx.args);
    const [{ data }, info] = await Promise.all([
      client.get<{ proxies: Array<Record<string, unknown>>; visitors?: Array<Record<string, unknown>> }>(
        '/tunnelAct/proxyMgr/list',
        { instanceID: id },
      ),
      client.get<{ serverAddr?: string }>('/tunnelAct/instanceMgr/getInfo', { instanceID: id }),
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
  usage: 'create <name> --server HOST:PORT [--auth-method token|oidc] [--set KEY=VALUE]... [--boot] [--run-user USER]',
  summary: 'a new instance (config keys through --set, e.g. --set auth.token=...)',
  flags: [
    { name: 'server', value: true },
    { name: 'auth-method', value: true },
    { name: 'set', value: true, repeat: true },
    { name: 'boot' },
    { name: 'run-user', value: true },
  ],
  async run(ctx) {
    const [name, ...extra] = ctx.args.positional;
    if (!name || extra.length > 0) throw usageError('create takes one name');
    const server = flag(ctx.args, 'server');
    const match = server?.match(/^(.+):(\d{1,5})$/);
    if (!match) throw usageError('--server HOST:PORT is required');
    const client = await ctx.client();
    const { message, data } = await client.post<{ instanceID: number }>('/tunnelAct/instanceMgr/create', {
      instanceInfo: {
        name,
        serverAddr: match[1]!.replace(/^\[(.*)\]$/, '$1'),
        serverPort: match[2]!,
        auth_method: flag(ctx.args, 'auth-method') ?? 'token',
      },
      bootAtStart: has(ctx.args, 'boot'),
      ...(flag(ctx.args, 'run-user') ? { runUser: flag(ctx.args, 'run-user') } : {}),
      additionalProperties: keyValues(ctx.args.flags.get('set') ?? [], '--set'),
    });
    if (ctx.json) print(ctx, data);
    else ctx.io.out(`${message} (id ${data.instanceID})\n`);
  },
};

const rm: Command = {
  usage: 'rm <name|#id>... [--id ID]... [--yes] [--purge]',
  summary:
    'delete instances: stop them, remove their files and boot services (a running one is asked about unless --yes; the log is kept unless --purge)',
  flags: [{ name: 'yes', short: 'y' }, { name: 'purge' }, ID_FLAG],
  async run(ctx) {
    const ids = ctx.args.flags.get('id') ?? [];
    if (ctx.args.positional.length + ids.length === 0) throw usageError('rm needs instance names or ids');
    const client = await ctx.client();
    const { found, unknown } = await someInstances(client, ctx.args.positional, ids);
    const results: Array<{ ref: string; instanceID?: number; ok: boolean; message: string }> = [];
    for (const target of found) {
      const refusal = await runningRefusal(ctx, target);
      if (refusal) {
        results.push({ ref: target.name, instanceID: target.id, ok: false, message: refusal });
        continue;
      }
      try {
        const { message } = await client.post('/tunnelAct/instanceMgr/delete', {
          instanceID: String(target.id),
          ...(has(ctx.args, 'purge') ? { purge: true } : {}),
        });
        results.push({ ref: target.name, instanceID: target.id, ok: true, message });
      } catch (err) {
        if (!(err instanceof CliError) || err.exitCode !== EXIT.failed) throw err;
        results.push({ ref: target.name, instanceID: target.id, ok: false, message: err.message });
      }
    }
    for (const u of unknown) results.push({ ref: u.ref, ok: false, message: u.message });
    if (ctx.json) print(ctx, results);
    else
      for (const r of results)
        outcomeLine(ctx, r.ok, `${r.ref}${r.instanceID === undefined ? '' : ` (${r.instanceID})`}: ${r.message}`);
    return results.every((r) => r.ok) ? EXIT.ok : EXIT.failed;
  },
};

/** Why a running instance is not deleted: not confirmed (asked on a terminal), or no terminal to ask on and no --yes. */
async function runningRefusal(ctx: Context, target: Target): Promise<string | undefined> {
  if (target.state === 'stopped' || target.state === 'failed' || has(ctx.args, 'yes')) return undefined;
  if (!process.stdin.isTTY)
    return `not deleted: it is ${target.state}, and there is no terminal to confirm on (give --yes to delete running instances)`;
  const answer = await ask(`instance ${target.name} (${target.id}) is ${target.state}: stop and delete it? [y/N] `);
  return /^y(es)?$/i.test(answer.trim()) ? undefined : 'not deleted: not confirmed';
}

const FORMATS: Record<string, string> = {
  '.toml': 'toml',
  '.ini': 'ini',
  '.yaml': 'yaml',
  '.yml': 'yaml',
  '.json': 'json',
};

const importCommand: Command = {
  usage: 'import <file> [--name NAME] [--format toml|ini|yaml|json] [--boot] [--run-user USER]',
  summary: 'an existing frpc config file as a new instance (name from the file name unless given)',
  flags: [
    { name: 'name', value: true },
    { name: 'format', value: true },
    { name: 'boot' },
    { name: 'run-user', value: true },
  ],
  async run(ctx) {
    const [file, ...extra] = ctx.args.positional;
    if (!file || extra.length > 0) throw usageError('import takes one file');
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
    const client = await ctx.client();
    const { message, data } = await client.post<Record<string, unknown>>('/tunnelAct/instanceMgr/import', {
      name,
      content,
      ...(format ? { format } : {}),
      ...(has(ctx.args, 'boot') ? { bootAtStart: true } : {}),
      ...(flag(ctx.args, 'run-user') ? { runUser: flag(ctx.args, 'run-user') } : {}),
    });
    if (ctx.json) print(ctx, data);
    else ctx.io.out(`${message}\n`);
  },
};

const exportCommand: Command = {
  usage: 'export <name|#id> [-o FILE]',
  summary: "an instance's config file in frpc's TOML (secrets masked unless you are a superuser)",
  flags: [{ name: 'output', short: 'o', value: true }, ID_FLAG],
  async run(ctx) {
    const client = await ctx.client();
    const { id } = await onlyInstance(client, ctx.args);
    const { data } = await client.get<{ content: string; masked: boolean }>('/tunnelAct/instanceMgr/export', {
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
    const { data } = await (await ctx.client()).get<Array<Record<string, unknown>>>('/userMgr/list');
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
      const { data } = await client.get<Record<string, unknown>>('/settings/get', rest[0] ? { key: rest[0] } : {});
      if (ctx.json) return print(ctx, data);
      const entries = rest[0] ? [[String(data.key), data.value] as const] : Object.entries(data);
      const rows = entries.map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]);
      return ctx.io.out(rest[0] ? `${rows[0]![1]}\n` : table(['key', 'value'], rows, () => undefined, ctx.io.colour));
    }
    if (action === 'set') {
      if (rest.length === 0) throw usageError('settings set needs KEY=VALUE');
      const { data: current } = await client.get<Record<string, unknown>>('/settings/get');
      const patch: Record<string, unknown> = {};
      for (const pair of rest) {
        const eq = pair.indexOf('=');
        if (eq <= 0) throw usageError(`settings set takes KEY=VALUE, not ${pair}`);
        const key = pair.slice(0, eq);
        patch[key] = settingValue(pair.slice(eq + 1), current[key]);
      }
      const { message } = await client.post('/settings/set?strict=true', patch);
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
  logs,
  proxies,
  events,
  create,
  rm,
  import: importCommand,
  export: exportCommand,
  ...EDIT_COMMANDS,
  users,
  keys,
  settings,
  doctor,
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
  try {
    const args = parseArgs(argv, command.flags ?? []);
    json = has(args, 'json');
    const credentials = new Credentials(configDir(io.env));
    let url: string;
    try {
      url = await credentials.serverUrl(flag(args, 'url'), io.env);
    } catch (err) {
      throw usageError((err as Error).message);
    }
    const ctx: Context = {
      args,
      io,
      json,
      credentials,
      url,
      client: async () => {
        // The environment's key first, as TUNNELWARD_URL comes before the stored server: what a job is given wins.
        if (io.env.TUNNELWARD_API_KEY) return new ApiClient(url, io.env.TUNNELWARD_API_KEY);
        const stored = await credentials.login(url);
        if (!stored)
          throw new CliError(EXIT.unauthorised, `not logged in to ${url}: run tunnelward login --url ${url}`);
        return new ApiClient(url, stored.token);
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
