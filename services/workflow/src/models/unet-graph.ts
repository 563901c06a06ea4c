/**
 * The SD1.x UNet (the reference's openaimodel.UNetModel) as an ONNX graph.
 * Inputs: `x` [B, C, H, W] (already scaled by the sampler: x / √(σ²+1)),
 * `t_emb` [B, model_channels] (the sinusoidal timestep embedding, computed
 * in JavaScript), `context` [B, T, context_dim], and for SDXL `y`
 * [B, adm_in_channels]. Output: `eps` (the raw model output: ε or v).
 */
import type { UNetConfig } from './detect.ts';
import { OnnxGraph } from './graph-builder.ts';

const GN_GROUPS = 32;

export function resBlock(g: OnnxGraph, x: string, emb: string, key: string): string {
  let h = g.conv(g.silu(g.groupNorm(x, `${key}.in_layers.0`, GN_GROUPS, 1e-5)), `${key}.in_layers.2`);
  const e = g.linear(g.silu(emb), `${key}.emb_layers.1`);
  h = g.add(h, g.op('Unsqueeze', [e, g.i64([2, 3])]));
  h = g.conv(g.silu(g.groupNorm(h, `${key}.out_layers.0`, GN_GROUPS, 1e-5)), `${key}.out_layers.3`);
  const skip = g.has(`${key}.skip_connection.weight`) ? g.conv(x, `${key}.skip_connection`) : x;
  return g.add(skip, h);
}

/** Self- or cross-attention (graph-builder's fused attention: no score matrix is held, whatever the size). */
function crossAttention(g: OnnxGraph, x: string, context: string, key: string, heads: number): string {
  const channels = g.shape(`${key}.to_q.weight`)[0]!;
  const q = g.linear(x, `${key}.to_q`);
  const k = g.linear(context, `${key}.to_k`);
  const v = g.linear(context, `${key}.to_v`);
  return g.linear(g.attention(q, k, v, heads, channels), `${key}.to_out.0`);
}

function transformerBlock(g: OnnxGraph, x: string, context: string, key: string, heads: number): string {
  let n = g.layerNorm(x, `${key}.norm1`, 1e-5);
  x = g.add(crossAttention(g, n, n, `${key}.attn1`, heads), x);
  n = g.layerNorm(x, `${key}.norm2`, 1e-5);
  x = g.add(crossAttention(g, n, context, `${key}.attn2`, heads), x);
  n = g.layerNorm(x, `${key}.norm3`, 1e-5);
  // GEGLU: one projection to twice the width, value × gelu(gate).
  const [value, gate] = g.opN('Split', [g.linear(n, `${key}.ff.net.0.proj`)], 2, { axis: -1, num_outputs: 2 });
  const ff = g.linear(g.mul(value!, g.op('Gelu', [gate!])), `${key}.ff.net.2`);
  return g.add(ff, x);
}

export function spatialTransformer(g: OnnxGraph, x: string, context: string, key: string, depth: number, cfg: UNetConfig): string {
  const linear = cfg.linearProjection;
  const channels = g.shape(`${key}.norm.weight`)[0]!;
  // SD1: a fixed head count; SD2.x and SDXL: 64-channel heads (the reference's num_head_channels).
  const heads = cfg.headChannels > 0 ? channels / cfg.headChannels : cfg.numHeads;
  const normed = g.groupNorm(x, `${key}.norm`, GN_GROUPS, 1e-6);
  let t = linear ? g.linear(g.toTokens(normed), `${key}.proj_in`) : g.toTokens(g.conv(normed, `${key}.proj_in`));
  for (let d = 0; d < depth; d++) t = transformerBlock(g, t, context, `${key}.transformer_blocks.${d}`, heads);
  const out = linear ? g.fromTokens(g.linear(t, `${key}.proj_out`), x) : g.conv(g.fromTokens(t, x), `${key}.proj_out`);
  return g.add(out, x);
}

export interface UNetGraphOptions {
  /**
   * Control residuals as inputs (the reference's apply_control): `ctl_in_i`
   * added after input block i (T2I adapters), `ctl_mid` after the middle
   * block, `ctl_out_i` to input block i's skip as the output side takes it
   * (ControlNets). A residual that is absent is fed as a single 0.
   */
  control?: boolean;
}

/** The inputs every UNet-shaped graph takes (x, t_emb, context, SDXL's y) and the embedding `emb` the res blocks read. */
export function unetInputs(g: OnnxGraph, cfg: UNetConfig, opts: { addToEmb?: (emb: string) => string } = {}): { x: string; context: string; emb: string } {
  // float32 inputs (the samplers' type), cast to float16 in a half graph; t_emb's sin/cos are float32 in JavaScript.
  const x = g.floatInput('x', ['batch', cfg.inChannels, 'height', 'width']);
  const tEmb = g.floatInput('t_emb', ['batch', cfg.modelChannels]);
  const context = g.floatInput('context', ['batch', 'tokens', cfg.contextDim]);
  let emb = g.linear(g.silu(g.linear(tEmb, 'time_embed.0')), 'time_embed.2');
  // A union ControlNet's control-type embedding joins the time embedding before label_emb's does.
  if (opts.addToEmb) emb = opts.addToEmb(emb);
  if (cfg.admInChannels) {
    // SDXL: the adm vector `y` (pooled text + size/crop embeddings) through label_emb, added to the time embedding.
    const y = g.floatInput('y', ['batch', cfg.admInChannels]);
    emb = g.add(emb, g.linear(g.silu(g.linear(y, 'label_emb.0.0')), 'label_emb.0.2'));
  }
  return { x, context, emb };
}

/** One of input_blocks: the first conv, a downsample, or a res block with its transformer. */
export function inputBlock(g: OnnxGraph, h: string, b: UNetConfig['inputBlocks'][number], emb: string, context: string, cfg: UNetConfig): string {
  const key = `input_blocks.${b.index}`;
  if (b.kind === 'conv_in') return g.conv(h, `${key}.0`);
  if (b.kind === 'down') return g.conv(h, `${key}.0.op`, { stride: 2 });
  h = resBlock(g, h, emb, `${key}.0`);
  if (b.depth) h = spatialTransformer(g, h, context, `${key}.1`, b.depth, cfg);
  return h;
}

/** middle_block: res, transformer, res. */
export function middleBlock(g: OnnxGraph, h: string, emb: string, context: string, cfg: UNetConfig): string {
  h = resBlock(g, h, emb, 'middle_block.0');
  if (cfg.middleDepth) h = spatialTransformer(g, h, context, 'middle_block.1', cfg.middleDepth, cfg);
  return resBlock(g, h, emb, 'middle_block.2');
}

/** A control residual input, any shape (a lone 0 when the control gives none here). */
function controlInput(g: OnnxGraph, name: string): string {
  return g.floatInput(name, [`${name}_b`, `${name}_c`, `${name}_h`, `${name}_w`]);
}

export function buildUNetGraph(g: OnnxGraph, cfg: UNetConfig, opts: UNetGraphOptions = {}): Uint8Array {
  const { x, context, emb } = unetInputs(g, cfg);
  const skips: string[] = [];
  let h = x;
  cfg.inputBlocks.forEach((b, i) => {
    h = inputBlock(g, h, b, emb, context, cfg);
    if (opts.control) h = g.add(h, controlInput(g, `ctl_in_${i}`));
    skips.push(h);
  });
  h = middleBlock(g, h, emb, context, cfg);
  if (opts.control) h = g.add(h, controlInput(g, 'ctl_mid'));
  for (const b of cfg.outputBlocks) {
    const key = `output_blocks.${b.index}`;
    let skip = skips.pop()!;
    if (opts.control) skip = g.add(skip, controlInput(g, `ctl_out_${skips.length}`));
    h = g.op('Concat', [h, skip], { axis: 1 });
    h = resBlock(g, h, emb, `${key}.0`);
    if (b.depth) h = spatialTransformer(g, h, context, `${key}.1`, b.depth, cfg);
    // The reference's Upsample takes the next skip's size (output_shape), so odd sizes (areas, latents) meet their skips.
    if (b.upsample) h = g.conv(skips.length ? g.upsampleTo(h, skips[skips.length - 1]!) : g.upsample2x(h), b.upsample);
  }
  const out = g.conv(g.silu(g.groupNorm(h, 'out.0', GN_GROUPS, 1e-5)), 'out.2');
  g.output(out, 'eps', ['batch', cfg.outChannels, 'height', 'width']);
  return g.encode('unet');
}

/** The reference's timestep_embedding (cos half first), in float32 steps as torch computes it. */
export function timestepEmbedding(timesteps: readonly number[], dim: number, maxPeriod = 10000): Float32Array {
  const half = Math.floor(dim / 2);
  const out = new Float32Array(timesteps.length * dim);
  const freqs = new Float32Array(half);
  const logp = Math.fround(-Math.log(maxPeriod));
  for (let i = 0; i < half; i++) freqs[i] = Math.exp(Math.fround(Math.fround(logp * i) / half));
  timesteps.forEach((t, b) => {
    for (let i = 0; i < half; i++) {
      const arg = Math.fround(Math.fround(t) * freqs[i]!);
      out[b * dim + i] = Math.cos(arg);
      out[b * dim + half + i] = Math.sin(arg);
    }
  });
  return out;
}
