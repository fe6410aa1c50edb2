import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { Credentials, DEFAULT_URL, UnknownContextError } from '../../../src/client/credentials.js';

const KEY = `twk_${'1'.repeat(16)}_${'B'.repeat(43)}`;

async function credentials(t: { teardown: (fn: () => Promise<void>) => void }): Promise<Credentials> {
  const dir = await mkdtemp(join(tmpdir(), 'creds-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return new Credentials(join(dir, 'tunnelward'));
}

const login = { token: 'tok', username: 'admin', type: 'superuser', at: 0 };

test('a command goes to --context/--url, then TUNNELWARD_CONTEXT/URL, then the last chosen of context use and login', async (t) => {
  const creds = await credentials(t);
  t.deepEqual(await creds.target({}, {}), { url: DEFAULT_URL });
  t.true(await creds.saveContext('prod', { url: 'http://prod:7600', key: KEY }, false));
  t.true(await creds.saveContext('lab', { url: 'http://lab:7600' }, false));
  t.false(await creds.saveContext('lab', { url: 'http://other:7600' }, false), 'not replaced unless asked');

  await creds.save('http://login:7600', login);
  t.deepEqual(await creds.target({}, {}), { url: 'http://login:7600' });
  await creds.useContext('prod');
  t.deepEqual(await creds.target({}, {}), { url: 'http://prod:7600', context: 'prod' });
  // The environment beats what is stored; the flags beat the environment.
  t.deepEqual(await creds.target({}, { TUNNELWARD_URL: 'lab2:1' }), { url: 'http://lab2:1' });
  t.deepEqual(await creds.target({}, { TUNNELWARD_CONTEXT: 'lab', TUNNELWARD_URL: 'x:1' }), {
    url: 'http://lab:7600',
    context: 'lab',
  });
  t.deepEqual(await creds.target({ url: 'y:2' }, { TUNNELWARD_CONTEXT: 'lab' }), { url: 'http://y:2' });
  t.deepEqual(await creds.target({ context: 'lab' }, { TUNNELWARD_URL: 'x:1' }), {
    url: 'http://lab:7600',
    context: 'lab',
  });
  // A login to the current context's server keeps the context; a later login to another makes that one current.
  await creds.save('http://prod:7600', login);
  t.deepEqual(await creds.target({}, {}), { url: 'http://prod:7600', context: 'prod' });
  await creds.save('http://login:7600', login);
  t.deepEqual(await creds.target({}, {}), { url: 'http://login:7600' });

  t.is(await creds.contextKey('prod'), KEY);
  t.is(await creds.contextKey('lab'), undefined);
  t.is((await stat(creds.path)).mode & 0o777, 0o600);
});

test('an unknown context is an error naming the one likely meant, or those there are', async (t) => {
  const creds = await credentials(t);
  await t.throwsAsync(creds.target({ context: 'prod' }, {}), {
    instanceOf: UnknownContextError,
    message: 'no context named prod (there are none: tunnelward context add NAME --url URL)',
  });
  await creds.saveContext('prod-eu', { url: 'http://a:1' }, false);
  await creds.saveContext('lab', { url: 'http://b:1' }, false);
  await t.throwsAsync(creds.useContext('prod-e'), { message: 'no context named prod-e (did you mean prod-eu?)' });
  await t.throwsAsync(creds.removeContext('zzz'), { message: 'no context named zzz (there are prod-eu, lab)' });
  await creds.useContext('lab');
  await creds.removeContext('lab');
  t.deepEqual(await creds.contexts(), { current: undefined, contexts: { 'prod-eu': { url: 'http://a:1' } } });
  t.deepEqual(await creds.target({}, {}), { url: DEFAULT_URL }, 'the current one removed: back to the default');
});
