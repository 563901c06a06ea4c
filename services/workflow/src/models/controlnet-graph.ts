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

export function buildControlNetGraph(g: OnnxGraph, cfg: UNetConfig, hintChannels: number): Uint8Array {
  const { x, context, emb } = unetInputs(g, cfg);
  let guided = g.input('hint', DataType.FLOAT, ['hint_batch', hintChannels, 'hint_height', 'hint_width']);
  HINT_CONVS.forEach((k, i) => {
    guided = g.conv(guided, `input_hint_block.${k}`, { stride: HINT_STRIDED.has(k) ? 2 : 1 });
    if (i < HINT_CONVS.length - 1) guided = g.silu(guided);
  });
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
