import { INDEX_DIMS } from './embedding.ts';

/** Bits of a binary code (one per hyperplane); 48 bytes. */
export const CODE_BITS = INDEX_DIMS;
const N = 512; // next power of two ≥ INDEX_DIMS, for the Walsh–Hadamard transform

/** Fixed pseudo-random signs (xorshift32 from a constant seed): codes are stable across processes. */
const SIGNS: Float32Array = (() => {
  const d = new Float32Array(N);
  let s = 0x9e3779b9;
  for (let i = 0; i < N; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    d[i] = s & 1 ? 1 : -1;
  }
  return d;
})();

/**
 * Random-hyperplane LSH (SimHash): bit i is the sign of the vector's dot
 * product with hyperplane i, so the Hamming distance between codes estimates
 * the angle between vectors. Binarising the vector itself would not: a short
 * query's hashed vector is mostly zeros, whose "signs" say nothing. The
 * hyperplanes are rows of a Hadamard matrix times fixed random signs
 * (orthogonal ±1 planes), applied with a fast Walsh–Hadamard transform in
 * O(n log n) instead of a 384×384 product.
 */
export function simhash(v: Float32Array): Buffer {
  const x = new Float32Array(N);
  for (let i = 0; i < INDEX_DIMS; i++) x[i] = v[i]! * SIGNS[i]!;
  for (let h = 1; h < N; h <<= 1) {
    for (let i = 0; i < N; i += h << 1) {
      for (let j = i; j < i + h; j++) {
        const a = x[j]!;
        const b = x[j + h]!;
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
  const code = Buffer.alloc(CODE_BITS / 8);
  // Row 0 of a Hadamard matrix is all ones (a plain sum); skip it.
  for (let b = 0; b < CODE_BITS; b++) {
    // sqlite-vec reads bit vectors least-significant bit first within each byte.
    if (x[b + 1]! > 0) code[b >> 3]! |= 1 << (b & 7);
  }
  return code;
}
