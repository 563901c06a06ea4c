/**
 * LyCORIS adapters (LoHa, LoKr, GLoRA, OFT, BOFT), DoRA magnitudes and
 * w_norm/b_norm, against the weights the reference's calculate_weight
 * computed from the same generated files (test/fixtures/models-reference-lycoris.json,
 * written by bench/workflow/models-reference-lycoris.ts), at one strength,
 * at strength 1 (DoRA's own branch) and chained twice; and malformed
 * adapters as errors naming the file and the tensors.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LoadedLora, WeightPatches } from '../src/models/lora.ts';
import { ModelFileError, SafetensorsFile } from '../src/models/safetensors.ts';
import { LYCORIS_CASES, LYCORIS_KEYS, lycorisTarget, lycorisTensors } from './models-lycoris-fixture.ts';
import { type RawTensor, seeded, writeTensors } from './models-patches-fixture.ts';

const ref = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'models-reference-lycoris.json'), 'utf8')) as { keys: string[]; cases: Record<string, Record<string, number[]>> };

let dir: string;
let target: SafetensorsFile;
const keyMap = new Map(Object.entries(LYCORIS_KEYS));

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-lycoris-'));
  writeTensors(path.join(dir, 'target.safetensors'), lycorisTarget());
  writeTensors(path.join(dir, 'lycoris.safetensors'), lycorisTensors());
  target = await SafetensorsFile.open(path.join(dir, 'target.safetensors'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The patched weights, key by key, of `lora` applied at each strength in turn. */
async function patched(lora: LoadedLora, strengths: number[]): Promise<Map<string, Float32Array>> {
  const p = new WeightPatches(target, '', strengths.map((strength) => ({ lora, strength })));
  const bytes = await p.data();
  const all = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  return new Map([...p.plan].map(([k, { offset, length }]) => [k, all.subarray(offset / 4, (offset + length) / 4)]));
}

describe('LyCORIS and DoRA patches', () => {
  test('every adapter form patches the weight the reference patches, as the reference computes it', async () => {
    const lora = await LoadedLora.load(path.join(dir, 'lycoris.safetensors'), keyMap);
    assert.deepEqual([...lora.patches.keys()].sort(), ref.keys);
    for (const [name, strengths] of Object.entries(LYCORIS_CASES)) {
      const got = await patched(lora, strengths);
      for (const key of ref.keys) {
        const want = ref.cases[name]![key]!;
        const have = got.get(key);
        assert.ok(have, `${name}: ${key} not patched`);
        assert.equal(have.length, want.length, `${name}: ${key} size`);
        // The reference logs a failed patch and leaves the weight as it was: every expected weight must differ.
        const before = await target.readFloat32(key);
        assert.ok(want.some((v, i) => Math.abs(v - before[i]!) > 1e-4), `${name}: the reference left ${key} unpatched`);
        const scale = Math.max(1, ...want.map(Math.abs));
        for (let i = 0; i < want.length; i++) {
          assert.ok(Math.abs(have[i]! - want[i]!) <= 2e-5 * scale, `${name}: ${key}[${i}] = ${have[i]}, the reference ${want[i]}`);
        }
      }
      // The weights no adapter touches are not in the patch file.
      for (const k of target.tensors.keys()) if (!ref.keys.includes(k)) assert.equal(got.has(k), false, k);
    }
  });

  test('malformed adapters are ModelFileErrors naming the file and the tensors', async () => {
    const cases: [string, Record<string, RawTensor>, RegExp][] = [
      ['loha-half', { 'loha_l.hada_w1_a': seeded([8, 2], 1, 1), 'loha_l.hada_w1_b': seeded([2, 6], 2, 1) }, /loha-half\.safetensors: loha_l\.hada_w2_a is missing/],
      ['loha-shape', { 'loha_l.hada_w1_a': seeded([8, 2], 1, 1), 'loha_l.hada_w1_b': seeded([2, 6], 2, 1), 'loha_l.hada_w2_a': seeded([8, 2], 1, 1), 'loha_l.hada_w2_b': seeded([3, 6], 2, 1) }, /loha-shape\.safetensors: l1\.weight: .*cannot be multiplied/],
      ['lokr-shape', { 'lokr_l.lokr_w1': seeded([3, 2], 1, 1), 'lokr_l.lokr_w2': seeded([4, 4], 2, 1) }, /lokr-shape\.safetensors: l2\.weight: .*does not give the weight's shape \[8, 8\]/],
      ['lokr-half', { 'lokr_l.lokr_w1': seeded([2, 2], 1, 1), 'lokr_l.lokr_w2_a': seeded([4, 2], 2, 1) }, /lokr-half\.safetensors: l2\.weight: .*needs lokr_w2 or both/],
      ['glora', { 'glora_new.a1.weight': seeded([5, 3], 1, 1), 'glora_new.a2.weight': seeded([2, 6], 1, 1), 'glora_new.b1.weight': seeded([8, 3], 1, 1), 'glora_new.b2.weight': seeded([3, 6], 1, 1) }, /glora\.safetensors: l3\.weight: .*not a GLoRA/],
      ['oft', { 'oft.oft_blocks': seeded([3, 4, 4], 1, 1) }, /oft\.safetensors: l5\.weight: .*does not cover the weight's 8 output rows/],
      ['oft-rank', { 'oft.oft_blocks': seeded([8, 6], 1, 1) }, /oft-rank\.safetensors: oft\.oft_blocks must have 3 \(OFT\) or 4 \(BOFT\) dimensions/],
      ['dora', { 'dora_lora.lora_up.weight': seeded([8, 2], 1, 1), 'dora_lora.lora_down.weight': seeded([2, 6], 1, 1), 'dora_lora.dora_scale': seeded([1, 5], 1, 1) }, /dora\.safetensors: l7\.weight: .*has 5 magnitudes, the weight \[8, 6\] needs 6/],
      ['wnorm', { 'wnorm.w_norm': seeded([7], 1, 1) }, /wnorm\.safetensors: wnorm\.w_norm has shape \[7\], the weight n1\.weight \[8\]/],
    ];
    for (const [name, tensors, re] of cases) {
      const f = path.join(dir, `${name}.safetensors`);
      writeTensors(f, tensors);
      await assert.rejects(
        (async () => {
          const l = await LoadedLora.load(f, keyMap);
          await new WeightPatches(target, '', [{ lora: l, strength: 1 }]).data();
        })(),
        (err: Error) => err instanceof ModelFileError && re.test(err.message),
        name,
      );
    }
  });
});
