import { createHash, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';

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

export function hashPassword(password: string): string {
  const salt = randomBytes(16);
  return `scrypt$${salt.toString('hex')}$${scryptSync(password, salt, 32).toString('hex')}`;
}

export function checkPassword(password: string, stored: string | null): boolean {
  if (!stored) return false;
  const [scheme, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const got = scryptSync(password, Buffer.from(salt, 'hex'), 32);
  return timingSafeEqual(got, Buffer.from(hash, 'hex'));
}
