import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { AccountService } from '../../../src/accounts/account-service.js';
import { PasswordHasher } from '../../../src/accounts/password-hasher.js';
import { DEFAULTS } from '../../../src/settings/defaults.js';
import { Database } from '../../../src/storage/database.js';
import { TEST_HASH_MEMORY_KIB, tempDir } from '../../helpers/daemon.js';

/** The real hasher, whose verifications can be held at their end: a login stays between its check and its token. */
class HeldHasher extends PasswordHasher {
  private gate: Promise<void> | undefined;
  private open: () => void = () => {};
  private readonly arrivals: Array<() => void> = [];
  private waiting = 0;

  hold(): void {
    this.gate = new Promise((resolve) => (this.open = resolve));
  }

  release(): void {
    this.gate = undefined;
    this.open();
  }

  /** Resolves once `count` verifications in all have finished their work and wait at the gate. */
  held(count: number): Promise<void> {
    return new Promise((resolve) => {
      const check = () => (this.waiting >= count ? resolve() : this.arrivals.push(check));
      check();
    });
  }

  override async verify(hash: string, passwd: string): Promise<boolean> {
    const ok = await super.verify(hash, passwd);
    const gate = this.gate;
    if (gate) {
      this.waiting++;
      this.arrivals.splice(0).forEach((check) => check());
      await gate;
    }
    return ok;
  }
}

async function accounts(t: { teardown: (fn: () => Promise<void>) => void }) {
  const dir = await tempDir('tunnelward-accounts-');
  const db = await Database.open(join(dir, 'tunnelward.db'));
  t.teardown(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });
  const hasher = new HeldHasher(2, 32, TEST_HASH_MEMORY_KIB);
  return { hasher, service: new AccountService(db, hasher, DEFAULTS.tokenTtlMs) };
}

test('a login with the old password that a password change overtakes fails; one with the new password succeeds', async (t) => {
  const { hasher, service } = await accounts(t);
  const user = await service.createUser('racer', 'OldPass1!x', 'visitor');
  const first = await service.login('racer', 'OldPass1!x');

  hasher.hold();
  const withOld = service.login('racer', 'OldPass1!x');
  const withNew = service.login('racer', 'NewPass1!x');
  await hasher.held(2); // both have checked their password against the hash they read: the old one
  await service.modifyUser({ user, session: first.session }, user.id, { passwd: 'NewPass1!x' });
  hasher.release();

  const old = await t.throwsAsync(withOld);
  t.is((old as { status?: number }).status, 401);
  t.is(old?.message, 'invalid username or password');
  t.is((await withNew).user.id, user.id, 'the password asked for is the one in force when the token is issued');
  t.is(service.listSessions().length, 2, 'the session that changed the password and the new login; nothing else');
});

test('a password change ends the sessions of earlier logins but the one that made it', async (t) => {
  const { service } = await accounts(t);
  const user = await service.createUser('changer', 'OldPass1!x', 'visitor');
  const acting = await service.login('changer', 'OldPass1!x');
  const other = await service.login('changer', 'OldPass1!x');
  await service.modifyUser({ user, session: acting.session }, user.id, { passwd: 'NewPass1!x' });
  t.is(service.authenticate(acting.token).session.id, acting.session.id);
  t.throws(() => service.authenticate(other.token), { message: /^Invalid token:/ });
  await t.throwsAsync(service.login('changer', 'OldPass1!x'), { message: 'invalid username or password' });
});
