import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';

/** A URL-safe random secret of `bytes` bytes of entropy. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function newId(): string {
  return randomUUID();
}

/**
 * SHA-256 of a secret we generated (API keys, refresh tokens, codes): they
 * carry 256 random bits, so a fast hash is enough to make a stolen table
 * useless; only passwords need a memory-hard function.
 */
export function sha256(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function sameString(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** RFC 7636 S256: BASE64URL(SHA256(ASCII(code_verifier))). */
export function pkceS256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}
