import { execFile } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test, { type ExecutionContext } from 'ava';
import { writeFileAtomic } from '../../../src/fs/atomic.js';
import {
  checkConfigFileAccess,
  configFileAccess,
  configFileWriteOptions,
  runUserCannotRead,
  type AccessHost,
} from '../../../src/system/run-user-access.js';
import { trustedProgram } from '../../../src/system/trusted-program.js';

const run = promisify(execFile);
const ROOT = { name: 'root', uid: 0, gid: 0, home: '/root' };

/**
 * A host whose user database is the lines given (alice 4201, bob 4202, carol 4203; tunnelward is root), whose ACL
 * tools are the real ones unless `program` says otherwise.
 */
async function hostWith(
  t: ExecutionContext,
  passwd: string[],
  group: string[],
  program: AccessHost['program'] = trustedProgram,
): Promise<AccessHost> {
  const dir = await mkdtemp(join(tmpdir(), 'access-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const line = (entry: string) => `${entry}\n`;
  await writeFile(join(dir, 'passwd'), ['root:x:0:0:root:/root:/bin/sh', ...passwd].map(line).join(''));
  await writeFile(join(dir, 'group'), ['root:x:0:', ...group].map(line).join(''));
  return { me: ROOT, passwdFile: join(dir, 'passwd'), groupFile: join(dir, 'group'), program };
}

const alice = (gid: number) => `alice:x:4201:${gid}::/home/alice:/bin/sh`;
const bob = (gid: number) => `bob:x:4202:${gid}::/home/bob:/bin/sh`;
const acl = async (path: string) =>
  (await run('getfacl', ['--omit-header', '--numeric', '--no-effective', path])).stdout.trim().split('\n');
const noAclTools = (name: string) => Promise.reject(new Error(`${name} on PATH is missing or not an executable file`));

test('a run user with a primary group of its own: its group, mode 0640, on every host', async (t) => {
  const host = await hostWith(t, [alice(4201), bob(4202)], ['alice:x:4201:', 'bob:x:4202:alice'], noAclTools);
  t.deepEqual(await configFileAccess('alice', host), { form: 'group', group: 4201 });
  t.deepEqual(await configFileWriteOptions('alice', host), { mode: 0o640, group: 4201 });
});

test('a primary group another user has, names as a member, or is not named after the run user: an ACL', async (t) => {
  const shared = [
    { why: 'shares', passwd: [alice(100), bob(100)], group: ['users:x:100:'], says: 'with bob' },
    { why: 'a member', passwd: [alice(4201), bob(4202)], group: ['alice:x:4201:bob'], says: 'with bob' },
    { why: 'the name', passwd: [alice(4300)], group: ['tunnels:x:4300:alice'], says: 'is not named alice' },
  ];
  for (const { why, passwd, group, says } of shared) {
    const host = await hostWith(t, passwd, group);
    const access = await configFileAccess('alice', host);
    t.like(access, { form: 'acl', group: 0, reader: 4201 }, why);
    t.deepEqual(
      access.form === 'acl' && access.tools,
      { setfacl: await trustedProgram('setfacl'), getfacl: await trustedProgram('getfacl') },
      why,
    );
    const refused = await configFileAccess('alice', { ...host, program: noAclTools });
    t.true(refused.form === 'own' && refused.refused!.includes(says), why);
  }
});

test('without setfacl a run user that shares its group is refused, saying both ways out; never given the group', async (t) => {
  const host = await hostWith(t, [alice(100), bob(100)], ['users:x:100:'], noAclTools);
  const access = await configFileAccess('alice', host);
  const reason =
    'runUser alice shares its primary group (gid 100) with bob, so only an ACL lets it alone read its config file, ' +
    'and setfacl on PATH is missing or not an executable file: install the acl package (setfacl), or give alice a ' +
    'primary group of its own (a group named alice that no other user is in: groupadd alice; usermod -g alice alice)';
  t.deepEqual(access, { form: 'own', refused: reason });
  // A file still written (an edit) is tunnelward's alone; the start says why it cannot run.
  t.deepEqual(await configFileWriteOptions('alice', host), { mode: 0o600 });
  t.is(await runUserCannotRead('/etc/hostname', 'alice', host), reason);
  // Root and tunnelward's own user need nothing of the run user's group.
  t.deepEqual(await configFileAccess('root', host), { form: 'own' });
  const notRoot = { ...host, me: { name: 'alice', uid: 4201, gid: 100, home: '/home/alice' } };
  t.deepEqual(await configFileAccess('bob', notRoot), { form: 'own' });
});

test('the ACL form is written, recognised, repaired and read as the run user reads it', async (t) => {
  if (process.getuid?.() !== 0) return t.pass('only root gives a file to another user');
  const host = await hostWith(t, [alice(100), bob(100)], ['users:x:100:']);
  const dir = await mkdtemp(join(tmpdir(), 'acl-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await chmod(dir, 0o711);
  // A default ACL on the dir (bob may read what is made here) is not inherited by the file.
  await run('setfacl', ['-d', '-m', 'u:4202:r', dir]);
  const path = join(dir, 'tunnel_1.toml');
  await writeFileAtomic(path, 'auth.token = "secret"\n', await configFileWriteOptions('alice', host));
  t.deepEqual(await acl(path), ['user::rw-', 'user:4201:r--', 'group::---', 'mask::r--', 'other::---']);
  const info = await stat(path);
  t.deepEqual([info.uid, info.gid, info.mode & 0o7777], [0, 0, 0o640], 'ls shows the mask as the group bits');
  t.true((await checkConfigFileAccess(path, 'alice', host)).right);
  t.is(await runUserCannotRead(path, 'alice', host), undefined, 'read through its ACL entry');
  t.is(
    await runUserCannotRead(path, 'bob', host),
    `runUser bob cannot read ${path}: it is owned by uid 0, gid 0, mode 0640`,
    'the other member of the group has no entry',
  );

  // A group of its own: 0640 and no entry besides, the dir's default ACL notwithstanding.
  const own = await hostWith(t, [alice(4201)], ['alice:x:4201:']);
  const grouped = join(dir, 'tunnel_2.toml');
  await writeFileAtomic(grouped, 'auth.token = "secret"\n', await configFileWriteOptions('alice', own));
  t.deepEqual(await acl(grouped), ['user::rw-', 'group::r--', 'other::---']);
  const groupInfo = await stat(grouped);
  t.deepEqual([groupInfo.uid, groupInfo.gid, groupInfo.mode & 0o7777], [0, 4201, 0o640]);
  t.true((await checkConfigFileAccess(grouped, 'alice', own)).right);

  // As an earlier version wrote it: the shared group, 0640. Not right; written again, right.
  await chown(path, 0, 100);
  await run('setfacl', ['-b', path]);
  t.false((await checkConfigFileAccess(path, 'alice', host)).right);
  await writeFileAtomic(path, 'auth.token = "secret"\n', await configFileWriteOptions('alice', host));
  t.true((await checkConfigFileAccess(path, 'alice', host)).right);
  // Another reader added by hand keeps the bits as they were: only the ACL tells.
  await run('setfacl', ['-m', 'u:4203:r', path]);
  t.false((await checkConfigFileAccess(path, 'alice', host)).right);
  // A dir the run user passes through by an ACL entry alone.
  const inner = join(dir, 'inner');
  await mkdir(inner, { mode: 0o700 });
  await writeFileAtomic(join(inner, 'f.toml'), 'x = 1\n', await configFileWriteOptions('alice', host));
  t.regex((await runUserCannotRead(join(inner, 'f.toml'), 'alice', host))!, /inner is not searchable by it/);
  await run('setfacl', ['-m', 'u:4201:x', inner]);
  t.is(await runUserCannotRead(join(inner, 'f.toml'), 'alice', host), undefined);
});
