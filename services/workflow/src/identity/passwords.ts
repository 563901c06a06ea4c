import type { Options } from '@node-rs/argon2';
import { codePointsUnder } from './text-length.ts';

/** The native argon2 module is loaded by the hosted runtime only, on the first hash. */
const argon2 = () => import('@node-rs/argon2');
const hash = (password: string, o: Options) => argon2().then((a) => a.hash(password, o));
const verify = (stored: string, password: string) => argon2().then((a) => a.verify(stored, password));

/**
 * Password hashing: argon2id with OWASP's first recommended profile
 * (19 MiB memory, 2 passes, 1 lane): about 20–40 ms on one core, and 19 MiB
 * per guess for an attacker holding the table. Hashes are PHC strings, so
 * the parameters travel with each hash and can be raised later (a login
 * with an older profile is re-hashed).
 */
// algorithm 2: Argon2id in @node-rs/argon2's Algorithm enum (a const enum, so not imported as a value).
export const ARGON2_PARAMS = { algorithm: 2 as Options['algorithm'], memoryCost: 19_456, timeCost: 2, parallelism: 1, outputLen: 32 } as const;

export const PASSWORD_MIN = 8;
/** Longer inputs only cost hashing time; 256 bytes is plenty for any passphrase. */
export const PASSWORD_MAX = 256;

export class HasherBusyError extends Error {
  constructor(readonly retryAfter: number) {
    super('too many password checks in progress');
  }
}

/**
 * Runs at most `concurrency` hashes at once and queues at most `maxQueue`
 * more; beyond that a caller is refused at once (HasherBusyError → 503 with
 * Retry-After), so a flood of logins costs bounded CPU and memory
 * (concurrency × 19 MiB) and cannot starve the rest of the service.
 */
export class PasswordHasher {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  /** A valid hash of a random string: unknown accounts are verified against it so both paths take the same time. */
  private dummy: Promise<string> | undefined;

  constructor(
    readonly concurrency = 2,
    /** Small on purpose: a queued login waits (maxQueue / concurrency + 1) hash times, which must stay well under 250 ms. */
    readonly maxQueue = 4,
  ) {}

  private async slot<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.concurrency) {
      if (this.waiting.length >= this.maxQueue) throw new HasherBusyError(1);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else this.active++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }

  hash(password: string): Promise<string> {
    return this.slot(() => hash(password, ARGON2_PARAMS));
  }

  /** Verifies a password; with no stored hash, burns the same time and answers false. */
  async verify(stored: string | null | undefined, password: string): Promise<boolean> {
    if (!stored) {
      this.dummy ??= hash('not-a-password-' + Math.random(), ARGON2_PARAMS);
      const d = await this.dummy;
      await this.slot(() => verify(d, password).catch(() => false));
      return false;
    }
    return this.slot(() => verify(stored, password).catch(() => false));
  }

  /** Whether a stored hash uses weaker parameters than the current profile. */
  needsRehash(stored: string): boolean {
    return !stored.startsWith(`$argon2id$v=19$m=${ARGON2_PARAMS.memoryCost},t=${ARGON2_PARAMS.timeCost},p=${ARGON2_PARAMS.parallelism}$`);
  }
}

/** Checks a password's shape (not its strength beyond length): the text of a 400 or null. */
export function passwordProblem(p: unknown): string | null {
  if (typeof p !== 'string') return 'password is required';
  // The byte bound first: it costs nothing, and every later check then walks a short string.
  if (Buffer.byteLength(p) > PASSWORD_MAX) return `password must be at most ${PASSWORD_MAX} bytes`;
  if (codePointsUnder(p, PASSWORD_MIN)) return `password must be at least ${PASSWORD_MIN} characters`;
  if (/\u0000/.test(p)) return 'password must not contain NUL';
  return null;
}
