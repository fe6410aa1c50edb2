import type { ApiClient } from './api.js';
import { flag } from './args.js';
import { outcomeLine, print, type Command, type Context } from './command.js';
import { CliError, EXIT, usageError } from './errors.js';
import { ask } from './prompt.js';
import { table } from './render.js';

// Accounts from the command line: your password, and (a superuser's) the users.

const TYPES = ['visitor', 'admin', 'superuser'] as const;

/**
 * A new password: TUNNELWARD_PASSWORD, else asked without echo (twice at a terminal, to catch a typo), else the first
 * line of standard input. Never an argument: it would be visible to every user of this host.
 */
async function newPassword(ctx: Context, whose: string): Promise<string> {
  const given = ctx.io.env.TUNNELWARD_PASSWORD;
  if (given) return given;
  try {
    const first = await ask(`new password for ${whose}: `, true);
    if (ctx.io.terminal && (await ask('again: ', true)) !== first)
      throw new CliError(EXIT.failed, 'the two passwords differ: nothing changed');
    return first;
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(EXIT.failed, `no password for ${whose}: ${(err as Error).message}`);
  }
}

/** A user by name (or `#id`): the list is a superuser's; yourself is found without it. */
async function userNamed(client: ApiClient, name: string): Promise<{ id: number; username: string }> {
  const me = (await client.get('/whoami')).data;
  if (name === me.username || name === `#${me.userID}`) return { id: me.userID, username: me.username };
  const users = (await client.get('/userMgr/list')).data;
  const found = users.find((u) => u.Username === name || `#${u.UserID}` === name);
  if (!found) throw new CliError(EXIT.failed, `no user ${name}`);
  return { id: found.UserID, username: found.Username };
}

const passwd: Command = {
  usage: 'passwd [USER]',
  summary:
    "change your password (a superuser: anyone's); ends the user's other sessions and revokes the user's API keys, and says so first",
  async run(ctx) {
    const client = await ctx.client();
    const [name, ...rest] = ctx.args.positional;
    if (rest.length > 0) throw usageError('passwd takes one user at most');
    const me = (await client.get('/whoami')).data;
    if (me.keyName !== undefined) throw usageError('passwd needs a password login, not an API key (tunnelward login)');
    const target = name === undefined ? { id: me.userID, username: me.username } : await userNamed(client, name);
    const keys = (await client.get('/apiKeyMgr/list', target.id === me.userID ? {} : { userID: target.id })).data;
    // Said before it happens: a new password is the way to retire every credential of the account.
    ctx.io.err(
      `a new password ends ${target.username}'s other sessions and revokes ${target.username}'s ${keys.length} API key${keys.length === 1 ? '' : 's'}\n`,
    );
    const secret = await newPassword(ctx, target.username);
    const { message } = await client.post('/userMgr/modify', { userID: target.id, passwd: secret });
    if (ctx.json) print(ctx, { userID: target.id, username: target.username, message });
    else outcomeLine(ctx, true, message);
  },
};

const user: Command = {
  usage: 'user ls | user add NAME [--type visitor|admin|superuser] | user rm NAME | user type NAME TYPE',
  summary:
    'the users (a superuser): list them, add one (its password from TUNNELWARD_PASSWORD or asked), remove one (its sessions end, its API keys are revoked), change its type',
  flags: [{ name: 'type', value: true }],
  async run(ctx) {
    const [action, name, ...rest] = ctx.args.positional;
    const client = await ctx.client();
    if (action === 'ls' || action === undefined) {
      if (name !== undefined) throw usageError('user ls takes no name');
      const { data } = await client.get('/userMgr/list');
      if (ctx.json) return print(ctx, data);
      const rows = data.map((u) => [String(u.UserID), u.Username, u.Type, u.CreatedAt]);
      ctx.io.out(table(['id', 'username', 'type', 'created'], rows, () => undefined, ctx.io.colour));
      return;
    }
    if (!name) throw usageError(`user ${action} needs a user's name`);
    if (action === 'add') {
      if (rest.length > 0) throw usageError('user add takes one name (the password is asked, never an argument)');
      const type = flag(ctx.args, 'type') ?? 'visitor';
      if (!(TYPES as readonly string[]).includes(type)) throw usageError(`--type must be one of ${TYPES.join(', ')}`);
      const secret = await newPassword(ctx, name);
      const { message, data } = await client.post('/userMgr/create', {
        username: name,
        passwd: secret,
        type: type as (typeof TYPES)[number],
      });
      if (ctx.json) print(ctx, data);
      else outcomeLine(ctx, true, message);
      return;
    }
    if (action === 'rm') {
      if (rest.length > 0) throw usageError('user rm takes one name');
      const target = await userNamed(client, name);
      const { message } = await client.post('/userMgr/remove', { targetUserID: target.id });
      outcomeLine(ctx, true, `${message}: its sessions ended and its API keys were revoked`);
      return;
    }
    if (action === 'type') {
      const [type] = rest;
      if (!type || rest.length > 1 || !(TYPES as readonly string[]).includes(type))
        throw usageError(`user type NAME needs one of ${TYPES.join(', ')}`);
      const target = await userNamed(client, name);
      const { message } = await client.post('/userMgr/modifyType', {
        userID: target.id,
        newType: type as (typeof TYPES)[number],
      });
      outcomeLine(ctx, true, message);
      return;
    }
    throw usageError('user needs ls, add, rm or type');
  },
};

export const ACCOUNT_COMMANDS: Record<string, Command> = { passwd, user };
