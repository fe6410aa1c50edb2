import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rename, rm, rmdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { syncDirectory } from '../fs/atomic.js';
import { PACKAGE_ROOT } from '../paths.js';
import { checkTunnelClient, tunnelClientVersion } from '../system/tunnel-client.js';
import { findExecutable, ownersText, trustedOwners, untrustedReason } from '../system/trusted-program.js';

/** frp's Go module: its go.mod has a replace directive, so `go install` refuses it and it is built in its own dir. */
export const FRP_MODULE = 'github.com/fatedier/frp';

/** A build with empty Go caches (the module and its dependencies downloaded) took 136 s on 2 busy cores. */
const BUILD_TIMEOUT_MS = 15 * 60_000;

/** Where Go's own installer puts it: not on the PATH sudo gives (secure_path). */
const GO_TARBALL_PATH = '/usr/local/go/bin/go';

/**
 * The frp release this tunnelward is built and tested against, from the file `frp-version` beside package.json: what
 * `tunnelward frp install` installs, and what the test setup builds (test/setup/build-frp.sh reads the same file).
 */
export function pinnedFrpVersion(): string {
  const path = join(PACKAGE_ROOT, 'frp-version');
  const text = readFileSync(path, 'utf8').trim();
  const version = frpVersionTag(text);
  if (version !== text)
    throw new Error(`${path} must hold an frp release such as v0.71.0, not ${JSON.stringify(text)}`);
  return version;
}

/** A release as frp tags them: `v0.71.0` (`0.71.0` is taken as that too); undefined for anything else. */
export function frpVersionTag(text: string): string | undefined {
  const match = /^v?(\d{1,4}\.\d{1,4}\.\d{1,4})$/.exec(text);
  return match ? `v${match[1]}` : undefined;
}

/** Where frpc and frps go unless told: a root-owned dir for root, one under the user's home for anyone else. */
export function defaultFrpDir(version: string): string {
  const parent =
    process.getuid?.() === 0 ? '/usr/local/lib/tunnelward' : join(homedir(), '.local', 'lib', 'tunnelward');
  return join(parent, `frp-${version}`);
}

export interface FrpInstall {
  version: string;
  dir: string;
  frpc: string;
  frps: string;
  /** False when `dir` already held both programs at that version: nothing was built. */
  built: boolean;
  /** How long the build and the copy took. */
  seconds: number;
  /** The Go that built them (`go1.26.8`), when they were built. */
  go?: string;
}

const run = (file: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
  new Promise<{ stdout: string; stderr: string; failed?: Error }>((resolve) => {
    execFile(
      file,
      args,
      { ...options, timeout: BUILD_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => resolve({ stdout, stderr, failed: err ?? undefined }),
    );
  });

/** Go, on PATH; the error says what to install, or how to reach the one Go's installer put out of sudo's PATH. */
async function findGo(): Promise<string> {
  try {
    return await findExecutable('go');
  } catch {
    const bin = dirname(GO_TARBALL_PATH);
    const hint = existsSync(GO_TARBALL_PATH)
      ? `${GO_TARBALL_PATH} is there: add ${bin} to PATH (sudo leaves it out: ` +
        `sudo env PATH="${bin}:$PATH" tunnelward frp install)`
      : 'install Go 1.21 or later (Debian and Ubuntu: apt-get install golang-go; elsewhere https://go.dev/dl/) ' +
        'and run tunnelward frp install again';
    throw new Error(`frpc and frps are built from frp's Go module, and go is not on PATH: ${hint}`);
  }
}

/**
 * Checks that `dir` is (or, made with its missing parents, would be) a place only `owners` can change, the rule
 * `TunnelPath` is held to; throws with the reason otherwise. Returns the dirs still to make, outermost first.
 */
async function checkDir(dir: string, owners: readonly number[]): Promise<string[]> {
  const missing: string[] = [];
  let existing = dir;
  while (!existsSync(existing)) {
    missing.unshift(existing);
    existing = dirname(existing);
  }
  const reason = await untrustedReason(existing, owners, 'directory');
  if (reason) {
    throw new Error(
      `${dir} is not a place tunnelward runs programs from: ${reason}; choose a directory that only ` +
        `${ownersText(owners)} can change, in directories that only ${ownersText(owners)} can change (--dir DIR)`,
    );
  }
  return missing;
}

/** Makes each dir (mode 0755 whatever the umask), adding those it made to `made` (innermost first). */
async function makeDirs(dirs: readonly string[], made: string[]): Promise<void> {
  for (const path of dirs) {
    const fresh = await mkdir(path).then(
      () => true,
      (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
        return false;
      },
    );
    if (fresh) made.unshift(path);
    await chmod(path, 0o755);
  }
}

/** Whether `dir` holds frpc and frps that both say they are `version`. */
async function installedAlready(dir: string, version: string): Promise<boolean> {
  for (const name of ['frpc', 'frps']) {
    const said = await tunnelClientVersion(join(dir, name)).catch(() => undefined);
    if (said?.replace(/^v/, '') !== version.slice(1)) return false;
  }
  return true;
}

/** `go mod download -json`: the module's directory in Go's module cache, fetched through the module proxy. */
async function moduleDir(go: string, version: string, cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  const { stdout, stderr, failed } = await run(go, ['mod', 'download', '-json', `${FRP_MODULE}@${version}`], {
    cwd,
    env,
  });
  let answer: { Dir?: string; Error?: string } = {};
  try {
    answer = JSON.parse(stdout);
  } catch {
    // said below, with what go printed
  }
  if (failed || !answer.Dir) {
    const proxy = (await run(go, ['env', 'GOPROXY'], { env })).stdout.trim();
    const why = answer.Error ?? (stderr.trim() || failed?.message || 'no module directory in its answer');
    throw new Error(`cannot fetch ${FRP_MODULE}@${version} through the Go module proxy (${proxy}): ${why}`);
  }
  return answer.Dir;
}

/**
 * Builds frpc and frps of frp `version` with Go and puts them into `dir`, a directory only root (or this user) can
 * change, made if missing: built into a private dir beside them, asked their version, then each renamed into place
 * (a program there is never half written; a tunnel running the previous one keeps it). A dir that already holds both
 * at that version is left as it is. The frpc installed passes the check the daemon makes of `TunnelPath`.
 */
export async function installFrp(
  version: string,
  dir: string,
  progress: (line: string) => void = () => {},
): Promise<FrpInstall> {
  const began = Date.now();
  const owners = trustedOwners();
  const missing = await checkDir(dir, owners);
  const frpc = join(dir, 'frpc');
  const frps = join(dir, 'frps');
  const done = (built: boolean, go?: string): FrpInstall => ({
    version,
    dir,
    frpc,
    frps,
    built,
    seconds: (Date.now() - began) / 1000,
    go,
  });
  if (missing.length === 0 && (await installedAlready(dir, version))) {
    await checkTunnelClient(frpc);
    return done(false);
  }
  const go = await findGo();
  const env = { ...process.env, GOFLAGS: '-mod=readonly', CGO_ENABLED: '0' };
  const goVersion = (await run(go, ['env', 'GOVERSION'], { env })).stdout.trim();
  const made: string[] = [];
  try {
    await makeDirs(missing, made);
    // Checked again once made: a dir in between could have been made by someone else meanwhile.
    await checkDir(dir, owners);
    progress(`building frpc and frps ${version} from ${FRP_MODULE} with ${goVersion || go}`);
    await build(go, version, dir, env);
    // What the daemon will check when TunnelPath names it: said here, not at the first start.
    await checkTunnelClient(frpc);
  } catch (err) {
    for (const path of made) await rmdir(path).catch(() => {});
    if ((err as NodeJS.ErrnoException).code === 'EACCES')
      throw new Error(
        `cannot write in ${dir} (${(err as Error).message}): run it as root, or give --dir a directory you may write in`,
        { cause: err },
      );
    throw err;
  }
  return done(true, goVersion || undefined);
}

/** Builds both programs into a private dir inside `dir`, asks each its version, then renames them into place. */
async function build(go: string, version: string, dir: string, env: NodeJS.ProcessEnv): Promise<void> {
  const staging = await mkdtemp(join(dir, '.frp-build-'));
  try {
    const source = await moduleDir(go, version, staging, env);
    for (const name of ['frpc', 'frps']) {
      // The dashboards' assets are not in the module: noweb leaves them out.
      const args = ['build', '-trimpath', '-ldflags', '-s -w', '-tags', `${name},noweb`];
      const built = await run(go, [...args, '-o', join(staging, name), `./cmd/${name}`], { cwd: source, env });
      if (built.failed) {
        const said = built.stderr.trim().split('\n').slice(-5).join('\n') || built.failed.message;
        throw new Error(`go build of ${name} ${version} failed:\n${said}`);
      }
      await chmod(join(staging, name), 0o755);
      const said = await tunnelClientVersion(join(staging, name));
      if (said.replace(/^v/, '') !== version.slice(1))
        throw new Error(`the ${name} built from ${FRP_MODULE}@${version} says it is ${said}`);
    }
    for (const name of ['frpc', 'frps']) await rename(join(staging, name), join(dir, name));
    await syncDirectory(dir);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
