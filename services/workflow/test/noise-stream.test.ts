import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Mt19937, TorchGenerator } from '../src/models/noise.ts';

// randn's values (checked against torch in models-layer.test.ts) drawn in bulk and as a stream: the stream
// (ImageAddNoise) makes a thousand blocks of 16 at a time and draws the last full block and the remainder as
// randn does, so every count, around its chunks and with any remainder, must give randn's values in order.

test('Mt19937.fillLow24 gives the float32 uniforms of successive nextUint32 draws, across twists', () => {
  const a = new Mt19937(12345);
  const b = new Mt19937(12345);
  const bulk = new Float32Array(2000);
  b.fillLow24(bulk, 0, 700);
  b.fillLow24(bulk, 700, 2000);
  for (let i = 0; i < bulk.length; i++) assert.equal(bulk[i], (a.nextUint32() & 0xffffff) * 2 ** -24, `draw ${i}`);
  // Both continue the same sequence afterwards.
  assert.equal(b.nextUint32(), a.nextUint32());
});

test('TorchGenerator.randnStream gives randn(count) value for value, and leaves the generator where randn does', () => {
  const block = 16 * 1024;
  for (const count of [16, 17, 31, 32, 1000, block - 1, block, block + 5, block + 16, 2 * block + 15, 3 * block + 16 + 7]) {
    const expected = new TorchGenerator(99).randn(count);
    const stream = new TorchGenerator(99).randnStream(count);
    for (let i = 0; i < count; i++) {
      const v = stream();
      if (!Object.is(v, expected[i])) assert.fail(`count ${count}, value ${i}: ${v} vs ${expected[i]}`);
    }
  }
  // A draw after randn continues its stream.
  const g = new TorchGenerator(3);
  g.randn(block + 9);
  const next = g.randn(20);
  const h = new TorchGenerator(3);
  const s = h.randnStream(block + 9);
  for (let i = 0; i < block + 9; i++) s();
  assert.deepEqual(Array.from(h.randn(20)), Array.from(next));
});
