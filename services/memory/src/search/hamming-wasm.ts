/**
 * WebAssembly SIMD kernels (source: hamming.wat, assembled with wabt's
 * wat2wasm, base64 below): Hamming distances of 384-bit codes (XOR,
 * i8x16.popcnt, pairwise adds) and int8 × int16 dot products
 * (i32x4.dot_i16x8_s), each several times the speed of the same loop in JS.
 */
const BYTES = Buffer.from('AGFzbQEAAAABEAJgBH9/f38AYAV/f39/fwACDwEDZW52Bm1lbW9yeQIAAQMDAgABBxICB2hhbW1pbmcAAARkb3Q4AAEK2gICkwECBHsBfyAC/QAEACEEIAL9AAQQIQUgAv0ABCAhBiADIAFBAXRqIQgCQANAIAMgCE8NASAA/QAEACAE/VH9YiAA/QAEECAF/VH9Yv1uIAD9AAQgIAb9Uf1i/W4hByAH/X39fyEHIAMgB/0bACAH/RsBaiAH/RsCIAf9GwNqajsBACAAQTBqIQAgA0ECaiEDDAALCwvCAQIDfwJ7IAQgAkECdGohBQJAA0AgBCAFTw0BIAAgASgCAEGAA2xqIQb9DAAAAAAAAAAAAAAAAAAAAAAhCEEAIQcDQCAGIAdq/QAEACEJIAggCf2HASADIAdBAXRq/QAEAP26Af2uASEIIAggCf2IASADIAdBAXRq/QAEEP26Af2uASEIIAdBEGohByAHQYADSQ0ACyAEIAj9GwAgCP0bAWogCP0bAiAI/RsDamo2AgAgAUEEaiEBIARBBGohBAwACwsL', 'base64');

let compiled: WebAssembly.Module | undefined;

export interface HammingKernel {
  memory: WebAssembly.Memory;
  /** out[i] (u16 at out + 2i) = popcount(code at codes + 48i XOR code at q), for i < n. */
  hamming(codes: number, n: number, q: number, out: number): void;
  /** out[k] (i32 at out + 4k) = dot(int8 row (i32 at rows + 4k) of the 384-byte rows at v8, int16 query at q16), for k < m. */
  dot8(v8: number, rows: number, m: number, q16: number, out: number): void;
}

/** A kernel with its own memory of `pages` 64 KiB pages (grow it through `memory`). */
export function hammingKernel(pages: number): HammingKernel {
  compiled ??= new WebAssembly.Module(BYTES);
  const memory = new WebAssembly.Memory({ initial: pages });
  const instance = new WebAssembly.Instance(compiled, { env: { memory } });
  return { memory, hamming: instance.exports.hamming as HammingKernel['hamming'], dot8: instance.exports.dot8 as HammingKernel['dot8'] };
}
