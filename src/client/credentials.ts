import { chmod, mkdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomic } from '../fs/atomic.js';

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

interface CredentialFile {
  /** The server the last login was made to: the one used when no --url or TUNNELWARD_URL says otherwise. */
  current?: string;
  servers: Record<string, Login>;
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

  /** The server to talk to: the flag, then TUNNELWARD_URL, then the last one logged in to, then the default. */
  async serverUrl(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<string> {
    const chosen = flag || env.TUNNELWARD_URL || (await this.read()).current || DEFAULT_URL;
    return normalizeUrl(chosen);
  }

  async login(url: string): Promise<Login | undefined> {
    return (await this.read()).servers[url];
  }

  async save(url: string, login: Login): Promise<void> {
    const file = await this.read();
    file.servers[url] = login;
    file.current = url;
    await this.write(file);
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
