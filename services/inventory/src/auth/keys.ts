import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/** A new API token key: 40 hex characters, as NetBox's. */
export function newTokenKey(): string {
  return randomBytes(20).toString('hex');
}

/** Keys are stored only as their SHA-256. */
export function hashTokenKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Printable, no whitespace, bounded: what we accept as a caller-chosen key. */
export function validTokenKey(key: string): boolean {
  return key.length >= 8 && key.length <= 256 && /^[\x21-\x7e]+$/.test(key);
}

const KEY_LENGTH = 32;

/**
 * Password hashes started and still running in this process. Tests read it to prove, without timing
 * anything, that every check costs one hash (unknown users too) and that requests are answered while
 * hashes run.
 */
export const passwordHashes = { started: 0, running: 0 };

function scryptAsync(password: string, salt: Buffer): Promise<Buffer> {
  passwordHashes.started++;
  passwordHashes.running++;
  // libuv's thread pool: a hash never blocks the event loop.
  return new Promise<Buffer>((resolve, reject) => scrypt(password, salt, KEY_LENGTH, (err, key) => (err ? reject(err) : resolve(key)))).finally(() => {
    passwordHashes.running--;
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  return `scrypt$${salt.toString('hex')}$${(await scryptAsync(password, salt)).toString('hex')}`;
}

// A hash no password matches, in the stored form: checking against it costs what checking a real user's password
// costs (one scrypt of the password given). Random bytes stand for the hash: no answer depends on which bytes they
// are (the check is false without a usable stored hash), and a synchronous scrypt at import cost every start tens of ms.
const DUMMY = `scrypt$${randomBytes(16).toString('hex')}$${randomBytes(KEY_LENGTH).toString('hex')}`;

/**
 * Whether `password` matches `stored`. Without a usable stored hash (unknown
 * user, no password set) the same work is done against a dummy hash, so the
 * answer time does not tell which usernames exist.
 */
export async function checkPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const usable = typeof stored === 'string' && /^scrypt\$[0-9a-f]{32}\$[0-9a-f]{64}$/.test(stored);
  const [, salt, hash] = (usable ? stored : DUMMY).split('$') as [string, string, string];
  const got = await scryptAsync(password, Buffer.from(salt, 'hex'));
  return timingSafeEqual(got, Buffer.from(hash, 'hex')) && usable;
}
