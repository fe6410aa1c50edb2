import { readFile, stat } from 'node:fs/promises';
import { isApiKey } from '../accounts/tokens.js';
import { flag, has } from './args.js';
import { print, type Command, type Context } from './command.js';
import { normalizeUrl, UnknownContextError, type NamedContext } from './credentials.js';
import { CliError, EXIT, usageError } from './errors.js';
import { ask } from './prompt.js';
import { table } from './render.js';

/** A context's name: a word that reads well in a table's first column and in `--context NAME`. */
const CONTEXT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** The API key of `context add`: from a file, or from standard input (`--api-key -`), never from the command line. */
async function keyToKeep(ctx: Context): Promise<string | undefined> {
  const file = flag(ctx.args, 'api-key-file');
  const given = flag(ctx.args, 'api-key');
  if (file !== undefined && given !== undefined) throw usageError('give --api-key-file or --api-key -, not both');
  if (given !== undefined && given !== '-')
    throw usageError(
      'an API key on the command line is seen by every user of this host: --api-key - reads it from standard input, --api-key-file FILE from a file',
    );
  let key: string;
  if (file !== undefined) {
    try {
      key = await readFile(file, 'utf8');
      // Said, not refused: the key is kept 0600 here whatever the file it came from.
      if (((await stat(file)).mode & 0o077) !== 0)
        ctx.io.err(`warning: ${file} can be read by others than its owner (chmod 600 it, or remove it now)\n`);
    } catch (err) {
      throw new CliError(EXIT.failed, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? err}`);
    }
  } else if (given === '-') key = await ask('API key: ', true);
  else return undefined;
  key = key.trim();
  if (!isApiKey(key)) throw new CliError(EXIT.failed, 'that is not a tunnelward API key (twk_<id>_<secret>)');
  return key;
}

/** What a context logs in with, as a listing says it (never the key itself). */
const credentialWord = (context: NamedContext) => (context.key !== undefined ? 'API key' : 'login');

async function add(ctx: Context, name: string): Promise<void> {
  if (!CONTEXT_NAME.test(name))
    throw usageError(`a context name is letters, digits, '.', '_' and '-' (63 at most), not ${name}`);
  const rawUrl = flag(ctx.args, 'url');
  if (!rawUrl) throw usageError('context add needs --url URL');
  let url: string;
  try {
    url = normalizeUrl(rawUrl);
  } catch (err) {
    throw usageError((err as Error).message);
  }
  const key = await keyToKeep(ctx);
  const context: NamedContext = { url, ...(key !== undefined ? { key } : {}) };
  if (!(await ctx.credentials.saveContext(name, context, has(ctx.args, 'replace'))))
    throw new CliError(EXIT.failed, `a context named ${name} exists (--replace replaces it)`);
  if (ctx.json) return print(ctx, { name, url, credential: credentialWord(context) });
  const uses =
    key !== undefined
      ? 'its API key'
      : (await ctx.credentials.login(url))
        ? `the login kept for ${url}`
        : `the login for ${url}, once there is one (tunnelward login --url ${url})`;
  ctx.io.out(`context ${name}: ${url}, with ${uses}\n`);
}

async function list(ctx: Context): Promise<void> {
  const { current, contexts } = await ctx.credentials.contexts();
  const rows = await Promise.all(
    Object.entries(contexts)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(async ([name, c]) => ({
        name,
        url: c.url,
        current: name === current,
        credential:
          c.key !== undefined ? 'API key' : (await ctx.credentials.login(c.url)) ? 'login' : 'none (log in first)',
      })),
  );
  if (ctx.json) return print(ctx, rows);
  if (rows.length === 0) return ctx.io.out('no contexts (tunnelward context add NAME --url URL)\n');
  ctx.io.out(
    table(
      ['current', 'name', 'url', 'credential'],
      rows.map((r) => [r.current ? '*' : '', r.name, r.url, r.credential]),
      () => undefined,
      ctx.io.colour,
    ),
  );
}

export const context: Command = {
  usage:
    'context add NAME --url URL [--api-key-file FILE | --api-key -] [--replace] | context ls | context use NAME | context rm NAME',
  summary:
    'named servers: add one (with an API key from a file or standard input, kept 0600 beside the logins; without one, the login kept for its URL is used), list them (never a key), choose the one commands go to, remove one; --context NAME or TUNNELWARD_CONTEXT picks one for a command; tunnelward fleet asks them all',
  flags: [{ name: 'api-key-file', value: true }, { name: 'api-key', value: true }, { name: 'replace' }],
  oneServer: false,
  async run(ctx) {
    const [action, name, ...extra] = ctx.args.positional;
    if (extra.length > 0) throw usageError(`one context name only, not ${extra.join(' ')}`);
    const stray = ['url', 'api-key-file', 'api-key', 'replace', 'context'].find((f) => ctx.args.flags.has(f));
    if (stray && (action !== 'add' || stray === 'context')) throw usageError(`context ${action} takes no --${stray}`);
    if (action === 'add') {
      if (!name) throw usageError('context add needs a name');
      return add(ctx, name);
    }
    if (action === 'ls' || action === 'list') {
      if (name) throw usageError('context ls takes no name');
      return list(ctx);
    }
    if (action === 'use' || action === 'rm' || action === 'remove') {
      if (!name) throw usageError(`context ${action} needs a name`);
      let chosen: NamedContext;
      try {
        chosen = action === 'use' ? await ctx.credentials.useContext(name) : await ctx.credentials.removeContext(name);
      } catch (err) {
        if (err instanceof UnknownContextError) throw new CliError(EXIT.failed, err.message);
        throw err;
      }
      if (ctx.json) return print(ctx, { name, url: chosen.url, [action === 'use' ? 'current' : 'removed']: true });
      return ctx.io.out(
        action === 'use' ? `commands now go to ${name} (${chosen.url})\n` : `context ${name} removed\n`,
      );
    }
    throw usageError('context add NAME --url URL, context ls, context use NAME or context rm NAME');
  },
};
