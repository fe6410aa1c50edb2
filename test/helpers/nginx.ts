import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { freePort } from './frp.js';

/** Debian's nginx (test/setup/ensure-tools.sh installs it). */
export const NGINX = '/usr/sbin/nginx';

/** Where the operator guide keeps its nginx recipe. */
const GUIDE = 'docs/operator.md';

/**
 * The operator guide's nginx recipe (its one `nginx` block), pointed at `upstream` (`http://127.0.0.1:<port>`)
 * instead of the default port: what an operator pastes, and what the tests put in front of the daemon.
 */
export async function guideNginxRecipe(upstream: string): Promise<string> {
  const guide = await readFile(join(PACKAGE_ROOT, GUIDE), 'utf8');
  const blocks = [...guide.matchAll(/```nginx\n([\s\S]*?)```/g)];
  if (blocks.length !== 1) throw new Error(`${GUIDE} has ${blocks.length} nginx blocks, the tests expect one`);
  const recipe = blocks[0]![1]!;
  if (!recipe.includes('http://127.0.0.1:7600'))
    throw new Error(`the nginx recipe of ${GUIDE} does not proxy to 127.0.0.1:7600`);
  return recipe.replaceAll('http://127.0.0.1:7600', upstream);
}

/**
 * nginx as a child of the test, one process (no master and workers), with everything it writes in a temp dir of
 * its own, listening on a loopback port. `http` is the content of the `http { }` block; `@LISTEN@` in it is
 * replaced with the address nginx listens on.
 */
export class Nginx {
  private exitedAt: Promise<void>;

  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly proc: ChildProcess,
  ) {
    this.exitedAt = new Promise((resolve) => {
      proc.once('exit', () => resolve());
      proc.once('error', () => resolve());
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start(http: string): Promise<Nginx> {
    const dir = await mkdtemp(join(tmpdir(), 'tunnelward-nginx-'));
    try {
      // The port is free when picked; another process may take it before nginx listens, so a refusal picks again.
      for (let attempt = 1; ; attempt++) {
        const nginx = await Nginx.spawn(dir, await freePort(), http);
        const failure = await nginx.listening();
        if (!failure) return nginx;
        if (attempt >= 3 || !/Address already in use/.test(failure)) throw new Error(`nginx did not start: ${failure}`);
      }
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
  }

  private static async spawn(dir: string, port: number, http: string): Promise<Nginx> {
    const conf = join(dir, 'nginx.conf');
    const temp = (name: string) => `${name}_temp_path ${join(dir, name)};`;
    await writeFile(
      conf,
      [
        'daemon off;',
        // One process running as the test's user: no workers to outlive it, nothing written outside the temp dir.
        'master_process off;',
        `pid ${join(dir, 'nginx.pid')};`,
        `error_log ${join(dir, 'error.log')} info;`,
        'events { worker_connections 64; }',
        'http {',
        `  access_log ${join(dir, 'access.log')};`,
        ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((name) => `  ${temp(name)}`),
        http.replaceAll('@LISTEN@', `127.0.0.1:${port}`),
        '}',
        '',
      ].join('\n'),
    );
    // -e: the log of the start itself goes to the temp dir too, not to /var/log/nginx.
    const proc = spawn(NGINX, ['-p', dir, '-e', join(dir, 'error.log'), '-c', conf], { stdio: 'ignore' });
    return new Nginx(dir, port, proc);
  }

  /** Resolves once nginx accepts connections (undefined), or with its error log when it exits first. */
  private async listening(): Promise<string | undefined> {
    let exited = false;
    void this.exitedAt.then(() => (exited = true));
    const deadline = Date.now() + 10_000;
    while (!exited) {
      if (await this.accepts()) return undefined;
      if (Date.now() > deadline) {
        await this.kill();
        return 'not listening after 10 s';
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    return readFile(join(this.dir, 'error.log'), 'utf8').catch(() => 'exited, with no error log');
  }

  private accepts(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = connect(this.port, '127.0.0.1', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
  }

  /** Stops nginx: SIGTERM, SIGKILL after 5 s. */
  private async kill(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
    await this.exitedAt;
    clearTimeout(timer);
  }

  /** Stops nginx and removes its temp dir. */
  async stop(): Promise<void> {
    await this.kill();
    await rm(this.dir, { recursive: true, force: true });
  }
}
