import { spawn } from 'node:child_process';
import { readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { ADMIN, CLI, dispose, startWithRoot, tempDir, type Daemon } from '../../helpers/daemon.js';
import { cli } from '../../helpers/cli.js';
import { waitFor } from '../../helpers/instances.js';

/** Tokens of the daemon of the stream test live seconds, not an hour: long enough to connect, short enough to outlive. */
const TOKEN_TTL_MS = 10_000;
const KEY = /^twk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/;

let daemon: Daemon;
const homes: string[] = [];
test.before(async () => {
  ({ daemon } = await startWithRoot({ settingsToml: '[RateLimit]\nLogin = 1000\n' }));
});
test.after.always(async () => {
  await dispose(daemon);
  for (const home of homes) await rm(home, { recursive: true, force: true });
});

/** A config dir of its own for one user of the CLI, talking to the test daemon. */
async function home(url = daemon.url): Promise<Record<string, string>> {
  const dir = await tempDir('tunnelward-cli-');
  homes.push(dir);
  return { XDG_CONFIG_HOME: dir, TUNNELWARD_URL: url };
}

async function passwordLogin(username = ADMIN.username, passwd = ADMIN.passwd, url = daemon.url) {
  const env = await home(url);
  const run = await cli(['login', '--user', username], { ...env, TUNNELWARD_PASSWORD: passwd });
  if (run.code !== 0) throw new Error(`login failed: ${run.stderr}`);
  return env;
}

test('keys create prints the key alone, once; login --key keeps it (0600); commands work with it; keys rm ends it', async (t) => {
  await daemon.userWithToken(await daemon.login(), 'cli_ops', 'admin');
  const owner = await passwordLogin('cli_ops', 'Passw0rd!x');
  const created = await cli(['keys', 'create', 'ci', '--role', 'visitor', '--expires', '30d', '--rate', '50'], owner);
  t.is(created.code, 0, created.stderr);
  const key = created.stdout.trim();
  t.regex(key, KEY, 'standard output is the key alone');
  t.regex(
    created.stderr,
    /API key ci created for cli_ops \(visitor, scope all, expires .*, 50 requests a minute\); it is shown only now/,
  );

  const listed = await cli(['keys', 'ls'], owner);
  t.is(listed.code, 0, listed.stderr);
  t.regex(listed.stdout, /^name\s+id\s+role\s+scope\s+rate\/min\s/m);
  t.regex(listed.stdout, /^ci\s+[0-9a-f]{16}\s+visitor\s+all\s+50\s/m);
  t.false(listed.stdout.includes(key.slice(-43)), 'no secret in the listing');
  const json = JSON.parse((await cli(['keys', 'ls', '--json'], owner)).stdout);
  t.like(json[0], { name: 'ci', role: 'visitor', ratePerMinute: 50, createdBy: 'cli_ops' });

  // Logging in with the key, read from standard input.
  const machine = await home();
  const login = await cli(['login', '--key'], machine, `${key}\n`);
  t.is(login.code, 0, login.stderr);
  t.regex(login.stdout, /logged in to .* as cli_ops \(visitor\) with API key ci/);
  t.false(login.stdout.includes(key) || login.stderr.includes(key), 'the key is not printed back');
  const file = join(machine.XDG_CONFIG_HOME!, 'tunnelward', 'credentials.json');
  t.is((await stat(file)).mode & 0o777, 0o600);
  t.is(JSON.parse(await readFile(file, 'utf8')).servers[daemon.url].token, key);

  const who = await cli(['whoami'], machine);
  t.is(who.code, 0, who.stderr);
  t.regex(who.stdout, /cli_ops \(visitor\) at .*, API key ci valid until \d{4}-/);
  const ls = await cli(['ls'], machine);
  t.is(ls.code, 0, ls.stderr);
  t.regex(ls.stdout, /no instances|id\s+name/);
  const settings = await cli(['settings', 'get'], machine);
  t.is(settings.code, 4, 'a visitor-scoped key of an admin cannot read settings');
  const mint = await cli(['keys', 'create', 'child'], machine);
  t.is(mint.code, 4);
  t.regex(mint.stderr, /needs a password login/);

  // The key from the environment, with nothing stored.
  const job = await home();
  const fromEnv = await cli(['whoami', '--json'], { ...job, TUNNELWARD_API_KEY: key });
  t.is(fromEnv.code, 0, fromEnv.stderr);
  t.like(JSON.parse(fromEnv.stdout), { username: 'cli_ops', keyName: 'ci' });

  // A fresh login: the first one's token may have expired by now.
  const revoked = await cli(['keys', 'rm', 'ci'], await passwordLogin('cli_ops', 'Passw0rd!x'));
  t.is(revoked.code, 0, revoked.stderr);
  t.regex(revoked.stdout, /API key ci revoked/);
  const after = await cli(['ls'], machine);
  t.is(after.code, 4, 'revoked at once');
  t.regex(after.stderr, /Invalid API key: unknown or revoked .*tunnelward login --key/);
  const out = await cli(['logout'], machine);
  t.is(out.code, 0, out.stderr);
  t.is((await cli(['whoami'], machine)).code, 4, 'forgotten');

  t.is((await cli(['keys', 'create', 'x', '--expires', '30x'], machine)).code, 2, 'a usage error, before any request');
  t.is((await cli(['login', '--key'], await home(), 'not-a-key\n')).code, 4);
});

test('a superuser creates a key for another user with --user', async (t) => {
  await daemon.userWithToken(await daemon.login(), 'cli_guest', 'visitor');
  const admin = await passwordLogin();
  const created = await cli(['keys', 'create', 'deploy', '--user', 'cli_guest', '--json'], admin);
  t.is(created.code, 0, created.stderr);
  t.like(JSON.parse(created.stdout), { name: 'deploy', username: 'cli_guest', role: 'visitor', createdBy: 'admin' });
  const theirs = await cli(['keys', 'ls', '--user', 'cli_guest'], admin);
  t.regex(theirs.stdout, /^deploy\s/m);
  t.is((await cli(['keys', 'rm', 'deploy', '--user', 'cli_guest'], admin)).code, 0);
  t.is((await cli(['keys', 'ls', '--user', 'cli_guest'], admin)).stdout, 'no API keys\n');
});

test('keys create --scope metrics makes a key that reads /metrics alone, without X-Timestamp; ls shows its scope', async (t) => {
  const admin = await passwordLogin();
  const created = await cli(['keys', 'create', 'scraper', '--scope', 'metrics'], admin);
  t.is(created.code, 0, created.stderr);
  const key = created.stdout.trim();
  t.regex(key, KEY);
  t.regex(created.stderr, /API key scraper created for admin \(admin, scope metrics, no expiry, /);
  t.regex((await cli(['keys', 'ls'], admin)).stdout, /^scraper\s+[0-9a-f]{16}\s+admin\s+metrics\s/m);
  const scraped = await fetch(`${daemon.url}/metrics`, { headers: { Authorization: `Bearer ${key}` } });
  t.is(scraped.status, 200);
  t.regex(await scraped.text(), /^tunnelward_instances\{/m);
  // Anything else with it is refused, and says why.
  const login = await cli(['login', '--key'], await home(), `${key}\n`);
  t.is(login.code, 4);
  t.regex(login.stderr, /API key scraper has the metrics scope: it may be used for GET \/metrics only/);
  const wrong = await cli(['keys', 'create', 'x', '--scope', 'read'], admin);
  t.is(wrong.code, 2, 'a usage error, before any request');
  t.regex(wrong.stderr, /--scope takes all or metrics, not read/);
  const help = await cli(['keys', '--help'], admin);
  t.regex(help.stdout + help.stderr, /--scope S/);
  t.is((await cli(['keys', 'rm', 'scraper'], admin)).code, 0);
});

test('logs -f on a key outlives the hourly token: a token stream ends at its expiry, the key stream goes on', async (t) => {
  const { daemon: shortLived, root } = await startWithRoot({
    settingsToml: 'Debug = true\n',
    env: { TUNNELWARD_TOKEN_TTL_MS: String(TOKEN_TTL_MS) },
  });
  t.teardown(() => dispose(shortLived));
  const created = await shortLived.post('/apiKeyMgr/create', { name: 'follower' }, { token: root });
  t.true(created.body.success, created.body.message);
  const machine = await home(shortLived.url);
  t.is((await cli(['login', '--key'], machine, `${created.body.data.key}\n`)).code, 0);

  const follow = (env: Record<string, string>) => {
    const proc = spawn(process.execPath, [CLI, 'logs', '-f', '-n', '0', '--system'], {
      env: { ...process.env, ...env, NO_COLOR: '1' },
    });
    const seen = { out: '', err: '' };
    proc.stdout.on('data', (chunk: Buffer) => (seen.out += chunk.toString()));
    proc.stderr.on('data', (chunk: Buffer) => (seen.err += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => proc.on('close', resolve));
    t.teardown(() => proc.kill('SIGKILL'));
    return { proc, seen, exited };
  };
  const byKey = follow(machine);
  const byToken = follow(await passwordLogin(ADMIN.username, ADMIN.passwd, shortLived.url));
  // Both follow: a request's log line reaches both.
  await waitFor(
    async () => (await shortLived.get('/system/getStatus'), [byToken.seen.out, byKey.seen.out]),
    (outs) => outs.every((out) => out.includes('/system/getStatus')),
  );

  t.is(await byToken.exited, 4, 'the token stream ends when the token expires');
  t.regex(byToken.seen.err, /stream ended: token expired/);
  const mark = byKey.seen.out.length;
  await shortLived.get('/system/getSoftwareInfo');
  await waitFor(
    async () => byKey.seen.out.slice(mark),
    (text) => text.includes('/system/getSoftwareInfo'),
  );
  t.is(byKey.proc.exitCode, null, 'the key stream is still open');
  byKey.proc.kill('SIGINT');
  t.is(await byKey.exited, 0);
});
