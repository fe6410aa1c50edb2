import { openSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { InstanceExpiry, type Expired } from '../../../actors/instance-expiry.js';
import type { CommandDone } from '../../../machines/instance.machine.js';
import { notFound } from '../../../src/errors.js';
import { InstanceStore } from '../../../src/instances/instance-store.js';
import { createLogger } from '../../../src/log/logger.js';
import { Database } from '../../../src/storage/database.js';
import { Subject } from '../../../src/util/rx.js';
import { tempDir } from '../../helpers/daemon.js';
import { quietFor, until } from '../../helpers/until.js';

const DEV_NULL = openSync('/dev/null', 'w');
const log = createLogger({ debug: false, fd: DEV_NULL });
const NOW = Date.parse('2030-06-01T12:00:00Z');

const done = (fields: Partial<CommandDone> = {}): CommandDone => ({
  type: 'commandDone',
  command: 'stop',
  ref: 1,
  ok: true,
  conflict: false,
  unchanged: false,
  message: 'stopped',
  ...fields,
});

/** The actor over a real store, with a simulated clock and recording stand-ins for the stop, boot and disable. */
async function harness(t: ExecutionContext, stop: () => Promise<CommandDone> = async () => done()) {
  const dir = await tempDir('expiry-');
  const db = await Database.open(join(dir, 'tunnelward.db'));
  const store = new InstanceStore(db);
  const clock = { now: NOW };
  const calls: string[] = [];
  const changes$ = new Subject<void>();
  const refusals = new Map<string, Error>();
  const expiry = new InstanceExpiry({
    store,
    db,
    log,
    now: () => clock.now,
    retryMs: 1000,
    stop: async (id) => {
      calls.push(`stop ${id}`);
      return stop();
    },
    offBoot: async (id) => {
      calls.push(`offBoot ${id}`);
      store.update(id, { bootAtStart: false });
      return undefined;
    },
    disableProxy: async (id, proxy) => {
      calls.push(`disable ${id}/${proxy}`);
      const refused = refusals.get(proxy);
      if (refused) throw refused;
    },
    touched: () => {},
    changes$,
  });
  const events: Expired[] = [];
  expiry.expired$.subscribe((e) => events.push(e));
  t.teardown(async () => {
    expiry.close();
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });
  const add = (name: string, bootAtStart = false) => {
    const record = store.insert({
      name,
      bootAtStart,
      runUser: 'root',
      createdBy: 'admin',
      ownerId: 1,
      now: NOW,
      configPathOf: (id) => `/nowhere/${id}.toml`,
    });
    store.setPending(record.id, null);
    return record.id;
  };
  return { store, clock, calls, changes$, refusals, expiry, events, add };
}

test('an expiry past at start-up is acted on once: stopped, taken off boot, cleared, announced', async (t) => {
  const h = await harness(t);
  const id = h.add('web', true);
  const other = h.add('other');
  h.store.setExpiry(id, NOW - 1000);
  h.store.setExpiry(other, NOW + 3_600_000);
  h.expiry.start();
  await until(() => h.events.length === 1, Boolean, { everyMs: 5 });
  t.deepEqual(h.calls, [`stop ${id}`, `offBoot ${id}`]);
  t.is(h.store.get(id)!.expiresAt, null);
  t.is(h.store.get(other)!.expiresAt, NOW + 3_600_000, 'one not due is left for its time');
  t.like(h.events[0], { event: 'instance.expired', instanceID: id, name: 'web' });
  t.regex(h.events[0]!.message, /^expired at 2030-06-01T11:59:59\.000Z: stopped, and no longer started at boot/);
  h.changes$.next();
  await new Promise((resolve) => setImmediate(resolve));
  t.is(h.calls.length, 2, 'once');
});

test('the clock reaching an expiry acts on it; a proxy is disabled, one gone from the file is dropped', async (t) => {
  const h = await harness(t);
  const id = h.add('web');
  h.store.setProxyExpiry(id, 'ssh', NOW + 60_000);
  h.store.setProxyExpiry(id, 'gone', NOW + 60_000);
  h.refusals.set('gone', notFound('instance web has no proxy named gone'));
  h.expiry.start();
  await quietFor(20, 'an acting before its time');
  t.deepEqual(h.calls, [], 'not before its time');
  h.clock.now = NOW + 60_000;
  h.changes$.next();
  await until(() => h.events.length === 2, Boolean, { everyMs: 5 });
  t.deepEqual(h.calls.sort(), [`disable ${id}/gone`, `disable ${id}/ssh`]);
  t.deepEqual(h.store.get(id)!.proxyExpiries, {});
  t.deepEqual(h.events.map((e) => [e.event, e.proxy, e.message]).sort(), [
    ['proxy.expired', 'gone', 'proxy gone expired at 2030-06-01T12:01:00.000Z: it is no longer in the config file'],
    ['proxy.expired', 'ssh', 'proxy ssh expired at 2030-06-01T12:01:00.000Z: disabled'],
  ]);
});

test('a stop that fails keeps the expiry and is tried again after the retry delay', async (t) => {
  let fail = true;
  const h = await harness(t, async () => (fail ? done({ ok: false, message: 'no' }) : done({ unchanged: true })));
  const id = h.add('web');
  h.store.setExpiry(id, NOW - 1);
  h.expiry.start();
  await until(() => h.calls.length === 1, Boolean, { everyMs: 5 });
  await quietFor(20, 'an acting before its time');
  t.is(h.store.get(id)!.expiresAt, NOW - 1, 'kept');
  t.is(h.events.length, 0);
  fail = false;
  h.clock.now = NOW + 1000;
  h.changes$.next();
  await until(() => h.events.length === 1, Boolean, { everyMs: 5 });
  t.is(h.calls.length, 2);
  t.regex(h.events[0]!.message, /it was already stopped; it stays stopped until an operator starts it$/);
  t.is(h.store.get(id)!.expiresAt, null);
});

test('an expiry changed by an operator while it was acted on is kept', async (t) => {
  let release!: () => void;
  const h = await harness(t, () => new Promise((resolve) => (release = () => resolve(done()))));
  const id = h.add('web');
  h.store.setExpiry(id, NOW - 1);
  h.expiry.start();
  await until(() => h.calls.length === 1, Boolean, { everyMs: 5 });
  h.store.setExpiry(id, NOW + 3_600_000);
  release();
  await until(() => h.events.length === 1, Boolean, { everyMs: 5 });
  t.is(h.store.get(id)!.expiresAt, NOW + 3_600_000);
});
