import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onnxKernelsAvailable, onnxSeparableConv } from '../src/nodes/image-kernels.ts';

// Large frames are convolved in strips of rows with a reflected halo (image-kernels.ts): every strip height must
// give the bytes of the one-call convolution, for blur and sharpen, RGB and RGBA, radii up to one below a side.

function gauss(r: number, sigma: number): number[] {
  const k: number[] = [];
  for (let i = -r; i <= r; i++) k.push(Math.exp(-(i * i) / (2 * sigma * sigma)));
  const s = k.reduce((a, b) => a + b, 0);
  return k.map((v) => v / s);
}

function frame(w: number, h: number, c: number, seed: number): Uint8Array {
  const d = new Uint8Array(w * h * c);
  for (let i = 0; i < d.length; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    d[i] = ((i % (w * c)) * 3 + ((seed >> 16) % 50)) & 255;
  }
  return d;
}

test('ONNX separable convolution in strips of rows gives the one-call bytes', { skip: onnxKernelsAvailable() ? false : 'ONNX Runtime does not load here' }, async () => {
  // An asymmetric kernel as well: a halo reflected the wrong way round would show.
  const kernels: [string, number[]][] = [
    ['r1', gauss(1, 1)],
    ['r5', gauss(5, 1)],
    ['r11 σ2.5', gauss(11, 2.5)],
    ['asymmetric', [0.05, 0.1, 0.6, 0.2, 0.05]],
  ];
  for (const [w, h, c] of [
    [40, 34, 3],
    [23, 17, 4],
    [19, 12, 3],
  ] as const) {
    const data = frame(w, h, c, w * 31 + h);
    for (const [name, k] of [...kernels, ['r' + (Math.min(w, h) - 1), gauss(Math.min(w, h) - 1, 4)] as [string, number[]]]) {
      if ((k.length - 1) / 2 >= Math.min(w, h)) continue;
      for (const [p, q] of [
        [0, 1],
        [2, -1],
      ]) {
        const whole = await onnxSeparableConv(data, w, h, c, k, p, q, h);
        for (const rows of [1, 3, 8, h - 1]) {
          const strips = await onnxSeparableConv(data, w, h, c, k, p, q, rows);
          assert.ok(whole.equals(strips), `${w}x${h}x${c} ${name} p=${p} q=${q}: strips of ${rows} rows differ`);
        }
      }
    }
  }
});
