// The operator's edit loop from the command line, the real binary against a real daemon: edit (a scripted EDITOR),
// set, proxy, env, boot; names and ids never confused; rm that asks and keeps the log.
import { chmod, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import initSqlJs from 'sql.js';
import { parse } from 'smol-toml';
import { cli, loggedIn } from '../../helpers/cli.js';
import { CLI, disposeWithTunnels, startDaemon, startWithRoot, tempDir, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, waitFor } from '../../helpers/instances.js';

let daemon: Daemon;
let root: string;
test.before(async () => {
  ({ daemon, root } = await startWithRoot({ settingsToml: instanceSettings() }));
});
test.after.always(() => disposeWithTunnels(daemon, root));

const fileOf = async (configPath: string) => parse(await readFile(configPath, 'utf8')) as any;
const infoOf = async (id: string) =>
  (await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root })).body.data;
const stateOf = async (id: string) => (await infoOf(id)).state as string;
const startTunnel = async (id: string) =>
  (await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root })).body.success as boolean;

/** An editor: a shell script (given its body; "$1" is the file) in a temp dir removed with the test. */
async function editorScript(t: ExecutionContext, body: string): Promise<{ editor: string; dir: string }> {
  const dir = await tempDir('tunnelward-editor-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const editor = join(dir, 'editor.sh');
  await writeFile(editor, `#!/bin/sh\nset -e\n${body}\n`);
  await chmod(editor, 0o700);
  return { editor, dir };
}

test('set changes top-level keys and says how each change was applied; --run-user is checked', async (t) => {
  const env = await loggedIn(daemon, t);
  const { id, configPath } = await createInstance(daemon, root, 'el_set');
  const stopped = await cli(['set', 'el_set', 'auth.token=rotated-1', 'transport.poolCount=3'], env);
  t.is(stopped.code, 0, stopped.stderr);
  t.regex(stopped.stdout, new RegExp(`^ok\\s+el_set \\(${id}\\): .*it applies at the next start`));
  t.like(await fileOf(configPath), { auth: { token: 'rotated-1' }, transport: { poolCount: 3 } });

  t.true(await startTunnel(id));
  const running = await cli(['set', `#${id}`, 'auth.token=rotated-2'], env);
  t.is(running.code, 0, running.stderr);
  t.regex(running.stdout, /applied by a restart/);
  t.is((await fileOf(configPath)).auth.token, 'rotated-2');
  t.is(await stateOf(id), 'running');

  const bad = await cli(['set', '--id', id, 'transport.poolCount=many', 'noSuchKey=1'], env);
  t.is(bad.code, 1);
  t.regex(bad.stdout, /^failed\s+el_set .*Unknown config key: noSuchKey/);
  const user = await cli(['set', 'el_set', '--run-user', 'no-such-user-here'], env);
  t.is(user.code, 1);
  t.regex(user.stdout, /runUser "no-such-user-here" is not a user on this system/);
  t.is((await cli(['set', 'el_set'], env)).code, 2, 'nothing to set is a usage error');
});

test('proxy add, set (and rename), disable, enable and rm; a running tunnel applies each by reload', async (t) => {
  const env = await loggedIn(daemon, t);
  const { id, configPath } = await createInstance(daemon, root, 'el_proxy');
  t.true(await startTunnel(id));
  const add = await cli(
    ['proxy', 'add', 'el_proxy', 'ssh', 'type=tcp', 'localIP=127.0.0.1', 'localPort=22', 'remotePort=6022'],
    env,
  );
  t.is(add.code, 0, add.stderr);
  t.regex(
    add.stdout,
    /^ok\s+el_proxy \(\d+\): proxy ssh added to instance el_proxy; applied by a reload \(revision \d+\)/,
  );
  const set = await cli(['proxy', 'set', 'el_proxy', 'ssh', 'remotePort=6023', 'name=ssh2'], env);
  t.is(set.code, 0, set.stderr);
  t.like((await fileOf(configPath)).proxies, [{ name: 'ssh2', remotePort: 6023, localPort: 22 }]);
  const off = await cli(['proxy', 'disable', `#${id}`, 'ssh2'], env);
  t.regex(off.stdout, /proxy ssh2 of instance el_proxy disabled; applied by a reload/);
  t.is((await fileOf(configPath)).proxies[0].enabled, false);
  t.is((await cli(['proxy', 'enable', 'el_proxy', 'ssh2'], env)).code, 0);
  t.is((await fileOf(configPath)).proxies[0].enabled, undefined);
  // Several proxies: each said; an unknown one fails, the rest are done.
  const rmd = await cli(['proxy', 'rm', 'el_proxy', 'nope', 'ssh2'], env);
  t.is(rmd.code, 1);
  t.regex(rmd.stdout, /^failed\s+el_proxy .*Proxy nope not found/m);
  t.regex(rmd.stdout, /^ok\s+el_proxy .*proxy ssh2 deleted/m);
  t.deepEqual((await fileOf(configPath)).proxies ?? [], []);
  t.is((await cli(['proxy', 'frob', 'el_proxy'], env)).code, 2);
});

test('env set reads the value from standard input, never from the command line; env unset removes it', async (t) => {
  const env = await loggedIn(daemon, t);
  const { id } = await createInstance(daemon, root, 'el_env');
  const set = await cli(['env', 'set', 'el_env', 'FRP_TOKEN'], env, 'from-stdin-secret\n');
  t.is(set.code, 0, set.stderr);
  t.regex(set.stdout, /^ok\s+el_env .*environment of instance el_env changed/);
  t.false(set.stdout.includes('from-stdin-secret'), 'the value is never shown');
  t.deepEqual(Object.keys((await infoOf(id)).environment), ['FRP_TOKEN']);
  const inline = await cli(['env', 'set', 'el_env', 'FRP_TOKEN=visible'], env);
  t.is(inline.code, 2);
  t.regex(inline.stderr, /takes the name alone .*visible to every user of this host/);
  const none = await cli(['env', 'set', 'el_env', 'OTHER'], env, '');
  t.is(none.code, 1, 'no value on standard input');
  t.is((await cli(['env', 'unset', 'el_env', 'FRP_TOKEN'], env)).code, 0);
  t.deepEqual((await infoOf(id)).environment, {});
});

test('boot on and off switch the start at boot', async (t) => {
  const env = await loggedIn(daemon, t);
  const { id } = await createInstance(daemon, root, 'el_boot');
  const on = await cli(['boot', 'el_boot', 'on'], env);
  t.is(on.code, 0, on.stdout + on.stderr);
  t.true((await infoOf(id)).bootAtStart);
  t.is((await cli(['boot', 'el_boot', 'off'], env)).code, 0);
  t.false((await infoOf(id)).bootAtStart);
  t.is((await cli(['boot', 'el_boot', 'maybe'], env)).code, 2);
});

test('edit: a scripted EDITOR (arguments split as git does) changes the file; the diff and how it applied are shown', async (t) => {
  const env = await loggedIn(daemon, t);
  const { id, configPath } = await createInstance(daemon, root, 'el_edit', { 'transport.poolCount': 2 });
  const before = await fileOf(configPath);
  const run = await cli(['edit', 'el_edit'], { ...env, EDITOR: "sed -i 's/^poolCount = 2$/poolCount = 4/'" });
  t.is(run.code, 0, run.stderr);
  t.regex(run.stdout, /^--- el_edit \(revision \d+\)\n\+\+\+ el_edit \(revision \d+\)\n@@ /);
  t.regex(run.stdout, /^-poolCount = 2$/m);
  t.regex(run.stdout, /^\+poolCount = 4$/m);
  t.regex(run.stdout, /^ok\s+el_edit \(\d+\): config file of instance el_edit replaced; it applies at the next start/m);
  const after = await fileOf(configPath);
  t.is(after.transport.poolCount, 4);
  t.deepEqual(after.webServer, before.webServer, "tunnelward's admin endpoint is kept");

  // Running: a change of a top-level key restarts it; VISUAL wins over EDITOR.
  t.true(await startTunnel(id));
  const restart = await cli(['edit', `#${id}`], {
    ...env,
    VISUAL: "sed -i 's/^poolCount = 4$/poolCount = 5/'",
    EDITOR: 'false',
  });
  t.is(restart.code, 0, restart.stderr);
  t.regex(restart.stdout, /replaced; applied by a restart/);
  t.is(await stateOf(id), 'running');

  const same = await cli(['edit', 'el_edit'], { ...env, EDITOR: 'true' });
  t.is(same.code, 0, same.stderr);
  t.regex(same.stdout, /el_edit \(\d+\): no change: nothing applied/);
  const empty = await cli(['edit', 'el_edit'], { ...env, EDITOR: 'truncate -s 0' });
  t.is(empty.code, 0, empty.stderr);
  t.regex(empty.stdout, /the file was left empty: nothing applied/);
  const failing = await cli(['edit', 'el_edit'], { ...env, EDITOR: 'false' });
  t.is(failing.code, 1);
  t.regex(failing.stderr, /the editor \(false\) exited with 1: nothing applied/);
  t.is((await fileOf(configPath)).transport.poolCount, 5);
});

test('edit: a refused file opens again with the reason on top and the text as written; the second save applies', async (t) => {
  const env = await loggedIn(daemon, t);
  const { configPath } = await createInstance(daemon, root, 'el_refused');
  // First save: an unknown key and a webServer of the user's own; second save (the reason on top): the key fixed.
  const { editor, dir } = await editorScript(
    t,
    `if grep -q '^# tunnelward: this file was not applied' "$1"; then
  cp "$1" "$(dirname "$0")/reopened.toml"
  sed -i 's/^bogusKey = 1$/user = "edited"/' "$1"
else
  sed -i '1i bogusKey = 1\\nwebServer.port = 1' "$1"
fi`,
  );
  // Someone at a terminal: the file is opened again for them.
  const run = await cli(['edit', 'el_refused'], { ...env, EDITOR: editor }, undefined, { terminal: true });
  t.is(run.code, 0, run.stderr);
  t.regex(run.stderr, /el_refused \(\d+\) refused the file: Unknown config key: bogusKey\nopening it again/);
  const reopened = await readFile(join(dir, 'reopened.toml'), 'utf8');
  t.regex(reopened, /^# tunnelward: this file was not applied:\n# {3}Unknown config key: bogusKey\n/);
  t.regex(reopened, /^bogusKey = 1$/m, "the user's text, as they wrote it");
  t.regex(run.stdout, /^\+user = "edited"$/m);
  t.regex(run.stdout, /webServer is tunnelward's own admin endpoint .*your change to it was not applied/);
  const file = await fileOf(configPath);
  t.is(file.user, 'edited');
  t.not(file.webServer.port, 1);
  t.false(/tunnelward: this file was not applied/.test(await readFile(configPath, 'utf8')));

  // A refusal saved again unchanged gives up, and says so.
  const stubborn = await editorScript(
    t,
    `grep -q '^# tunnelward: this file was not applied' "$1" || sed -i '1i bogusKey = 1' "$1"`,
  );
  const gaveUp = await cli(['edit', 'el_refused'], { ...env, EDITOR: stubborn.editor }, undefined, { terminal: true });
  t.is(gaveUp.code, 1);
  t.regex(gaveUp.stdout, /^failed\s+el_refused \(\d+\): no change since the file was opened again: nothing applied/m);

  // No terminal (a script as $EDITOR, CI): the first refusal ends it, non-zero, the file untouched; an editor that
  // would change its text at every opening does not loop.
  const before = await readFile(configPath, 'utf8');
  const looping = await editorScript(t, `printf '\nbogusKey = 1\n' | cat - "$1" > "$1.new" && mv "$1.new" "$1"`);
  const once = await cli(['edit', 'el_refused'], { ...env, EDITOR: looping.editor });
  t.is(once.code, 1);
  t.regex(once.stderr, /refused the file: Unknown config key: bogusKey\n$/);
  t.regex(once.stdout, /^failed\s+el_refused \(\d+\): refused, and no terminal to reopen it on: nothing applied$/m);
  t.is(await readFile(configPath, 'utf8'), before);
});

test('edit: a change made by someone else meanwhile is a 409; the file opens again as it is now, and says so', async (t) => {
  const env = await loggedIn(daemon, t);
  const { id, configPath } = await createInstance(daemon, root, 'el_race', { 'transport.poolCount': 2 });
  // While the first edit is open, another operator sets a key; the second opening makes the change again.
  const { editor } = await editorScript(
    t,
    `if grep -q '^# tunnelward: this file was not applied' "$1"; then
  sed -i 's/^poolCount = .*$/poolCount = 9/' "$1"
else
  "$TW_NODE" "$TW_CLI" set el_race auth.token=set-meanwhile >/dev/null
  sed -i 's/^poolCount = 2$/poolCount = 9/' "$1"
fi`,
  );
  const run = await cli(['edit', 'el_race'], { ...env, EDITOR: editor, TW_NODE: process.execPath, TW_CLI: CLI });
  t.is(run.code, 0, run.stderr);
  t.regex(run.stderr, /the config file of el_race \(\d+\) was changed by someone else while you edited it/);
  const file = await fileOf(configPath);
  t.like(file, { auth: { token: 'set-meanwhile' }, transport: { poolCount: 9 } }, 'both changes stand');

  // The API: the version an edit started from, and a replace that names an older one.
  const exported = (await daemon.get(`/tunnelAct/instanceMgr/export?instanceID=${id}`, { token: root })).body.data;
  const stale = await daemon.post(
    '/tunnelAct/instanceMgr/replaceConfig',
    { instanceID: id, content: exported.content, baseVersion: '0000000000000000' },
    { token: root },
  );
  t.is(stale.status, 409);
  t.regex(stale.body.message, /was changed since version 0000000000000000 was read .*read it again/);
});

test('edit: a proxy that takes a port another instance holds on the same server is refused (409) and opened again', async (t) => {
  const env = await loggedIn(daemon, t);
  await createInstance(daemon, root, 'el_claim_a', {}, { serverPort: '21999' });
  const b = await createInstance(daemon, root, 'el_claim_b', {}, { serverPort: '21999' });
  const proxy = { name: 'web', type: 'tcp', localIP: '127.0.0.1', localPort: '80', remotePort: '7080' };
  t.true(
    (await daemon.post('/tunnelAct/proxyMgr/create', { instanceID: b.id, proxyInfo: proxy }, { token: root })).body
      .success,
  );
  const { editor } = await editorScript(
    t,
    `grep -q '^# tunnelward: this file was not applied' "$1" && exit 0
printf '\\n[[proxies]]\\nname = "mine"\\ntype = "tcp"\\nlocalPort = 81\\nremotePort = 7080\\n' >> "$1"`,
  );
  const run = await cli(['edit', 'el_claim_a'], { ...env, EDITOR: editor }, undefined, { terminal: true });
  t.is(run.code, 1, 'given up on the second, unchanged save');
  t.regex(
    run.stderr,
    /refused the file: proxy mine: remotePort 7080 \(tcp\) is already used by proxy web of instance el_claim_b/,
  );
});

test('create refuses a name of digits only; rm asks before deleting a running instance, keeps its log unless --purge, and does the rest when a name is unknown', async (t) => {
  const env = await loggedIn(daemon, t);
  const digits = await cli(['create', '123', '--server', '127.0.0.1:7000'], env);
  t.is(digits.code, 1);
  t.regex(digits.stderr, /name 123 is only digits: it would read as an instance id/);

  const running = await createInstance(daemon, root, 'el_rm_running');
  await createInstance(daemon, root, 'el_rm_stopped');
  t.true(await startTunnel(running.id));
  const logOf = (id: string) => join(daemon.dataDir, 'logs', `tunnel_${id}.log`);
  await waitFor(
    () =>
      stat(logOf(running.id)).then(
        (s) => s.size,
        () => 0,
      ),
    (size) => size > 0,
  );
  // Not a terminal, no --yes: the running one is refused, the stopped one deleted, the unknown one reported.
  const first = await cli(['rm', 'el_rm_running', 'el_rm_stopped', 'el_rm_nosuch'], env);
  t.is(first.code, 1);
  t.regex(
    first.stdout,
    /^failed\s+el_rm_running \(\d+\): not deleted: it is running, and there is no terminal to confirm on \(give --yes/m,
  );
  t.regex(first.stdout, /^ok\s+el_rm_stopped \(\d+\): deleted; its log is kept/m);
  t.regex(first.stdout, /^failed\s+el_rm_nosuch: no instance named el_rm_nosuch$/m);
  t.is(await stateOf(running.id), 'running');

  const yes = await cli(['rm', '--yes', 'el_rm_running'], env);
  t.is(yes.code, 0, yes.stdout + yes.stderr);
  t.true((await stat(logOf(running.id))).size > 0, 'the log is kept');
  const again = await createInstance(daemon, root, 'el_rm_purge');
  t.true(await startTunnel(again.id));
  await waitFor(
    () =>
      stat(logOf(again.id)).then(
        () => true,
        () => false,
      ),
    (there) => there,
  );
  const purged = await cli(['rm', '--yes', '--purge', `#${again.id}`], env);
  t.is(purged.code, 0, purged.stdout + purged.stderr);
  t.regex(purged.stdout, /deleted, its log too/);
  await t.throwsAsync(stat(logOf(again.id)), { code: 'ENOENT' });
});

test('an older instance whose name is digits only is reached by its name, and the instance with that id by #id or --id', async (t) => {
  // Names of digits only were once allowed: such an instance is made by editing the database of a stopped daemon.
  const own = await startDaemon({ settingsToml: instanceSettings() });
  let current = own;
  let token = await own.login();
  t.teardown(() => disposeWithTunnels(current, token));
  const legacy = await createInstance(own, token, 'was_named');
  const other = await createInstance(own, token, 'other');
  await own.stop();
  const SQL = await initSqlJs();
  const dbPath = join(own.dataDir, 'tunnelward.db');
  const db = new SQL.Database(await readFile(dbPath));
  // Named after the other instance's id: the one confusion that must not happen.
  db.run('UPDATE instances SET name = ? WHERE id = ?', [other.id, Number(legacy.id)]);
  await writeFile(dbPath, db.export());
  db.close();
  const again = await startDaemon({ dataDir: own.dataDir });
  current = again;
  token = await again.login();
  const env = await loggedIn(again, t);

  const byName = await cli(['status', other.id, '--json'], env);
  t.is(byName.code, 0, byName.stderr);
  t.like(JSON.parse(byName.stdout), [{ instanceID: Number(legacy.id), name: other.id }]);
  const byId = await cli(['status', `#${other.id}`, '--json'], env);
  t.like(JSON.parse(byId.stdout), [{ instanceID: Number(other.id), name: 'other' }]);
  const byFlag = await cli(['status', '--id', legacy.id, '--json'], env);
  t.like(JSON.parse(byFlag.stdout), [{ name: other.id }]);
  const set = await cli(['set', other.id, 'auth.token=digits'], env);
  t.is(set.code, 0, set.stderr);
  t.is((await fileOf(legacy.configPath)).auth.token, 'digits');
  // Renaming it to its own name is no change; a new name of digits only is refused.
  const rename = await again.post(
    '/tunnelAct/instanceMgr/modify',
    { instanceID: legacy.id, type: 'systemConfig', modifiedData: { name: other.id, bootAtStart: false } },
    { token },
  );
  t.true(rename.body.success, rename.body.message);
  const unknown = await cli(['status', '777'], env);
  t.is(unknown.code, 1);
  t.regex(unknown.stderr, /no instance named 777/);
});
