/**
 * The CLIP text transformer (transformers' CLIPTextModel as the reference's
 * sd1_clip runs it) as an ONNX graph. Inputs: `tokens` [B, 77] int64.
 * Outputs: `hidden` [B, 77, D] of the chosen layer (after the final layer
 * norm, as the reference's layer_norm_hidden_state), and `last` [B, 77, D]
 * (final layer, normed) for the pooled output. The layer is fixed when the
 * graph is built: CLIPSetLastLayer builds another session.
 */
import type { ClipConfig } from './detect.ts';
import { OnnxGraph } from './graph-builder.ts';
import { DataType } from './onnx-proto.ts';

/**
 * @param stopAtLayer the reference's clip_layer: -1 = last layer, -2 = the one before …
 */
export function buildClipGraph(g: OnnxGraph, cfg: ClipConfig, stopAtLayer = -1, withEmbeddings = false): Uint8Array {
  const D = cfg.hiddenSize;
  const tokens = g.input('tokens', DataType.INT64, ['batch', 77]);
  const positions = g.i64(Array.from({ length: 77 }, (_, i) => i), [77]);
  let tokenVectors = g.op('Gather', [g.w('embeddings.token_embedding.weight'), tokens], { axis: 0 });
  if (withEmbeddings) {
    // Textual inversions: where `use_embeds` is set, the vector from `embeds` replaces the token's (process_tokens).
    const embeds = g.input('embeds', DataType.FLOAT, ['batch', 77, D]);
    const use = g.input('use_embeds', DataType.BOOL, ['batch', 77, 1]);
    tokenVectors = g.op('Where', [use, embeds, tokenVectors]);
  }
  let x = g.add(tokenVectors, g.op('Gather', [g.w('embeddings.position_embedding.weight'), positions], { axis: 0 }));
  // Causal mask: -max-float above the diagonal, as the reference builds it.
  const mask: number[] = [];
  for (let i = 0; i < 77; i++) for (let j = 0; j < 77; j++) mask.push(j > i ? -3.4028234663852886e38 : 0);
  const causal = g.f32(mask, [77, 77]);
  const stop = stopAtLayer < 0 ? cfg.layers + stopAtLayer : stopAtLayer;
  if (stop < 0 || stop >= cfg.layers) throw new RangeError(`clip layer ${stopAtLayer} is outside the text encoder's ${cfg.layers} layers`);
  let intermediate: string | undefined;
  for (let l = 0; l < cfg.layers; l++) {
    const key = `encoder.layers.${l}`;
    const n1 = g.layerNorm(x, `${key}.layer_norm1`, 1e-5);
    const q = g.linear(n1, `${key}.self_attn.q_proj`);
    const k = g.linear(n1, `${key}.self_attn.k_proj`);
    const v = g.linear(n1, `${key}.self_attn.v_proj`);
    x = g.add(x, g.linear(g.attention(q, k, v, cfg.heads, D, causal), `${key}.self_attn.out_proj`));
    const n2 = g.layerNorm(x, `${key}.layer_norm2`, 1e-5);
    const f = g.linear(n2, `${key}.mlp.fc1`);
    // quick_gelu: x · σ(1.702 x)
    const act = g.mul(f, g.op('Sigmoid', [g.scale(f, 1.702)]));
    x = g.add(x, g.linear(act, `${key}.mlp.fc2`));
    if (l === stop) intermediate = x;
  }
  const last = g.layerNorm(x, 'final_layer_norm', 1e-5);
  const hidden = stop === cfg.layers - 1 ? last : g.layerNorm(intermediate!, 'final_layer_norm', 1e-5);
  g.output(hidden, 'hidden', ['batch', 77, D]);
  g.output(last, 'last', ['batch', 77, D]);
  return g.encode('clip_text');
}
