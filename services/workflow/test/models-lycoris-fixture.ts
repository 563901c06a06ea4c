/**
 * Generated files for the LyCORIS test (models-lycoris.test.ts) and for the
 * reference run that computes its expected weights
 * (bench/workflow/models-reference-lycoris.ts): a file of plain weights, and a
 * LyCORIS file with one layer per adapter form the reference reads (LoHa and
 * its CP form, LoKr whole, factored and CP, GLoRA in both layouts and on a
 * conv, OFT with and without its constraint, BOFT with rescale, DoRA per row
 * and per column, w_norm/b_norm). Seeded values; nothing is committed.
 */
import { type RawTensor, seeded } from './models-patches-fixture.ts';

const scalar = (v: number): RawTensor => ({ shape: [], data: Float32Array.of(v) });

/** The weights the adapters patch: target key → tensor. */
export function lycorisTarget(): Record<string, RawTensor> {
  const t: Record<string, RawTensor> = {};
  let seed = 500;
  for (const k of ['l1', 'l3', 'l4', 'l5', 'l6', 'l7', 'l8']) t[`${k}.weight`] = seeded([8, 6], seed++, 0.7);
  t['l2.weight'] = seeded([8, 8], seed++, 0.7);
  for (const k of ['c1', 'c2', 'c3', 'c4', 'c5', 'c6']) t[`${k}.weight`] = seeded([8, 4, 3, 3], seed++, 0.4);
  t['n1.weight'] = seeded([8], seed++, 1);
  t['n1.bias'] = seeded([8], seed++, 0.2);
  return t;
}

/** LyCORIS layer name → the target weight it patches. */
export const LYCORIS_KEYS: Record<string, string> = {
  loha_l: 'l1.weight',
  loha_cp: 'c1.weight',
  lokr_l: 'l2.weight',
  lokr_c: 'c2.weight',
  lokr_t: 'c3.weight',
  glora_new: 'l3.weight',
  glora_conv: 'c4.weight',
  glora_old: 'l4.weight',
  oft: 'l5.weight',
  oft_c: 'c5.weight',
  boft: 'l6.weight',
  dora_lora: 'l7.weight',
  dora_col: 'c6.weight',
  dora_loha: 'l8.weight',
  wnorm: 'n1.weight',
};

export function lycorisTensors(): Record<string, RawTensor> {
  let seed = 900;
  const r = (shape: number[], scale = 0.4) => seeded(shape, seed++, scale);
  return {
    'loha_l.hada_w1_a': r([8, 2]),
    'loha_l.hada_w1_b': r([2, 6]),
    'loha_l.hada_w2_a': r([8, 2]),
    'loha_l.hada_w2_b': r([2, 6]),
    'loha_l.alpha': scalar(1.5),
    'loha_cp.hada_w1_a': r([2, 8]),
    'loha_cp.hada_w1_b': r([2, 4]),
    'loha_cp.hada_t1': r([2, 2, 3, 3]),
    'loha_cp.hada_w2_a': r([2, 8]),
    'loha_cp.hada_w2_b': r([2, 4]),
    'loha_cp.hada_t2': r([2, 2, 3, 3]),
    'loha_cp.alpha': scalar(3),
    'lokr_l.lokr_w1': r([2, 2]),
    'lokr_l.lokr_w2_a': r([4, 2]),
    'lokr_l.lokr_w2_b': r([2, 4]),
    'lokr_l.alpha': scalar(1),
    'lokr_c.lokr_w1_a': r([2, 1]),
    'lokr_c.lokr_w1_b': r([1, 2]),
    'lokr_c.lokr_w2': r([4, 2, 3, 3]),
    'lokr_c.alpha': scalar(2),
    'lokr_t.lokr_w1': r([2, 2]),
    'lokr_t.lokr_w2_a': r([2, 4]),
    'lokr_t.lokr_w2_b': r([2, 2]),
    'lokr_t.lokr_t2': r([2, 2, 3, 3]),
    'lokr_t.alpha': scalar(4),
    'glora_new.a1.weight': r([6, 3]),
    'glora_new.a2.weight': r([3, 6]),
    'glora_new.b1.weight': r([8, 3]),
    'glora_new.b2.weight': r([3, 6]),
    'glora_new.alpha': scalar(2),
    'glora_conv.a1.weight': r([4, 2]),
    'glora_conv.a2.weight': r([2, 4]),
    'glora_conv.b1.weight': r([8, 2]),
    'glora_conv.b2.weight': r([2, 36]),
    'glora_old.a1.weight': r([3, 6]),
    'glora_old.a2.weight': r([6, 3]),
    'glora_old.b1.weight': r([3, 6]),
    'glora_old.b2.weight': r([8, 3]),
    'glora_old.alpha': scalar(1.5),
    'oft.oft_blocks': r([2, 4, 4], 0.3),
    'oft_c.oft_blocks': r([4, 2, 2], 0.3),
    'oft_c.alpha': scalar(0.05),
    'boft.oft_blocks': r([2, 4, 2, 2], 0.3),
    'boft.rescale': r([8, 1], 1.2),
    // The reference's BOFT fails without an alpha (None > 0); it is given one here, and the constraint acts.
    'boft.alpha': scalar(0.5),
    'dora_lora.lora_up.weight': r([8, 2]),
    'dora_lora.lora_down.weight': r([2, 6]),
    'dora_lora.alpha': scalar(1),
    'dora_lora.dora_scale': r([8, 1], 2),
    'dora_col.lora_up.weight': r([8, 2, 1, 1]),
    'dora_col.lora_down.weight': r([2, 4, 3, 3]),
    'dora_col.dora_scale': r([1, 4, 1, 1], 2),
    'dora_loha.hada_w1_a': r([8, 2]),
    'dora_loha.hada_w1_b': r([2, 6]),
    'dora_loha.hada_w2_a': r([8, 2]),
    'dora_loha.hada_w2_b': r([2, 6]),
    'dora_loha.alpha': scalar(2),
    'dora_loha.dora_scale': r([1, 6], 2),
    'wnorm.w_norm': r([8], 0.1),
    'wnorm.b_norm': r([8], 0.1),
  };
}

/** Strengths applied in order (LoraLoader chained with the same file). */
export const LYCORIS_CASES: Record<string, number[]> = { s08: [0.8], s1: [1], chain: [0.6, -0.3] };
