/**
 * torch's float32 log and sincos for randn (ATen's avx_mathfun.h: Cephes'
 * logf and sinf/cosf polynomials, eight lanes at a time), one value at a
 * time. torch's x86 builds compile them with GCC's default floating-point
 * contraction, so some multiply-then-add pairs become fused multiply-adds
 * (one rounding); which ones was settled by comparing with torch 2.13's
 * randn output (millions of values, every bit): each `fma` below.
 *
 * `fma` is computed as float32(a·b + c) in double: the product of two
 * float32 is exact in double, the sum rounds once to double and then to
 * float32. That double rounding can differ from one rounding; for the inputs
 * randn produces (1 − k·2⁻²⁴ for the log, float32(2π)·k·2⁻²⁴ for sincos,
 * k < 2²⁴) it does not, which the tests check for all of them against an
 * exactly rounded fused multiply-add.
 */

const f = Math.fround;

/** The polynomials' float32 constants (Cephes'). */
export const CEPHES = {
  sqrtHalf: f(0.707106781186547524),
  logP: [7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1].map(f),
  logQ1: f(-2.12194440e-4),
  logQ2: f(0.693359375),
  fourOverPi: f(1.27323954473516),
  minusDP: [-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8].map(f),
  sin: [-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1].map(f),
  cos: [2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2].map(f),
  /** _mm256_set1_ps(2.0f * pi<double>) */
  twoPi: f(2 * Math.PI),
};

/** float32(a·b + c) for float32 a, b, c (see above for when it is the fused result). */
export type Fma = (a: number, b: number, c: number) => number;
export const fmaViaDouble: Fma = (a, b, c) => f(a * b + c);

const word = new Float32Array(1);
const bits = new Int32Array(word.buffer);

/** log256_ps for one x in (0, 1] (the range randn gives it). */
export function logF32(x0: number, fma: Fma = fmaViaDouble): number {
  const C = CEPHES;
  word[0] = x0;
  const b = bits[0]!;
  let e = f(((b >>> 23) - 0x7f) + 1);
  bits[0] = (b & ~0x7f800000) | 0x3f000000;
  let x = word[0]!;
  const below = x < C.sqrtHalf;
  const t = below ? x : 0;
  x = f(x - 1);
  if (below) e = f(e - 1);
  x = f(x + t);
  const z = f(x * x);
  let y = C.logP[0]!;
  for (let k = 1; k < C.logP.length; k++) y = fma(y, x, C.logP[k]!);
  y = f(y * x);
  y = fma(y, z, f(e * C.logQ1));
  y = f(y - z * 0.5);
  x = f(x + y);
  return fma(e, C.logQ2, x);
}

/** sincos256_ps for one x ≥ 0: writes sin to out[0], cos to out[1]. */
export function sincosF32(x: number, out: Float64Array | Float32Array, fma: Fma = fmaViaDouble): void {
  const C = CEPHES;
  let j = Math.trunc(f(x * C.fourOverPi)) | 0;
  j = (j + 1) & ~1;
  const y = f(j);
  x = fma(y, C.minusDP[0]!, x);
  x = fma(y, C.minusDP[1]!, x);
  x = fma(y, C.minusDP[2]!, x);
  const z = f(x * x);
  let c = fma(C.cos[0]!, z, C.cos[1]!);
  c = fma(c, z, C.cos[2]!);
  c = f(c * z);
  c = fma(c, z, -(z * 0.5));
  c = f(c + 1);
  let s = fma(C.sin[0]!, z, C.sin[1]!);
  s = fma(s, z, C.sin[2]!);
  s = f(s * z);
  s = fma(s, x, x);
  // avx_mathfun selects by masking, subtracting and adding: a zero comes out +0.
  const sinePoly = (j & 2) === 0;
  let sin = (sinePoly ? s : c) + 0;
  let cos = (sinePoly ? c : s) + 0;
  if (j & 4) sin = -sin;
  if (~(j - 2) & 4) cos = -cos;
  out[0] = sin;
  out[1] = cos;
}
