/**
 * HAT (Hybrid Attention Transformer, spandrel's HAT architecture) upscale
 * models: SwinIR's shifted-window transformer (swinir.ts's swinOps) with,
 * in each block, a convolutional channel-attention branch (CAB, added ×0.01)
 * and, closing each group, an overlapping cross-attention block (OCAB:
 * queries from the windows, keys and values from larger windows around them,
 * torch's Unfold, with its own relative position bias). Hyperparameters are
 * read from the keys as spandrel's HAT loader reads them, the file held to
 * the state dict the model built from them has (torch's strict load), the
 * graph written over the weights in place.
 */
import { OnnxGraph } from './graph-builder.ts';
import { DataType } from './onnx-proto.ts';
import { type SafetensorsFile } from './safetensors.ts';
import { swinOps } from './swinir.ts';
import { checkStrictLoad, convOps, dimReader, fail, imageAndMean, pixelShuffleScale, seqLen, stateShapeRecorder, windowPositionIndex, type TransformerSRConfig } from './transformer-sr-parts.ts';

export interface HATConfig extends TransformerSRConfig {
  kind: 'hat';
  window: number;
  /** The overlapping windows' size (window + int(window · overlap_ratio)). */
  overlapWindow: number;
  mlpHidden: number;
  /** CAB's squeezed widths: its first conv's outputs and its channel attention's. */
  cabWidth: number;
  squeezeWidth: number;
  qkvBias: boolean;
  patchNorm: boolean;
  resi: '1conv' | 'identity';
  numFeat: number;
}

const CONV_SCALE = 0.01;
const GROUP = (i: number) => `layers.${i}.residual_group`;

/** spandrel's HAT KeyCondition. */
const DETECT = [
  'relative_position_index_SA',
  'conv_first.weight',
  'layers.0.residual_group.blocks.0.norm1.weight',
  'layers.0.residual_group.blocks.0.conv_block.cab.0.weight',
  'layers.0.residual_group.blocks.0.conv_block.cab.2.weight',
  'layers.0.residual_group.blocks.0.conv_block.cab.3.attention.1.weight',
  'layers.0.residual_group.blocks.0.conv_block.cab.3.attention.3.weight',
  'layers.0.residual_group.blocks.0.mlp.fc1.bias',
  'layers.0.residual_group.blocks.0.mlp.fc2.weight',
  'layers.0.residual_group.overlap_attn.relative_position_bias_table',
  'layers.0.residual_group.overlap_attn.qkv.weight',
  'layers.0.residual_group.overlap_attn.proj.weight',
  'layers.0.residual_group.overlap_attn.mlp.fc1.weight',
  'layers.0.residual_group.overlap_attn.mlp.fc2.weight',
  'conv_last.weight',
];

export function looksLikeHAT(file: SafetensorsFile): boolean {
  return DETECT.every((k) => file.has(k));
}

/** spandrel's _get_overlap_ratio: a "nice" ratio r with int(ws + ws·r) = the overlapping window, else the formula. */
function overlapRatio(ws: number, withOverlap: number): number {
  for (const r of [0, 1, 0.5, 0.25, 0.75, 0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9]) if (Math.trunc(ws + ws * r) === withOverlap) return r;
  return (withOverlap - ws) / ws + 0.01;
}

/** The HAT in the file (keys canonical), or null when spandrel's HAT detection does not take it. */
export function detectHAT(file: SafetensorsFile): HATConfig | null {
  if (!looksLikeHAT(file)) return null;
  const dim = dimReader(file);
  const inChannels = dim('conv_first.weight', 1);
  const embedDim = dim('conv_first.weight', 0);
  const numFeat = dim('conv_last.weight', 1);
  const scale = pixelShuffleScale(file, dim);
  const window = Math.trunc(Math.sqrt(dim('relative_position_index_SA', 0)));
  const ratio = overlapRatio(window, Math.trunc(Math.sqrt(dim('relative_position_index_OCA', 1))));
  const overlapWindow = Math.trunc(window * ratio) + window;
  const layers = seqLen(file, 'layers');
  const depths: number[] = [];
  const heads: number[] = [];
  for (let i = 0; i < layers; i++) {
    depths.push(seqLen(file, `${GROUP(i)}.blocks`));
    heads.push(dim(`${GROUP(i)}.overlap_attn.relative_position_bias_table`, 1));
  }
  const resi = file.has('conv_after_body.weight') ? '1conv' : 'identity';
  const cabWidth = dim('layers.0.residual_group.blocks.0.conv_block.cab.0.weight', 0);
  const squeezeWidth = dim('layers.0.residual_group.blocks.0.conv_block.cab.3.attention.1.weight', 0);
  const mlpHidden = Math.trunc(embedDim * (dim('layers.0.residual_group.blocks.0.mlp.fc1.weight', 0) / embedDim));
  if (embedDim === 0 || cabWidth === 0 || squeezeWidth === 0) fail(file, 'a HAT with a layer of no channels');
  // spandrel's _inv_int_div finds the ratios that give these widths; a width no integer ratio gives builds no model.
  for (const [what, width] of [['compress', cabWidth], ['squeeze', squeezeWidth]] as const) {
    const b = embedDim / width;
    if (!Number.isInteger(b) && Math.floor(embedDim / Math.ceil(b)) !== width && Math.floor(embedDim / Math.floor(b)) !== width) fail(file, `no integer ${what} ratio gives ${width} of ${embedDim} channels`);
  }
  if (file.has('absolute_pos_embed')) fail(file, 'a HAT with an absolute position embedding (fixed to its training size), which this service does not run');
  if (window < 2 || window >= 64) fail(file, `a HAT window of ${window} (2 to 63 are run)`);
  if ((overlapWindow - window) % 2 !== 0) fail(file, `overlapping windows of ${overlapWindow} around windows of ${window} do not line up (their difference must be even)`);
  if ((scale & (scale - 1)) !== 0 && scale !== 3) fail(file, `a HAT of scale ${scale} (spandrel builds 2^n and 3)`);
  if (scale > 16) fail(file, `a HAT of scale ${scale} (at most 16 is run)`);
  heads.forEach((h, i) => {
    if (h === 0 || embedDim % h !== 0) fail(file, `layer ${i} splits ${embedDim} channels into ${h} heads`);
  });
  if (depths.some((d) => d === 0)) fail(file, 'a HAT layer without blocks');
  const cfg: HATConfig = {
    kind: 'hat',
    inChannels,
    outChannels: inChannels,
    embedDim,
    depths,
    heads,
    window,
    overlapWindow,
    mlpHidden,
    cabWidth,
    squeezeWidth,
    qkvBias: file.has('layers.0.residual_group.blocks.0.attn.qkv.bias'),
    patchNorm: file.has('patch_embed.norm.weight'),
    resi,
    numFeat,
    scale,
    shuffle: 1,
  };
  checkStrict(file, cfg);
  return cfg;
}

/** The state dict of spandrel's HAT(**detected): name → shape. */
export function hatStateShapes(cfg: HATConfig): Map<string, number[]> {
  const { m, conv, vec: vecOf, linear, pixelShuffle } = stateShapeRecorder();
  const E = cfg.embedDim;
  const ws = cfg.window;
  const wse = cfg.overlapWindow;
  const vec = (k: string) => vecOf(k, E);
  const mlp = (k: string) => {
    linear(`${k}.fc1`, cfg.mlpHidden, E);
    linear(`${k}.fc2`, E, cfg.mlpHidden);
  };
  m.set('relative_position_index_SA', [ws * ws, ws * ws]);
  m.set('relative_position_index_OCA', [ws * ws, wse * wse]);
  conv('conv_first', E, cfg.inChannels);
  if (cfg.patchNorm) vec('patch_embed.norm');
  cfg.depths.forEach((depth, i) => {
    for (let j = 0; j < depth; j++) {
      const b = `${GROUP(i)}.blocks.${j}`;
      vec(`${b}.norm1`);
      m.set(`${b}.attn.relative_position_bias_table`, [(2 * ws - 1) ** 2, cfg.heads[i]!]);
      linear(`${b}.attn.qkv`, 3 * E, E, cfg.qkvBias);
      linear(`${b}.attn.proj`, E, E);
      conv(`${b}.conv_block.cab.0`, cfg.cabWidth, E);
      conv(`${b}.conv_block.cab.2`, E, cfg.cabWidth);
      conv(`${b}.conv_block.cab.3.attention.1`, cfg.squeezeWidth, E, 1);
      conv(`${b}.conv_block.cab.3.attention.3`, E, cfg.squeezeWidth, 1);
      vec(`${b}.norm2`);
      mlp(`${b}.mlp`);
    }
    const o = `${GROUP(i)}.overlap_attn`;
    vec(`${o}.norm1`);
    linear(`${o}.qkv`, 3 * E, E, cfg.qkvBias);
    m.set(`${o}.relative_position_bias_table`, [(ws + wse - 1) ** 2, cfg.heads[i]!]);
    linear(`${o}.proj`, E, E);
    vec(`${o}.norm2`);
    mlp(`${o}.mlp`);
    if (cfg.resi === '1conv') conv(`layers.${i}.conv`, E, E);
  });
  vec('norm');
  if (cfg.resi === '1conv') conv('conv_after_body', E, E);
  pixelShuffle(E, cfg.numFeat, cfg.scale, cfg.inChannels);
  return m;
}

function checkStrict(file: SafetensorsFile, cfg: HATConfig): void {
  const name = `a HAT (${describeHAT(cfg)})`;
  checkStrictLoad(file, hatStateShapes(cfg), name, name, (k) => k.startsWith('relative_position_index'));
}

export function describeHAT(cfg: HATConfig): string {
  return `embed ${cfg.embedDim}, depths [${cfg.depths.join(', ')}], heads [${cfg.heads.join(', ')}], window ${cfg.window}, overlap ${cfg.overlapWindow}, ×${cfg.scale}`;
}

/** HAT's calculate_rpi_oca: [ws², wse²] indices into the (ws + wse − 1)² table, negative ones included (torch indexes those from the end). */
export function overlapPositionIndex(ws: number, wse: number): number[] {
  const out: number[] = [];
  for (let a = 0; a < ws * ws; a++)
    for (let b = 0; b < wse * wse; b++) {
      const dh = Math.floor(b / wse) - Math.floor(a / ws) + ws - wse + 1;
      const dw = (b % wse) - (a % ws) + ws - wse + 1;
      out.push(dh * (ws + wse - 1) + dw);
    }
  return out;
}

/**
 * OCAB's Unfold as a gather: for each window of an h×w image (row-major, as
 * window_partition orders them), the indices into the zero-padded
 * (h + 2p)×(w + 2p) image of its wse×wse overlapping window.
 */
export function overlapWindowIndex(cfg: HATConfig, h: number, w: number): BigInt64Array {
  const ws = cfg.window;
  const wse = cfg.overlapWindow;
  const wp = w + (wse - ws);
  const out = new BigInt64Array((h / ws) * (w / ws) * wse * wse);
  let at = 0;
  for (let wy = 0; wy < h / ws; wy++)
    for (let wx = 0; wx < w / ws; wx++)
      for (let a = 0; a < wse; a++) for (let b = 0; b < wse; b++) out[at++] = BigInt((wy * ws + a) * wp + wx * ws + b);
  return out;
}

/** image [B, C, H, W] (H, W multiples of the window) → [B, C, sH, sW]; `regions` [nW, ws²] and `overlap` [nW·wse²] inputs. */
export function buildHATGraph(g: OnnxGraph, cfg: HATConfig): Uint8Array {
  const E = cfg.embedDim;
  const ws = cfg.window;
  const wse = cfg.overlapWindow;
  const N = ws * ws;
  const { image, mean } = imageAndMean(g, cfg.inChannels);
  const overlap = g.input('overlap', DataType.INT64, ['overlap_tokens']);
  const x = g.op('Sub', [image, mean]); // img_range 1
  const ops = swinOps(g, image, E, ws);
  const rpiSA = windowPositionIndex(ws, ws);
  const rpiOCA = overlapPositionIndex(ws, wse);
  const shift = Math.floor(ws / 2);
  const { toNHWC, toNCHW, pixelShuffle } = convOps(g);
  const ln = (t: string, k: string) => g.layerNorm(t, k, 1e-5);
  const mlp = (t: string, k: string) => g.linear(g.op('Gelu', [g.linear(t, `${k}.fc1`)]), `${k}.fc2`);

  const cab = (t: string, k: string): string => {
    const c = g.conv(g.op('Gelu', [g.conv(t, `${k}.cab.0`)]), `${k}.cab.2`);
    const y = g.op('Sigmoid', [g.conv(g.op('Relu', [g.conv(g.op('GlobalAveragePool', [c]), `${k}.cab.3.attention.1`)]), `${k}.cab.3.attention.3`)]);
    return g.mul(c, y);
  };

  const block = (t: string, i: number, j: number): string => {
    const key = `${GROUP(i)}.blocks.${j}`;
    const s = j % 2 === 0 ? 0 : shift;
    const h = ln(t, `${key}.norm1`);
    const convX = toNHWC(cab(toNCHW(h), `${key}.conv_block`));
    const rolled = s > 0 ? ops.roll(h, -s) : h;
    const [q, k, v] = g.opN('Split', [g.linear(ops.partition(rolled), `${key}.attn.qkv`), g.i64([E, E, E])], 3, { axis: -1 });
    let a = ops.reverse(g.linear(ops.attend(q!, k!, v!, cfg.heads[i]!, `${key}.attn.relative_position_bias_table`, rpiSA, N, N, s > 0 ? ops.shiftMask() : undefined), `${key}.attn.proj`));
    if (s > 0) a = ops.roll(a, s);
    const x1 = g.add(g.add(t, a), g.mul(convX, g.f32([CONV_SCALE], [])));
    return g.add(x1, mlp(ln(x1, `${key}.norm2`), `${key}.mlp`));
  };

  const ocab = (t: string, i: number): string => {
    const key = `${GROUP(i)}.overlap_attn`;
    const [q, k, v] = g.opN('Split', [g.linear(ln(t, `${key}.norm1`), `${key}.qkv`), g.i64([E, E, E])], 3, { axis: -1 });
    // Unfold(kernel wse, stride ws, zero padding p) of [k, v]: gathered from the padded tokens by the `overlap` indices.
    const p = (wse - ws) / 2;
    const kv = g.op('Pad', [g.op('Concat', [k!, v!], { axis: -1 }), g.i64([0, p, p, 0, 0, p, p, 0])]);
    const tokens = g.op('Reshape', [kv, ops.cat([ops.B, g.i64([-1, 2 * E])])]);
    const windows = g.op('Reshape', [g.op('Gather', [tokens, overlap], { axis: 1 }), g.i64([-1, wse * wse, 2 * E])]);
    const [kw, vw] = g.opN('Split', [windows, g.i64([E, E])], 2, { axis: -1 });
    const o = ops.reverse(ops.attend(ops.partition(q!), kw!, vw!, cfg.heads[i]!, `${key}.relative_position_bias_table`, rpiOCA, N, wse * wse));
    const x1 = g.add(g.linear(o, `${key}.proj`), t);
    return g.add(x1, mlp(ln(x1, `${key}.norm2`), `${key}.mlp`));
  };

  const first = g.conv(x, 'conv_first');
  let t = toNHWC(first);
  if (cfg.patchNorm) t = ln(t, 'patch_embed.norm');
  cfg.depths.forEach((depth, i) => {
    let r = t;
    for (let j = 0; j < depth; j++) r = block(r, i, j);
    r = ocab(r, i);
    t = g.add(cfg.resi === '1conv' ? toNHWC(g.conv(toNCHW(r), `layers.${i}.conv`)) : r, t);
  });
  t = toNCHW(ln(t, 'norm'));
  const res = g.add(cfg.resi === '1conv' ? g.conv(t, 'conv_after_body') : t, first);
  const y = pixelShuffle(res, cfg.scale);
  g.output(g.add(y, mean), 'upscaled', ['batch', cfg.outChannels, 'out_height', 'out_width']);
  return g.encode('hat');
}
