import { randomBytes } from 'node:crypto';
import argon2 from 'argon2';
import { tooManyRequests } from '../errors.js';
import { DEFAULTS } from '../settings/defaults.js';
import { WorkLimiter, WorkQueueFullError } from '../util/work-limiter.js';

/**
 * argon2id hashing behind a small concurrency limit: each hash takes 64 MiB and ~100 ms of a core, so a flood
 * of logins queues (boundedly) instead of exhausting memory or starving other requests.
 */
export class PasswordHasher {
  private readonly limiter: WorkLimiter;
  /** Verified against when a user does not exist, so that a miss costs as much as a wrong password. */
  private readonly decoy: Promise<string>;

  constructor(
    concurrency: number,
    maxQueued: number,
    /** argon2's memory cost in KiB for new hashes (a hash records its own, so verifying older ones is unaffected). */
    private readonly memoryKiB: number = DEFAULTS.passwordHashMemoryKiB,
  ) {
    this.limiter = new WorkLimiter(concurrency, maxQueued);
    this.decoy = this.newHash(randomBytes(16).toString('hex'));
  }

  hash(passwd: string): Promise<string> {
    return this.limited(() => this.newHash(passwd));
  }

  private newHash(passwd: string): Promise<string> {
    return argon2.hash(passwd, { type: argon2.argon2id, memoryCost: this.memoryKiB });
  }

  verify(hash: string, passwd: string): Promise<boolean> {
    return this.limited(() => argon2.verify(hash, passwd).catch(() => false));
  }

  /** Spends the same work as `verify` on a hash that matches nothing. */
  async verifyDecoy(passwd: string): Promise<false> {
    await this.verify(await this.decoy, passwd);
    return false;
  }

  private async limited<T>(job: () => Promise<T>): Promise<T> {
    try {
      return await this.limiter.run(job);
    } catch (err) {
      if (err instanceof WorkQueueFullError) throw tooManyRequests('too many password checks at once, try again', 1);
      throw err;
    }
  }
}
