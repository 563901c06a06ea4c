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
    // Read in parts of every size from 1 value up, so that parts start and end inside blocks and the tail.
    const stream = new TorchGenerator(99).randnStream(count);
    const part = new Float32Array(count);
    for (let at = 0, size = 1; at < count; at += size, size = (size * 3 + 1) % 5003 || 1) {
      const n = Math.min(size, count - at);
      stream.read(part, n);
      for (let i = 0; i < n; i++) if (!Object.is(part[i], expected[at + i])) assert.fail(`count ${count}, value ${at + i}: ${part[i]} vs ${expected[at + i]}`);
    }
    assert.throws(() => stream.read(part, 1), RangeError);
  }
  // A draw after randn continues its stream.
  const g = new TorchGenerator(3);
  g.randn(block + 9);
  const next = g.randn(20);
  const h = new TorchGenerator(3);
  const s = h.randnStream(block + 9);
  s.read(new Float32Array(block + 9), block + 9);
  assert.deepEqual(Array.from(h.randn(20)), Array.from(next));
});
