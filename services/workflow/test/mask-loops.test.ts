import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NodeContext } from '../src/nodes/api.ts';
import { compositingNodes } from '../src/nodes/compositing.ts';
import { Frame, ImageBatch, MaskBatch, MaskPlane, toByte } from '../src/nodes/image-types.ts';
import { colorMask, compositeSamples, invertSamples, joinAlphaBytes, splitAlphaBytes } from '../src/nodes/mask-loops.ts';
import { maskNodes } from '../src/nodes/masks.ts';
import { randomBytes, sameBits, sameBytes } from './simd-compare.ts';

// ImageColorToMask, InvertMask, MaskComposite (every operation), JoinImageWithAlpha (RGB) and
// SplitImageWithAlpha run in WebAssembly SIMD (mask-loops.ts): both it and the JavaScript loops must give, bit for
// bit, what the nodes' scalar definitions give (NaN, −0, ±∞, values outside 0..1 and rounding boundaries included),
// across vector tails and chunk boundaries, and leave their inputs as they were.

const ctx = { checkInterrupt() {} } as unknown as NodeContext;
const node = (name: string) => [...maskNodes, ...compositingNodes].find((n) => n.name === name)!;

let seed = 4242;
const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;

/** Sizes around the 4-sample vectors and the 16384-sample chunks. */
const SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 17, 16383, 16384, 16385, 40001];

const SPECIAL = [NaN, -0, 0, 1, -1, 0.5, 2, -2, Infinity, -Infinity, 1e-30, -1e-30, 2 ** -25, 1 - 2 ** -24, 1 + 2 ** -23, 1e-8, 3.4e38, -3.4e38, 1.4e-45];

/** Float32 samples: specials, byte boundaries of toByte (½/255 steps and their neighbours) and random values in −0.5..1.5. */
function samples(n: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r < 0.1) out[i] = SPECIAL[Math.floor(rnd() * SPECIAL.length)]!;
    else if (r < 0.4) {
      // 1 − a on a rounding boundary of toByte: (k + ½) / 255, then one float32 step either side.
      const a = new Float32Array([1 - (Math.floor(rnd() * 256) + 0.5) / 255]);
      const bits = new Int32Array(a.buffer);
      bits[0]! += Math.floor(rnd() * 3) - 1;
      out[i] = a[0]!;
    } else out[i] = rnd() * 2 - 0.5;
  }
  return out;
}

const bytes = (n: number): Uint8Array => randomBytes(rnd, n, [0, 128, 255]);

test('ImageColorToMask: SIMD and JavaScript give 1 exactly where the packed RGB equals the colour (3 and 4 channels)', () => {
  for (const c of [3, 4] as const) {
    for (const n of SIZES) {
      const px = bytes(n * c);
      // Some pixels of the colour searched for.
      const color = 0x80ff00;
      for (let i = 0; i < n; i += 3) px.set([0x80, 0xff, 0x00], i * c);
      const before = Uint8Array.from(px);
      for (const col of [color, 0, 0xffffff, 0x00ff80]) {
        const want = new Float32Array(n);
        for (let i = 0; i < n; i++) want[i] = ((px[i * c]! << 16) | (px[i * c + 1]! << 8) | px[i * c + 2]!) === col ? 1 : 0;
        sameBits(colorMask(px, n, c, col), want, `SIMD c=${c} n=${n} colour ${col.toString(16)}`);
        sameBits(colorMask(px, n, c, col, false), want, `JS c=${c} n=${n} colour ${col.toString(16)}`);
      }
      sameBytes(px, before, 'input unchanged');
    }
  }
  // Out of range colours match nothing.
  const px = new Uint8Array(12);
  for (const col of [-1, 0x1000000, 0.5]) sameBits(colorMask(px, 4, 3, col), new Float32Array(4), `colour ${col}`);
});

test('ImageColorToMask node: the reference example (one pure-red pixel among others)', () => {
  const px = Buffer.from([255, 0, 0, 254, 0, 0, 255, 0, 1, 255, 0, 0, 0, 0, 0]);
  const [out] = node('ImageColorToMask').execute({ image: new ImageBatch([new Frame(5, 1, 3, px)]), color: 0xff0000 }, ctx) as [MaskBatch];
  assert.deepEqual([...out.planes[0]!.data], [1, 0, 0, 1, 0]);
});

test('InvertMask: SIMD and JavaScript give the float32 of 1 − v', () => {
  for (const n of SIZES) {
    const d = samples(n);
    const before = Float32Array.from(d);
    const want = d.map((v) => 1 - v);
    sameBits(invertSamples(d), want, `SIMD n=${n}`);
    sameBits(invertSamples(d, false), want, `JS n=${n}`);
    sameBits(d, before, 'input unchanged');
  }
});

/** MaskComposite as the reference defines it: the source's overlap combined into a copy stored as float32, then every sample clamped. */
function compositeScalar(dst: Float32Array, src: Float32Array, dw: number, dh: number, sw: number, sh: number, x: number, y: number, op: string): Float32Array {
  const o = dst.slice();
  const torchRound = (v: number) => {
    const r = Math.round(v);
    return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
  };
  for (let yy = y; yy < Math.min(y + sh, dh); yy++) {
    for (let xx = x; xx < Math.min(x + sw, dw); xx++) {
      const a = o[yy * dw + xx]!;
      const b = src[(yy - y) * sw + (xx - x)]!;
      const A = torchRound(a) !== 0;
      const B = torchRound(b) !== 0;
      o[yy * dw + xx] = op === 'add' ? a + b : op === 'subtract' ? a - b : op === 'multiply' ? a * b : op === 'and' ? +(A && B) : op === 'or' ? +(A || B) : +(A !== B);
    }
  }
  for (let i = 0; i < o.length; i++) {
    const v = o[i]!;
    o[i] = v > 1 ? 1 : v < 0 ? 0 : v;
  }
  return o;
}

test('MaskComposite: SIMD and JavaScript give the combined, clamped float32 for every operation, offset and overlap', () => {
  const cases: Array<[dw: number, dh: number, sw: number, sh: number, x: number, y: number]> = [
    [1, 1, 1, 1, 0, 0],
    [7, 5, 7, 5, 0, 0],
    [7, 5, 3, 2, 2, 1],
    [9, 4, 20, 20, 5, 3],
    [9, 4, 4, 4, 9, 0],
    [9, 4, 4, 4, 0, 4],
    [9, 4, 2, 2, 30, 30],
    [130, 131, 130, 131, 0, 0],
    [300, 70, 120, 40, 11, 13],
    [16384, 3, 16384, 3, 0, 0],
    [16384, 2, 5, 1, 16382, 1],
    [5000, 7, 4999, 7, 1, 0],
    // Source rows spread over three chunks of 16 destination rows, from an offset row.
    [1000, 40, 600, 30, 7, 5],
    // Whole rows (x 0, the destination's width), in one call per chunk: starting and ending inside chunks, past the bottom.
    [1000, 40, 1000, 30, 0, 5],
    [1000, 40, 1000, 9, 0, 20],
    [1000, 40, 1000, 40, 0, 35],
    [9, 4, 9, 2, 0, 3],
  ];
  for (const [dw, dh, sw, sh, x, y] of cases) {
    const dst = samples(dw * dh);
    const src = samples(sw * sh);
    const dBefore = Float32Array.from(dst);
    const sBefore = Float32Array.from(src);
    for (const op of ['add', 'subtract', 'multiply', 'and', 'or', 'xor']) {
      const want = compositeScalar(dst, src, dw, dh, sw, sh, x, y, op);
      const right = Math.min(x + sw, dw);
      const bottom = Math.min(y + sh, dh);
      const what = `${op} ${dw}x${dh} ← ${sw}x${sh} at (${x}, ${y})`;
      sameBits(compositeSamples(dst, src, dw, dh, sw, x, y, right, bottom, op), want, `SIMD ${what}`);
      sameBits(compositeSamples(dst, src, dw, dh, sw, x, y, right, bottom, op, false), want, `JS ${what}`);
      if (dw * dh < 100_000) {
        const [out] = node('MaskComposite').execute(
          { destination: new MaskBatch([new MaskPlane(dw, dh, dst)]), source: new MaskBatch([new MaskPlane(sw, sh, src)]), x, y, operation: op },
          ctx,
        ) as [MaskBatch];
        sameBits(out.planes[0]!.data, want, `node ${what}`);
      }
    }
    sameBits(dst, dBefore, 'destination unchanged');
    sameBits(src, sBefore, 'source unchanged');
  }
});

test('JoinImageWithAlpha: SIMD (RGB) and JavaScript give the RGB bytes and toByte(1 − a), for 3 and 4 channels', () => {
  for (const c of [3, 4] as const) {
    for (const n of SIZES) {
      const px = bytes(n * c);
      const a = samples(n);
      const pBefore = Uint8Array.from(px);
      const aBefore = Float32Array.from(a);
      const want = new Uint8Array(n * 4);
      for (let i = 0; i < n; i++) {
        want.set(px.subarray(i * c, i * c + 3), i * 4);
        want[i * 4 + 3] = toByte(1 - a[i]!);
      }
      sameBytes(joinAlphaBytes(px, c, a, n), want, `SIMD c=${c} n=${n}`);
      sameBytes(joinAlphaBytes(px, c, a, n, false), want, `JS c=${c} n=${n}`);
      sameBytes(px, pBefore, 'image unchanged');
      sameBits(a, aBefore, 'alpha unchanged');
    }
  }
});

test('SplitImageWithAlpha: SIMD and JavaScript give the RGB bytes and the float32 of 1 − alpha / 255', () => {
  for (const n of SIZES) {
    const px = bytes(n * 4);
    const before = Uint8Array.from(px);
    const rgb = new Uint8Array(n * 3);
    const mask = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      rgb.set(px.subarray(i * 4, i * 4 + 3), i * 3);
      mask[i] = 1 - px[i * 4 + 3]! / 255;
    }
    for (const simd of [true, false]) {
      const [d, m] = splitAlphaBytes(px, n, simd);
      sameBytes(d, rgb, `${simd ? 'SIMD' : 'JS'} RGB n=${n}`);
      sameBits(m, mask, `${simd ? 'SIMD' : 'JS'} mask n=${n}`);
    }
    sameBytes(px, before, 'input unchanged');
  }
});

test('JoinImageWithAlpha → SplitImageWithAlpha through the nodes: the RGB comes back, the mask is the alpha byte’s', () => {
  const w = 37;
  const h = 11;
  const px = Buffer.from(bytes(w * h * 3));
  const a = samples(w * h).map((v) => (Number.isFinite(v) ? Math.min(1, Math.max(0, v)) : 0.25));
  const [joined] = node('JoinImageWithAlpha').execute({ image: new ImageBatch([new Frame(w, h, 3, px)]), alpha: new MaskBatch([new MaskPlane(w, h, a)]) }, ctx) as [ImageBatch];
  assert.equal(joined.frames[0]!.channels, 4);
  const [rgb, mask] = node('SplitImageWithAlpha').execute({ image: joined }, ctx) as [ImageBatch, MaskBatch];
  sameBytes(rgb.frames[0]!.data, px, 'RGB');
  const want = a.map((v) => 1 - toByte(1 - v) / 255);
  sameBits(mask.planes[0]!.data, want, 'mask');
  // An RGB image splits into itself and a zero mask.
  const [rgb3, mask3] = node('SplitImageWithAlpha').execute({ image: new ImageBatch([new Frame(w, h, 3, px)]) }, ctx) as [ImageBatch, MaskBatch];
  assert.equal(rgb3.frames[0]!.data, px);
  sameBits(mask3.planes[0]!.data, new Float32Array(w * h), 'zero mask');
});
