import { API_KEY_SCOPE_RULES, API_KEY_SCOPES } from '../accounts/rules.js';
import { isApiKey } from '../accounts/tokens.js';
import { ApiClient } from './api.js';
import { flag, type Parsed } from './args.js';
import { print, type Command, type Context } from './command.js';
import { CliError, EXIT, usageError } from './errors.js';
import { ask } from './prompt.js';
import { table } from './render.js';
import { durationMs } from '../util/duration.js';

/** `90s`, `45m`, `12h`, `30d`, `2w` in seconds. */
export function durationSecs(raw: string): number {
  const ms = durationMs(raw);
  if (ms === undefined) throw usageError(`--expires takes a duration like 30d, 12h, 45m or 2w, not ${raw}`);
  return ms / 1000;
}

/** `login --key`: checks the key with the server, then keeps it like a token (mode 0600); no hourly login after. */
export async function loginWithKey(ctx: Context): Promise<void> {
  if (flag(ctx.args, 'user')) throw usageError('--key takes no --user: the key says whose it is');
  // Never a command-line argument: those are visible to every user of the host.
  const key = (ctx.io.env.TUNNELWARD_API_KEY || (await ask('API key: ', true))).trim();
  if (!isApiKey(key)) throw new CliError(EXIT.unauthorised, 'that is not a tunnelward API key (twk_<id>_<secret>)');
  const { data } = await new ApiClient(ctx.url, key).get('/whoami');
  await ctx.credentials.save(ctx.url, {
    token: key,
    username: data.username,
    type: data.type,
    at: Date.now(),
    keyName: data.keyName,
  });
  if (ctx.json) print(ctx, { url: ctx.url, username: data.username, type: data.type, keyName: data.keyName });
  else ctx.io.out(`logged in to ${ctx.url} as ${data.username} (${data.type}) with API key ${data.keyName}\n`);
}

/** `--user NAME` as a user id (the list is a superuser's); the caller's own keys when it is not given. */
async function ownerId(args: Parsed, client: ApiClient): Promise<number | undefined> {
  const username = flag(args, 'user');
  if (username === undefined) return undefined;
  const { data } = await client.get('/userMgr/list');
  const user = data.find((u) => u.Username.toLowerCase() === username.toLowerCase());
  if (!user) throw new CliError(EXIT.failed, `no user named ${username}`);
  return user.UserID;
}

function positiveInt(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d{1,7}$/.test(raw) || Number(raw) === 0) throw usageError(`--${name} must be a whole number above 0`);
  return Number(raw);
}

const dash = (value: string | null) => value ?? '-';

export const keys: Command = {
  usage:
    'keys create NAME [--role R] [--scope S] [--expires 30d] [--rate N] [--user NAME] | keys ls [--user NAME] | keys rm NAME [--user NAME]',
  summary: `personal API keys: create one (printed once, alone on standard output), list them, revoke one; --user for another user's (superuser). --scope: ${API_KEY_SCOPES.map((scope) => `${scope}, ${API_KEY_SCOPE_RULES[scope]}`).join('; ')} (Prometheus: --scope metrics)`,
  flags: [
    { name: 'role', value: true },
    { name: 'scope', value: true },
    { name: 'expires', value: true },
    { name: 'rate', value: true },
    { name: 'user', short: 'u', value: true },
  ],
  async run(ctx) {
    const [action, name, ...extra] = ctx.args.positional;
    if (extra.length > 0) throw usageError(`one key name only, not ${extra.join(' ')}`);
    const only = (allowed: string[]) => {
      const stray = ['role', 'scope', 'expires', 'rate'].find((f) => !allowed.includes(f) && ctx.args.flags.has(f));
      if (stray) throw usageError(`keys ${action} takes no --${stray}`);
    };
    if (action === 'create') {
      if (!name) throw usageError('keys create needs a name');
      only(['role', 'scope', 'expires', 'rate']);
      // Flags are checked before anything is asked of the server.
      const expires = flag(ctx.args, 'expires');
      const expiresIn = expires === undefined ? undefined : durationSecs(expires);
      const ratePerMinute = positiveInt(flag(ctx.args, 'rate'), 'rate');
      const role = flag(ctx.args, 'role');
      const scope = flag(ctx.args, 'scope');
      if (scope !== undefined && !(API_KEY_SCOPES as readonly string[]).includes(scope))
        throw usageError(`--scope takes ${API_KEY_SCOPES.join(' or ')}, not ${scope}`);
      const client = await ctx.client();
      const userID = await ownerId(ctx.args, client);
      const { data } = await client.postAsTyped('/apiKeyMgr/create', {
        name,
        ...(userID !== undefined ? { userID } : {}),
        ...(role !== undefined ? { role } : {}),
        ...(scope !== undefined ? { scope } : {}),
        ...(expiresIn !== undefined ? { expiresIn } : {}),
        ...(ratePerMinute !== undefined ? { ratePerMinute } : {}),
      });
      if (ctx.json) return print(ctx, data);
      const until = data.expiresAt === null ? 'no expiry' : `expires ${data.expiresAt}`;
      ctx.io.err(
        `API key ${data.name} created for ${data.username} (${data.role}, scope ${data.scope}, ${until}, ${data.ratePerMinute} requests a minute); it is shown only now:\n`,
      );
      // Alone on standard output, so that a script can capture it: KEY=$(tunnelward keys create ci)
      return ctx.io.out(`${data.key}\n`);
    }
    if (action === 'ls' || action === 'list') {
      if (name) throw usageError('keys ls takes no name');
      only([]);
      const client = await ctx.client();
      const userID = await ownerId(ctx.args, client);
      const { data } = await client.get('/apiKeyMgr/list', userID !== undefined ? { userID } : {});
      if (ctx.json) return print(ctx, data);
      if (data.length === 0) return ctx.io.out('no API keys\n');
      const rows = data.map((k) => [
        k.name,
        k.keyID,
        k.role,
        k.scope,
        String(k.ratePerMinute),
        k.createdAt,
        dash(k.lastUsedAt),
        dash(k.expiresAt),
      ]);
      return ctx.io.out(
        table(
          ['name', 'id', 'role', 'scope', 'rate/min', 'created', 'last used', 'expires'],
          rows,
          () => undefined,
          ctx.io.colour,
        ),
      );
    }
    if (action === 'rm' || action === 'revoke') {
      if (!name) throw usageError('keys rm needs the name of the key');
      only([]);
      const client = await ctx.client();
      const userID = await ownerId(ctx.args, client);
      const { message, data } = await client.post('/apiKeyMgr/revoke', {
        name,
        ...(userID !== undefined ? { userID } : {}),
      });
      return ctx.json ? print(ctx, data) : ctx.io.out(`${message}\n`);
    }
    throw usageError('keys create NAME, keys ls or keys rm NAME');
  },
};
