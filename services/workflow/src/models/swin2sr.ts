/**
 * Swin2SR upscale and restoration models (spandrel's Swin2SR architecture,
 * as the reference's UpscaleModelLoader loads them): SwinIR's layout with
 * SwinV2 blocks. The hyperparameters are read from the state dict as
 * spandrel's Swin2SR loader reads them, the file is held to the state dict
 * of the model they build (torch's strict load), and the forward pass is an
 * ONNX graph over the file's weights in place.
 *
 * What differs from SwinIR (src/models/swinir.ts): each attention is scaled
 * cosine attention (q and k L2-normalised per head, times
 * exp(min(logit_scale, ln 100))), its relative position bias is
 * 16·sigmoid of a small MLP (cpb_mlp) over the log-spaced relative
 * coordinates table, q and v have biases but k none, and the norms come
 * after the attention and the MLP (post-norm: x + norm(attn(x))). Each
 * residual group ends with its conv and a 1×1 patch-embedding conv; the
 * model's patch embedding is a conv (patch size 1) and optional LayerNorm.
 * The upsamplers are SwinIR's plus 'pixelshuffle_aux' (a bicubic-resized
 * branch of the input added to the pixel-shuffled features of an auxiliary
 * image); 'pixelshuffle_hf' is refused by name.
 */
import { OnnxGraph } from './graph-builder.ts';
import { DataType } from './onnx-proto.ts';
import { type SafetensorsFile } from './safetensors.ts';
import { checkStrictLoad, convOps, dimReader, fail, imageAndMean, NUM_FEAT, pixelShuffleScale, seqLen, stateShapeRecorder, windowPositionIndex, type TransformerSRConfig } from './transformer-sr-parts.ts';
import { swinOps } from './swinir.ts';

export type Swin2SRUpsampler = 'pixelshuffle' | 'pixelshuffle_aux' | 'pixelshuffledirect' | 'nearest+conv' | '';

export interface Swin2SRConfig extends TransformerSRConfig {
  kind: 'swin2sr';
  upsampler: Swin2SRUpsampler;
  window: number;
  mlpHidden: number;
  /** The training size: from the stored attention masks, else the window (then no block is shifted, as spandrel builds it). */
  imgSize: number;
  /** 255 for the window-7 (JPEG artefact) models, else 1, as spandrel decides. */
  imgRange: number;
  resi: '1conv' | '3conv';
  qkvBias: boolean;
  patchNorm: boolean;
}

const BLOCK = (i: number, j: number) => `layers.${i}.residual_group.blocks.${j}`;
/** cpb_mlp's hidden width (fixed in the module). */
const CPB_HIDDEN = 512;

/** True when spandrel's Swin2SR detection (its KeyCondition, checked before SwinIR's) takes the file. */
export function looksLikeSwin2SR(file: SafetensorsFile): boolean {
  return (
    file.has('layers.0.residual_group.blocks.0.norm1.weight') &&
    file.has('patch_embed.proj.weight') &&
    file.has('conv_first.weight') &&
    file.has('layers.0.residual_group.blocks.0.mlp.fc1.bias') &&
    file.has('layers.0.residual_group.blocks.0.attn.relative_position_index')
  );
}

/** The Swin2SR in the file (keys canonical), or null when spandrel would not take it for one; a ModelFileError when it could not build or load it. */
export function detectSwin2SR(file: SafetensorsFile): Swin2SRConfig | null {
  if (!looksLikeSwin2SR(file)) return null;
  const dim = dimReader(file);
  // spandrel's Swin2SRArch.load, step by step.
  const inChannels = dim('conv_first.weight', 1);
  const embedDim = dim('conv_first.weight', 0);
  const patchSize = dim('patch_embed.proj.weight', 2);
  const ape = file.has('absolute_pos_embed');
  const patchNorm = file.has('patch_embed.norm.weight');
  const qkvBias = file.has(`${BLOCK(0, 0)}.attn.q_bias`);
  const layers = seqLen(file, 'layers');
  const depths: number[] = [];
  const heads: number[] = [];
  for (let i = 0; i < layers; i++) {
    depths.push(seqLen(file, `layers.${i}.residual_group.blocks`));
    if (!file.has(`${BLOCK(i, 0)}.attn.logit_scale`)) fail(file, `a Swin2SR without ${BLOCK(i, 0)}.attn.logit_scale (each layer's heads are read from it)`);
    heads.push(dim(`${BLOCK(i, 0)}.attn.logit_scale`, 0));
  }
  if (embedDim === 0) fail(file, 'conv_first.weight gives no channels');
  const mlpHidden = Math.trunc(embedDim * (dim(`${BLOCK(0, 0)}.mlp.fc1.weight`, 0) / embedDim));
  const resi = file.has('conv_after_body.0.weight') ? '3conv' : file.has('conv_after_body.weight') ? '1conv' : fail(file, 'a Swin2SR with an unknown residual connection (neither conv_after_body nor conv_after_body.0)');
  if (!file.has('conv_bicubic.weight') && !file.has('conv_hr.weight') && file.has('conv_after_body_hf.weight')) fail(file, "a Swin2SR with the 'pixelshuffle_hf' upsampler, which this service does not run");
  const upsampler: Swin2SRUpsampler = file.has('conv_bicubic.weight') ? 'pixelshuffle_aux' : file.has('conv_hr.weight') ? 'nearest+conv' : file.has('conv_before_upsample.0.weight') ? 'pixelshuffle' : file.has('upsample.0.weight') ? 'pixelshuffledirect' : '';
  let scale = 1;
  if (upsampler === 'nearest+conv') scale = 4;
  else if (upsampler === 'pixelshuffledirect') {
    if (inChannels === 0) fail(file, 'a Swin2SR taking no channels');
    scale = Math.trunc(Math.sqrt(Math.floor(dim('upsample.0.weight', 0) / inChannels)));
  } else if (upsampler === 'pixelshuffle' || upsampler === 'pixelshuffle_aux') scale = pixelShuffleScale(file, dim);
  const window = Math.trunc(Math.sqrt(dim(`${BLOCK(0, 0)}.attn.relative_position_index`, 0)));
  const imgSize = file.has(`${BLOCK(0, 1)}.attn_mask`) ? Math.trunc(Math.sqrt(dim(`${BLOCK(0, 1)}.attn_mask`, 0) * window * window)) * patchSize : patchSize * window;
  const imgRange = window === 7 ? 255 : 1;

  // What spandrel's Swin2SR would refuse, or build into a model that cannot run (or gives NaN).
  if (ape) fail(file, 'a Swin2SR with an absolute position embedding, which this service does not run');
  if (patchSize !== 1) fail(file, `a Swin2SR with ${patchSize}-pixel patches (its forward pass runs 1-pixel patches only)`);
  if (window < 2) fail(file, `a Swin2SR window of ${window} (its relative coordinates divide by window − 1)`);
  if (imgSize < window || imgSize % window !== 0) fail(file, `its stored attention masks are for ${imgSize}-pixel images, not a multiple of its ${window}-pixel window`);
  if ((upsampler === 'pixelshuffle' || upsampler === 'pixelshuffle_aux') && (scale < 1 || (scale & (scale - 1)) !== 0) && scale !== 3) fail(file, `a pixel-shuffle Swin2SR of scale ${scale} (spandrel builds 2^n and 3)`);
  // conv_after_aux takes 3 channels whatever the model's.
  if (upsampler === 'pixelshuffle_aux' && inChannels !== 3) fail(file, `a 'pixelshuffle_aux' Swin2SR of ${inChannels} channels (spandrel builds its conv_after_aux for 3)`);
  if (scale < 1 || scale > 16) fail(file, `a Swin2SR of scale ${scale} (1 to 16 are run)`);
  heads.forEach((h, i) => {
    if (h === 0 || embedDim % h !== 0) fail(file, `layer ${i} splits ${embedDim} channels into ${h} heads`);
  });
  if (depths.some((d) => d === 0)) fail(file, 'a Swin2SR layer without blocks');
  const cfg: Swin2SRConfig = { kind: 'swin2sr', upsampler, inChannels, outChannels: inChannels, embedDim, depths, heads, window, mlpHidden, imgSize, imgRange, resi, qkvBias, patchNorm, scale, shuffle: 1 };
  const d = describeSwin2SR(cfg);
  // The index, coordinates-table and mask buffers are not read (recomputed, as the model computes them); weights must be floats.
  checkStrictLoad(file, swin2srStateShapes(cfg), `a Swin2SR (${d})`, `this Swin2SR (${d})`, (k) => k.endsWith('relative_position_index') || k.endsWith('attn_mask') || k.endsWith('relative_coords_table'));
  return cfg;
}

/** Blocks are shifted (odd ones, by half a window) when the training size exceeds the window, as SwinTransformerBlock decides. */
export function swin2srShifted(cfg: Swin2SRConfig): boolean {
  return cfg.imgSize > cfg.window && cfg.depths.some((d) => d > 1);
}

function shiftOf(cfg: Swin2SRConfig, j: number): number {
  return j % 2 === 1 && cfg.imgSize > cfg.window ? Math.floor(cfg.window / 2) : 0;
}

/** The model's state dict as spandrel's Swin2SR(**detected) holds it: name → shape. */
export function swin2srStateShapes(cfg: Swin2SRConfig): Map<string, number[]> {
  const { m, conv, vec, linear, resi: resiOf, pixelShuffle } = stateShapeRecorder();
  const E = cfg.embedDim;
  const w = cfg.window;
  const norm = (k: string) => vec(k, E);
  const resi = (k: string) => resiOf(k, cfg.resi, E);
  conv('conv_first', E, cfg.inChannels);
  conv('patch_embed.proj', E, E, 1);
  if (cfg.patchNorm) norm('patch_embed.norm');
  cfg.depths.forEach((depth, i) => {
    for (let j = 0; j < depth; j++) {
      const b = BLOCK(i, j);
      if (shiftOf(cfg, j) > 0) m.set(`${b}.attn_mask`, [(cfg.imgSize / w) ** 2, w * w, w * w]);
      norm(`${b}.norm1`);
      m.set(`${b}.attn.logit_scale`, [cfg.heads[i]!, 1, 1]);
      if (cfg.qkvBias) {
        m.set(`${b}.attn.q_bias`, [E]);
        m.set(`${b}.attn.v_bias`, [E]);
      }
      m.set(`${b}.attn.relative_coords_table`, [1, 2 * w - 1, 2 * w - 1, 2]);
      m.set(`${b}.attn.relative_position_index`, [w * w, w * w]);
      linear(`${b}.attn.cpb_mlp.0`, CPB_HIDDEN, 2);
      linear(`${b}.attn.cpb_mlp.2`, cfg.heads[i]!, CPB_HIDDEN, false);
      linear(`${b}.attn.qkv`, 3 * E, E, false);
      linear(`${b}.attn.proj`, E, E);
      norm(`${b}.norm2`);
      linear(`${b}.mlp.fc1`, cfg.mlpHidden, E);
      linear(`${b}.mlp.fc2`, E, cfg.mlpHidden);
    }
    resi(`layers.${i}.conv`);
    conv(`layers.${i}.patch_embed.proj`, E, E, 1);
  });
  norm('norm');
  resi('conv_after_body');
  const c = cfg.inChannels;
  const s = cfg.scale;
  if (cfg.upsampler === 'pixelshuffle') pixelShuffle(E, NUM_FEAT, s, c);
  else if (cfg.upsampler === 'pixelshuffle_aux') {
    conv('conv_bicubic', NUM_FEAT, c);
    conv('conv_before_upsample.0', NUM_FEAT, E);
    conv('conv_aux', c, NUM_FEAT);
    conv('conv_after_aux.0', NUM_FEAT, 3);
    if (s === 3) conv('upsample.0', 9 * NUM_FEAT, NUM_FEAT);
    else for (let k = 0; 2 ** k < s; k++) conv(`upsample.${2 * k}`, 4 * NUM_FEAT, NUM_FEAT);
    conv('conv_last', c, NUM_FEAT);
  } else if (cfg.upsampler === 'pixelshuffledirect') conv('upsample.0', s * s * c, E);
  else if (cfg.upsampler === 'nearest+conv') {
    conv('conv_before_upsample.0', NUM_FEAT, E);
    conv('conv_up1', NUM_FEAT, NUM_FEAT);
    conv('conv_up2', NUM_FEAT, NUM_FEAT);
    conv('conv_hr', NUM_FEAT, NUM_FEAT);
    conv('conv_last', c, NUM_FEAT);
  } else conv('conv_last', c, E);
  return m;
}

export function describeSwin2SR(cfg: Swin2SRConfig): string {
  return `embed ${cfg.embedDim}, depths [${cfg.depths.join(', ')}], heads [${cfg.heads.join(', ')}], window ${cfg.window}, upsampler '${cfg.upsampler}' ×${cfg.scale}, ${cfg.resi}`;
}

/**
 * WindowAttention's relative_coords_table for a w×w window (pretrained window 0): the offsets −(w−1)…w−1 per axis,
 * divided by w − 1, times 8, then sign·log2(|x| + 1)/3; [(2w−1)², 2] (dy, dx), in float32 as torch holds it.
 */
export function relativeCoordsTable(w: number): Float32Array {
  const out = new Float32Array((2 * w - 1) ** 2 * 2);
  const f = (d: number) => {
    const x = Math.fround(Math.fround(Math.fround(d) / (w - 1)) * 8);
    return Math.fround((Math.sign(x) * Math.fround(Math.log2(Math.abs(x) + 1))) / 3);
  };
  let at = 0;
  for (let dy = 1 - w; dy < w; dy++)
    for (let dx = 1 - w; dx < w; dx++) {
      out[at++] = f(dy);
      out[at++] = f(dx);
    }
  return out;
}

/**
 * image [B, C, H, W] (H and W multiples of the window) in [0, 1] → [B, C, sH, sW], unclamped; `regions` [nW, w²] when
 * some block is shifted; 'pixelshuffle_aux': `out_size` [2], the output's size before the window padding (s·H, s·W of
 * the image the model was given), which its bicubic branch is resized to and the output cropped to.
 */
export function buildSwin2SRGraph(g: OnnxGraph, cfg: Swin2SRConfig): Uint8Array {
  const E = cfg.embedDim;
  const ws = cfg.window;
  const N = ws * ws;
  const { image, mean } = imageAndMean(g, cfg.inChannels);
  const range = g.f32([cfg.imgRange], []);
  const x = g.mul(g.op('Sub', [image, mean]), range);
  const ops = swinOps(g, image, E, ws);
  const relIndex = windowPositionIndex(ws, ws);
  const coords = g.f32([...relativeCoordsTable(ws)], [(2 * ws - 1) ** 2, 2]);
  // k's bias: zeros between q_bias and v_bias (made only when there are biases, so no initializer goes unused).
  const zeros = cfg.qkvBias ? g.f32(new Array(E).fill(0), [E]) : '';
  const maxLogit = g.f32([Math.log(100)], []);
  const normalize = (u: string) => g.op('Div', [u, g.op('Max', [g.op('ReduceL2', [u, g.i64([-1])], { keepdims: 1 }), g.f32([1e-12], [])])]);

  const attention = (t: string, key: string, heads: number, mask?: string): string => {
    const d = E / heads;
    let qkv = g.linear(t, `${key}.qkv`);
    if (cfg.qkvBias) qkv = g.add(qkv, g.op('Concat', [g.w(`${key}.q_bias`), zeros, g.w(`${key}.v_bias`)], { axis: 0 }));
    const [q, k, v] = g.opN('Split', [qkv, g.i64([E, E, E])], 3, { axis: -1 });
    const split = (u: string) => g.op('Transpose', [g.op('Reshape', [u, g.i64([0, 0, heads, d])])], { perm: [0, 2, 1, 3] });
    let scores = g.op('MatMul', [normalize(split(q!)), g.op('Transpose', [normalize(split(k!))], { perm: [0, 1, 3, 2] })]);
    scores = g.mul(scores, g.op('Exp', [g.op('Min', [g.w(`${key}.logit_scale`), maxLogit])]));
    // cpb_mlp over the coordinates table → [(2w−1)², heads], gathered by the relative index, 16·sigmoid.
    const table = g.linear(g.op('Relu', [g.linear(coords, `${key}.cpb_mlp.0`)]), `${key}.cpb_mlp.2`);
    const bias = g.op('Transpose', [g.op('Reshape', [g.op('Gather', [table, g.i64(relIndex)], { axis: 0 }), g.i64([N, N, heads])])], { perm: [2, 0, 1] });
    scores = g.add(scores, g.mul(g.op('Sigmoid', [bias]), g.f32([16], [])));
    if (mask) scores = g.op('Reshape', [g.add(g.op('Reshape', [scores, ops.cat([ops.B, g.i64([-1, heads, N, N])])]), mask), g.i64([-1, heads, N, N])]);
    const p = g.op('Softmax', [scores], { axis: -1 });
    return g.linear(g.op('Reshape', [g.op('Transpose', [g.op('MatMul', [p, split(v!)])], { perm: [0, 2, 1, 3] }), g.i64([0, 0, E])]), `${key}.proj`);
  };

  const block = (t: string, i: number, j: number): string => {
    const key = BLOCK(i, j);
    const shift = shiftOf(cfg, j);
    let h = shift > 0 ? ops.roll(t, -shift) : t;
    h = ops.reverse(attention(ops.partition(h), `${key}.attn`, cfg.heads[i]!, shift > 0 ? ops.shiftMask() : undefined));
    if (shift > 0) h = ops.roll(h, shift);
    // Post-norm: the norm on the branch, before the residual add.
    const x1 = g.add(t, g.layerNorm(h, `${key}.norm1`, 1e-5));
    const mlp = g.linear(g.op('Gelu', [g.linear(x1, `${key}.mlp.fc1`)]), `${key}.mlp.fc2`);
    return g.add(x1, g.layerNorm(mlp, `${key}.norm2`, 1e-5));
  };

  const { toNHWC, toNCHW, lrelu, resiConv: resiOf, pixelShuffle, pixelShuffleDirect } = convOps(g);
  const resiConv = (t: string, key: string) => resiOf(t, key, cfg.resi);

  const first = g.conv(x, 'conv_first');
  let t = toNHWC(g.conv(first, 'patch_embed.proj'));
  if (cfg.patchNorm) t = g.layerNorm(t, 'patch_embed.norm', 1e-5);
  cfg.depths.forEach((depth, i) => {
    let r = t;
    for (let j = 0; j < depth; j++) r = block(r, i, j);
    t = g.add(toNHWC(g.conv(resiConv(toNCHW(r), `layers.${i}.conv`), `layers.${i}.patch_embed.proj`)), t);
  });
  t = g.layerNorm(t, 'norm', 1e-5);
  const res = g.add(resiConv(toNCHW(t), 'conv_after_body'), first);

  let y: string;
  if (cfg.upsampler === 'pixelshuffle') y = pixelShuffle(res, cfg.scale);
  else if (cfg.upsampler === 'pixelshuffle_aux') {
    // F.interpolate(x, size=(H·s, W·s), mode='bicubic', align_corners=False): torch's A = −0.75, half-pixel centres.
    const outSize = g.input('out_size', DataType.INT64, [2]);
    const sizes = g.op('Concat', [g.op('Slice', [g.op('Shape', [x]), g.i64([0]), g.i64([2])]), outSize], { axis: 0 });
    const bicubic = g.conv(g.op('Resize', [x, '', '', sizes], { mode: 'cubic', cubic_coeff_a: { float: -0.75 }, coordinate_transformation_mode: 'half_pixel' }), 'conv_bicubic');
    const aux = g.conv(lrelu(g.conv(res, 'conv_before_upsample.0'), 0.01), 'conv_aux');
    let u = lrelu(g.conv(aux, 'conv_after_aux.0'), 0.01);
    if (cfg.scale === 3) u = g.op('DepthToSpace', [g.conv(u, 'upsample.0')], { blocksize: 3, mode: 'CRD' });
    else for (let k = 0; 2 ** k < cfg.scale; k++) u = g.op('DepthToSpace', [g.conv(u, `upsample.${2 * k}`)], { blocksize: 2, mode: 'CRD' });
    u = g.op('Slice', [u, g.i64([0, 0]), outSize, g.i64([2, 3])]);
    y = g.conv(g.add(u, bicubic), 'conv_last');
  }
  else if (cfg.upsampler === 'pixelshuffledirect') y = pixelShuffleDirect(res, cfg.scale);
  else if (cfg.upsampler === 'nearest+conv') {
    y = lrelu(g.conv(res, 'conv_before_upsample.0'), 0.01);
    y = lrelu(g.conv(g.upsample2x(y), 'conv_up1'), 0.2);
    y = lrelu(g.conv(g.upsample2x(y), 'conv_up2'), 0.2);
    y = g.conv(lrelu(g.conv(y, 'conv_hr'), 0.2), 'conv_last');
  } else y = g.add(x, g.conv(res, 'conv_last'));
  const out = g.add(g.op('Div', [y, range]), mean);
  g.output(out, 'upscaled', ['batch', cfg.outChannels, 'out_height', 'out_width']);
  return g.encode('swin2sr');
}
