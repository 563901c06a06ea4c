import assert from 'node:assert/strict';

/**
 * What the tests of the SIMD kernels against their JavaScript loops share:
 * the comparisons (bit for bit, NaN and −0 included) and random bytes with
 * the values at the kernels' edges mixed in.
 */

/** Fails at the first sample whose bits differ (Object.is: NaN equals NaN, −0 differs from +0). */
export function sameBits(a: Float32Array, b: Float32Array, what: string): void {
  assert.equal(a.length, b.length, `${what}: length`);
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) assert.fail(`${what}: sample ${i} is ${a[i]}, expected ${b[i]}`);
}

export function sameBytes(a: Uint8Array, b: Uint8Array, what: string): void {
  assert.equal(a.length, b.length, `${what}: length`);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) assert.fail(`${what}: byte ${i} is ${a[i]}, expected ${b[i]}`);
}

/** `n` bytes from `rnd`: about 30 % of them drawn from `edges`, the rest uniform. */
export function randomBytes(rnd: () => number, n: number, edges: readonly number[]): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = rnd() < 0.3 ? edges[Math.floor(rnd() * edges.length)]! : Math.floor(rnd() * 256);
  return out;
}
