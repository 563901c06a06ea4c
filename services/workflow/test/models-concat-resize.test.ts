/**
 * An inpainting model's concat inputs of another size or batch: the
 * reference's common_upscale(…, "bilinear", "center") and
 * resize_to_batch_size, which BaseModel.concat_cond applies to the mask and
 * the masked image. Expected values printed by the reference's own
 * comfy.utils functions (torch 2, a125cd84) for a 10×6 plane of (i / 7).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { batchSource, centreBilinear } from '../src/models/model-sampling.ts';

const REF = {"5x5": [0.442857, 0.614286, 0.785714, 0.957143, 1.128572, 2.157143, 2.328572, 2.5, 2.671429, 2.842857, 3.871429, 4.042857, 4.214286, 4.385715, 4.557143, 5.585715, 5.757143, 5.928572, 6.1, 6.27143, 7.3, 7.471429, 7.642858, 7.814286, 7.985715], "4x6": [0.428571, 0.571429, 0.714286, 0.857143, 1.857143, 2.0, 2.142857, 2.285714, 3.285714, 3.428571, 3.571429, 3.714286, 4.714286, 4.857143, 5.0, 5.142857, 6.142857, 6.285714, 6.428571, 6.571429, 7.571429, 7.714286, 7.857143, 8.0], "8x3": [1.684524, 1.863095, 2.041667, 2.220238, 2.398809, 2.577381, 2.755952, 2.934524, 3.589286, 3.767857, 3.946429, 4.125, 4.303572, 4.482143, 4.660714, 4.839286, 5.494048, 5.672619, 5.851191, 6.029762, 6.208333, 6.386905, 6.565476, 6.744048], "10x6": [0.0, 0.142857, 0.285714, 0.428571, 0.571429, 0.714286, 0.857143, 1.0, 1.142857, 1.285714, 1.428571, 1.571429, 1.714286, 1.857143, 2.0, 2.142857, 2.285714, 2.428571, 2.571429, 2.714286, 2.857143, 3.0, 3.142857, 3.285714, 3.428571, 3.571429, 3.714286, 3.857143, 4.0, 4.142857, 4.285714, 4.428571, 4.571429, 4.714286, 4.857143, 5.0, 5.142857, 5.285714, 5.428571, 5.571429, 5.714286, 5.857143, 6.0, 6.142857, 6.285714, 6.428571, 6.571429, 6.714286, 6.857143, 7.0, 7.142857, 7.285714, 7.428571, 7.571429, 7.714286, 7.857143, 8.0, 8.142858, 8.285714, 8.428572], "batch": {"1": [0], "2": [0, 2], "3": [0, 1, 2], "4": [0, 1, 1, 2], "5": [0, 0, 1, 2, 2], "7": [0, 0, 1, 1, 1, 2, 2]}, "batch5": {"2": [0, 4], "3": [0, 2, 4], "4": [0, 1, 3, 4]}};

test('common_upscale bilinear with a centre crop: wider, taller, same aspect, same size', () => {
  const src = Float32Array.from({ length: 60 }, (_, i) => Math.fround(i / 7));
  for (const key of ['5x5', '4x6', '8x3', '10x6'] as const) {
    const [w, h] = key.split('x').map(Number) as [number, number];
    const out = centreBilinear(src, 6, 10, h, w);
    const want = REF[key];
    assert.equal(out.length, want.length, key);
    out.forEach((v, i) => assert.ok(Math.abs(v - want[i]!) < 2e-6, `${key}[${i}]: ${v} against ${want[i]}`));
  }
  assert.throws(() => centreBilinear(new Float32Array(2), 2, 1, 1, 1000), /nothing is left/);
});

test('resize_to_batch_size spreads items evenly (not cycled)', () => {
  for (const [from, table] of [[3, REF.batch], [5, REF.batch5]] as const) {
    for (const [to, want] of Object.entries(table)) {
      const got = Array.from({ length: Number(to) }, (_, i) => batchSource(i, from, Number(to)));
      assert.deepEqual(got, want, `${from} → ${to}`);
    }
  }
});
