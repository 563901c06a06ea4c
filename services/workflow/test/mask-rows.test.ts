import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NodeContext } from '../src/nodes/api.ts';
import { compositingNodes } from '../src/nodes/compositing.ts';
import { Frame, ImageBatch, MaskBatch, MaskPlane } from '../src/nodes/image-types.ts';
import { blendMasked, channelUnits, featherSamples, float32Threshold, thresholdSamples } from '../src/nodes/mask-loops.ts';
import { maskNodes } from '../src/nodes/masks.ts';
import { simdKernels } from '../src/nodes/simd-kernels.ts';
import { randomBytes, sameBits, sameBytes } from './simd-compare.ts';

// ImageToMask / LoadImageMask (channel bytes to float planes), ThresholdMask, FeatherMask and ImageCompositeMasked's
// masked blend run in WebAssembly SIMD (mask-loops.ts): both it and the JavaScript loops must give, bit for bit, what
// the nodes' scalar definitions give (NaN, −0, ±∞, values outside 0..1 and rounding boundaries included), across
// vector tails and chunk boundaries, and leave their inputs as they were.

const ctx = { checkInterrupt() {} } as unknown as NodeContext;
const node = (name: string) => [...maskNodes, ...compositingNodes].find((n) => n.name === name)!;

let seed = 2929;
const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;

/** Sizes around the 4-sample vectors and the 16384-sample chunks. */
const SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 17, 16383, 16384, 16385, 40001];

const SPECIAL = [NaN, -0, 0, 1, -1, 0.5, 2, -2, Infinity, -Infinity, 1e-30, -1e-30, 2 ** -25, 1 - 2 ** -24, 1 + 2 ** -23, 1e-8, 3.4e38, -3.4e38, 1.4e-45, -1.4e-45];

/** Float32 samples: specials, values on and next to byte levels (k / 255, (k + ½) / 255) and random values in −0.5..1.5. */
function samples(n: number): Float32Array {
  const out = new Float32Array(n);
  const bits = new Int32Array(out.buffer);
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r < 0.1) out[i] = SPECIAL[Math.floor(rnd() * SPECIAL.length)]!;
    else if (r < 0.4) {
      out[i] = (Math.floor(rnd() * 512) / 2) / 255;
      bits[i]! += Math.floor(rnd() * 3) - 1;
    } else out[i] = rnd() * 2 - 0.5;
  }
  return out;
}

const bytes = (n: number): Uint8Array => randomBytes(rnd, n, [0, 1, 127, 128, 254, 255]);

test('the SIMD kernels run here (else the comparisons below compare the JavaScript loops with themselves)', () => {
  if (process.env.WORKFLOW_IMAGE_KERNELS !== 'js') assert.ok(simdKernels());
});

test('channel bytes to a plane: SIMD and JavaScript give float32(b / 255) and float32(1 − b / 255) for every byte, channel and layout', () => {
  for (const c of [1, 3, 4] as const) {
    // Every byte value in every channel, then random pixels.
    const all = new Uint8Array(256 * c);
    for (let b = 0; b < 256; b++) all.fill(b, b * c, b * c + c);
    for (const n of [256, ...SIZES]) {
      const px = n === 256 ? all : bytes(n * c);
      const before = Uint8Array.from(px);
      for (let ch = 0; ch < c; ch++) {
        for (const inverted of [false, true]) {
          const want = new Float32Array(n);
          for (let i = 0; i < n; i++) want[i] = inverted ? 1 - px[i * c + ch]! / 255 : px[i * c + ch]! / 255;
          const what = `c=${c} ch=${ch} n=${n}${inverted ? ' inverted' : ''}`;
          sameBits(channelUnits(px, n, c, ch, inverted), want, `SIMD ${what}`);
          sameBits(channelUnits(px, n, c, ch, inverted, false), want, `JS ${what}`);
        }
      }
      sameBytes(px, before, 'input unchanged');
    }
  }
});

test('ImageToMask node: each channel of RGB and RGBA frames, and an RGB frame’s alpha opaque', () => {
  for (const c of [3, 4] as const) {
    const px = bytes(5 * 3 * c);
    const image = new ImageBatch([new Frame(5, 3, c, Buffer.from(px))]);
    for (const [k, channel] of ['red', 'green', 'blue', 'alpha'].entries()) {
      const [out] = node('ImageToMask').execute({ image, channel }, ctx) as [MaskBatch];
      const want = new Float32Array(15);
      for (let i = 0; i < 15; i++) want[i] = k < c ? px[i * c + k]! / 255 : 1;
      sameBits(out.planes[0]!.data, want, `c=${c} ${channel}`);
    }
  }
});

test('float32Threshold: for every float32 d, d > t exactly where d > value', () => {
  const values = [0.5, 0.1, 0.3, 1 / 3, 0, -0, 1, -1, 1e-50, -1e-50, 1e-45, 2e-45, 1e39, -1e39, 3.4028235677973366e38, Infinity, -Infinity, 0.7 + 1e-17];
  for (let i = 0; i < 200; i++) values.push(rnd() * 4 - 2, (rnd() - 0.5) * 1e-40);
  const probe = samples(4000);
  for (const v of values) {
    const t = float32Threshold(v);
    assert.equal(Math.fround(t), t, `threshold of ${v} is a float32`);
    // The float32s next to t and to value, and the sample set.
    const near = new Float32Array([t, v, ...probe]);
    const bits = new Int32Array(near.buffer);
    const more = new Float32Array(8);
    const mb = new Int32Array(more.buffer);
    for (let j = 0; j < 2; j++) for (const [k, s] of [-2, -1, 1, 2].entries()) mb[j * 4 + k] = bits[j]! + s;
    for (const d of [...near, ...more]) assert.equal(d > t, d > v, `d=${d} value=${v} t=${t}`);
  }
  assert.ok(Number.isNaN(float32Threshold(NaN)));
});

test('ThresholdMask: SIMD and JavaScript give 1 where a sample is above the value (doubles that float32 does not hold too)', () => {
  for (const n of SIZES) {
    const d = samples(n);
    const before = d.slice();
    for (const value of [0.5, 0.1, 0, -0, 1, 0.3 + 1e-12, -1e-50, 1e-50, Infinity, -Infinity, NaN, 3.5e38, -3.5e38]) {
      const want = new Float32Array(n);
      for (let i = 0; i < n; i++) want[i] = d[i]! > value ? 1 : 0;
      sameBits(thresholdSamples(d, value), want, `SIMD n=${n} value=${value}`);
      sameBits(thresholdSamples(d, value, false), want, `JS n=${n} value=${value}`);
    }
    sameBits(d, before, 'input unchanged');
  }
});

/** FeatherMask as it was written before its row-wise loops: every left column, every right column, then the rows. */
function featherDefinition(src: Float32Array, w: number, h: number, left: number, top: number, right: number, bottom: number): Float32Array {
  const o = src.slice();
  const col = (x: number, rate: number) => {
    for (let y = 0; y < h; y++) o[y * w + x]! *= rate;
  };
  const row = (y: number, rate: number) => {
    for (let x = 0; x < w; x++) o[y * w + x]! *= rate;
  };
  for (let x = 0; x < left; x++) col(x, (x + 1) / left);
  for (let x = 0; x < right; x++) col(w - 1 - x, (x + 1) / right);
  for (let y = 0; y < top; y++) row(y, (y + 1) / top);
  for (let y = 0; y < bottom; y++) row(h - 1 - y, (y + 1) / bottom);
  return o;
}

test('FeatherMask: SIMD and JavaScript give the column then row scalings, overlapping edges and vector tails included', () => {
  const cases: [number, number, number, number, number, number][] = [
    [1, 1, 1, 1, 1, 1],
    [1, 1, 0, 0, 0, 0],
    [5, 3, 2, 1, 3, 2],
    [7, 9, 7, 9, 7, 9],
    [13, 11, 6, 0, 9, 4],
    [33, 17, 5, 3, 6, 7],
    [64, 64, 32, 32, 32, 32],
    [130, 129, 64, 0, 0, 64],
    [300, 60, 0, 11, 300, 0],
    [20001, 3, 7, 1, 9, 2],
    [3, 7000, 2, 3000, 1, 4000],
    // Fractional widths (a pack's call): the definition's loops run to the next integer.
    [11, 9, 2.5, 1.5, 3.25, 0.5],
  ];
  for (const [w, h, left, top, right, bottom] of cases) {
    const d = samples(w * h);
    const before = d.slice();
    const want = featherDefinition(d, w, h, left, top, right, bottom);
    const what = `${w}×${h} ${left}/${top}/${right}/${bottom}`;
    sameBits(featherSamples(d, w, h, left, top, right, bottom), want, `SIMD ${what}`);
    sameBits(featherSamples(d, w, h, left, top, right, bottom, false), want, `JS ${what}`);
    sameBits(d, before, 'input unchanged');
  }
});

test('FeatherMask node: widths beyond the plane are clipped to it', () => {
  const d = samples(6 * 4);
  const [out] = node('FeatherMask').execute({ mask: new MaskBatch([new MaskPlane(6, 4, d)]), left: 9, top: 2, right: 1, bottom: 100 }, ctx) as [MaskBatch];
  sameBits(out.planes[0]!.data, featherDefinition(d, 6, 4, 6, 2, 1, 4), 'clipped widths');
});

/** The masked paste as pasteRows wrote it: per channel a·s + (1 − a)·d, clamped, Math.round. */
function blendDefinition(src: Uint8Array, sw: number, dst: Uint8Array, dw: number, c: number, x: number, y: number, x0: number, y0: number, x1: number, y1: number, mask: Float32Array): Uint8Array {
  const o = Uint8Array.from(dst);
  for (let yy = y0; yy < y1; yy++) {
    for (let xx = x0; xx < x1; xx++) {
      const a = mask[(yy - y) * sw + (xx - x)]!;
      for (let ch = 0; ch < c; ch++) {
        const v = a * src[((yy - y) * sw + (xx - x)) * c + ch]! + (1 - a) * dst[(yy * dw + xx) * c + ch]!;
        o[(yy * dw + xx) * c + ch] = v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v);
      }
    }
  }
  return o;
}

/** Mask samples for the blend: those of `samples`, and values whose blends land on and next to a half level. */
function blendMask(n: number): Float32Array {
  const m = samples(n);
  const bits = new Int32Array(m.buffer);
  for (let i = 0; i < n; i += 3) {
    // a·255 + (1 − a)·0 = k + ½ for a = (k + ½) / 255, and its float32 neighbours.
    m[i] = (Math.floor(rnd() * 255) + 0.5) / 255;
    bits[i]! += Math.floor(rnd() * 3) - 1;
  }
  return m;
}

test('ImageCompositeMasked blend: SIMD and JavaScript give the rounded, clamped double blend for 3 and 4 channels, offsets and clipping', () => {
  // [dw, dh, sw, sh, x, y]: the rectangle is the source placed at (x, y) clipped to the destination.
  const cases: [number, number, number, number, number, number][] = [
    [1, 1, 1, 1, 0, 0],
    [5, 4, 3, 2, 1, 1],
    [9, 7, 9, 7, 0, 0],
    [17, 5, 6, 9, -2, -3],
    [40, 30, 25, 20, 20, 15],
    [300, 120, 300, 120, 0, 0],
    [20001, 2, 20001, 2, 0, 0],
    [16390, 3, 16385, 3, 3, 0],
    [3, 9000, 2, 8000, 1, 5],
  ];
  for (const c of [3, 4] as const) {
    for (const [dw, dh, sw, sh, x, y] of cases) {
      const src = bytes(sw * sh * c);
      const dst = bytes(dw * dh * c);
      const mask = blendMask(sw * sh);
      const x0 = Math.max(0, x);
      const y0 = Math.max(0, y);
      const x1 = Math.min(dw, x + sw);
      const y1 = Math.min(dh, y + sh);
      const want = blendDefinition(src, sw, dst, dw, c, x, y, x0, y0, x1, y1, mask);
      const srcBefore = Uint8Array.from(src);
      const maskBefore = mask.slice();
      const what = `c=${c} ${dw}×${dh} ← ${sw}×${sh} at ${x},${y}`;
      for (const simd of [true, false]) {
        const out = Uint8Array.from(dst);
        blendMasked(src, sw, out, dw, c, x, y, x0, y0, x1, y1, mask, simd);
        sameBytes(out, want, `${simd ? 'SIMD' : 'JS'} ${what}`);
      }
      sameBytes(src, srcBefore, 'source unchanged');
      sameBits(mask, maskBefore, 'mask unchanged');
    }
  }
});

test('ImageCompositeMasked node: resize_source with a mask gives the blend of the resized source (and leaves the destination as it was)', async () => {
  const dw = 13;
  const dh = 9;
  const dst = new ImageBatch([new Frame(dw, dh, 3, Buffer.from(bytes(dw * dh * 3)))]);
  const before = Uint8Array.from(dst.frames[0]!.data);
  const src = new ImageBatch([new Frame(dw, dh, 3, Buffer.from(bytes(dw * dh * 3)))]);
  const mask = blendMask(dw * dh);
  const [out] = (await node('ImageCompositeMasked').execute({ destination: dst, source: src, x: 0, y: 0, resize_source: true, mask: new MaskBatch([new MaskPlane(dw, dh, mask)]) }, ctx)) as [ImageBatch];
  sameBytes(out.frames[0]!.data, blendDefinition(src.frames[0]!.data, dw, before, dw, 3, 0, 0, 0, 0, dw, dh, mask), 'blend');
  sameBytes(dst.frames[0]!.data, before, 'destination unchanged');
});
