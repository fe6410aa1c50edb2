import { chmod, chown, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { trustedProgram, untrustedReason } from '../../../src/system/trusted-program.js';
import { programDir } from '../../helpers/daemon.js';

const ROOT = [0];
const NOBODY = 65534;

async function executable(path: string, mode = 0o755): Promise<string> {
  await writeFile(path, '#!/bin/sh\nexit 0\n');
  await chmod(path, mode);
  return path;
}

test('a file and every directory on the way must be root-owned and writable by neither group nor others', async (t) => {
  t.is(process.getuid?.(), 0, 'these tests run as root');
  const dir = await programDir();
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const unsafe = await mkdtemp('/tmp/tunnelward-unsafe-'); // /tmp itself: writable by all, sticky
  t.teardown(() => rm(unsafe, { recursive: true, force: true }));

  const good = await executable(join(dir, 'good'));
  t.is(await untrustedReason(good, ROOT), undefined);
  t.is(await trustedProgram(good), good);

  t.is(
    await untrustedReason(await executable(join(unsafe, 'prog')), ROOT),
    '/tmp is writable by every user (mode 1777)',
    'the sticky bit does not make a directory safe',
  );
  t.is(
    await untrustedReason(await executable(join(dir, 'group'), 0o775), ROOT),
    `${dir}/group is writable by its group (mode 0775, gid 0)`,
  );
  t.is(
    await untrustedReason(await executable(join(dir, 'world'), 0o757), ROOT),
    `${dir}/world is writable by every user (mode 0757)`,
  );
  const nobodys = await executable(join(dir, 'nobodys'));
  await chown(nobodys, NOBODY, NOBODY);
  t.is(await untrustedReason(nobodys, ROOT), `${nobodys} is owned by uid ${NOBODY}, not by root`);
  t.is(
    await untrustedReason(nobodys, [0, NOBODY]),
    undefined,
    'a daemon that does not run as root trusts its own user',
  );
  const sub = join(dir, 'sub');
  await mkdir(sub, { mode: 0o775 });
  await chmod(sub, 0o775);
  t.is(
    await untrustedReason(await executable(join(sub, 'prog')), ROOT),
    `${sub} is writable by its group (mode 0775, gid 0)`,
  );
  t.is(await untrustedReason(dir, ROOT), `${dir} is not a file`);
});

test('symbolic links are followed, and the directory holding each one must be safe too', async (t) => {
  const dir = await programDir();
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const unsafe = await mkdtemp('/tmp/tunnelward-unsafe-'); // /tmp itself: writable by all, sticky
  t.teardown(() => rm(unsafe, { recursive: true, force: true }));
  const good = await executable(join(dir, 'good'));

  await symlink(good, join(dir, 'to-good'));
  t.is(await untrustedReason(join(dir, 'to-good'), ROOT), undefined);
  await symlink('../' + dir.split('/').pop() + '/./good', join(dir, 'relative'));
  t.is(await untrustedReason(join(dir, 'relative'), ROOT), undefined, 'a relative target with .. and .');

  await symlink(await executable(join(unsafe, 'prog')), join(dir, 'to-unsafe'));
  t.is(await untrustedReason(join(dir, 'to-unsafe'), ROOT), '/tmp is writable by every user (mode 1777)');
  await symlink(good, join(unsafe, 'to-good'));
  t.is(
    await untrustedReason(join(unsafe, 'to-good'), ROOT),
    '/tmp is writable by every user (mode 1777)',
    'a safe target behind a link anyone may swap',
  );
  await symlink(join(dir, 'loop-b'), join(dir, 'loop-a'));
  await symlink(join(dir, 'loop-a'), join(dir, 'loop-b'));
  t.is(await untrustedReason(join(dir, 'loop-a'), ROOT), `${dir}/loop-a goes through more than 40 symbolic links`);
});

test('a directory is judged by the same rule: where such programs may be put', async (t) => {
  const dir = await programDir();
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  t.is(await untrustedReason(dir, ROOT, 'directory'), undefined);
  t.is(await untrustedReason('/', ROOT, 'directory'), undefined);
  const file = await executable(join(dir, 'prog'));
  t.is(await untrustedReason(file, ROOT, 'directory'), `${file} is not a directory`);
  const shared = join(dir, 'shared');
  await mkdir(shared);
  await chmod(shared, 0o1777);
  t.is(await untrustedReason(shared, ROOT, 'directory'), `${shared} is writable by every user (mode 1777)`);
  await symlink(dir, join(dir, 'to-dir'));
  t.is(await untrustedReason(join(dir, 'to-dir'), ROOT, 'directory'), undefined, 'through a link');
  t.is(await untrustedReason('/tmp', ROOT, 'directory'), '/tmp is writable by every user (mode 1777)');
});

test('trustedProgram: a name is looked up on PATH and its path returned; what is missing or unsafe is refused by reason', async (t) => {
  const dir = await programDir();
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  t.regex(await trustedProgram('sh'), /^\/(usr\/)?bin\/sh$/);
  await t.throwsAsync(trustedProgram('no-such-program-here'), {
    message: 'no-such-program-here on PATH is missing or not an executable file',
  });
  await t.throwsAsync(trustedProgram(join(dir, 'missing')), {
    message: `${dir}/missing is missing or not an executable file`,
  });
  await t.throwsAsync(trustedProgram(await executable(join(dir, 'not-executable'), 0o644)), {
    message: `${dir}/not-executable is missing or not an executable file`,
  });
  const group = await executable(join(dir, 'group'), 0o775);
  await t.throwsAsync(trustedProgram(group), {
    message:
      `${group} is refused: ${group} is writable by its group (mode 0775, gid 0); a program tunnelward runs must be ` +
      'a file that only root can change, in directories that only root can change',
  });
});
