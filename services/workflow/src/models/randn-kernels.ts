import {
  call, encodeModule, f32splat, f32x4add, f32x4demoteZero, f32x4fromI32, f32x4lt, f32x4mul, f32x4neg, f32x4relaxedMadd, f32x4sqrt, f32x4sub, f64splat, f64x2add,
  f64x2mul, f64x2promoteLow, f64x2sub, get, geS, highToLow, I32, i32, i32shl, i32x4add, i32x4eq, i32x4shl, i32x4shrU, i32x4splatOf, i32x4sub,
  i32x4truncSatF32, ifThen, inc, load32, lowPairs, ltS, selectValue, set, store32, sub, V128, v128and, v128andnot, v128load, v128or, v128store,
  v128xor, v128zero, whileLt, add, i32and, i32or, i32shrU, i32xor, type Code, type Fn,
} from '../wasm/assemble.ts';
import { compileRelaxed } from '../wasm/relaxed-simd.ts';
import { CEPHES } from './cephes-f32.ts';

/**
 * torch's CPU randn in WebAssembly SIMD: the Mersenne Twister's twist and
 * tempering four words a step, and normal_fill_16_AVX2's Box–Muller four
 * lanes a step, with avx_mathfun's log and sincos (Cephes polynomials in
 * float32, multiply-adds fused as torch's build fuses them). WebAssembly has
 * no deterministic fused multiply-add, so each one runs in float64 lanes
 * (the product of two float32 is exact there) and is rounded once to
 * float32; `cephes-f32.ts` holds the scalar form and the reason this equals
 * the fused result for every input the generator can produce (all 2²⁴ of
 * each function's, checked by test). The values are torch's bit for bit.
 *
 * Memory: the generator's 624 state words at 0 (plus a vector of padding:
 * tempering reads past the last word), its position at POS, and the caller's
 * values from BUF (`reserve` grows it). Kernels may write up to 3 floats past
 * the count they are given.
 */

const STATE = 0;
export const POS = 2560;
export const BUF = 2576;
const N = 624;
const M = 397;

/** mt[i] = mt[(i + 397) % 624] ^ (y >>> 1) ^ (y odd ? 0x9908b0df : 0), y from mt[i]'s top bit and mt[i + 1]'s others. */
function twistWord(i: number, y: number): Code {
  const at = (k: number) => i32(STATE + 4 * (k % N));
  return [
    ...at(i), ...load32(), ...i32(0x80000000 | 0), ...i32and,
    ...at(i + 1), ...load32(), ...i32(0x7fffffff), ...i32and, ...i32or, ...set(y),
    ...at(i),
    ...at(i + M), ...load32(),
    ...get(y), ...i32(1), ...i32shrU, ...i32xor,
    ...i32(0), ...get(y), ...i32(1), ...i32and, ...sub, ...i32(0x9908b0df | 0), ...i32and, ...i32xor,
    ...store32(),
  ];
}

/** The same for i in [from, to) four words a step; the far word is `far` words away (397, or −227 once it wraps). */
function twistRange(from: number, to: number, far: number, p: number, end: number, y: number): Code {
  return [
    ...i32(STATE + 4 * from), ...set(p),
    ...i32(STATE + 4 * to), ...set(end),
    ...whileLt(p, end,
      get(p), v128load(0), i32x4splatOf(0x80000000 | 0), v128and,
      get(p), v128load(4), i32x4splatOf(0x7fffffff), v128and, v128or, set(y),
      get(p),
      get(p), i32(4 * far), add, v128load(0),
      get(y), i32(1), i32x4shrU, v128xor,
      v128zero, get(y), i32x4splatOf(1), v128and, i32x4sub, i32x4splatOf(0x9908b0df | 0), v128and, v128xor,
      v128store(0),
      inc(p, i32(16)),
    ),
  ];
}

/** twist(): the next 624 state words. Words 224–227 and 620–623 read words already replaced, one at a time. */
function twist(): Fn {
  const [p, end, y, v] = [0, 1, 2, 3];
  const scalar = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => twistWord(from + k, y)).flat();
  return {
    name: 'twist',
    params: [],
    locals: [I32, I32, I32, V128],
    body: [
      twistRange(0, 224, M, p, end, v),
      scalar(224, 228),
      twistRange(228, 620, M - N, p, end, v),
      scalar(620, 624),
    ],
  };
}

/**
 * uniforms(n, dst): n float32 uniforms at dst, torch's (the low 24 bits of
 * each tempered word × 2⁻²⁴), from the state at its position (POS), which
 * advances; twists when the state is used up.
 */
function uniforms(): Fn {
  const [n, dst] = [0, 1];
  const [pos, i, m, left, p, q, end, v] = [2, 3, 4, 5, 6, 7, 8, 9];
  const xorShift = (shift: Code, mask?: number): Code => [
    ...get(v), ...get(v), ...shift, ...(mask === undefined ? [] : [...i32x4splatOf(mask | 0), ...v128and]), ...v128xor, ...set(v),
  ];
  return {
    name: 'uniforms',
    params: [I32, I32],
    locals: [I32, I32, I32, I32, I32, I32, I32, V128],
    body: [
      i32(POS), load32(), set(pos),
      i32(0), set(i),
      whileLt(i, n,
        get(pos), i32(N), geS, ifThen(call(0), i32(0), set(pos)),
        i32(N), get(pos), sub, set(m),
        get(n), get(i), sub, set(left),
        get(m), get(left), get(m), get(left), ltS, selectValue, set(m),
        get(pos), i32(2), i32shl, set(p),
        get(dst), get(i), i32(2), i32shl, add, set(q),
        get(p), get(m), i32(2), i32shl, add, set(end),
        whileLt(p, end,
          get(p), v128load(STATE), set(v),
          xorShift([...i32(11), ...i32x4shrU]),
          xorShift([...i32(7), ...i32x4shl], 0x9d2c5680),
          xorShift([...i32(15), ...i32x4shl], 0xefc60000),
          xorShift([...i32(18), ...i32x4shrU]),
          get(q), get(v), i32x4splatOf(0xffffff), v128and, f32x4fromI32, f32splat(2 ** -24), f32x4mul, v128store(0),
          inc(p, i32(16)),
          inc(q, i32(16)),
        ),
        inc(pos, get(m)),
        inc(i, get(m)),
      ),
      i32(POS), get(pos), store32(),
    ],
  };
}

/** Locals allocated by name as the code is written. */
class Locals {
  readonly types: number[] = [];
  constructor(private readonly first: number) {}
  v128(): number {
    this.types.push(V128);
    return this.first + this.types.length - 1;
  }
}

/** A float32 constant operand (splat into every lane). */
interface Const {
  readonly c: number;
}
const k = (c: number): Const => ({ c });
const isConst = (o: object | number): o is Const => typeof o === 'object' && 'c' in o;

/**
 * How the kernels' float32 arithmetic is written. `V` is what holds one
 * vector of four float32 values between statements. Every operation rounds to
 * float32 once, as torch's does; `fma` is the fused multiply-add.
 */
interface Arith<V> {
  value(l: Locals): V;
  /** dst = the four float32 lanes of the v128 local `src`. */
  fromLanes(src: number, dst: V): Code;
  /** The v128 local `dst` = the four float32 values of `src`. */
  toLanes(src: V, dst: number): Code;
  fma(dst: V, a: V | Const, b: V | Const, c: V | Const): Code;
  mul(dst: V, a: V | Const, b: V | Const): Code;
  add(dst: V, a: V | Const, b: V | Const): Code;
  /** dst = y − z·0.5 (z·0.5 is exact: one rounding). */
  minusHalf(dst: V, y: V, z: V): Code;
  /** dst = a·z − z·0.5, fused (one rounding). */
  fmaMinusHalf(dst: V, a: V, z: V): Code;
}

type Pair = [number, number];
const round32: Code = [...f32x4demoteZero, ...f64x2promoteLow];
/** An operand's lane pair h: a local pair's, or a float32 constant (as float64). */
const half = (o: Pair | Const, h: 0 | 1): Code => (isConst(o) ? f64splat(o.c) : get(o[h]));
const halves = (f: (h: 0 | 1) => Code): Code => ([0, 1] as const).flatMap(f);

/**
 * Without a deterministic fused multiply-add: each vector as two float64
 * pairs. A product of two float32 is exact in float64, the sum rounds once to
 * float64 and then to float32; `cephes-f32.ts` says why that equals the fused
 * result for every input randn gives these functions.
 */
const EMULATED: Arith<Pair> = {
  value: (l) => [l.v128(), l.v128()],
  fromLanes: (src, dst) => [
    ...get(src), ...f64x2promoteLow, ...set(dst[0]),
    ...get(src), ...get(src), ...highToLow, ...f64x2promoteLow, ...set(dst[1]),
  ],
  toLanes: (src, dst) => [...get(src[0]), ...f32x4demoteZero, ...get(src[1]), ...f32x4demoteZero, ...lowPairs, ...set(dst)],
  fma: (dst, a, b, c) => halves((h) => [...half(a, h), ...half(b, h), ...f64x2mul, ...half(c, h), ...f64x2add, ...round32, ...set(dst[h])]),
  mul: (dst, a, b) => halves((h) => [...half(a, h), ...half(b, h), ...f64x2mul, ...round32, ...set(dst[h])]),
  // float64 then float32 rounds as float32 addition does.
  add: (dst, a, b) => halves((h) => [...half(a, h), ...half(b, h), ...f64x2add, ...round32, ...set(dst[h])]),
  minusHalf: (dst, y, z) => halves((h) => [...get(y[h]), ...get(z[h]), ...f64splat(0.5), ...f64x2mul, ...f64x2sub, ...round32, ...set(dst[h])]),
  fmaMinusHalf: (dst, a, z) =>
    halves((h) => [...get(a[h]), ...get(z[h]), ...f64x2mul, ...get(z[h]), ...f64splat(0.5), ...f64x2mul, ...f64x2sub, ...round32, ...set(dst[h])]),
};

const lane = (o: number | Const): Code => (isConst(o) ? f32splat(o.c) : get(o));

/**
 * With the processor's fused multiply-add (relaxed SIMD's f32x4.relaxed_madd,
 * used only where a probe shows it fused: see `randnKernels`): float32 lanes
 * throughout, about three times fewer instructions.
 */
const FUSED: Arith<number> = {
  value: (l) => l.v128(),
  fromLanes: (src, dst) => [...get(src), ...set(dst)],
  toLanes: (src, dst) => [...get(src), ...set(dst)],
  fma: (dst, a, b, c) => [...lane(a), ...lane(b), ...lane(c), ...f32x4relaxedMadd, ...set(dst)],
  mul: (dst, a, b) => [...lane(a), ...lane(b), ...f32x4mul, ...set(dst)],
  add: (dst, a, b) => [...lane(a), ...lane(b), ...f32x4add, ...set(dst)],
  minusHalf: (dst, y, z) => [...get(y), ...get(z), ...f32splat(0.5), ...f32x4mul, ...f32x4sub, ...set(dst)],
  fmaMinusHalf: (dst, a, z) => [...get(a), ...get(z), ...get(z), ...f32splat(0.5), ...f32x4mul, ...f32x4neg, ...f32x4relaxedMadd, ...set(dst)],
};

/**
 * The kernels' bodies are lists of statements (each leaves the stack as it
 * found it), so that two groups of lanes can be interleaved statement by
 * statement: each group is one long chain of dependent operations, and
 * alternating two independent chains lets the processor overlap them.
 */
type Statements = Code[];

/** log256_ps of the four lanes of `u` (all in (0, 1]) into `out`. */
function logLanes<V>(A: Arith<V>, l: Locals, u: number, out: number): Statements {
  const C = CEPHES;
  const [e, x, mask, t, z] = [l.v128(), l.v128(), l.v128(), l.v128(), l.v128()];
  const [X, Z, E, Y, T] = [A.value(l), A.value(l), A.value(l), A.value(l), A.value(l)];
  const poly: Code[] = [A.fma(Y, k(C.logP[0]!), X, k(C.logP[1]!))];
  for (let i = 2; i < C.logP.length; i++) poly.push(A.fma(Y, Y, X, k(C.logP[i]!)));
  return [
    // exponent + 1 and the mantissa in [0.5, 1)
    [...get(u), ...i32(23), ...i32x4shrU, ...i32x4splatOf(0x7f), ...i32x4sub, ...f32x4fromI32, ...f32splat(1), ...f32x4add, ...set(e)],
    [...get(u), ...i32x4splatOf(~0x7f800000), ...v128and, ...i32x4splatOf(0x3f000000), ...v128or, ...set(x)],
    // below √½: e − 1 and x + x − 1
    [...get(x), ...f32splat(C.sqrtHalf), ...f32x4lt, ...set(mask)],
    [...get(x), ...get(mask), ...v128and, ...set(t)],
    [...get(x), ...f32splat(1), ...f32x4sub, ...set(x)],
    [...get(e), ...f32splat(1), ...get(mask), ...v128and, ...f32x4sub, ...set(e)],
    [...get(x), ...get(t), ...f32x4add, ...set(x)],
    [...get(x), ...get(x), ...f32x4mul, ...set(z)],
    A.fromLanes(x, X), A.fromLanes(z, Z), A.fromLanes(e, E),
    ...poly,
    A.mul(Y, Y, X),
    A.mul(T, E, k(C.logQ1)),
    A.fma(Y, Y, Z, T),
    A.minusHalf(Y, Y, Z),
    A.add(X, X, Y),
    A.fma(X, E, k(C.logQ2), X),
    A.toLanes(X, out),
  ];
}

/** sincos256_ps of the four lanes of `theta` (all ≥ 0) into `sin` and `cos`. */
function sincosLanes<V>(A: Arith<V>, l: Locals, theta: number, sin: number, cos: number): Statements {
  const C = CEPHES;
  const [j, y, swap, poly, signCos, x, z, cv, sv, s1, s2] = Array.from({ length: 11 }, () => l.v128());
  const [X, Yq, Z, Cp, Sp] = [A.value(l), A.value(l), A.value(l), A.value(l), A.value(l)];
  return [
    // j = (int(x·4/π) + 1) & ~1, the octant; its bits give the signs and which polynomial is the sine
    [...get(theta), ...f32splat(C.fourOverPi), ...f32x4mul, ...i32x4truncSatF32, ...i32x4splatOf(1), ...i32x4add, ...i32x4splatOf(~1), ...v128and, ...set(j)],
    [...get(j), ...f32x4fromI32, ...set(y)],
    [...get(j), ...i32x4splatOf(4), ...v128and, ...i32(29), ...i32x4shl, ...set(swap)],
    [...get(j), ...i32x4splatOf(2), ...v128and, ...v128zero, ...i32x4eq, ...set(poly)],
    [...i32x4splatOf(4), ...get(j), ...i32x4splatOf(2), ...i32x4sub, ...v128andnot, ...i32(29), ...i32x4shl, ...set(signCos)],
    // x − j·π/4 in three parts
    A.fromLanes(theta, X), A.fromLanes(y, Yq),
    A.fma(X, Yq, k(C.minusDP[0]!), X),
    A.fma(X, Yq, k(C.minusDP[1]!), X),
    A.fma(X, Yq, k(C.minusDP[2]!), X),
    A.toLanes(X, x),
    [...get(x), ...get(x), ...f32x4mul, ...set(z)],
    A.fromLanes(z, Z),
    // cosine polynomial: its last product is fused with the subtraction of z·0.5 (exact)
    A.fma(Cp, k(C.cos[0]!), Z, k(C.cos[1]!)),
    A.fma(Cp, Cp, Z, k(C.cos[2]!)),
    A.mul(Cp, Cp, Z),
    A.fmaMinusHalf(Cp, Cp, Z),
    A.add(Cp, Cp, k(1)),
    // sine polynomial
    A.fma(Sp, k(C.sin[0]!), Z, k(C.sin[1]!)),
    A.fma(Sp, Sp, Z, k(C.sin[2]!)),
    A.mul(Sp, Sp, Z),
    A.fma(Sp, Sp, X, X),
    A.toLanes(Cp, cv), A.toLanes(Sp, sv),
    // the selection as avx_mathfun writes it (masked parts subtracted and added: a zero comes out +0)
    [...get(poly), ...get(sv), ...v128and, ...set(s2)],
    [...get(cv), ...get(poly), ...v128andnot, ...set(s1)],
    [...get(sv), ...get(s2), ...f32x4sub, ...set(sv)],
    [...get(cv), ...get(s1), ...f32x4sub, ...set(cv)],
    [...get(s1), ...get(s2), ...f32x4add, ...get(swap), ...v128xor, ...set(sin)],
    [...get(cv), ...get(sv), ...f32x4add, ...get(signCos), ...v128xor, ...set(cos)],
  ];
}

/** Two lists of statements of the same length, alternated. */
function interleave(a: Statements, b: Statements): Statements {
  return a.flatMap((s, i) => [s, b[i]!]);
}

/**
 * boxMuller(p, blocks): normal_fill_16_AVX2 on `blocks` blocks of 16
 * uniforms at p, in place: lanes j < 8 give the radius √(−2 log(1 − u)),
 * lanes j + 8 the angle 2π·u; out come r·cos at j and r·sin at j + 8, each
 * + 0 as torch's fmadd(n, std 1, mean 0) leaves it (−0 becomes +0). Lanes
 * 0–3 and 4–7 of a block are two independent groups, interleaved.
 */
function boxMuller<V>(A: Arith<V>): Fn {
  const [p, blocks, end] = [0, 1, 2];
  const l = new Locals(3);
  const group = (off: number): Statements => {
    const [u, theta, log, r, sin, cos] = [l.v128(), l.v128(), l.v128(), l.v128(), l.v128(), l.v128()];
    return [
      [...f32splat(1), ...get(p), ...v128load(off), ...f32x4sub, ...set(u)],
      [...get(p), ...v128load(off + 32), ...f32splat(CEPHES.twoPi), ...f32x4mul, ...set(theta)],
      ...logLanes(A, l, u, log),
      [...get(log), ...f32splat(-2), ...f32x4mul, ...f32x4sqrt, ...set(r)],
      ...sincosLanes(A, l, theta, sin, cos),
      [...get(p), ...get(r), ...get(cos), ...f32x4mul, ...v128zero, ...f32x4add, ...v128store(off)],
      [...get(p), ...get(r), ...get(sin), ...f32x4mul, ...v128zero, ...f32x4add, ...v128store(off + 32)],
    ];
  };
  const lanes = interleave(group(0), group(16));
  return {
    name: 'boxMuller',
    params: [I32, I32],
    locals: [I32, ...l.types],
    body: [get(p), get(blocks), i32(6), i32shl, add, set(end), whileLt(p, end, ...lanes, inc(p, i32(64)))],
  };
}

/** probeFma(p): the four lanes of relaxed_madd(a, b, c) at p + 48, from a, b, c at p, p + 16, p + 32. */
function probeFma(): Fn {
  return {
    name: 'probeFma',
    params: [I32],
    locals: [],
    body: [get(0), get(0), v128load(0), get(0), v128load(16), get(0), v128load(32), f32x4relaxedMadd, v128store(48)],
  };
}

/**
 * Lanes where a fused multiply-add and a multiply then add differ: a, b, c
 * and the fused result. The third is the case of the emulation's test (a
 * product just below a float32 midpoint that the addend lifts above it).
 */
export const FMA_PROBES: ReadonlyArray<readonly [number, number, number, number]> = [
  [1 + 2 ** -12, 1 + 2 ** -12, -(1 + 2 ** -11), 2 ** -24],
  [1 + 2 ** -23, 1 - 2 ** -23, -1, -(2 ** -46)],
  [2 ** 15 + 2 ** -8, 2 ** 15 - 2 ** -9, 2 ** -17 + 2 ** -40, 2 ** 30 + 128],
  [3, 5, 7, 22],
];

/** Whether this engine's relaxed_madd fuses (one rounding) in every probe lane. */
function fuses(e: { probeFma(p: number): void }, f32: Float32Array): boolean {
  FMA_PROBES.forEach(([a, b, c], i) => {
    f32[BUF / 4 + i] = a;
    f32[BUF / 4 + 4 + i] = b;
    f32[BUF / 4 + 8 + i] = c;
  });
  e.probeFma(BUF);
  return FMA_PROBES.every(([, , , r], i) => Object.is(f32[BUF / 4 + 12 + i], Math.fround(r)));
}

/** How the Box–Muller's multiply-adds are fused: by the processor (relaxed SIMD) or emulated in float64 lanes. */
export type FmaMode = 'fused' | 'emulated';

export interface RandnKernels {
  readonly mode: FmaMode;
  u32: Uint32Array;
  f32: Float32Array;
  /** Makes the memory at least `bytes` long (new views after it grows). */
  reserve(bytes: number): void;
  uniforms(n: number, dst: number): void;
  boxMuller(p: number, blocks: number): void;
}

const made = new Map<FmaMode, RandnKernels | undefined>();
let best: RandnKernels | undefined | null = null;

/**
 * This thread's instance, made on first use: with the processor's fused
 * multiply-add where relaxed SIMD compiles and a probe shows it fused (x86-64
 * with FMA3, arm64), else with the emulated one; `mode` asks for one of them
 * (tests). Both give torch's bits. Undefined where WebAssembly SIMD does not
 * run or WORKFLOW_IMAGE_KERNELS=js. Measured on the 2-core VM, 3 M normals
 * (uniforms and Box–Muller): emulated 33 ms, fused 10; torch 2.13 27.
 */
export function randnKernels(mode?: FmaMode): RandnKernels | undefined {
  if (mode === undefined) {
    // WORKFLOW_RANDN_FMA=emulated keeps the float64 form (a check of one against the other).
    if (best === null) best = (process.env.WORKFLOW_RANDN_FMA === 'emulated' ? undefined : randnKernels('fused')) ?? randnKernels('emulated');
    return best;
  }
  if (!made.has(mode)) made.set(mode, makeKernels(mode));
  return made.get(mode);
}

function makeKernels(mode: FmaMode): RandnKernels | undefined {
  if (process.env.WORKFLOW_IMAGE_KERNELS === 'js') return undefined;
  try {
    let module: WebAssembly.Module | null;
    if (mode === 'fused') module = compileRelaxed(encodeModule([twist(), uniforms(), boxMuller(FUSED), probeFma()]));
    else {
      const bytes = encodeModule([twist(), uniforms(), boxMuller(EMULATED)]);
      module = WebAssembly.validate(bytes) ? new WebAssembly.Module(bytes) : null;
    }
    if (!module) return undefined;
    const memory = new WebAssembly.Memory({ initial: 4 });
    const e = new WebAssembly.Instance(module, { env: { mem: memory } }).exports as unknown as Pick<RandnKernels, 'uniforms' | 'boxMuller'> & { probeFma(p: number): void };
    const k: RandnKernels = {
      mode,
      u32: new Uint32Array(memory.buffer),
      f32: new Float32Array(memory.buffer),
      reserve(n: number) {
        if (n <= memory.buffer.byteLength) return;
        memory.grow(Math.ceil((n - memory.buffer.byteLength) / 65536));
        k.u32 = new Uint32Array(memory.buffer);
        k.f32 = new Float32Array(memory.buffer);
      },
      uniforms: e.uniforms,
      boxMuller: e.boxMuller,
    };
    if (mode === 'fused' && !fuses(e, k.f32)) return undefined;
    return k;
  } catch {
    return undefined;
  }
}
