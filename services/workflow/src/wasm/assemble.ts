/**
 * A minimal WebAssembly binary encoder: the module format, the plain and
 * SIMD (128-bit) instructions the hand-assembled kernels use, and one
 * module layout (functions over one imported memory, `env.mem`). No
 * toolchain and no dependency: kernels are built from these at start-up
 * where they are needed (`nodes/simd-kernels.ts`, `models/randn-kernels.ts`).
 */

export type Code = number[];

export function uleb(n: number): Code {
  const out: Code = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

export function sleb(n: number): Code {
  const out: Code = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

export const bytesOfString = (s: string): Code => [...uleb(s.length), ...Buffer.from(s, 'latin1')];
export const vec = (items: Code[]): Code => [...uleb(items.length), ...items.flat()];
export const section = (id: number, body: Code): Code => [id, ...uleb(body.length), ...body];

export const I32 = 0x7f;
export const F32 = 0x7d;
export const V128 = 0x7b;

// Plain instructions.
export const get = (i: number): Code => [0x20, ...uleb(i)];
export const set = (i: number): Code => [0x21, ...uleb(i)];
export const i32 = (v: number): Code => [0x41, ...sleb(v)];
export const add = [0x6a];
export const mul = [0x6c];
export const geS = [0x4e];
export const load32 = (offset = 0): Code => [0x28, 2, ...uleb(offset)];
export const store32 = (offset = 0): Code => [0x36, 2, ...uleb(offset)];
export const f32load = (offset = 0): Code => [0x2a, 2, ...uleb(offset)];
export const block = (...body: Code[]): Code => [0x02, 0x40, ...body.flat(), 0x0b];
export const loop = (...body: Code[]): Code => [0x03, 0x40, ...body.flat(), 0x0b];
export const brIf = (depth: number): Code => [0x0d, ...uleb(depth)];
export const br = (depth: number): Code => [0x0c, ...uleb(depth)];
/** `local += step` (i32). */
export const inc = (local: number, step: Code): Code => [...get(local), ...step, ...add, ...set(local)];
/** while (a < b) { body } — `body` runs inside a block and a loop (br 1 leaves, br 0 repeats). */
export const whileLt = (a: number, b: number, ...body: Code[]): Code => block(loop(get(a), get(b), geS, brIf(1), ...body, br(0)));

// SIMD instructions (prefix 0xfd).
export const simd = (op: number, ...imm: number[]): Code => [0xfd, ...uleb(op), ...imm];
export const v128load = (offset = 0): Code => simd(0x00, 0, ...uleb(offset));
export const v128store = (offset = 0): Code => simd(0x0b, 0, ...uleb(offset));
export const load32zero = simd(0x5c, 0, 0);
export const i32x4splat = simd(0x11);
export const f32x4splat = simd(0x13);
export const i32x4lane0 = simd(0x1b, 0);
export const i16x8extLowU8 = simd(0x89);
export const i16x8extHighU8 = simd(0x8a);
export const i32x4extLowU16 = simd(0xa9);
export const i32x4extHighU16 = simd(0xaa);
export const i16x8narrowS32 = simd(0x85);
export const i8x16narrowU16 = simd(0x66);
export const i32x4shrS = simd(0xac);
export const i32x4add = simd(0xae);
export const i32x4mul = simd(0xb5);
export const f32x4add = simd(0xe4);
export const f32x4mul = simd(0xe6);
export const f32x4fromI32 = simd(0xfa);
export const i32x4truncSatF32 = simd(0xf8);

export interface Fn {
  name: string;
  params: number[];
  locals: number[];
  body: Code[];
}

export function encodeModule(fns: Fn[]): Uint8Array<ArrayBuffer> {
  const types = fns.map((f) => [0x60, ...vec(f.params.map((p) => [p])), 0]);
  const imports = vec([[...bytesOfString('env'), ...bytesOfString('mem'), 0x02, 0x00, ...uleb(1)]]);
  const code = fns.map((f) => {
    const locals = vec(f.locals.map((t) => [1, t]));
    const body = [...locals, ...f.body.flat(), 0x0b];
    return [...uleb(body.length), ...body];
  });
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec(types)),
    ...section(2, imports),
    ...section(3, vec(fns.map((_, i) => uleb(i)))),
    ...section(7, vec(fns.map((f, i) => [...bytesOfString(f.name), 0x00, ...uleb(i)]))),
    ...section(10, vec(code)),
  ]);
}
export const f64x2splat = simd(0x14);
export const f64x2add = simd(0xf0);
export const f64x2mul = simd(0xf2);
export const f64x2fromI32LowU = simd(0xff);
export const f64x2promoteLow = simd(0x5f);
export const f32x4demoteZero = simd(0x5e);
export const i32x4truncSatF64Zero = simd(0xfc);
/** i8x16.shuffle: lanes 0–15 from the first operand, 16–31 from the second. */
export const shuffle = (lanes: number[]): Code => simd(0x0d, ...lanes);
/** Lanes 2, 3 (bytes 8–15) of the first operand moved down to lanes 0, 1. */
export const highToLow = shuffle([8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15]);
/** Lanes 0, 1 of the first operand, then lanes 0, 1 of the second. */
export const lowPairs = shuffle([0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]);
export const f32toF64 = [0xbb];
export const v128zero = simd(0x0c, ...new Array(16).fill(0));
export const i32x4eq = simd(0x37);
export const v128and = simd(0x4e);
export const v128or = simd(0x50);
export const f32x4sub = simd(0xe5);
export const f32x4neg = simd(0xe1);
/** Relaxed SIMD: a·b + c, fused or not as the engine and processor do it (see relaxed-simd.ts). */
export const f32x4relaxedMadd = simd(0x105);
export const f32x4pmin = simd(0xea);
export const f32x4pmax = simd(0xeb);
export const f64x2sub = simd(0xf1);
export const f64x2div = simd(0xf3);
export const f64x2floor = simd(0x75);
export const f64x2ge = simd(0x4c);
export const f64x2fromI32LowS = simd(0xfe);
export const i32x4shl = simd(0xab);
export const i32x4minS = simd(0xb6);
export const i32x4maxS = simd(0xb8);
export const f32const = (v: number): Code => [0x43, ...new Uint8Array(Float32Array.of(v).buffer)];
export const f64const = (v: number): Code => [0x44, ...new Uint8Array(Float64Array.of(v).buffer)];
export const f32splat = (v: number): Code => [...f32const(v), ...f32x4splat];
export const f64splat = (v: number): Code => [...f64const(v), ...f64x2splat];
export const i8x16swizzle = simd(0x0e);
export const f32x4gt = simd(0x44);
export const f32x4div = simd(0xe7);
export const f32x4fromI32U = simd(0xfb);
export const v128xor = simd(0x51);

// Used by the model layer's kernels (models/randn-kernels.ts).
export const call = (fn: number): Code => [0x10, ...uleb(fn)];
/** if (condition on the stack) { body } */
export const ifThen = (...body: Code[]): Code => [0x04, 0x40, ...body.flat(), 0x0b];
export const sub = [0x6b];
export const ltS = [0x48];
export const i32and = [0x71];
export const i32or = [0x72];
export const i32xor = [0x73];
export const i32shl = [0x74];
export const i32shrU = [0x76];
export const selectValue = [0x1b];
export const i32x4shrU = simd(0xad);
export const i32x4sub = simd(0xb1);
export const v128andnot = simd(0x4f);
export const f32x4lt = simd(0x43);
export const f32x4sqrt = simd(0xe3);
export const i32x4splatOf = (v: number): Code => [...i32(v), ...i32x4splat];
