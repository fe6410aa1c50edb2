import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Subscription } from '../util/rx.js';
import type { AccountService } from '../accounts/account-service.js';

const FILE = 'initial-admin-password';

/**
 * The generated first password, kept in `<data dir>/initial-admin-password` (0600) only while it still opens the
 * first superuser's account: the file goes once that password is changed or that user is removed, whether that
 * happens while the daemon runs or happened before a kill -9 left the file behind.
 */
export class InitialPasswordFile {
  private constructor(private readonly subscription: Subscription | undefined) {}

  /** Writes the file for a password just generated for user `userId`, and watches that user. */
  static async write(
    accounts: AccountService,
    dataDir: string,
    userId: number,
    password: string,
    log: Logger,
  ): Promise<InitialPasswordFile> {
    await writeFile(join(dataDir, FILE), `${password}\n`, { mode: 0o600 });
    return new InitialPasswordFile(watch(accounts, dataDir, userId, log));
  }

  /** At a later start: keeps watching a file that still holds the first user's password, removes a stale one. */
  static async resume(accounts: AccountService, dataDir: string, log: Logger): Promise<InitialPasswordFile> {
    const path = join(dataDir, FILE);
    const password = await readFile(path, 'utf8').then(
      (text) => text.trim(),
      () => undefined,
    );
    if (password === undefined) return new InitialPasswordFile(undefined);
    // The generated password belongs to the first user ever created, the one with the lowest id.
    const first = accounts.listUsers()[0];
    if (first && (await accounts.passwordMatches(first.id, password))) {
      return new InitialPasswordFile(watch(accounts, dataDir, first.id, log));
    }
    await rm(path, { force: true });
    log.info('removed initial-admin-password: it no longer opens any account');
    return new InitialPasswordFile(undefined);
  }

  close(): void {
    this.subscription?.unsubscribe();
  }
}

function watch(accounts: AccountService, dataDir: string, userId: number, log: Logger): Subscription {
  const subscription = accounts.passwordRetired$.subscribe((retired) => {
    if (retired.userId !== userId) return;
    subscription.unsubscribe();
    rm(join(dataDir, FILE), { force: true }).then(
      () => log.info({ reason: retired.reason }, 'removed initial-admin-password: that password no longer applies'),
      (err: Error) => log.error({ err }, 'removing initial-admin-password failed'),
    );
  });
  return subscription;
}
