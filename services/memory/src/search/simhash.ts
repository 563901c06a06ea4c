import { INDEX_DIMS } from './embedding.ts';

/** Bits of a binary code (one per random hyperplane); 48 bytes. */
export const CODE_BITS = INDEX_DIMS;

/**
 * Random-hyperplane LSH (SimHash): bit i is the sign of the vector's dot
 * product with a fixed random ±1 hyperplane, so the Hamming distance between
 * codes estimates the angle between vectors. Binarising the vector itself
 * would not: a short query's hashed vector is mostly zeros, whose "signs"
 * carry no information. The hyperplanes are derived from a fixed seed, so
 * codes are stable across processes and restarts.
 */
const PLANES: Int8Array = (() => {
  const p = new Int8Array(CODE_BITS * INDEX_DIMS);
  let s = 0x9e3779b9;
  for (let i = 0; i < p.length; i++) {
    // xorshift32
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    p[i] = s & 1 ? 1 : -1;
  }
  return p;
})();

export function simhash(v: Float32Array): Buffer {
  const code = Buffer.alloc(CODE_BITS / 8);
  for (let b = 0; b < CODE_BITS; b++) {
    let s = 0;
    const off = b * INDEX_DIMS;
    for (let i = 0; i < INDEX_DIMS; i++) s += PLANES[off + i]! * v[i]!;
    // sqlite-vec reads bit vectors least-significant bit first within each byte.
    if (s > 0) code[b >> 3]! |= 1 << (b & 7);
  }
  return code;
}
