import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nearestPlane, resamplePlane } from '../src/nodes/plane-loops.ts';
import { makeTaps, resizePlane, type Taps } from '../src/nodes/resample.ts';
import { MaskPlane } from '../src/nodes/image-types.ts';
import { simdKernels } from '../src/nodes/simd-kernels.ts';
import { sameBits } from './simd-compare.ts';

// Float-plane resizes (masks, LatentUpscale) run in WebAssembly SIMD (plane-loops.ts): it must give, bit for bit,
// what the JavaScript loops give (NaN, −0, ±∞, float32 extremes and denormals included; zero-weight taps skipped as
// there, so that an ∞ beside a zero weight does not become NaN), for every separable method, enlarging and
// shrinking, across vector tails and the row chunks, and leave its input as it was.

let seed = 777;
const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;

const SPECIAL = [NaN, -0, 0, 1, -1, Infinity, -Infinity, 3.4e38, -3.4e38, 1.4e-45, -1.4e-45, 1e-30, 0.5, 2 ** -24];

function plane(n: number, specials: boolean): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const r = rnd();
    out[i] = specials && r < 0.05 ? SPECIAL[Math.floor(rnd() * SPECIAL.length)]! : r < 0.2 ? Math.round(rnd()) : (rnd() - 0.3) * 4;
  }
  return out;
}

/** (w, h) → (ow, oh): vector tails, enlargements, shrinks (wide tap bands for area), one-pixel sides, rows past a chunk. */
const SIZES: Array<[number, number, number, number]> = [
  [1, 1, 3, 2],
  [3, 2, 1, 1],
  [5, 7, 9, 11],
  [8, 8, 12, 12],
  [128, 128, 192, 192],
  [128, 96, 64, 48],
  [17, 300, 33, 5],
  [300, 17, 5, 33],
  [1000, 40, 999, 41],
  [64, 2000, 61, 77],
  [4, 40000, 3, 20001],
  [20000, 3, 30001, 2],
];

test('the SIMD kernels run here (else these tests compare the JavaScript loops with themselves)', () => {
  if (process.env.WORKFLOW_IMAGE_KERNELS !== 'js') assert.ok(simdKernels());
});

test('resamplePlane: SIMD and JavaScript give the same float32 for bilinear, bicubic and area', () => {
  for (const [w, h, ow, oh] of SIZES) {
    for (const specials of [false, true]) {
      const src = plane(w * h, specials);
      const before = Float32Array.from(src);
      for (const method of ['bilinear', 'bicubic', 'area'] as const) {
        const tx = makeTaps(w, ow, method);
        const ty = makeTaps(h, oh, method);
        const what = `${method} ${w}x${h} → ${ow}x${oh}${specials ? ' with specials' : ''}`;
        sameBits(resamplePlane(src, w, h, ow, oh, tx, ty, () => {}), resamplePlane(src, w, h, ow, oh, tx, ty, () => {}, false), what);
      }
      sameBits(src, before, 'input unchanged');
    }
  }
});

test('resamplePlane: zero and NaN weights, taps out of order, as the JavaScript loops', () => {
  // Hand-made taps: 3 a position, some weights ±0 (skipped, even beside ∞), NaN, negative; indices in any order.
  const taps = (inSize: number, outSize: number): Taps => {
    const k = 3;
    const idx = new Int32Array(outSize * k);
    const w = new Float32Array(outSize * k);
    for (let i = 0; i < idx.length; i++) {
      idx[i] = Math.floor(rnd() * inSize);
      const r = rnd();
      w[i] = r < 0.3 ? 0 : r < 0.35 ? -0 : r < 0.38 ? NaN : (rnd() - 0.4) * 2;
    }
    return { k, idx, w };
  };
  for (const [w, h, ow, oh] of SIZES) {
    const src = plane(w * h, true);
    const tx = taps(w, ow);
    const ty = taps(h, oh);
    sameBits(resamplePlane(src, w, h, ow, oh, tx, ty, () => {}), resamplePlane(src, w, h, ow, oh, tx, ty, () => {}, false), `${w}x${h} → ${ow}x${oh}`);
  }
});

test('nearestPlane: SIMD and JavaScript give the same float32 (−0 as +0)', () => {
  for (const [w, h, ow, oh] of SIZES) {
    const src = plane(w * h, true);
    const before = Float32Array.from(src);
    const xs = makeTaps(w, ow, 'nearest-exact').idx;
    const ys = makeTaps(h, oh, 'nearest-exact').idx;
    const got = nearestPlane(src, w, ow, oh, xs, ys, () => {});
    sameBits(got, nearestPlane(src, w, ow, oh, xs, ys, () => {}, false), `${w}x${h} → ${ow}x${oh}`);
    sameBits(src, before, 'input unchanged');
  }
});

test('resizePlane: checkInterrupt runs during long resizes (SIMD path)', () => {
  let calls = 0;
  // Past the size a resampling runs in one go in the kernels' memory (a million floats).
  const p = new MaskPlane(512, 4000, plane(512 * 4000, false));
  resizePlane(p, 512, 6000, 'bilinear', 'disabled', () => calls++);
  assert.ok(calls >= 10, `${calls} calls`);
  calls = 0;
  resizePlane(p, 512, 6000, 'nearest-exact', 'disabled', () => calls++);
  assert.ok(calls >= 10, `${calls} calls`);
});
