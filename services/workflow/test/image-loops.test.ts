import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addNoiseBytes, PORTER_DUFF_MODES, porterDuffPixels, rgbToYcbcrBytes, ycbcrToRgbBytes } from '../src/nodes/image-loops.ts';
import { simdKernels } from '../src/nodes/simd-kernels.ts';
import { randomBytes, sameBits, sameBytes } from './simd-compare.ts';

// PorterDuffImageComposite (every mode) and kornia's YCbCr run in WebAssembly SIMD (image-loops.ts): it must give,
// byte for byte (and the output mask bit for bit), what the JavaScript loops give, over random samples with edge
// values (bytes 0 and 255, masks 0, 1, NaN, ±∞, −0, outside 0..1, near the 1e-5 alpha threshold), across vector
// tails and chunk boundaries, and leave its inputs as they were.

let seed = 2929;
const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;

/** Pixel counts around the 4-pixel vectors and the 4096- and 8192-pixel chunks. */
const SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 17, 4095, 4096, 4097, 8191, 8192, 8193, 20001];

const SPECIAL = [NaN, -0, 0, 1, -1, 0.5, 2, -2, Infinity, -Infinity, 1e-30, 1 - 1e-5, 1 - 2 ** -24, 1 + 2 ** -23, 0.99999, 1 - 1.0000001e-5, 3.4e38, -3.4e38, 1.4e-45];

/** Masks: mostly 0..1 (many exactly 0 or 1), some specials. */
function masks(n: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const r = rnd();
    out[i] = r < 0.1 ? SPECIAL[Math.floor(rnd() * SPECIAL.length)]! : r < 0.25 ? 0 : r < 0.4 ? 1 : rnd();
  }
  return out;
}

const bytes = (n: number): Uint8Array => randomBytes(rnd, n, [0, 255, 128, 1, 254]);

test('the SIMD kernels run here (else these tests compare the JavaScript loops with themselves)', () => {
  if (process.env.WORKFLOW_IMAGE_KERNELS !== 'js') assert.ok(simdKernels());
});

test('PorterDuffImageComposite: SIMD and JavaScript give the same bytes and mask for every mode, 3 and 4 channels', () => {
  for (const c of [3, 4] as const) {
    for (const n of SIZES) {
      const s = bytes(n * c);
      const d = bytes(n * c);
      const sm = masks(n);
      const dm = masks(n);
      const before = [Uint8Array.from(s), Uint8Array.from(d), Float32Array.from(sm), Float32Array.from(dm)] as const;
      for (let m = 0; m < PORTER_DUFF_MODES.length; m++) {
        const what = `${PORTER_DUFF_MODES[m]} c=${c} n=${n}`;
        const want = porterDuffPixels(m, s, d, sm, dm, n, c, false);
        const got = porterDuffPixels(m, s, d, sm, dm, n, c);
        sameBytes(got.image, want.image, `${what} image`);
        sameBits(got.mask, want.mask, `${what} mask`);
      }
      sameBytes(s, before[0], 'source unchanged');
      sameBytes(d, before[1], 'destination unchanged');
      sameBits(sm, before[2], 'source mask unchanged');
      sameBits(dm, before[3], 'destination mask unchanged');
    }
  }
});

test('PorterDuffImageComposite: every byte pair at alphas on the rounding edges, every mode', () => {
  // All 256 × 256 (source, destination) byte pairs, each at several alpha pairs: 0, 1, ½, tiny, and the 1e-5 threshold.
  const alphas = [0, 1, 0.5, 1e-5, 1 - 1e-5, 1 - 2e-5, 0.25, 0.75, 1 / 3];
  const n = 256 * 256 * alphas.length;
  const s = new Uint8Array(n * 3);
  const d = new Uint8Array(n * 3);
  const sm = new Float32Array(n);
  const dm = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const pair = i % 65536;
    s.fill(pair >> 8, i * 3, i * 3 + 3);
    d.fill(pair & 255, i * 3, i * 3 + 3);
    sm[i] = alphas[Math.floor(i / 65536)]!;
    dm[i] = alphas[(Math.floor(i / 65536) * 5 + (pair % 7)) % alphas.length]!;
  }
  for (let m = 0; m < PORTER_DUFF_MODES.length; m++) {
    const want = porterDuffPixels(m, s, d, sm, dm, n, 3, false);
    const got = porterDuffPixels(m, s, d, sm, dm, n, 3);
    sameBytes(got.image, want.image, `${PORTER_DUFF_MODES[m]} image`);
    sameBits(got.mask, want.mask, `${PORTER_DUFF_MODES[m]} mask`);
  }
});

test('ImageRGBToYUV: SIMD and JavaScript give the same Y, Cb, Cr bytes (every RGB triple on a grid, random pixels)', () => {
  // Every (r, g, b) with each channel in steps of 3 including 0 and 255, then random pixels at several sizes.
  const grid: number[] = [];
  for (let r = 0; r < 256; r += 3) for (let g = 0; g < 256; g += 3) for (let b = 0; b < 256; b += 3) grid.push(r, g, b);
  const cases = [Uint8Array.from(grid), ...SIZES.map((n) => bytes(n * 3))];
  for (const px of cases) {
    const n = px.length / 3;
    const before = Uint8Array.from(px);
    const want = rgbToYcbcrBytes(px, n, false);
    const got = rgbToYcbcrBytes(px, n);
    for (let p = 0; p < 3; p++) sameBytes(got[p]!, want[p]!, `plane ${p} n=${n}`);
    sameBytes(px, before, 'input unchanged');
  }
});

test('ImageYUVToRGB: SIMD and JavaScript give the same RGB bytes, for 3- and 4-channel Y, U, V frames', () => {
  for (const n of SIZES) {
    for (const [cy, cu, cv] of [[3, 3, 3], [4, 3, 4], [3, 4, 3], [4, 4, 4]] as const) {
      const Y = { data: bytes(n * cy), channels: cy };
      const U = { data: bytes(n * cu), channels: cu };
      const V = { data: bytes(n * cv), channels: cv };
      // Grey frames too (what ImageRGBToYUV gives): each pixel's channels equal.
      if (n % 2 === 0) for (const f of [Y, U, V]) for (let i = 0; i < n; i++) f.data.fill(f.data[i * f.channels]!, i * f.channels, (i + 1) * f.channels);
      const want = ycbcrToRgbBytes(Y, U, V, n, false);
      const got = ycbcrToRgbBytes(Y, U, V, n);
      sameBytes(got, want, `n=${n} channels ${cy}/${cu}/${cv}`);
    }
  }
  // The round trip over every byte grey triple: all 256³ (Y, U, V) would be 16M pixels; every 256 × 256 (U, V) pair at 16 Y levels.
  const n = 16 * 65536;
  const mk = (f: (i: number) => number) => {
    const d = new Uint8Array(n * 3);
    for (let i = 0; i < n; i++) d.fill(f(i), i * 3, i * 3 + 3);
    return { data: d, channels: 3 as const };
  };
  const Y = mk((i) => Math.min(255, (i >> 16) * 17));
  const U = mk((i) => (i >> 8) & 255);
  const V = mk((i) => i & 255);
  sameBytes(ycbcrToRgbBytes(Y, U, V, n), ycbcrToRgbBytes(Y, U, V, n, false), 'every U, V pair');
});

test('ImageAddNoise samples: SIMD and JavaScript give the same bytes (noise of every size, NaN, ±∞, −0; any strength)', (t) => {
  if (!simdKernels()) return t.skip('WebAssembly SIMD does not run here');
  for (const n of SIZES) {
    const src = bytes(n);
    const noise = new Float32Array(n);
    for (let i = 0; i < n; i++) noise[i] = rnd() < 0.1 ? SPECIAL[Math.floor(rnd() * SPECIAL.length)]! : (rnd() - 0.5) * 6;
    for (const s of [0.5, 0, 1, 0.1, 3.7, -0.25, 1e-3]) {
      const want = new Uint8Array(n + 3);
      const got = new Uint8Array(n + 3);
      addNoiseBytes(src, noise, n, s, want, 3, false);
      addNoiseBytes(src, noise, n, s, got, 3);
      sameBytes(got, want, `${n} samples, strength ${s}`);
    }
  }
  // The JavaScript is the node's formula: byte(b / 255 + s · noise), 0 below 0, 255 above 1, NaN to 0.
  const out = new Uint8Array(4);
  addNoiseBytes(Uint8Array.of(128, 0, 255, 10), Float32Array.of(0.1, -1, 1, NaN), 4, 0.5, out, 0, false);
  assert.deepEqual(Array.from(out), [Math.round(Math.fround(Math.fround(128 / 255) + Math.fround(0.05)) * 255), 0, 255, 0]);
});
