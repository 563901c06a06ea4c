/**
 * DRCT (Dense-residual-connected transformer, spandrel's DRCT architecture)
 * upscale models: SwinIR's shifted-window blocks (swinir.ts's swinOps)
 * grouped into residual dense groups (RDG). Each group runs five Swin blocks
 * on densely concatenated features: block k sees the group's input and the
 * k growth features before it (E + k·gc channels), each block's output
 * squeezed back to gc channels by a 1×1 conv (adjust1…4, LeakyReLU 0.2),
 * the last one's to E (adjust5, no activation), added to the group's input
 * ×0.2. Blocks 2 and 4 attend over windows shifted by half a window (when
 * the training size exceeds the window); blocks 2…5 have
 * heads − ((E + k·gc) mod heads) heads, blocks 4 and 5 an MLP of their own
 * width. Hyperparameters are read from the keys as spandrel's DRCT loader
 * reads them, the file held to the state dict the model built from them has
 * (torch's strict load), the graph written over the weights in place.
 *
 * The model does not pad to its window itself: spandrel's descriptor pads
 * each tile to a multiple of 16 (size_requirements), and that must be a
 * multiple of the window for the model to run (spandrel fails otherwise).
 */
import { OnnxGraph } from './graph-builder.ts';
import { type SafetensorsFile } from './safetensors.ts';
import { swinOps } from './swinir.ts';
import { checkStrictLoad, convOps, dimReader, fail, imageAndMean, NUM_FEAT, pixelShuffleScale, seqLen, stateShapeRecorder, windowPositionIndex, type TransformerSRConfig } from './transformer-sr-parts.ts';

export interface DRCTConfig extends TransformerSRConfig {
  kind: 'drct';
  upsampler: 'pixelshuffle' | '';
  window: number;
  /** The growth channels of the dense connections (adjust1's outputs). */
  gc: number;
  /** spandrel's mlp_ratio: fc1's width over the embedding (blocks 1–3; blocks 4 and 5 have ratio 1). */
  mlpRatio: number;
  /** The training size: from the stored attention masks, else the window (then no block is shifted). */
  imgSize: number;
  qkvBias: boolean;
  patchNorm: boolean;
  resi: '1conv' | 'identity';
}

/** Blocks per group (swin1 … swin5). */
const BLOCKS = 5;
const DENSE_SCALE = 0.2;
/** spandrel's DRCT size requirement: each side a multiple of 16. */
export const DRCT_MULTIPLE = 16;

/** spandrel's DRCT KeyCondition. */
const DETECT = [
  'conv_first.weight',
  'conv_first.bias',
  'layers.0.swin1.norm1.weight',
  'layers.0.swin1.norm1.bias',
  'layers.0.swin1.attn.relative_position_bias_table',
  'layers.0.swin1.attn.relative_position_index',
  'layers.0.swin1.attn.qkv.weight',
  'layers.0.swin1.attn.proj.weight',
  'layers.0.swin1.attn.proj.bias',
  'layers.0.swin1.norm2.weight',
  'layers.0.swin1.mlp.fc1.weight',
  'layers.0.swin1.mlp.fc1.bias',
  'layers.0.swin1.mlp.fc2.weight',
  'layers.0.adjust1.weight',
  'layers.0.swin2.norm1.weight',
  'layers.0.adjust2.weight',
  'layers.0.swin3.norm1.weight',
  'layers.0.adjust3.weight',
  'layers.0.swin4.norm1.weight',
  'layers.0.adjust4.weight',
  'layers.0.swin5.norm1.weight',
  'layers.0.adjust5.weight',
  'norm.weight',
  'norm.bias',
];

export function looksLikeDRCT(file: SafetensorsFile): boolean {
  return DETECT.every((k) => file.has(k));
}

/** Channels of block k (0-based) of a group. */
export function drctWidth(cfg: DRCTConfig, k: number): number {
  return cfg.embedDim + k * cfg.gc;
}

/** Heads of block k of group i: RDG gives swin2…5 heads − ((E + k·gc) mod heads). */
export function drctHeads(cfg: DRCTConfig, i: number, k: number): number {
  const h = cfg.heads[i]!;
  return k === 0 ? h : h - (drctWidth(cfg, k) % h);
}

function mlpHidden(cfg: DRCTConfig, k: number): number {
  return k >= 3 ? drctWidth(cfg, k) : Math.trunc(drctWidth(cfg, k) * cfg.mlpRatio);
}

/** Half a window for swin2 and swin4 when the training size exceeds the window, else 0 (SwinTransformerBlock's rule). */
function shiftOf(cfg: DRCTConfig, k: number): number {
  return k % 2 === 1 && cfg.imgSize > cfg.window ? Math.floor(cfg.window / 2) : 0;
}

export function drctShifted(cfg: DRCTConfig): boolean {
  return shiftOf(cfg, 1) > 0;
}

/** The DRCT in the file (keys canonical), or null when spandrel's DRCT detection does not take it. */
export function detectDRCT(file: SafetensorsFile): DRCTConfig | null {
  if (!looksLikeDRCT(file)) return null;
  const dim = dimReader(file);
  // spandrel's DRCTArch.load, step by step.
  const inChannels = dim('conv_first.weight', 1);
  const embedDim = dim('conv_first.weight', 0);
  if (embedDim === 0) fail(file, 'conv_first.weight gives no channels');
  const layers = seqLen(file, 'layers');
  const heads: number[] = [];
  for (let i = 0; i < layers; i++) {
    const table = `layers.${i}.swin1.attn.relative_position_bias_table`;
    if (!file.has(table)) fail(file, `a DRCT without ${table} (each group's heads are read from it)`);
    heads.push(dim(table, 1));
  }
  const mlpRatio = dim('layers.0.swin1.mlp.fc1.weight', 0) / embedDim;
  const window = Math.floor((Math.floor(Math.sqrt(dim('layers.0.swin1.attn.relative_position_bias_table', 0))) + 1) / 2);
  const upsampler = file.has('conv_last.weight') ? 'pixelshuffle' : '';
  const scale = upsampler === 'pixelshuffle' ? pixelShuffleScale(file, dim) : 1;
  const resi = file.has('conv_after_body.weight') ? '1conv' : 'identity';
  const qkvBias = file.has('layers.0.swin1.attn.qkv.bias');
  const gc = dim('layers.0.adjust1.weight', 0);
  const patchNorm = file.has('patch_embed.norm.weight');
  const imgSize = file.has('layers.0.swin2.attn_mask') ? Math.floor(Math.sqrt(dim('layers.0.swin2.attn_mask', 0))) * window : window;

  // What spandrel's DRCT would refuse, or build into a model that cannot run.
  if (file.has('absolute_pos_embed')) fail(file, 'a DRCT with an absolute position embedding (fixed to its training size), which this service does not run');
  if (window < 1 || window > DRCT_MULTIPLE * 8) fail(file, `a DRCT window of ${window} (1 to ${DRCT_MULTIPLE * 8} are run)`);
  if (upsampler === 'pixelshuffle' && (scale & (scale - 1)) !== 0 && scale !== 3) fail(file, `a DRCT of scale ${scale} (spandrel builds 2^n and 3)`);
  if (scale < 1 || scale > 16) fail(file, `a DRCT of scale ${scale} (1 to 16 are run)`);
  if (gc === 0) fail(file, 'a DRCT whose dense connections grow by 0 channels');
  const cfg: DRCTConfig = { kind: 'drct', upsampler, inChannels, outChannels: inChannels, embedDim, depths: heads.map(() => BLOCKS), heads, window, gc, mlpRatio, imgSize, qkvBias, patchNorm, resi, scale, shuffle: 1 };
  heads.forEach((h, i) => {
    if (h === 0) fail(file, `group ${i} has 0 attention heads`);
    // WindowAttention reshapes C channels into heads × C // heads: a width the heads do not divide fails in spandrel's forward.
    for (let k = 0; k < BLOCKS; k++) if (drctWidth(cfg, k) % drctHeads(cfg, i, k) !== 0) fail(file, `group ${i}'s block ${k + 1} splits ${drctWidth(cfg, k)} channels into ${drctHeads(cfg, i, k)} heads`);
  });
  const name = `a DRCT (${describeDRCT(cfg)})`;
  checkStrictLoad(file, drctStateShapes(cfg), name, name, (k) => k.endsWith('relative_position_index') || k.endsWith('attn_mask'));
  return cfg;
}

/** The state dict of spandrel's DRCT(**detected): name → shape, in the module's order. */
export function drctStateShapes(cfg: DRCTConfig): Map<string, number[]> {
  const { m, conv, vec, linear, pixelShuffle } = stateShapeRecorder();
  const E = cfg.embedDim;
  const w = cfg.window;
  conv('conv_first', E, cfg.inChannels);
  if (cfg.patchNorm) vec('patch_embed.norm', E);
  cfg.heads.forEach((_, i) => {
    for (let k = 0; k < BLOCKS; k++) {
      const b = `layers.${i}.swin${k + 1}`;
      const C = drctWidth(cfg, k);
      vec(`${b}.norm1`, C);
      m.set(`${b}.attn.relative_position_bias_table`, [(2 * w - 1) ** 2, drctHeads(cfg, i, k)]);
      m.set(`${b}.attn.relative_position_index`, [w * w, w * w]);
      linear(`${b}.attn.qkv`, 3 * C, C, cfg.qkvBias);
      linear(`${b}.attn.proj`, C, C);
      vec(`${b}.norm2`, C);
      linear(`${b}.mlp.fc1`, mlpHidden(cfg, k), C);
      linear(`${b}.mlp.fc2`, C, mlpHidden(cfg, k));
      if (shiftOf(cfg, k) > 0) m.set(`${b}.attn_mask`, [(cfg.imgSize / w) ** 2, w * w, w * w]);
      conv(`layers.${i}.adjust${k + 1}`, k === BLOCKS - 1 ? E : cfg.gc, C, 1);
    }
  });
  vec('norm', E);
  if (cfg.resi === '1conv') conv('conv_after_body', E, E);
  if (cfg.upsampler === 'pixelshuffle') pixelShuffle(E, NUM_FEAT, cfg.scale, cfg.inChannels);
  return m;
}

export function describeDRCT(cfg: DRCTConfig): string {
  return `embed ${cfg.embedDim}, ${cfg.heads.length} groups, heads [${cfg.heads.join(', ')}], growth ${cfg.gc}, window ${cfg.window}, upsampler '${cfg.upsampler}' ×${cfg.scale}, ${cfg.resi}`;
}

/** image [B, C, H, W] (H, W multiples of the window) in [0, 1] → [B, C, sH, sW], unclamped; `regions` [nW, w²] when shifted. */
export function buildDRCTGraph(g: OnnxGraph, cfg: DRCTConfig): Uint8Array {
  const E = cfg.embedDim;
  const ws = cfg.window;
  const N = ws * ws;
  const { image, mean } = imageAndMean(g, cfg.inChannels);
  const x = g.op('Sub', [image, mean]); // img_range 1
  if (cfg.upsampler === '') {
    // spandrel's forward runs no layer without an upsampler: the image comes back (through the mean shift).
    g.output(g.add(x, mean), 'upscaled', ['batch', cfg.outChannels, 'height', 'width']);
    return g.encode('drct');
  }
  // One window machinery per block width; the shifted windows' mask (from the one `regions` input) is shared.
  const ops = Array.from({ length: BLOCKS }, (_, k) => swinOps(g, image, drctWidth(cfg, k), ws));
  const relIndex = windowPositionIndex(ws, ws);
  const { toNHWC, toNCHW, lrelu, pixelShuffle } = convOps(g);
  const ln = (t: string, k: string) => g.layerNorm(t, k, 1e-5);

  const block = (t: string, i: number, k: number): string => {
    const key = `layers.${i}.swin${k + 1}`;
    const C = drctWidth(cfg, k);
    const o = ops[k]!;
    const shift = shiftOf(cfg, k);
    let h = ln(t, `${key}.norm1`);
    if (shift > 0) h = o.roll(h, -shift);
    const [q, kk, v] = g.opN('Split', [g.linear(o.partition(h), `${key}.attn.qkv`), g.i64([C, C, C])], 3, { axis: -1 });
    h = o.reverse(g.linear(o.attend(q!, kk!, v!, drctHeads(cfg, i, k), `${key}.attn.relative_position_bias_table`, relIndex, N, N, shift > 0 ? ops[0]!.shiftMask() : undefined), `${key}.attn.proj`));
    if (shift > 0) h = o.roll(h, shift);
    const x1 = g.add(t, h);
    return g.add(x1, g.linear(g.op('Gelu', [g.linear(ln(x1, `${key}.norm2`), `${key}.mlp.fc1`)]), `${key}.mlp.fc2`));
  };

  const rdg = (t: string, i: number): string => {
    const feats = [t];
    for (let k = 0; k < BLOCKS - 1; k++) {
      const input = k === 0 ? t : g.op('Concat', [...feats], { axis: -1 });
      feats.push(toNHWC(lrelu(g.conv(toNCHW(block(input, i, k)), `layers.${i}.adjust${k + 1}`), 0.2)));
    }
    const last = toNHWC(g.conv(toNCHW(block(g.op('Concat', [...feats], { axis: -1 }), i, BLOCKS - 1)), `layers.${i}.adjust${BLOCKS}`));
    return g.add(g.mul(last, g.f32([DENSE_SCALE], [])), t);
  };

  const first = g.conv(x, 'conv_first');
  let t = toNHWC(first);
  if (cfg.patchNorm) t = ln(t, 'patch_embed.norm');
  cfg.heads.forEach((_, i) => {
    t = rdg(t, i);
  });
  const feats = toNCHW(ln(t, 'norm'));
  const res = g.add(cfg.resi === '1conv' ? g.conv(feats, 'conv_after_body') : feats, first);
  const y = pixelShuffle(res, cfg.scale);
  g.output(g.add(y, mean), 'upscaled', ['batch', cfg.outChannels, 'out_height', 'out_width']);
  return g.encode('drct');
}
