import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nearestPlane, nearestPlanes, resamplePlane, resamplePlanes } from '../src/nodes/plane-loops.ts';
import { centreCrop, makeTaps, resizePlane, resizePlanes, type Taps, type UpscaleMethod } from '../src/nodes/resample.ts';
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

test('resamplePlane: two neighbouring taps (the pair loads of the horizontal pass) with zero, NaN and negative weights, as the JavaScript loops', () => {
  const pairTaps = (inSize: number, outSize: number): Taps => {
    const idx = new Int32Array(outSize * 2);
    const w = new Float32Array(outSize * 2);
    for (let i = 0; i < outSize; i++) {
      const f = Math.floor(rnd() * inSize);
      // Mostly neighbours; now and then the same sample twice (the right edge) or any other.
      const r = rnd();
      idx[2 * i] = f;
      idx[2 * i + 1] = r < 0.8 ? Math.min(f + 1, inSize - 1) : r < 0.9 ? f : Math.floor(rnd() * inSize);
      for (const j of [2 * i, 2 * i + 1]) {
        const u = rnd();
        w[j] = u < 0.15 ? 0 : u < 0.2 ? -0 : u < 0.23 ? NaN : (rnd() - 0.4) * 2;
      }
    }
    return { k: 2, idx, w };
  };
  for (const [w, h, ow, oh] of SIZES) {
    const src = plane(w * h, true);
    const tx = pairTaps(w, ow);
    const ty = pairTaps(h, oh);
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

// A latent's planes go through resamplePlanes / nearestPlanes together (one set of tap tables, as many planes at a time
// as fit in the kernels' memory): each plane must come out as resamplePlane / nearestPlane make it alone.
const STACKS: Array<[number, number, number, number, number]> = [
  [16, 128, 128, 192, 192], // 4 latents of 1024²: two groups
  [3, 5, 7, 9, 11],
  [5, 300, 400, 200, 150], // one plane a group
  [2, 3000, 500, 100, 20], // past the whole-plane size: plane by plane in chunks
  [4, 1, 1, 3, 2],
];

test('resamplePlanes and nearestPlanes: every plane as resamplePlane and nearestPlane give it alone, SIMD and JavaScript', () => {
  for (const [count, w, h, ow, oh] of STACKS) {
    const src = plane(count * w * h, true);
    const before = Float32Array.from(src);
    for (const method of ['bilinear', 'bicubic', 'area'] as const) {
      const tx = makeTaps(w, ow, method);
      const ty = makeTaps(h, oh, method);
      const each = new Float32Array(count * ow * oh);
      for (let p = 0; p < count; p++) each.set(resamplePlane(src.subarray(p * w * h, (p + 1) * w * h), w, h, ow, oh, tx, ty, () => {}, false), p * ow * oh);
      const what = `${count} × ${method} ${w}x${h} → ${ow}x${oh}`;
      sameBits(resamplePlanes(src, count, w, h, ow, oh, tx, ty, () => {}), each, what);
      sameBits(resamplePlanes(src, count, w, h, ow, oh, tx, ty, () => {}, false), each, `${what} (JavaScript)`);
    }
    const xs = makeTaps(w, ow, 'nearest-exact').idx;
    const ys = makeTaps(h, oh, 'nearest-exact').idx;
    const each = new Float32Array(count * ow * oh);
    for (let p = 0; p < count; p++) each.set(nearestPlane(src.subarray(p * w * h, (p + 1) * w * h), w, ow, oh, xs, ys, () => {}, false), p * ow * oh);
    sameBits(nearestPlanes(src, count, w, h, ow, oh, xs, ys, () => {}), each, `${count} × nearest ${w}x${h} → ${ow}x${oh}`);
    sameBits(nearestPlanes(src, count, w, h, ow, oh, xs, ys, () => {}, false), each, `${count} × nearest ${w}x${h} → ${ow}x${oh} (JavaScript)`);
    sameBits(src, before, 'input unchanged');
  }
});

test('resizePlanes: a centre crop moves the taps and gives what cropping each plane first gives', () => {
  const cases: Array<[number, number, number, number, number]> = [
    [4, 128, 96, 192, 192],
    [3, 40, 90, 64, 32],
    [2, 33, 17, 33, 17],
    [2, 64, 64, 32, 64],
    [2, 50, 20, 50, 10],
  ];
  for (const [count, w, h, ow, oh] of cases) {
    const src = plane(count * w * h, true);
    for (const method of ['nearest-exact', 'bilinear', 'bicubic', 'area', 'lanczos'] as UpscaleMethod[]) {
      for (const crop of ['disabled', 'center'] as const) {
        const each = new Float32Array(count * ow * oh);
        for (let p = 0; p < count; p++) each.set(resizePlane(new MaskPlane(w, h, src.slice(p * w * h, (p + 1) * w * h)), ow, oh, method, crop).data, p * ow * oh);
        const got = new Float32Array(count * ow * oh);
        resizePlanes(src, count, w, h, ow, oh, method, crop, () => {}, got);
        sameBits(got, each, `${count} × ${method} ${crop} ${w}x${h} → ${ow}x${oh}`);
      }
    }
  }
});

test('centreCrop rounds halves to even, as Python\'s round in common_upscale', () => {
  // 2×1 → 1×1: (2 − 2 · ½) / 2 = 0.5, which Python rounds to 0 (Math.round would say 1).
  assert.deepEqual(centreCrop(2, 1, 1, 1), { x: 0, y: 0, w: 2, h: 1 });
  // 7×1 → 2×1: x = round(2.5) = 2.
  assert.deepEqual(centreCrop(7, 1, 2, 1), { x: 2, y: 0, w: 3, h: 1 });
  assert.deepEqual(centreCrop(1, 6, 1, 1), { x: 0, y: 2, w: 1, h: 2 });
});
