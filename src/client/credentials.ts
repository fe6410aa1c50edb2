import { chmod, mkdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomic } from '../fs/atomic.js';
import { closestName } from '../util/closest.js';

/** What a login leaves for the next commands: the token (or API key) and who it belongs to. */
export interface Login {
  /** A login token, or an API key (`twk_...`) after `login --key`. */
  token: string;
  username: string;
  type: string;
  /** When the login was made (Unix ms): a token lives an hour, a key until it expires or is revoked. */
  at: number;
  /** The name of the API key, when `token` is one. */
  keyName?: string;
}

/**
 * A named server (`tunnelward context add`): its address, and an API key of its own, or none to use the login
 * stored for that address (`tunnelward login --url URL`).
 */
export interface NamedContext {
  url: string;
  key?: string;
}

interface CredentialFile {
  /** The server the last login was made to: the one used when no --url or TUNNELWARD_URL says otherwise. */
  current?: string;
  /** The context chosen by `context use`, which a later login to a server replaces as the current choice. */
  currentContext?: string;
  servers: Record<string, Login>;
  contexts?: Record<string, NamedContext>;
}

/** Where a command goes: the server, and the context that named it (whose key it uses), if one did. */
export interface ChosenServer {
  url: string;
  context?: string;
}

/** How a command picks its server; a flag beats the environment, which beats what is stored. */
export interface ServerFlags {
  url?: string;
  context?: string;
}

export const DEFAULT_URL = 'http://127.0.0.1:7600';

/** `$XDG_CONFIG_HOME/tunnelward`, else `~/.config/tunnelward`. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'tunnelward');
}

/** One token per server, in a file only its owner can read: it opens the server to whoever holds it. */
export class Credentials {
  readonly path: string;

  constructor(dir = configDir()) {
    this.path = join(dir, 'credentials.json');
  }

  private async read(): Promise<CredentialFile> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { servers: {} };
      throw err;
    }
    try {
      const parsed = JSON.parse(text) as CredentialFile;
      if (parsed && typeof parsed === 'object' && parsed.servers && typeof parsed.servers === 'object') return parsed;
    } catch {
      // A damaged file holds nothing usable: the next login writes a good one.
    }
    return { servers: {} };
  }

  private async write(file: CredentialFile): Promise<void> {
    const dir = join(this.path, '..');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(this.path, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
    await chmod(this.path, 0o600);
  }

  /**
   * The server to talk to: --context or --url, then TUNNELWARD_CONTEXT or TUNNELWARD_URL, then the context chosen
   * by `context use` or the last server logged in to (whichever came last), then the default. A context named but
   * not kept is an error that says which names are.
   */
  async target(flags: ServerFlags, env: NodeJS.ProcessEnv = process.env): Promise<ChosenServer> {
    const file = await this.read();
    const named = (name: string): ChosenServer => ({ url: contextOf(file, name).url, context: name });
    if (flags.context) return named(flags.context);
    if (flags.url) return { url: normalizeUrl(flags.url) };
    if (env.TUNNELWARD_CONTEXT) return named(env.TUNNELWARD_CONTEXT);
    if (env.TUNNELWARD_URL) return { url: normalizeUrl(env.TUNNELWARD_URL) };
    if (file.currentContext && file.contexts?.[file.currentContext]) return named(file.currentContext);
    return { url: normalizeUrl(file.current || DEFAULT_URL) };
  }

  async login(url: string): Promise<Login | undefined> {
    return (await this.read()).servers[url];
  }

  /** A context's own API key, if it has one. */
  async contextKey(name: string): Promise<string | undefined> {
    return (await this.read()).contexts?.[name]?.key;
  }

  async save(url: string, login: Login): Promise<void> {
    const file = await this.read();
    file.servers[url] = login;
    file.current = url;
    // A login to another server makes that one current; one to the current context's keeps the context.
    if (file.currentContext && file.contexts?.[file.currentContext]?.url !== url) delete file.currentContext;
    await this.write(file);
  }

  /** Every context, by name, and the current one. */
  async contexts(): Promise<{ current?: string; contexts: Record<string, NamedContext> }> {
    const file = await this.read();
    const contexts = file.contexts ?? {};
    const current = file.currentContext && contexts[file.currentContext] ? file.currentContext : undefined;
    return { current, contexts };
  }

  /** Keeps a context (replacing one of that name only when `replace`): false when one of that name exists. */
  async saveContext(name: string, context: NamedContext, replace: boolean): Promise<boolean> {
    const file = await this.read();
    file.contexts ??= {};
    if (Object.hasOwn(file.contexts, name) && !replace) return false;
    file.contexts[name] = context;
    await this.write(file);
    return true;
  }

  async useContext(name: string): Promise<NamedContext> {
    const file = await this.read();
    const context = contextOf(file, name);
    file.currentContext = name;
    await this.write(file);
    return context;
  }

  async removeContext(name: string): Promise<NamedContext> {
    const file = await this.read();
    const context = contextOf(file, name);
    delete file.contexts![name];
    if (file.currentContext === name) delete file.currentContext;
    await this.write(file);
    return context;
  }

  async forget(url: string): Promise<boolean> {
    const file = await this.read();
    if (!file.servers[url]) return false;
    delete file.servers[url];
    if (file.current === url) delete file.current;
    await this.write(file);
    return true;
  }
}

/** A context kept under `name`, or an error naming the one most likely meant. */
function contextOf(file: CredentialFile, name: string): NamedContext {
  const contexts = file.contexts ?? {};
  if (Object.hasOwn(contexts, name)) return contexts[name]!;
  const near = closestName(name, Object.keys(contexts));
  const known = Object.keys(contexts);
  const hint = near
    ? ` (did you mean ${near}?)`
    : known.length > 0
      ? ` (there are ${known.join(', ')})`
      : ' (there are none: tunnelward context add NAME --url URL)';
  throw new UnknownContextError(`no context named ${name}${hint}`);
}

/** A context named that is not kept. */
export class UnknownContextError extends Error {}

/** `host:port` or a URL, without a trailing slash; http:// when no scheme is given. */
export function normalizeUrl(raw: string): string {
  const withScheme = /^[a-z]+:\/\//i.test(raw) ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new Error(`not a server address: ${raw}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`not an http(s) address: ${raw}`);
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}
