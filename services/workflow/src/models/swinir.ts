/**
 * SwinIR upscale and restoration models (spandrel's SwinIR architecture, as
 * the reference's UpscaleModelLoader loads them): the hyperparameters are
 * read from the state dict's keys exactly as spandrel's loader reads them,
 * the file's keys and shapes are then held to those the model built from
 * them would have (torch's strict load_state_dict: a missing, unexpected or
 * misshapen tensor is refused, naming it), and the forward pass is written
 * as an ONNX graph over the file's weights in place.
 *
 * The forward pass: the image, reflect-padded to a multiple of the window,
 * less the RGB mean and times img_range; a conv; LayerNorm; residual Swin
 * transformer groups (window attention with a relative position bias, every
 * other block on windows shifted by half a window with the attention mask
 * that keeps the wrapped regions apart, an MLP with exact GELU; a conv
 * closing each group); LayerNorm, a conv, the first features added; then the
 * upsampler: 'pixelshuffle' (conv, LeakyReLU, conv and pixel shuffle per
 * factor, conv), 'pixelshuffledirect' (one conv and pixel shuffle),
 * 'nearest+conv' (ESRGAN-style nearest ×2 and conv steps) or '' (denoise and
 * JPEG models: the input plus a last conv); divided by img_range, the mean
 * added back.
 */
import { OnnxGraph } from './graph-builder.ts';
import { type SafetensorsFile } from './safetensors.ts';
import { checkStrictLoad, convOps, dimReader, fail, imageAndMean, NUM_FEAT, regionMask, rollTokens, seqLen, shiftedWindowRegions, stateShapeRecorder, windowPositionIndex, type TransformerSRConfig } from './transformer-sr-parts.ts';

export type SwinIRUpsampler = 'pixelshuffle' | 'pixelshuffledirect' | 'nearest+conv' | '';

export interface SwinIRConfig extends TransformerSRConfig {
  kind: 'swinir';
  upsampler: SwinIRUpsampler;
  window: number;
  mlpHidden: number;
  /** The training size the stored attention masks were made for (64 when there are none). */
  imgSize: number;
  /** 255 for the window-7 (JPEG artefact) models, else 1, as spandrel decides. */
  imgRange: number;
  resi: '1conv' | '3conv';
}

const BLOCK = (i: number, j: number) => `layers.${i}.residual_group.blocks.${j}`;

/**
 * The key renaming the reference applies before detection: ComfyUI's loader
 * drops `module.` when a SwinIR key carries it; spandrel's canonicalisation
 * then strips `module.` or `netG.` when every key starts with it.
 */
export function canonicalUpscaleKeys(file: SafetensorsFile): SafetensorsFile {
  let out = file;
  if (out.has('module.layers.0.residual_group.blocks.0.norm1.weight')) out = out.renamed((k) => (k.startsWith('module.') ? k.slice(7) : k));
  for (const prefix of ['module.', 'netG.']) {
    const keys = [...out.tensors.keys()];
    if (keys.length > 0 && keys.every((k) => k.startsWith(prefix))) out = out.renamed((k) => k.slice(prefix.length));
  }
  return out;
}

/** True when spandrel's SwinIR detection (its KeyCondition) takes the file. */
export function looksLikeSwinIR(file: SafetensorsFile): boolean {
  return (
    file.has('layers.0.residual_group.blocks.0.norm1.weight') &&
    (file.has('conv_first.weight') || file.has('conv_first.1.weight')) &&
    file.has('layers.0.residual_group.blocks.0.mlp.fc1.bias') &&
    file.has('layers.0.residual_group.blocks.0.attn.relative_position_index')
  );
}

/**
 * The SwinIR in the file (keys already canonical), or null when spandrel
 * would not take it for one; a ModelFileError when it would but could not
 * build or load it.
 */
export function detectSwinIR(file: SafetensorsFile): SwinIRConfig | null {
  if (!looksLikeSwinIR(file)) return null;
  // Swin2SR (src/models/swin2sr.ts, detected before this as in spandrel's registry) shares SwinIR's keys and is told apart by patch_embed.proj.
  if (file.has('conv_first.1.weight')) fail(file, 'a SwinIR with a pixel-unshuffled input (conv_first.1), which this service does not run');
  const dim = dimReader(file);

  // spandrel's SwinIRArch.load, step by step.
  const upsampler: SwinIRUpsampler = file.has('conv_before_upsample.0.weight') ? (file.has('conv_up1.weight') ? 'nearest+conv' : 'pixelshuffle') : file.has('upsample.0.weight') ? 'pixelshuffledirect' : '';
  const inChannels = dim('conv_first.weight', 1);
  const numOutCh = file.has('conv_last.weight') ? dim('conv_last.weight', 0) : inChannels;
  let scale = 1;
  if (upsampler === 'nearest+conv') {
    for (const k of file.tensors.keys()) if (k.includes('conv_up') && !k.includes('bias')) scale *= 2;
  } else if (upsampler === 'pixelshuffle') {
    // get_pixelshuffle_params: upsample.0, .2, … each multiplies by isqrt(out // in).
    for (let i = 0; i < 10 && file.has(`upsample.${i}.weight`); i += 2) {
      const [o, inC] = [dim(`upsample.${i}.weight`, 0), dim(`upsample.${i}.weight`, 1)];
      if (inC === 0) fail(file, `upsample.${i}.weight takes no channels`);
      scale *= Math.floor(Math.sqrt(Math.floor(o / inC)));
    }
  } else if (upsampler === 'pixelshuffledirect') {
    if (numOutCh === 0) fail(file, 'a SwinIR giving no channels');
    scale = Math.trunc(Math.sqrt(Math.floor(dim('upsample.0.bias', 0) / numOutCh)));
  }
  const embedDim = dim('conv_first.weight', 0);
  if (embedDim === 0) fail(file, 'conv_first.weight gives no channels');
  const mlpHidden = Math.trunc(embedDim * (dim(`${BLOCK(0, 0)}.mlp.fc1.bias`, 0) / embedDim));
  const window = Math.trunc(Math.sqrt(dim(`${BLOCK(0, 0)}.attn.relative_position_index`, 0)));
  const imgSize = file.has(`${BLOCK(0, 1)}.attn_mask`) ? Math.trunc(Math.sqrt(dim(`${BLOCK(0, 1)}.attn_mask`, 0)) * window) : 64;
  const layers = seqLen(file, 'layers');
  const depths: number[] = [];
  const heads: number[] = [];
  for (let i = 0; i < layers; i++) {
    depths.push(seqLen(file, `layers.${i}.residual_group.blocks`));
    heads.push(dim(`${BLOCK(i, 0)}.attn.relative_position_bias_table`, 1));
  }
  const resi = file.has('conv_after_body.weight') ? '1conv' : '3conv';
  const imgRange = window === 7 ? 255 : 1;

  // What spandrel's SwinIR constructor would refuse, or build into a model that cannot run.
  if (window < 1) fail(file, 'a SwinIR window of 0');
  if (imgSize <= window || imgSize % window !== 0) fail(file, `its stored attention masks are for ${imgSize}-pixel images, not a multiple of its ${window}-pixel window larger than it`);
  if (upsampler === 'pixelshuffle' && (scale < 1 || (scale & (scale - 1)) !== 0) && scale !== 3) fail(file, `a pixel-shuffle SwinIR of scale ${scale} (spandrel builds 2^n and 3)`);
  if (scale < 1 || scale > 16) fail(file, `a SwinIR of scale ${scale} (1 to 16 are run)`);
  heads.forEach((h, i) => {
    if (h === 0 || embedDim % h !== 0) fail(file, `layer ${i} splits ${embedDim} channels into ${h} heads`);
  });
  if (depths.some((d) => d === 0)) fail(file, 'a SwinIR layer without blocks');
  const cfg: SwinIRConfig = { kind: 'swinir', upsampler, inChannels, outChannels: inChannels, embedDim, depths, heads, window, mlpHidden, imgSize, imgRange, resi, scale, shuffle: 1 };
  checkStrict(file, cfg);
  return cfg;
}

/** The model's state dict as spandrel's SwinIR(**detected) holds it: name → shape. */
export function swinirStateShapes(cfg: SwinIRConfig): Map<string, number[]> {
  const { m, conv, vec, resi: resiOf, pixelShuffle } = stateShapeRecorder();
  const E = cfg.embedDim;
  const w = cfg.window;
  const norm = (k: string) => vec(k, E);
  const resi = (k: string) => resiOf(k, cfg.resi, E);
  conv('conv_first', E, cfg.inChannels);
  norm('patch_embed.norm');
  cfg.depths.forEach((depth, i) => {
    for (let j = 0; j < depth; j++) {
      const b = BLOCK(i, j);
      norm(`${b}.norm1`);
      m.set(`${b}.attn.relative_position_bias_table`, [(2 * w - 1) ** 2, cfg.heads[i]!]);
      m.set(`${b}.attn.relative_position_index`, [w * w, w * w]);
      m.set(`${b}.attn.qkv.weight`, [3 * E, E]);
      m.set(`${b}.attn.qkv.bias`, [3 * E]);
      m.set(`${b}.attn.proj.weight`, [E, E]);
      m.set(`${b}.attn.proj.bias`, [E]);
      norm(`${b}.norm2`);
      m.set(`${b}.mlp.fc1.weight`, [cfg.mlpHidden, E]);
      m.set(`${b}.mlp.fc1.bias`, [cfg.mlpHidden]);
      m.set(`${b}.mlp.fc2.weight`, [E, cfg.mlpHidden]);
      m.set(`${b}.mlp.fc2.bias`, [E]);
      if (shiftOf(cfg, j) > 0) m.set(`${b}.attn_mask`, [(cfg.imgSize / w) ** 2, w * w, w * w]);
    }
    resi(`layers.${i}.conv`);
  });
  norm('norm');
  resi('conv_after_body');
  const c = cfg.inChannels;
  const s = cfg.scale;
  if (cfg.upsampler === 'pixelshuffle') pixelShuffle(E, NUM_FEAT, s, c);
  else if (cfg.upsampler === 'pixelshuffledirect') {
    conv('upsample.0', s * s * c, E);
  } else if (cfg.upsampler === 'nearest+conv') {
    conv('conv_before_upsample.0', NUM_FEAT, E);
    conv('conv_up1', NUM_FEAT, NUM_FEAT);
    if (s === 4 || s === 8) conv('conv_up2', NUM_FEAT, NUM_FEAT);
    if (s === 8) conv('conv_up3', NUM_FEAT, NUM_FEAT);
    conv('conv_hr', NUM_FEAT, NUM_FEAT);
    conv('conv_last', c, NUM_FEAT);
  } else conv('conv_last', c, E);
  return m;
}

/** Block j's shift: half a window on odd blocks (none for a window of 1). */
function shiftOf(cfg: SwinIRConfig, j: number): number {
  return j % 2 === 0 ? 0 : Math.floor(cfg.window / 2);
}

/** torch's strict load_state_dict into the model the config builds: every key there, none more, each shape equal. */
function checkStrict(file: SafetensorsFile, cfg: SwinIRConfig): void {
  const d = describeSwinIR(cfg);
  // The index and mask buffers are not read (both are recomputed, as the model computes them); weights must be floats.
  checkStrictLoad(file, swinirStateShapes(cfg), `a SwinIR (${d})`, `this SwinIR (${d})`, (k) => k.endsWith('relative_position_index') || k.endsWith('attn_mask'));
}

export function describeSwinIR(cfg: SwinIRConfig): string {
  return `embed ${cfg.embedDim}, depths [${cfg.depths.join(', ')}], heads [${cfg.heads.join(', ')}], window ${cfg.window}, upsampler '${cfg.upsampler}' ×${cfg.scale}, ${cfg.resi}`;
}

/**
 * The shifted windows' region ids for a padded h×w image, window by window
 * ([nW, w²], as window_partition lays them out): SwinTransformerBlock's
 * calculate_mask before the pairwise comparison, which the graph makes.
 */
export function shiftRegions(cfg: { window: number }, h: number, w: number): Float32Array {
  return shiftedWindowRegions(h, w, cfg.window, cfg.window);
}

/** True when some block attends over shifted windows (the graph then takes the region ids). */
export function hasShiftedBlocks(cfg: { window: number; depths: number[] }): boolean {
  return cfg.window > 1 && cfg.depths.some((d) => d > 1);
}

/**
 * The window machinery SwinIR and HAT share, over [B, H, W, E] tokens of an
 * image input whose H and W are multiples of the window `ws`: window
 * partition and its reverse (window_partition / window_reverse), torch.roll,
 * the shifted windows' mask from the `regions` input, and multi-head
 * attention with a relative position bias gathered from a table.
 */
export function swinOps(g: OnnxGraph, image: string, E: number, ws: number) {
  const N = ws * ws;
  // The dynamic sizes window partitioning needs: B, H, W and the windows along each.
  const shp = g.op('Shape', [image]);
  const at = (i: number) => g.op('Slice', [shp, g.i64([i]), g.i64([i + 1])]);
  const [B, H, W] = [at(0), at(2), at(3)];
  const nh = g.op('Div', [H, g.i64([ws])]);
  const nw = g.op('Div', [W, g.i64([ws])]);
  const cat = (parts: string[]) => g.op('Concat', parts, { axis: 0 });
  const partShape = cat([B, nh, g.i64([ws]), nw, g.i64([ws, E])]);
  const windowsShape = cat([B, nh, nw, g.i64([ws, ws, E])]);
  const tokensShape = cat([B, H, W, g.i64([E])]);
  let mask: string | undefined;
  return {
    B,
    cat,
    /** [B, H, W, E] → [B·nW, ws², E]. */
    partition: (t: string) => g.op('Reshape', [g.op('Transpose', [g.op('Reshape', [t, partShape])], { perm: [0, 1, 3, 2, 4, 5] }), g.i64([-1, N, E])]),
    /** [B·nW, ws², E] → [B, H, W, E]. */
    reverse: (t: string) => g.op('Reshape', [g.op('Transpose', [g.op('Reshape', [t, windowsShape])], { perm: [0, 1, 3, 2, 4, 5] }), tokensShape]),
    /** torch.roll by s (not 0) along H and W of [B, H, W, C]: the last s rows/columns move to the front (s < 0: the first |s| to the back). */
    roll: (t: string, s: number): string => rollTokens(g, t, s, s),
    /** calculate_mask from the `regions` input ([nW, ws²] region ids): −100 between tokens of different regions, else 0; [nW, 1, N, N]. */
    shiftMask: (): string => (mask ??= regionMask(g, 'regions', 'windows', N)),
    /**
     * WindowAttention's core on windows q [Bw, nq, E], k and v [Bw, nk, E]: heads split, q scaled by d^−½, the bias
     * table[index] ([nq·nk] indices, negative ones from the end as torch indexes) added, then a window mask, softmax, ·v.
     */
    attend: (q: string, k: string, v: string, heads: number, table: string, index: number[], nq: number, nk: number, windowMask?: string): string => {
      const d = E / heads;
      const split = (t: string) => g.op('Transpose', [g.op('Reshape', [t, g.i64([0, 0, heads, d])])], { perm: [0, 2, 1, 3] });
      let scores = g.op('MatMul', [g.mul(split(q), g.f32([d ** -0.5], [])), g.op('Transpose', [split(k)], { perm: [0, 1, 3, 2] })]);
      const bias = g.op('Transpose', [g.op('Reshape', [g.op('Gather', [g.w(table), g.i64(index)], { axis: 0 }), g.i64([nq, nk, heads])])], { perm: [2, 0, 1] });
      scores = g.add(scores, bias);
      // [B·nW, heads, N, N] as [B, nW, heads, N, N] to add each window's mask over its heads.
      if (windowMask) scores = g.op('Reshape', [g.add(g.op('Reshape', [scores, cat([B, g.i64([-1, heads, nq, nk])])]), windowMask), g.i64([-1, heads, nq, nk])]);
      const p = g.op('Softmax', [scores], { axis: -1 });
      return g.op('Reshape', [g.op('Transpose', [g.op('MatMul', [p, split(v)])], { perm: [0, 2, 1, 3] }), g.i64([0, 0, E])]);
    },
  };
}

/** image [B, C, H, W] (H and W multiples of the window) in [0, 1] → [B, C, sH, sW], unclamped; `regions` [nW, w²] when some block is shifted. */
export function buildSwinIRGraph(g: OnnxGraph, cfg: SwinIRConfig): Uint8Array {
  const E = cfg.embedDim;
  const ws = cfg.window;
  const N = ws * ws;
  const { image, mean } = imageAndMean(g, cfg.inChannels);
  const range = g.f32([cfg.imgRange], []);
  const x = g.mul(g.op('Sub', [image, mean]), range);
  const ops = swinOps(g, image, E, ws);
  const relIndex = windowPositionIndex(ws, ws);

  const block = (t: string, i: number, j: number): string => {
    const key = BLOCK(i, j);
    const shift = shiftOf(cfg, j);
    let h = g.layerNorm(t, `${key}.norm1`, 1e-5);
    if (shift > 0) h = ops.roll(h, -shift);
    const [q, k, v] = g.opN('Split', [g.linear(ops.partition(h), `${key}.attn.qkv`), g.i64([E, E, E])], 3, { axis: -1 });
    const attended = g.linear(ops.attend(q!, k!, v!, cfg.heads[i]!, `${key}.attn.relative_position_bias_table`, relIndex, N, N, shift > 0 ? ops.shiftMask() : undefined), `${key}.attn.proj`);
    h = ops.reverse(attended);
    if (shift > 0) h = ops.roll(h, shift);
    const x1 = g.add(t, h);
    const mlp = g.linear(g.op('Gelu', [g.linear(g.layerNorm(x1, `${key}.norm2`, 1e-5), `${key}.mlp.fc1`)]), `${key}.mlp.fc2`);
    return g.add(x1, mlp);
  };

  const { toNHWC, toNCHW, lrelu, resiConv: resiOf, pixelShuffle, pixelShuffleDirect } = convOps(g);
  const resiConv = (t: string, key: string) => resiOf(t, key, cfg.resi);

  const first = g.conv(x, 'conv_first');
  let t = g.layerNorm(toNHWC(first), 'patch_embed.norm', 1e-5);
  cfg.depths.forEach((depth, i) => {
    let r = t;
    for (let j = 0; j < depth; j++) r = block(r, i, j);
    t = g.add(toNHWC(resiConv(toNCHW(r), `layers.${i}.conv`)), t);
  });
  t = g.layerNorm(t, 'norm', 1e-5);
  const res = g.add(resiConv(toNCHW(t), 'conv_after_body'), first);

  let y: string;
  const s = cfg.scale;
  if (cfg.upsampler === 'pixelshuffle') y = pixelShuffle(res, s);
  else if (cfg.upsampler === 'pixelshuffledirect') y = pixelShuffleDirect(res, s);
  else if (cfg.upsampler === 'nearest+conv') {
    y = lrelu(g.conv(res, 'conv_before_upsample.0'), 0.01);
    y = lrelu(g.conv(g.upsample2x(y), 'conv_up1'), 0.2);
    if (s === 4 || s === 8) y = lrelu(g.conv(g.upsample2x(y), 'conv_up2'), 0.2);
    if (s === 8) y = lrelu(g.conv(g.upsample2x(y), 'conv_up3'), 0.2);
    y = g.conv(lrelu(g.conv(y, 'conv_hr'), 0.2), 'conv_last');
  } else y = g.add(x, g.conv(res, 'conv_last'));
  const out = g.add(g.op('Div', [y, range]), mean);
  g.output(out, 'upscaled', ['batch', cfg.outChannels, 'out_height', 'out_width']);
  return g.encode('swinir');
}
