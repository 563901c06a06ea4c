import fs from 'node:fs';

/** What every tiny model case has: its name, widths, factor, and the image it runs on. */
interface TinyModelCase {
  name: string;
  embed: number;
  depths: number[];
  heads: number[];
  scale: number;
  /** Scales the last conv's weights (keeps the output spread over [0, 1] without saturating much). */
  lastGain?: number;
  width: number;
  height: number;
}

/**
 * Tiny SwinIR checkpoints as safetensors, laid out as spandrel's SwinIR
 * state dict (its relative_position_index and attn_mask buffers included,
 * as torch.save writes them), weights from a formula.
 * bench/workflow/models-reference-swinir.ts loads the same files with
 * spandrel for the reference values.
 */
export interface SwinIRCase extends TinyModelCase {
  upsampler: 'pixelshuffle' | 'pixelshuffledirect' | 'nearest+conv' | '';
  window: number;
  mlpRatio: number;
  /** The training size the attention masks are stored for. */
  imgSize: number;
  resi: '1conv' | '3conv';
  /** Every key under this prefix (`module.`: DataParallel checkpoints, which the loader strips). */
  prefix?: string;
}

/** The generated models and the image each runs on: one wider than a 512 tile (two blended tiles), odd sizes for the window padding. */
export const SWINIR_CASES: SwinIRCase[] = [
  { name: 'swinir_ps_x2', upsampler: 'pixelshuffle', embed: 12, depths: [2, 2], heads: [2, 3], window: 4, mlpRatio: 2, imgSize: 8, scale: 2, resi: '1conv', width: 37, height: 21 },
  { name: 'swinir_psd_x2_tiled', upsampler: 'pixelshuffledirect', embed: 16, depths: [2], heads: [4], window: 4, mlpRatio: 2, imgSize: 16, scale: 2, resi: '3conv', lastGain: 0.3, width: 530, height: 18 },
  { name: 'swinir_nc_x4', upsampler: 'nearest+conv', embed: 8, depths: [3], heads: [2], window: 4, mlpRatio: 2, imgSize: 8, scale: 4, resi: '1conv', lastGain: 4, width: 19, height: 13 },
  // Window 7: spandrel takes it for a JPEG artefact model and runs it with img_range 255.
  { name: 'swinir_jpeg', upsampler: '', embed: 14, depths: [2], heads: [2], window: 7, mlpRatio: 2, imgSize: 14, scale: 1, resi: '1conv', prefix: 'module.', lastGain: 0.4, width: 30, height: 19 },
];

export type Spec = { name: string; shape: number[]; dtype: 'F32' | 'I64'; values?: (i: number) => number; gain?: number };

/**
 * The module helpers the three writers share, appending to `out` in the order they are called (the file's order):
 * float tensors (values from the formula unless given), convs, per-channel weight and bias pairs, linears, the
 * residual conv ('1conv', or 3×3 to E/4, 1×1, 3×3 back) and the 'pixelshuffle' upsampler.
 */
function specWriter(out: Spec[]) {
  const f = (name: string, shape: number[], values?: (i: number) => number) => out.push(values ? { name, shape, dtype: 'F32', values } : { name, shape, dtype: 'F32' });
  const conv = (k: string, o: number, i: number, kernel = 3) => {
    f(`${k}.weight`, [o, i, kernel, kernel]);
    f(`${k}.bias`, [o]);
  };
  const vec = (k: string, n: number) => {
    f(`${k}.weight`, [n]);
    f(`${k}.bias`, [n]);
  };
  const linear = (k: string, o: number, i: number, bias = true) => {
    f(`${k}.weight`, [o, i]);
    if (bias) f(`${k}.bias`, [o]);
  };
  const resi = (k: string, kind: '1conv' | '3conv', E: number) => {
    if (kind === '1conv') return conv(k, E, E);
    conv(`${k}.0`, Math.floor(E / 4), E);
    conv(`${k}.2`, Math.floor(E / 4), Math.floor(E / 4), 1);
    conv(`${k}.4`, E, Math.floor(E / 4));
  };
  const pixelShuffle = (E: number, numFeat: number, scale: number) => {
    conv('conv_before_upsample.0', numFeat, E);
    if (scale === 3) conv('upsample.0', 9 * numFeat, numFeat);
    else for (let k = 0; 2 ** k < scale; k++) conv(`upsample.${2 * k}`, 4 * numFeat, numFeat);
    conv('conv_last', 3, numFeat);
  };
  return { f, conv, vec, linear, resi, pixelShuffle };
}

/** The relative_position_index of h×w windows (SwinIR's and HAT's square ones, DAT's rectangles): [hw, hw] indices into the (2h−1)(2w−1) table. */
function rectIndex(h: number, w: number): number[] {
  const n = h * w;
  const out: number[] = [];
  for (let a = 0; a < n; a++) for (let b = 0; b < n; b++) out.push((Math.floor(a / w) - Math.floor(b / w) + h - 1) * (2 * w - 1) + (a % w) - (b % w) + w - 1);
  return out;
}

/** calculate_mask for an img×img image in wh×ww windows shifted by half a window: [nW, wh·ww, wh·ww] of 0 and −100. */
function shiftedWindowMask(img: number, wh: number, ww: number): number[] {
  const [sh, sw] = [Math.floor(wh / 2), Math.floor(ww / 2)];
  const region = (i: number, win: number, shift: number) => (i < img - win ? 0 : i < img - shift ? 1 : 2);
  const out: number[] = [];
  for (let wy = 0; wy < img / wh; wy++)
    for (let wx = 0; wx < img / ww; wx++) {
      const ids: number[] = [];
      for (let y = 0; y < wh; y++) for (let x = 0; x < ww; x++) ids.push(region(wy * wh + y, wh, sh) * 3 + region(wx * ww + x, ww, sw));
      for (const a of ids) for (const b of ids) out.push(a === b ? 0 : -100);
    }
  return out;
}

/** The state dict of spandrel's SwinIR for the case, in its order. */
export function swinirSpecs(c: SwinIRCase): Spec[] {
  const E = c.embed;
  const w = c.window;
  const hidden = E * c.mlpRatio;
  const out: Spec[] = [];
  const { f, conv, vec, resi: resiOf, pixelShuffle } = specWriter(out);
  const norm = (k: string) => vec(k, E);
  const resi = (k: string) => resiOf(k, c.resi, E);
  conv('conv_first', E, 3);
  norm('patch_embed.norm');
  c.depths.forEach((depth, i) => {
    for (let j = 0; j < depth; j++) {
      const b = `layers.${i}.residual_group.blocks.${j}`;
      norm(`${b}.norm1`);
      if (j % 2 === 1) {
        const mask = shiftedWindowMask(c.imgSize, w, w);
        out.push({ name: `${b}.attn_mask`, shape: [(c.imgSize / w) ** 2, w * w, w * w], dtype: 'F32', values: (k) => mask[k]! });
      }
      f(`${b}.attn.relative_position_bias_table`, [(2 * w - 1) ** 2, c.heads[i]!]);
      const index = rectIndex(w, w);
      out.push({ name: `${b}.attn.relative_position_index`, shape: [w * w, w * w], dtype: 'I64', values: (k) => index[k]! });
      f(`${b}.attn.qkv.weight`, [3 * E, E]);
      f(`${b}.attn.qkv.bias`, [3 * E]);
      f(`${b}.attn.proj.weight`, [E, E]);
      f(`${b}.attn.proj.bias`, [E]);
      norm(`${b}.norm2`);
      f(`${b}.mlp.fc1.weight`, [hidden, E]);
      f(`${b}.mlp.fc1.bias`, [hidden]);
      f(`${b}.mlp.fc2.weight`, [E, hidden]);
      f(`${b}.mlp.fc2.bias`, [E]);
    }
    resi(`layers.${i}.conv`);
  });
  norm('norm');
  resi('conv_after_body');
  const s = c.scale;
  if (c.upsampler === 'pixelshuffle') pixelShuffle(E, 64, s);
  else if (c.upsampler === 'pixelshuffledirect') conv('upsample.0', s * s * 3, E);
  else if (c.upsampler === 'nearest+conv') {
    conv('conv_before_upsample.0', 64, E);
    for (let k = 1; 2 ** k <= s; k++) conv(`conv_up${k}`, 64, 64);
    conv('conv_hr', 64, 64);
    conv('conv_last', 3, 64);
  } else conv('conv_last', 3, E);
  const last = out.at(-2)!;
  if (c.lastGain !== undefined) last.gain = c.lastGain;
  return out.map((t) => ({ ...t, name: (c.prefix ?? '') + t.name }));
}

/** A weight's i-th value: spread enough that attention, its bias and the masks all show, small enough that the output stays mostly inside [0, 1]. */
function value(name: string, t: number, i: number, shape: number[]): number {
  const u = ((i * 7919 + t * 104729) % 10007) / 10007 - 0.5;
  if (/norm\d?\.weight$/.test(name)) return 1 + 0.4 * u;
  if (name.endsWith('relative_position_bias_table')) return 3 * u;
  if (name.endsWith('.bias')) return 0.2 * u;
  const fanIn = shape.slice(1).reduce((a, b) => a * b, 1);
  return (u * 4) / Math.sqrt(fanIn);
}

/** Writes the specs as safetensors (float32 weights, int64 index buffers). */
export function writeSpecs(file: string, list: Spec[]): void {
  const header: Record<string, unknown> = {};
  let off = 0;
  const size = (s: Spec) => s.shape.reduce((a, b) => a * b, 1) * (s.dtype === 'I64' ? 8 : 4);
  for (const s of list) {
    header[s.name] = { dtype: s.dtype, shape: s.shape, data_offsets: [off, off + size(s)] };
    off += size(s);
  }
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const parts: Buffer[] = [len, json];
  list.forEach((s, t) => {
    const n = s.shape.reduce((a, b) => a * b, 1);
    if (s.dtype === 'I64') parts.push(Buffer.from(BigInt64Array.from({ length: n }, (_, k) => BigInt(s.values!(k))).buffer));
    else parts.push(Buffer.from(Float32Array.from({ length: n }, (_, k) => (s.values ? s.values(k) : value(s.name, t, k, s.shape) * (s.gain ?? 1))).buffer));
  });
  fs.writeFileSync(file, Buffer.concat(parts));
}

/** A case's writer: its specs, edited (a test's broken variant) or not, written as safetensors. */
function caseWriter<C>(specs: (c: C) => Spec[]) {
  return (file: string, c: C, edit: (specs: Spec[]) => Spec[] = (s) => s): void => writeSpecs(file, edit(specs(c)));
}

export const writeSwinIR = caseWriter(swinirSpecs);

/** A tiny Swin2SR (spandrel's Swin2SR state dict, SwinV2 blocks) and the image it runs on. */
export interface Swin2SRCase extends TinyModelCase {
  upsampler: 'pixelshuffle' | 'pixelshuffle_aux' | 'pixelshuffledirect' | 'nearest+conv' | '';
  window: number;
  mlpRatio: number;
  /** The training size the attention masks are stored for. */
  imgSize: number;
  resi: '1conv' | '3conv';
  qkvBias: boolean;
  patchNorm: boolean;
}

export const SWIN2SR_CASES: Swin2SRCase[] = [
  { name: 'swin2sr_ps_x2', upsampler: 'pixelshuffle', embed: 12, depths: [2, 2], heads: [2, 3], window: 4, mlpRatio: 2, imgSize: 8, scale: 2, resi: '1conv', qkvBias: true, patchNorm: true, lastGain: 0.5, width: 27, height: 19 },
  { name: 'swin2sr_nc_x4', upsampler: 'nearest+conv', embed: 8, depths: [3], heads: [2], window: 4, mlpRatio: 2, imgSize: 8, scale: 4, resi: '3conv', qkvBias: false, patchNorm: false, lastGain: 2, width: 17, height: 13 },
  // Window 7: img_range 255, as for SwinIR.
  { name: 'swin2sr_psd_x2_w7', upsampler: 'pixelshuffledirect', embed: 8, depths: [2], heads: [2], window: 7, mlpRatio: 2, imgSize: 14, scale: 2, resi: '1conv', qkvBias: true, patchNorm: true, lastGain: 0.3, width: 15, height: 11 },
  // The bicubic branch resized from the window-padded 20 columns to 36.
  { name: 'swin2sr_aux_x2', upsampler: 'pixelshuffle_aux', embed: 8, depths: [2], heads: [2], window: 4, mlpRatio: 2, imgSize: 8, scale: 2, resi: '1conv', qkvBias: true, patchNorm: true, lastGain: 0.5, width: 18, height: 13 },
];

/** The state dict of spandrel's Swin2SR for the case, in its order. */
export function swin2srSpecs(c: Swin2SRCase): Spec[] {
  const E = c.embed;
  const w = c.window;
  const hidden = E * c.mlpRatio;
  const out: Spec[] = [];
  const { f, conv, vec, linear, resi: resiOf, pixelShuffle } = specWriter(out);
  const norm = (k: string) => vec(k, E);
  const resi = (k: string) => resiOf(k, c.resi, E);
  const index = rectIndex(w, w);
  // WindowAttention's relative_coords_table (pretrained window 0): offsets / (w − 1) · 8, sign · log2(|x| + 1) / 3.
  const coords: number[] = [];
  for (let dy = 1 - w; dy < w; dy++) for (let dx = 1 - w; dx < w; dx++) for (const d of [dy, dx]) coords.push((Math.sign(d) * Math.log2((Math.abs(d) / (w - 1)) * 8 + 1)) / 3);
  conv('conv_first', E, 3);
  conv('patch_embed.proj', E, E, 1);
  if (c.patchNorm) norm('patch_embed.norm');
  c.depths.forEach((depth, i) => {
    for (let j = 0; j < depth; j++) {
      const b = `layers.${i}.residual_group.blocks.${j}`;
      if (j % 2 === 1) {
        const mask = shiftedWindowMask(c.imgSize, w, w);
        out.push({ name: `${b}.attn_mask`, shape: [(c.imgSize / w) ** 2, w * w, w * w], dtype: 'F32', values: (k) => mask[k]! });
      }
      norm(`${b}.norm1`);
      // One head's logit scale above ln 100, so the clamp shows.
      f(`${b}.attn.logit_scale`, [c.heads[i]!, 1, 1], (k) => [1.5, 5.2, 2.5][k % 3]!);
      if (c.qkvBias) {
        f(`${b}.attn.q_bias`, [E], (k) => 0.3 * Math.sin(k + i + j));
        f(`${b}.attn.v_bias`, [E], (k) => 0.2 * Math.cos(k + i - j));
      }
      f(`${b}.attn.relative_coords_table`, [1, 2 * w - 1, 2 * w - 1, 2], (k) => coords[k]!);
      out.push({ name: `${b}.attn.relative_position_index`, shape: [w * w, w * w], dtype: 'I64', values: (k) => index[k]! });
      linear(`${b}.attn.cpb_mlp.0`, 512, 2);
      linear(`${b}.attn.cpb_mlp.2`, c.heads[i]!, 512, false);
      linear(`${b}.attn.qkv`, 3 * E, E, false);
      linear(`${b}.attn.proj`, E, E);
      norm(`${b}.norm2`);
      linear(`${b}.mlp.fc1`, hidden, E);
      linear(`${b}.mlp.fc2`, E, hidden);
    }
    resi(`layers.${i}.conv`);
    conv(`layers.${i}.patch_embed.proj`, E, E, 1);
  });
  norm('norm');
  resi('conv_after_body');
  const s = c.scale;
  if (c.upsampler === 'pixelshuffle') pixelShuffle(E, 64, s);
  else if (c.upsampler === 'pixelshuffle_aux') {
    conv('conv_bicubic', 64, 3);
    conv('conv_before_upsample.0', 64, E);
    conv('conv_aux', 3, 64);
    conv('conv_after_aux.0', 64, 3);
    for (let k = 0; 2 ** k < s; k++) conv(`upsample.${2 * k}`, 256, 64);
    conv('conv_last', 3, 64);
  } else if (c.upsampler === 'pixelshuffledirect') conv('upsample.0', s * s * 3, E);
  else if (c.upsampler === 'nearest+conv') {
    conv('conv_before_upsample.0', 64, E);
    conv('conv_up1', 64, 64);
    conv('conv_up2', 64, 64);
    conv('conv_hr', 64, 64);
    conv('conv_last', 3, 64);
  } else conv('conv_last', 3, E);
  if (c.lastGain !== undefined) out.at(-2)!.gain = c.lastGain;
  return out;
}

export const writeSwin2SR = caseWriter(swin2srSpecs);

/** A tiny HAT (spandrel's HAT state dict) and the image it runs on. */
export interface HATCase extends TinyModelCase {
  window: number;
  /** Overlapping window of OCAB: window + int(window · overlap_ratio). */
  overlapWindow: number;
  mlpRatio: number;
  cabWidth: number;
  squeezeWidth: number;
  numFeat: number;
  resi: '1conv' | 'identity';
  qkvBias: boolean;
  patchNorm: boolean;
}

export const HAT_CASES: HATCase[] = [
  { name: 'hat_x2', embed: 12, depths: [2], heads: [2], window: 4, overlapWindow: 6, mlpRatio: 2, cabWidth: 4, squeezeWidth: 2, numFeat: 16, scale: 2, resi: '1conv', qkvBias: true, patchNorm: true, lastGain: 0.4, width: 23, height: 17 },
  { name: 'hat_x3', embed: 12, depths: [2, 1], heads: [3, 2], window: 4, overlapWindow: 8, mlpRatio: 2, cabWidth: 6, squeezeWidth: 3, numFeat: 8, scale: 3, resi: 'identity', qkvBias: false, patchNorm: false, lastGain: 0.25, width: 21, height: 18 },
];

function overlapIndex(ws: number, wse: number): number[] {
  const out: number[] = [];
  for (let a = 0; a < ws * ws; a++)
    for (let b = 0; b < wse * wse; b++) out.push((Math.floor(b / wse) - Math.floor(a / ws) + ws - wse + 1) * (ws + wse - 1) + (b % wse) - (a % ws) + ws - wse + 1);
  return out;
}

export function hatSpecs(c: HATCase): Spec[] {
  const E = c.embed;
  const ws = c.window;
  const wse = c.overlapWindow;
  const hidden = E * c.mlpRatio;
  const out: Spec[] = [];
  const { f, conv, vec, linear, pixelShuffle } = specWriter(out);
  const norm = (k: string) => vec(k, E);
  const sa = rectIndex(ws, ws);
  const oca = overlapIndex(ws, wse);
  out.push({ name: 'relative_position_index_SA', shape: [ws * ws, ws * ws], dtype: 'I64', values: (k) => sa[k]! });
  out.push({ name: 'relative_position_index_OCA', shape: [ws * ws, wse * wse], dtype: 'I64', values: (k) => oca[k]! });
  conv('conv_first', E, 3);
  if (c.patchNorm) norm('patch_embed.norm');
  c.depths.forEach((depth, i) => {
    const g = `layers.${i}.residual_group`;
    for (let j = 0; j < depth; j++) {
      const b = `${g}.blocks.${j}`;
      norm(`${b}.norm1`);
      f(`${b}.attn.relative_position_bias_table`, [(2 * ws - 1) ** 2, c.heads[i]!]);
      linear(`${b}.attn.qkv`, 3 * E, E, c.qkvBias);
      linear(`${b}.attn.proj`, E, E);
      conv(`${b}.conv_block.cab.0`, c.cabWidth, E);
      conv(`${b}.conv_block.cab.2`, E, c.cabWidth);
      conv(`${b}.conv_block.cab.3.attention.1`, c.squeezeWidth, E, 1);
      conv(`${b}.conv_block.cab.3.attention.3`, E, c.squeezeWidth, 1);
      norm(`${b}.norm2`);
      linear(`${b}.mlp.fc1`, hidden, E);
      linear(`${b}.mlp.fc2`, E, hidden);
    }
    const o = `${g}.overlap_attn`;
    norm(`${o}.norm1`);
    linear(`${o}.qkv`, 3 * E, E, c.qkvBias);
    f(`${o}.relative_position_bias_table`, [(ws + wse - 1) ** 2, c.heads[i]!]);
    linear(`${o}.proj`, E, E);
    norm(`${o}.norm2`);
    linear(`${o}.mlp.fc1`, hidden, E);
    linear(`${o}.mlp.fc2`, E, hidden);
    if (c.resi === '1conv') conv(`layers.${i}.conv`, E, E);
  });
  norm('norm');
  if (c.resi === '1conv') conv('conv_after_body', E, E);
  pixelShuffle(E, c.numFeat, c.scale);
  if (c.lastGain !== undefined) out.at(-2)!.gain = c.lastGain;
  return out;
}

export const writeHAT = caseWriter(hatSpecs);

/** A tiny DAT (spandrel's DAT state dict) and the image it runs on. */
export interface DATCase extends TinyModelCase {
  split: [number, number];
  /** The training size the stored masks are for (64 unless layers.0.blocks.2 holds them). */
  imgSize: number;
  expansion: number;
  upsampler: 'pixelshuffle' | 'pixelshuffledirect';
  resi: '1conv' | '3conv';
  qkvBias: boolean;
}

export const DAT_CASES: DATCase[] = [
  { name: 'dat_x2', embed: 96, depths: [4], heads: [4], split: [2, 4], imgSize: 16, expansion: 2, upsampler: 'pixelshuffle', scale: 2, resi: '1conv', qkvBias: true, lastGain: 0.5, width: 19, height: 17 },
  { name: 'dat_psd_x2', embed: 64, depths: [1, 2], heads: [2, 4], split: [2, 4], imgSize: 64, expansion: 2, upsampler: 'pixelshuffledirect', scale: 2, resi: '3conv', qkvBias: false, lastGain: 0.5, width: 18, height: 16 },
];

export function datSpecs(c: DATCase): Spec[] {
  const E = c.embed;
  const [s0, s1] = c.split;
  const N = s0 * s1;
  const hidden = E * c.expansion;
  const out: Spec[] = [];
  const { f, conv, vec, linear, resi: resiOf, pixelShuffle } = specWriter(out);
  const bn = (k: string, n: number) => {
    vec(k, n);
    f(`${k}.running_mean`, [n], (i) => 0.1 * Math.sin(i + n));
    f(`${k}.running_var`, [n], (i) => 1 + 0.5 * Math.sin(2 * i + n));
    out.push({ name: `${k}.num_batches_tracked`, shape: [], dtype: 'I64', values: () => 0 });
  };
  const resi = (k: string) => resiOf(k, c.resi, E);
  const gates = (a: string) => {
    conv(`${a}.dwconv.0`, E, 1);
    bn(`${a}.dwconv.1`, E);
    conv(`${a}.channel_interaction.1`, Math.floor(E / 8), E, 1);
    bn(`${a}.channel_interaction.2`, Math.floor(E / 8));
    conv(`${a}.channel_interaction.4`, E, Math.floor(E / 8), 1);
    conv(`${a}.spatial_interaction.0`, Math.floor(E / 16), E, 1);
    bn(`${a}.spatial_interaction.1`, Math.floor(E / 16));
    conv(`${a}.spatial_interaction.3`, 1, Math.floor(E / 16), 1);
  };
  const pd = Math.floor(Math.floor(E / 2 / 4) / 4);
  conv('conv_first', E, 3);
  vec('before_RG.1', E);
  c.depths.forEach((depth, i) => {
    for (let j = 0; j < depth; j++) {
      const b = `layers.${i}.blocks.${j}`;
      vec(`${b}.norm1`, E);
      const a = `${b}.attn`;
      if (j % 2 === 1) f(`${a}.temperature`, [c.heads[i]!, 1, 1], (k) => 1 + 0.3 * k);
      linear(`${a}.qkv`, 3 * E, E, c.qkvBias);
      linear(`${a}.proj`, E, E);
      if (j % 2 === 0) {
        const shifted = (i % 2 === 0 && j > 0 && (j - 2) % 4 === 0) || (i % 2 !== 0 && j % 4 === 0);
        if (shifted) {
          const n = (c.imgSize / s0) * (c.imgSize / s1);
          // Adaptive_Spatial_Attention.calculate_mask, orientation 0 (split[0]×split[1]) and 1 (transposed).
          const m0 = shiftedWindowMask(c.imgSize, s0, s1);
          const m1 = shiftedWindowMask(c.imgSize, s1, s0);
          f(`${a}.attn_mask_0`, [n, N, N], (k) => m0[k]!);
          f(`${a}.attn_mask_1`, [n, N, N], (k) => m1[k]!);
        }
        for (const t of [0, 1] as const) {
          const [h, w] = t === 0 ? [s0, s1] : [s1, s0];
          const s = `${a}.attns.${t}`;
          const offs: number[] = [];
          for (let dy = 1 - h; dy < h; dy++) for (let dx = 1 - w; dx < w; dx++) offs.push(dy, dx);
          f(`${s}.rpe_biases`, [(2 * h - 1) * (2 * w - 1), 2], (k) => offs[k]!);
          const idx = rectIndex(h, w);
          out.push({ name: `${s}.relative_position_index`, shape: [N, N], dtype: 'I64', values: (k) => idx[k]! });
          linear(`${s}.pos.pos_proj`, pd, 2);
          vec(`${s}.pos.pos1.0`, pd);
          linear(`${s}.pos.pos1.2`, pd, pd);
          vec(`${s}.pos.pos2.0`, pd);
          linear(`${s}.pos.pos2.2`, pd, pd);
          vec(`${s}.pos.pos3.0`, pd);
          linear(`${s}.pos.pos3.2`, c.heads[i]! / 2, pd);
        }
      }
      gates(a);
      vec(`${b}.norm2`, E);
      linear(`${b}.ffn.fc1`, hidden, E);
      vec(`${b}.ffn.sg.norm`, hidden / 2);
      conv(`${b}.ffn.sg.conv`, hidden / 2, 1);
      linear(`${b}.ffn.fc2`, E, hidden / 2);
    }
    resi(`layers.${i}.conv`);
  });
  vec('norm', E);
  resi('conv_after_body');
  if (c.upsampler === 'pixelshuffle') pixelShuffle(E, 64, c.scale);
  else conv('upsample.0', c.scale * c.scale * 3, E);
  if (c.lastGain !== undefined) out.at(-2)!.gain = c.lastGain;
  return out;
}

export const writeDAT = caseWriter(datSpecs);

/** A tiny DRCT (spandrel's DRCT state dict: groups of five Swin blocks densely connected through 1×1 adjust convs) and the image it runs on. */
export interface DRCTCase extends TinyModelCase {
  window: number;
  /** The dense connections' growth channels. */
  gc: number;
  /** fc1's width over the width of blocks 1–3 (blocks 4 and 5: 1). */
  mlpRatio: number;
  /** The training size the attention masks are stored for (the window: none stored, no block shifted). */
  imgSize: number;
  resi: '1conv' | 'identity';
  qkvBias: boolean;
  patchNorm: boolean;
}

export const DRCT_CASES: DRCTCase[] = [
  // Group 0's blocks have 4, 2, 4, 2, 4 heads (heads − (E + k·gc) mod heads); swin2 and swin4 on shifted windows.
  { name: 'drct_x2', embed: 12, depths: [5, 5], heads: [4, 3], window: 4, gc: 6, mlpRatio: 2, imgSize: 8, scale: 2, resi: '1conv', qkvBias: true, patchNorm: true, lastGain: 0.4, width: 21, height: 18 },
  // Window 8 = training size: no block shifted; fc1 widths int(C · 1.5); padded to 32×16.
  { name: 'drct_x3_identity', embed: 8, depths: [5], heads: [2], window: 8, gc: 4, mlpRatio: 1.5, imgSize: 8, scale: 3, resi: 'identity', qkvBias: false, patchNorm: false, lastGain: 0.3, width: 19, height: 13 },
];

export function drctSpecs(c: DRCTCase): Spec[] {
  const E = c.embed;
  const w = c.window;
  const out: Spec[] = [];
  const { f, conv, vec, linear, pixelShuffle } = specWriter(out);
  const index = rectIndex(w, w);
  const mask = shiftedWindowMask(c.imgSize, w, w);
  conv('conv_first', E, 3);
  if (c.patchNorm) vec('patch_embed.norm', E);
  c.heads.forEach((h, i) => {
    for (let k = 0; k < 5; k++) {
      const b = `layers.${i}.swin${k + 1}`;
      const C = E + k * c.gc;
      const hidden = k >= 3 ? C : Math.trunc(C * c.mlpRatio);
      if (k % 2 === 1 && c.imgSize > w) out.push({ name: `${b}.attn_mask`, shape: [(c.imgSize / w) ** 2, w * w, w * w], dtype: 'F32', values: (n) => mask[n]! });
      vec(`${b}.norm1`, C);
      f(`${b}.attn.relative_position_bias_table`, [(2 * w - 1) ** 2, k === 0 ? h : h - (C % h)]);
      out.push({ name: `${b}.attn.relative_position_index`, shape: [w * w, w * w], dtype: 'I64', values: (n) => index[n]! });
      linear(`${b}.attn.qkv`, 3 * C, C, c.qkvBias);
      linear(`${b}.attn.proj`, C, C);
      vec(`${b}.norm2`, C);
      linear(`${b}.mlp.fc1`, hidden, C);
      linear(`${b}.mlp.fc2`, C, hidden);
      conv(`layers.${i}.adjust${k + 1}`, k === 4 ? E : c.gc, C, 1);
    }
  });
  vec('norm', E);
  if (c.resi === '1conv') conv('conv_after_body', E, E);
  pixelShuffle(E, 64, c.scale);
  if (c.lastGain !== undefined) out.at(-2)!.gain = c.lastGain;
  return out;
}

export const writeDRCT = caseWriter(drctSpecs);
