import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NodeContext } from '../src/nodes/api.ts';
import { type ImageBatch, MaskBatch, MaskPlane, toByte } from '../src/nodes/image-types.ts';
import { maskNodes } from '../src/nodes/masks.ts';
import { nearestPlanes } from '../src/nodes/plane-loops.ts';
import { simdKernels } from '../src/nodes/simd-kernels.ts';

// MaskToImage converts in WebAssembly SIMD (maskBytes): every sample must give toByte's byte, three times.
// GrowMask with tapered corners runs its rounds in WebAssembly SIMD (up to 96 of them, or any number on planes with
// NaN) and as the diamond decomposition beyond: both must give, bit for bit, what the rounds one by one give (each
// sample, then its left, right, upper and lower neighbour inside the plane, taken with `u > v` / `u < v`).

const grow = maskNodes.find((n) => n.name === 'GrowMask')!;
const ctx = { checkInterrupt() {} } as unknown as NodeContext;

function rounds(src: Float32Array, w: number, h: number, n: number, max: boolean): Float32Array {
  let cur = Float32Array.from(src);
  for (let it = 0; it < n; it++) {
    const next = new Float32Array(cur.length);
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        let v = cur[y * w + x]!;
        for (const [dx, dy] of [
          [-1, 0],
          [1, 0],
          [0, -1],
          [0, 1],
        ] as const) {
          const xx = x + dx;
          const yy = y + dy;
          if (xx < 0 || yy < 0 || xx >= w || yy >= h) continue;
          const u = cur[yy * w + xx]!;
          if (max ? u > v : u < v) v = u;
        }
        next[y * w + x] = v;
      }
    }
    cur = next;
  }
  return cur;
}

function run(data: Float32Array, w: number, h: number, expand: number): Float32Array {
  const [out] = grow.execute({ mask: new MaskBatch([new MaskPlane(w, h, data)]), expand, tapered_corners: true }, ctx) as [MaskBatch];
  return out.planes[0]!.data;
}

function sameBits(a: Float32Array, b: Float32Array, what: string): void {
  assert.equal(a.length, b.length, what);
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) assert.fail(`${what}: sample ${i} is ${a[i]}, expected ${b[i]}`);
}

test('GrowMask (tapered): the SIMD rounds give the scalar rounds bit for bit, NaN and −0 included', () => {
  let seed = 12345;
  const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  // Widths around the 4-sample vectors, single rows and columns.
  for (const [w, h] of [
    [1, 1],
    [1, 6],
    [6, 1],
    [2, 3],
    [5, 4],
    [9, 7],
    [17, 11],
  ] as const) {
    for (const kind of ['plain', 'nan', 'signed']) {
      const d = new Float32Array(w * h).map(() => rnd());
      if (kind === 'nan') for (let i = 1; i < d.length; i += 7) d[i] = NaN;
      if (kind === 'signed') for (let i = 0; i < d.length; i += 3) d[i] = i % 2 ? -0 : -d[i]!;
      for (const expand of [1, 2, 3, 6, -1, -5, 30]) {
        const n = Math.min(Math.abs(expand), w + h);
        sameBits(run(d, w, h, expand), rounds(d, w, h, n, expand > 0), `${w}×${h} ${kind} expand ${expand}`);
      }
    }
  }
});

test('GrowMask (tapered) beyond 96 rounds: the diamond gives the rounds one by one', () => {
  const w = 61;
  const h = 50;
  const d = new Float32Array(w * h).map((_, i) => ((i * 2654435761) >>> 0) / 2 ** 32);
  for (const expand of [97, -104]) sameBits(run(d, w, h, expand), rounds(d, w, h, Math.abs(expand), expand > 0), `expand ${expand}`);
});

test('MaskToImage (SIMD): toByte of every sample, three times, specials and half-level boundaries included', () => {
  const toImage = maskNodes.find((n) => n.name === 'MaskToImage')!;
  const specials = [NaN, 0, -0, -1, 2, Infinity, -Infinity, 1, 1 - 2 ** -24, 2 ** -149, 0.5];
  for (let k = 0; k < 256; k++) {
    const b = Math.fround((k + 0.5) / 255);
    specials.push(b, b * (1 + 2 ** -23), b * (1 - 2 ** -23));
  }
  // Lengths around the 4-sample steps and the 16384-sample chunks.
  for (const n of [1, 3, 5, 16383, 16385, specials.length * 7]) {
    const d = new Float32Array(n).map((_, i) => (i % 2 ? specials[(i >> 1) % specials.length]! : ((i * 2654435761) >>> 0) / 2 ** 32));
    const [img] = toImage.execute({ mask: new MaskBatch([new MaskPlane(n, 1, d)]) }, ctx) as [ImageBatch];
    const o = img.frames[0]!.data;
    for (let i = 0; i < n; i++) {
      const v = toByte(d[i]!) | 0;
      if (o[3 * i] !== v || o[3 * i + 1] !== v || o[3 * i + 2] !== v) assert.fail(`n ${n}, sample ${i} (${d[i]}): ${o[3 * i]} ${o[3 * i + 1]} ${o[3 * i + 2]}, expected ${v}`);
    }
  }
});

test('the kernels’ memory is large enough from the start for the largest working sets: it never grows (a grow detaches its ArrayBuffer)', () => {
  const k = simdKernels();
  if (!k) return; // no WebAssembly SIMD here: nothing to grow
  const buffer = k.u8.buffer;
  assert.ok(buffer.byteLength >= 32 * 2 ** 20);
  // GrowMask's bound (96 rounds of rows 4096 wide), then a group of whole planes (1 Mi floats) as the latent resizes use.
  const w = 4096;
  const h = 6;
  const plane = Float32Array.from({ length: w * h }, (_, i) => (i % 7 === 0 ? 1 : 0));
  grow.execute({ mask: new MaskBatch([new MaskPlane(w, h, plane)]), expand: 96, tapered_corners: true }, ctx);
  const src = Float32Array.from({ length: 16 * 128 * 128 }, (_, i) => Math.sin(i));
  const xs = Int32Array.from({ length: 192 }, (_, i) => Math.floor((i * 128) / 192));
  nearestPlanes(src, 16, 128, 128, 192, 192, xs, xs, () => {});
  assert.equal(k.u8.buffer, buffer);
});
