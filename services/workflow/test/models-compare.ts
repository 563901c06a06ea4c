import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { FloatTensor } from '../src/models/sd1.ts';

/**
 * How the model tests compare a tensor with what the reference computed
 * (bench/workflow/reference_env.py's `summary`): the first values, the sum
 * and the largest magnitude of the reference's tensor.
 */
export interface Summary {
  shape: number[];
  head: number[];
  sum: number;
  absmax: number;
}

/** A fixture of reference values in test/fixtures. */
export function readReference(name: string): any {
  return JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', name), 'utf8'));
}

/**
 * Largest difference over the summarised values, relative to the tensor's largest magnitude (at least 1); the
 * sum within the same tolerance grown with √n, and (unless `absmax` is false) the largest magnitude.
 */
export function closeTo(actual: FloatTensor, expected: Summary, tol: number, what: string, opts: { absmax?: boolean } = {}): void {
  assert.deepEqual(actual.shape, expected.shape, `${what}: shape`);
  const scale = Math.max(1, expected.absmax);
  let worst = 0;
  expected.head.forEach((v, i) => (worst = Math.max(worst, Math.abs(actual.data[i]! - v))));
  assert.ok(worst <= tol * scale, `${what}: values differ by ${worst} (allowed ${tol * scale})`);
  let sum = 0;
  let absmax = 0;
  for (const v of actual.data) {
    sum += v;
    absmax = Math.max(absmax, Math.abs(v));
  }
  assert.ok(Math.abs(sum - expected.sum) <= tol * scale * Math.sqrt(actual.data.length) * 4, `${what}: sum ${sum} vs ${expected.sum}`);
  if (opts.absmax !== false) assert.ok(Math.abs(absmax - expected.absmax) <= tol * scale, `${what}: absmax ${absmax} vs ${expected.absmax}`);
}

/** scale · sin(0.37 i), as the reference scripts build their inputs. */
export function pattern(shape: number[], scale = 1.5): FloatTensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return { shape, data: Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) * scale) };
}
