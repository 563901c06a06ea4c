/**
 * The SD VAE (the reference's ldm AutoencoderKL: Encoder, Decoder,
 * quant_conv, post_quant_conv) as two ONNX graphs. Decoder input `z`
 * [B, 4, h, w] (the raw latent, as LATENT holds it), output `image`
 * [B, 3, 8h, 8w] in [-1, 1] before the reference's clamp. Encoder input
 * `image` [B, 3, H, W] in [-1, 1], output `z` = the posterior's mode.
 * Built `half` (--fp16-vae), it computes in float16 with float32 inputs,
 * outputs and group-norm statistics (graph-builder.ts).
 */
import type { VaeConfig } from './detect.ts';
import { OnnxGraph } from './graph-builder.ts';

function resnet(g: OnnxGraph, x: string, key: string): string {
  let h = g.conv(g.silu(g.groupNorm(x, `${key}.norm1`, 32, 1e-6)), `${key}.conv1`);
  h = g.conv(g.silu(g.groupNorm(h, `${key}.norm2`, 32, 1e-6)), `${key}.conv2`);
  const skip = g.has(`${key}.nin_shortcut.weight`) ? g.conv(x, `${key}.nin_shortcut`) : x;
  return g.add(skip, h);
}

/** Single-head self-attention over the pixels; q/k/v/proj_out are 1×1 convs (or Linear weights from converted files). */
function attnBlock(g: OnnxGraph, x: string, key: string): string {
  const c = g.shape(`${key}.q.weight`)[0]!;
  const tokens = g.toTokens(g.groupNorm(x, `${key}.norm`, 32, 1e-6));
  const q = g.linear(tokens, `${key}.q`);
  const k = g.linear(tokens, `${key}.k`);
  const v = g.linear(tokens, `${key}.v`);
  const out = g.linear(g.attention(q, k, v, 1, c), `${key}.proj_out`);
  return g.add(x, g.fromTokens(out, x));
}

function mid(g: OnnxGraph, h: string, key: string): string {
  h = resnet(g, h, `${key}.block_1`);
  h = attnBlock(g, h, `${key}.attn_1`);
  return resnet(g, h, `${key}.block_2`);
}

export function buildVaeDecoderGraph(g: OnnxGraph, cfg: VaeConfig): Uint8Array {
  const z = g.floatInput('z', ['batch', cfg.zChannels, 'height', 'width']);
  let h = g.has('post_quant_conv.weight') ? g.conv(z, 'post_quant_conv') : z;
  h = g.conv(h, 'decoder.conv_in');
  h = mid(g, h, 'decoder.mid');
  for (let l = cfg.chMult.length - 1; l >= 0; l--) {
    for (let b = 0; b <= cfg.numResBlocks; b++) h = resnet(g, h, `decoder.up.${l}.block.${b}`);
    if (l !== 0) h = g.conv(g.upsample2x(h), `decoder.up.${l}.upsample.conv`);
  }
  h = g.conv(g.silu(g.groupNorm(h, 'decoder.norm_out', 32, 1e-6)), 'decoder.conv_out');
  g.output(h, 'image', ['batch', 3, 'out_height', 'out_width']);
  return g.encode('vae_decoder');
}

export function buildVaeEncoderGraph(g: OnnxGraph, cfg: VaeConfig): Uint8Array {
  const image = g.floatInput('image', ['batch', cfg.inChannels, 'height', 'width']);
  let h = g.conv(image, 'encoder.conv_in');
  for (let l = 0; l < cfg.chMult.length; l++) {
    for (let b = 0; b < cfg.numResBlocks; b++) h = resnet(g, h, `encoder.down.${l}.block.${b}`);
    // The reference pads right and bottom by one, then convolves with stride 2 and no padding.
    if (l !== cfg.chMult.length - 1) h = g.conv(h, `encoder.down.${l}.downsample.conv`, { stride: 2, pads: [0, 0, 1, 1] });
  }
  h = mid(g, h, 'encoder.mid');
  h = g.conv(g.silu(g.groupNorm(h, 'encoder.norm_out', 32, 1e-6)), 'encoder.conv_out');
  if (g.has('quant_conv.weight')) h = g.conv(h, 'quant_conv');
  // The posterior's mean: the first z channels of the 2·z moments.
  const mean = g.op('Slice', [h, g.i64([0]), g.i64([cfg.zChannels]), g.i64([1])]);
  g.output(mean, 'z', ['batch', cfg.zChannels, 'out_height', 'out_width']);
  return g.encode('vae_encoder');
}
