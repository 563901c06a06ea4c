/**
 * A T2I adapter (the reference's t2i_adapter.Adapter, as its loader builds
 * it: two res blocks a level, skip connections without a conv) as an ONNX
 * graph. Input: `hint` [B, C, H, W] with H and W multiples of the unshuffle
 * factor. Outputs: `feat_0` … `feat_3`, the last value of each level.
 * Average-pool downsampling pads odd sides by one, so a graph is built for
 * one hint size.
 */
import type { T2IAdapterSpec } from './detect-control.ts';
import { OnnxGraph } from './graph-builder.ts';
import { DataType } from './onnx-proto.ts';

/** Whether level i's first block downsamples (the reference's resblock_downsample). */
function downsamples(spec: T2IAdapterSpec, level: number): boolean {
  return spec.xl ? level === 2 : level > 0;
}

export function buildT2IAdapterGraph(g: OnnxGraph, spec: T2IAdapterSpec, height: number, width: number): Uint8Array {
  const r = spec.unshuffle;
  const c = spec.inputChannels;
  const hint = g.input('hint', DataType.FLOAT, ['batch', c, height, width]);
  // torch.pixel_unshuffle: channel c·r² + i·r + j holds pixel (y·r + i, x·r + j).
  let h = height / r;
  let w = width / r;
  const split = g.op('Reshape', [hint, g.i64([0, c, h, r, w, r])]);
  let x = g.op('Reshape', [g.op('Transpose', [split], { perm: [0, 1, 3, 5, 2, 4] }), g.i64([0, c * r * r, h, w])]);
  if (spec.light) return lightBody(g, x, spec, h, w);
  x = g.conv(x, 'conv_in');
  for (let level = 0; level < 4; level++) {
    for (let j = 0; j < spec.blocksPerLevel; j++) {
      const key = `body.${level * spec.blocksPerLevel + j}`;
      if (j === 0 && downsamples(spec, level)) {
        if (spec.useConv) x = g.conv(x, `${key}.down_opt.op`, { stride: 2 });
        else {
          // AvgPool2d(2, 2) with padding (h % 2, w % 2), zeros counted.
          const [ph, pw] = [h % 2, w % 2];
          x = g.op('AveragePool', [x], { kernel_shape: [2, 2], strides: [2, 2], pads: [ph, pw, ph, pw], count_include_pad: 1 });
          h = Math.floor((h + 2 * ph - 2) / 2) + 1;
          w = Math.floor((w + 2 * pw - 2) / 2) + 1;
        }
        if (spec.useConv) {
          h = Math.floor((h - 1) / 2) + 1;
          w = Math.floor((w - 1) / 2) + 1;
        }
      }
      if (g.has(`${key}.in_conv.weight`)) x = g.conv(x, `${key}.in_conv`);
      const inner = g.conv(g.op('Relu', [g.conv(x, `${key}.block1`)]), `${key}.block2`);
      x = g.add(inner, x);
    }
    g.output(x, `feat_${level}`, ['batch', `c${level}`, `h${level}`, `w${level}`]);
  }
  return g.encode('t2i_adapter');
}

/**
 * Adapter_light's body: per level an extractor (average-pool downsampling
 * after the first, a 1×1 in_conv to a quarter of the width, res blocks of two
 * 3×3 convs, a 1×1 out_conv to the level's width), its output a feature.
 */
function lightBody(g: OnnxGraph, x: string, spec: T2IAdapterSpec, h: number, w: number): Uint8Array {
  for (let level = 0; level < spec.channels.length; level++) {
    const key = `body.${level}`;
    if (level > 0) {
      // Downsample(use_conv=False): AvgPool2d(2, 2) with padding (h % 2, w % 2), zeros counted.
      const [ph, pw] = [h % 2, w % 2];
      x = g.op('AveragePool', [x], { kernel_shape: [2, 2], strides: [2, 2], pads: [ph, pw, ph, pw], count_include_pad: 1 });
      h = Math.floor((h + 2 * ph - 2) / 2) + 1;
      w = Math.floor((w + 2 * pw - 2) / 2) + 1;
    }
    x = g.conv(x, `${key}.in_conv`);
    for (let j = 0; j < spec.blocksPerLevel; j++) x = g.add(g.conv(g.op('Relu', [g.conv(x, `${key}.body.${j}.block1`)]), `${key}.body.${j}.block2`), x);
    x = g.conv(x, `${key}.out_conv`);
    g.output(x, `feat_${level}`, ['batch', `c${level}`, `h${level}`, `w${level}`]);
  }
  return g.encode('t2i_adapter_light');
}
