// `tunnelward frp install`: the pinned frp built with Go (from the module cache the test setup filled) into a
// directory the daemon runs programs from, TunnelPath pointed at it, and a real tunnel through it; and every refusal.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, readlink, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test, { type ExecutionContext } from 'ava';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { cli, loggedIn } from '../../helpers/cli.js';
import { disposeWithTunnels, startWithRoot, tempDir } from '../../helpers/daemon.js';
import { echoServer, freePort, roundTrip } from '../../helpers/frp.js';
import { instanceSettings } from '../../helpers/instances.js';
import {
  addProxy,
  createTunnel,
  frpcPids,
  frpsFor,
  FRP_TOKEN,
  start,
  statusUntil,
  tcpTo,
} from '../../helpers/real-frp.js';

const run = promisify(execFile);

/** The release the checkout pins (the file the test setup reads too). */
const pinned = async () => (await readFile(join(PACKAGE_ROOT, 'frp-version'), 'utf8')).trim();

/** A root-owned dir that only root can change (not under /tmp, which the daemon refuses), removed with the test. */
async function trustedBase(t: ExecutionContext): Promise<string> {
  const base = await mkdtemp('/var/lib/tunnelward-test-');
  await chmod(base, 0o755);
  t.teardown(() => rm(base, { recursive: true, force: true }));
  return base;
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('frp install builds the pinned frpc and frps into a trusted dir, sets TunnelPath, and a tunnel runs through them', async (t) => {
  t.timeout(180_000);
  t.is(process.getuid?.(), 0, 'these tests run as root');
  const version = await pinned();
  const dir = join(await trustedBase(t), 'frp', version);
  const { daemon, root } = await startWithRoot({ settingsToml: instanceSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const env = await loggedIn(daemon, t);

  const began = Date.now();
  const installed = await cli(['frp', 'install', '--dir', dir], env);
  t.log(`frp install took ${Date.now() - began} ms`);
  t.is(installed.code, 0, installed.stderr);
  t.is(installed.stderr, '');
  const frpc = join(dir, 'frpc');
  const frps = join(dir, 'frps');
  t.regex(
    installed.stdout,
    new RegExp(`^building frpc and frps ${version} from github\\.com/fatedier/frp with go`, 'm'),
  );
  t.regex(
    installed.stdout,
    new RegExp(`^installed frpc and frps ${version} in ${escaped(dir)} \\(built in \\d+\\.\\d s\\)$`, 'm'),
  );
  t.regex(installed.stdout, new RegExp(`^TunnelPath is now ${escaped(frpc)} at ${escaped(daemon.url)}: `, 'm'));
  // Root's, 0755, nothing else left beside them; the dirs made are 0755 too.
  t.deepEqual((await readdir(dir)).sort(), ['frpc', 'frps']);
  for (const path of [frpc, frps, dir, join(dir, '..')]) {
    const info = await stat(path);
    t.like({ uid: info.uid, mode: info.mode & 0o7777 }, { uid: 0, mode: 0o755 }, path);
  }
  for (const program of [frpc, frps]) t.is((await run(program, ['-v'])).stdout.trim(), version.slice(1));
  const setting = await daemon.get('/settings/get?key=TunnelPath', { token: root });
  t.is(setting.body.data.value, frpc);

  // A tunnel: the installed frpc, against the installed frps, carrying bytes.
  const server = await frpsFor(t, { token: FRP_TOKEN, program: frps });
  const echo = await echoServer();
  t.teardown(() => echo.close());
  const remote = await freePort();
  const { id, configPath } = await createTunnel(daemon, root, server, 'installed_frp');
  await addProxy(daemon, root, id, tcpTo('echo', echo.port, remote));
  await start(daemon, root, id);
  await statusUntil(daemon, root, id, (s) => s.connected === true && s.proxyStatus.running === 1);
  await roundTrip(remote, 'through the installed frpc and frps');
  const [pid] = frpcPids(configPath);
  t.is(await readlink(`/proc/${pid}/exe`), frpc);

  const status = await cli(['frp', 'status'], env);
  t.is(status.code, 0, status.stderr);
  t.regex(status.stdout, new RegExp(`^pinned: +frp ${version} `, 'm'));
  t.regex(
    status.stdout,
    new RegExp(
      `^daemon: +TunnelPath ${escaped(frpc)} at ${escaped(daemon.url)}: frpc ${escaped(version.slice(1))}$`,
      'm',
    ),
  );

  // Again: nothing to build. Without a daemon to tell, it says how to set TunnelPath later.
  const again = await cli(['frp', 'install', '--dir', dir, '--url', 'http://127.0.0.1:1'], env);
  t.is(again.code, 0, again.stderr);
  t.regex(again.stdout, new RegExp(`^${escaped(dir)} already holds frpc and frps ${version}: nothing built$`, 'm'));
  t.regex(
    again.stdout,
    new RegExp(
      `^no daemon answers at http://127\\.0\\.0\\.1:1: TunnelPath not set; set it with tunnelward settings set TunnelPath=${escaped(frpc)} `,
      'm',
    ),
  );
  const json = await cli(['frp', 'install', '--dir', dir, '--no-set', '--json'], env);
  t.is(json.code, 0, json.stderr);
  t.like(JSON.parse(json.stdout), { version, dir, frpc, frps, built: false, tunnelPath: { set: false } });
});

test('frp install refuses what it cannot do, with the reason and a non-zero exit, and leaves nothing behind', async (t) => {
  const base = await trustedBase(t);
  // No daemon, and no login: a config dir of its own.
  const config = await tempDir('tunnelward-cli-', t);
  const frp = (args: string[], env: Record<string, string> = {}) =>
    cli(['frp', ...args], { TUNNELWARD_URL: 'http://127.0.0.1:1', XDG_CONFIG_HOME: config, ...env });

  const none = await frp([]);
  t.is(none.code, 2);
  t.regex(none.stderr, /^tunnelward frp: frp needs install or status$/m);
  t.regex((await frp(['upgrade'])).stderr, /frp has no command upgrade/);
  t.regex((await frp(['status', '--dir', base])).stderr, /frp status takes no flags but --url and --json/);
  // What is installed here is said even when the daemon cannot be asked.
  const unasked = await frp(['status']);
  t.is(unasked.code, 4);
  t.regex(unasked.stdout, /^pinned: +frp v\d+\.\d+\.\d+ /m);
  t.regex(unasked.stdout, /^daemon: +cannot ask the daemon at http:\/\/127\.0\.0\.1:1: not logged in/m);
  const badVersion = await frp(['install', '--version', 'latest']);
  t.is(badVersion.code, 2);
  t.regex(badVersion.stderr, /--version latest is not a release of frp: give one such as v0\.71\.0/);
  const badPath = await frp(['install', '--dir', join(base, 'with space')]);
  t.is(badPath.code, 2);
  t.regex(badPath.stderr, /TunnelPath must be an absolute path of letters, digits/);

  // Under /tmp: the daemon would refuse the program, so nothing is made there.
  const open = join(await tempDir('tunnelward-open-', t), 'frp');
  const refused = await frp(['install', '--dir', open]);
  t.is(refused.code, 1);
  t.regex(
    refused.stderr,
    new RegExp(
      `^tunnelward frp: ${escaped(open)} is not a place tunnelward runs programs from: \\S+ is writable by every user \\(mode 1777\\); choose a directory that only root can change`,
      'm',
    ),
  );
  t.false(existsSync(open));

  // No Go: what to install (or where the one installed is), and nothing made.
  const target = join(base, 'a', 'b');
  const noGo = await frp(['install', '--dir', target], { PATH: '/nonexistent' });
  t.is(noGo.code, 1);
  t.regex(noGo.stderr, /frpc and frps are built from frp's Go module, and go is not on PATH: /);
  t.regex(noGo.stderr, /golang-go|add \/usr\/local\/go\/bin to PATH/);
  t.false(existsSync(join(base, 'a')));

  // A release the module proxy cannot give (here: no proxy at all): said, and the dirs made for it removed.
  const unknown = await frp(['install', '--dir', target, '--version', '0.0.1'], { GOPROXY: 'off' });
  t.is(unknown.code, 1);
  t.regex(unknown.stderr, /cannot fetch github\.com\/fatedier\/frp@v0\.0\.1 through the Go module proxy \(off\): /);
  t.false(existsSync(join(base, 'a')));
  t.deepEqual(await readdir(base), []);
});
