/**
 * The CLIP text transformers of SD2.x and SDXL as ONNX graphs: OpenCLIP-H
 * (SD2.x), OpenCLIP-G and CLIP-L (SDXL), in open_clip's key layout (fused
 * in_proj, ln_1/ln_2, mlp.c_fc/c_proj, ln_final, text_projection as a
 * [width, proj] matrix) or transformers' (q/k/v_proj, layer_norm1/2,
 * mlp.fc1/fc2, final_layer_norm, text_projection.weight). The reference runs
 * both as its comfy/clip_model.CLIPTextModel (after converting open_clip's
 * keys), so the computation is the same: causal self-attention in 64-channel
 * heads, GELU (OpenCLIP) or quick-GELU (CLIP-L).
 *
 * Inputs: `tokens` [B, 77] int64, `eos` [B, 77] float (one-hot of each
 * row's first end token). Outputs: `hidden` [B, 77, D] of the chosen layer
 * (final-layer-normed when `layerNormHidden`, as SD2's encoder; SDXL's are
 * not), and `pooled` [B, P] (final layer norm at the end token, through
 * text_projection) when the encoder has a projection.
 */
import type { TextEncoderSpec } from './detect-families.ts';
import { OnnxGraph } from './graph-builder.ts';
import { DataType } from './onnx-proto.ts';

export interface TextEncoderGraphOptions {
  /** The reference's clip layer: 'last' (final layer norm applied), or a hidden layer -1, -2 … (normed only with layerNormHidden). */
  layer: 'last' | number;
  layerNormHidden: boolean;
  activation: 'gelu' | 'quick_gelu';
  /** Textual inversions: inputs `embeds` [B, 77, D] and `use_embeds` [B, 77, 1]; where set, the vector replaces the token's. */
  embeds?: boolean;
}

/** torch Linear from rows [k·D, (k+1)·D) of a fused open_clip in_proj weight and bias. */
function fusedLinear(g: OnnxGraph, x: string, key: string, part: number, D: number): string {
  const rows = (t: string) => g.op('Slice', [g.w(t), g.i64([part * D]), g.i64([(part + 1) * D]), g.i64([0])]);
  const y = g.op('MatMul', [x, g.op('Transpose', [rows(`${key}.in_proj_weight`)], { perm: [1, 0] })]);
  return g.has(`${key}.in_proj_bias`) ? g.add(y, rows(`${key}.in_proj_bias`)) : y;
}

export function buildTextEncoderGraph(g: OnnxGraph, spec: TextEncoderSpec, opts: TextEncoderGraphOptions): Uint8Array {
  const cfg = spec.config;
  const D = cfg.hiddenSize;
  const oc = spec.layout === 'openclip';
  // transformers' layout keeps the model under text_model. and text_projection.weight beside it.
  const tm = oc ? '' : 'text_model.';
  const tokens = g.input('tokens', DataType.INT64, ['batch', 77]);
  const eos = g.input('eos', DataType.FLOAT, ['batch', 77]);
  const positions = g.i64(Array.from({ length: 77 }, (_, i) => i), [77]);
  const tokenTable = g.w(oc ? 'token_embedding.weight' : `${tm}embeddings.token_embedding.weight`);
  const posTable = g.w(oc ? 'positional_embedding' : `${tm}embeddings.position_embedding.weight`);
  let tokenVectors = g.op('Gather', [tokenTable, tokens], { axis: 0 });
  if (opts.embeds) {
    const embeds = g.input('embeds', DataType.FLOAT, ['batch', 77, D]);
    const use = g.input('use_embeds', DataType.BOOL, ['batch', 77, 1]);
    tokenVectors = g.op('Where', [use, embeds, tokenVectors]);
  }
  let x = g.add(tokenVectors, g.op('Gather', [posTable, positions], { axis: 0 }));
  const mask: number[] = [];
  for (let i = 0; i < 77; i++) for (let j = 0; j < 77; j++) mask.push(j > i ? -3.4028234663852886e38 : 0);
  const causal = g.f32(mask, [77, 77]);
  const stop = opts.layer === 'last' ? cfg.layers - 1 : opts.layer < 0 ? cfg.layers + opts.layer : opts.layer;
  if (stop < 0 || stop >= cfg.layers) throw new RangeError(`clip layer ${opts.layer} is outside the text encoder's ${cfg.layers} layers`);
  let intermediate: string | undefined;
  for (let l = 0; l < cfg.layers; l++) {
    const key = oc ? `transformer.resblocks.${l}` : `${tm}encoder.layers.${l}`;
    const n1 = g.layerNorm(x, oc ? `${key}.ln_1` : `${key}.layer_norm1`, 1e-5);
    const [q, k, v] = oc
      ? [0, 1, 2].map((p) => fusedLinear(g, n1, `${key}.attn`, p, D))
      : ['q_proj', 'k_proj', 'v_proj'].map((p) => g.linear(n1, `${key}.self_attn.${p}`));
    x = g.add(x, g.linear(g.attention(q!, k!, v!, cfg.heads, D, causal), oc ? `${key}.attn.out_proj` : `${key}.self_attn.out_proj`));
    const n2 = g.layerNorm(x, oc ? `${key}.ln_2` : `${key}.layer_norm2`, 1e-5);
    const f = g.linear(n2, oc ? `${key}.mlp.c_fc` : `${key}.mlp.fc1`);
    const act = opts.activation === 'gelu' ? g.op('Gelu', [f]) : g.mul(f, g.op('Sigmoid', [g.scale(f, 1.702)]));
    x = g.add(x, g.linear(act, oc ? `${key}.mlp.c_proj` : `${key}.mlp.fc2`));
    if (l === stop) intermediate = x;
  }
  const finalNorm = oc ? 'ln_final' : `${tm}final_layer_norm`;
  const last = g.layerNorm(x, finalNorm, 1e-5);
  const hidden = opts.layer === 'last' || (opts.layerNormHidden && stop === cfg.layers - 1) ? last : opts.layerNormHidden ? g.layerNorm(intermediate!, finalNorm, 1e-5) : intermediate!;
  g.output(hidden, 'hidden', ['batch', 77, D]);
  if (spec.projection) {
    // The end token's row of the normed last layer: a one-hot [B,1,77] × [B,77,D] picks it exactly.
    const picked = g.op('Reshape', [g.op('MatMul', [g.op('Unsqueeze', [eos, g.i64([1])]), last]), g.i64([0, D])]);
    const pooled = oc ? g.op('MatMul', [picked, g.w('text_projection')]) : g.linear(picked, 'text_projection');
    g.output(pooled, 'pooled', ['batch', spec.projection]);
  }
  return g.encode(`text_encoder_${spec.name}`);
}
