/**
 * A ControlNet (the reference's cldm.ControlNet) as an ONNX graph: the UNet's
 * encoder copied (input and middle blocks, the same keys), the hint image
 * brought to the latent's size by `input_hint_block` and added after the
 * first block, and a 1×1 "zero" conv on every block's output.
 * Inputs: `x` (already scaled for σ), `hint` [B, C, 8h, 8w], `t_emb`,
 * `context` and, for SDXL, `y`. Outputs: `out_i` (one per input block, for
 * the skip the UNet's output side takes from it) and `mid`.
 */
import type { UNetConfig } from './detect.ts';
import { OnnxGraph } from './graph-builder.ts';
import { DataType } from './onnx-proto.ts';
import { inputBlock, middleBlock, unetInputs } from './unet-graph.ts';

/** Keys of input_hint_block's convs (SiLU between them) and which of them halve the size. */
const HINT_CONVS = [0, 2, 4, 6, 8, 10, 12, 14];
const HINT_STRIDED = new Set([4, 8, 12]);

/**
 * A union ControlNet (cldm.ControlNet with union_controlnet_num_control_type):
 * `ctype_emb` [1, 256·types] (the sinusoidal embedding of the one-hot control
 * type, computed in JavaScript) goes through control_add_embedding into the
 * time embedding; with a type set (`typed`), `task_index` [1] picks its row of
 * task_embedding and the hint features are fused as union_controlnet_merge
 * does: their spatial mean plus that row, one transformer layer over a
 * sequence of one (its attention is its value projection: a softmax over one
 * key is 1), spatial_ch_projs added to every pixel.
 */
export interface UnionGraphOptions {
  types: number;
  typed: boolean;
}

function unionMerge(g: OnnxGraph, guided: string): string {
  const taskIndex = g.input('task_index', DataType.INT64, [1]);
  let x = g.op('ReduceMean', [guided, g.i64([2, 3])], { keepdims: 0 });
  x = g.add(x, g.op('Gather', [g.w('task_embedding'), taskIndex], { axis: 0 }));
  const T = 'transformer_layes.0';
  // in_proj's value rows (640 … 960) and bias.
  const slice = (key: string) => g.op('Slice', [g.w(key), g.i64([640]), g.i64([960]), g.i64([0])]);
  const v = g.add(g.op('MatMul', [g.layerNorm(x, `${T}.ln_1`, 1e-5), g.op('Transpose', [slice(`${T}.attn.in_proj.weight`)], { perm: [1, 0] })]), slice(`${T}.attn.in_proj.bias`));
  x = g.add(x, g.linear(v, `${T}.attn.out_proj`));
  const fc = g.linear(g.layerNorm(x, `${T}.ln_2`, 1e-5), `${T}.mlp.c_fc`);
  const gelu = g.mul(fc, g.op('Sigmoid', [g.scale(fc, 1.702)]));
  x = g.add(x, g.linear(gelu, `${T}.mlp.c_proj`));
  const alpha = g.op('Unsqueeze', [g.linear(x, 'spatial_ch_projs'), g.i64([2, 3])]);
  return g.add(guided, alpha);
}

export function buildControlNetGraph(g: OnnxGraph, cfg: UNetConfig, hintChannels: number, union?: UnionGraphOptions): Uint8Array {
  const addToEmb = union
    ? (emb: string) => {
        const c = g.floatInput('ctype_emb', [1, 256 * union.types]);
        return g.add(emb, g.linear(g.silu(g.linear(c, 'control_add_embedding.linear_1')), 'control_add_embedding.linear_2'));
      }
    : undefined;
  const { x, context, emb } = unetInputs(g, cfg, { addToEmb });
  // float32 in, as the UNet's inputs (cast to float16 in a half graph).
  let guided = g.floatInput('hint', ['hint_batch', hintChannels, 'hint_height', 'hint_width']);
  HINT_CONVS.forEach((k, i) => {
    guided = g.conv(guided, `input_hint_block.${k}`, { stride: HINT_STRIDED.has(k) ? 2 : 1 });
    if (i < HINT_CONVS.length - 1) guided = g.silu(guided);
  });
  if (union?.typed) guided = unionMerge(g, guided);
  let h = x;
  cfg.inputBlocks.forEach((b, i) => {
    h = inputBlock(g, h, b, emb, context, cfg);
    if (i === 0) h = g.add(h, guided);
    g.output(g.conv(h, `zero_convs.${i}.0`), `out_${i}`, ['batch', `c${i}`, `h${i}`, `w${i}`]);
  });
  h = middleBlock(g, h, emb, context, cfg);
  g.output(g.conv(h, 'middle_block_out.0'), 'mid', ['batch', 'mid_c', 'mid_h', 'mid_w']);
  return g.encode('controlnet');
}
