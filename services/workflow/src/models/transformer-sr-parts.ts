/**
 * What the transformer upscale architectures (SwinIR, HAT, DAT: spandrel's
 * loaders and modules) have in common, written once: reading
 * hyperparameters from the state dict's keys and shapes, the strict load
 * (torch's load_state_dict(strict=True)) against the state dict the
 * detected model would have, recording that state dict's shapes, and the
 * graph blocks all three build the same way (the mean shift around the
 * network, the residual convs, the pixel-shuffle upsamplers, torch.roll and
 * the shifted windows' mask).
 */
import { OnnxGraph } from './graph-builder.ts';
import { DataType } from './onnx-proto.ts';
import { ModelFileError, type SafetensorsFile } from './safetensors.ts';

/** The hyperparameters every one of the three has (in its config next to its own). */
export interface TransformerSRConfig {
  inChannels: number;
  /** What the network gives: its in_chans (spandrel builds conv_last with in_chans outputs). */
  outChannels: number;
  embedDim: number;
  /** Blocks per residual group. */
  depths: number[];
  /** Attention heads per residual group. */
  heads: number[];
  /** The network's factor (1 for SwinIR's '' models). */
  scale: number;
  /** No pixel-unshuffled input (ESRGAN's ×1 and ×2 have one). */
  shuffle: 1;
}

/** The RGB mean the three subtract before the network and add back after it. */
const RGB_MEAN = [0.4488, 0.4371, 0.404];
/** SwinIR's and DAT's fixed upsampler width (their constructors do not read it from the file). */
export const NUM_FEAT = 64;
const FLOAT_DTYPES = new Set(['F32', 'F16', 'BF16', 'F64']);
/** Slice's "to the end". */
const INT64_MAX = Number.MAX_SAFE_INTEGER;

export function fail(file: SafetensorsFile, problem: string): never {
  throw new ModelFileError(file.path, problem);
}

/** spandrel's get_seq_len: one more than the largest N of `${seq}.N.…` keys. */
export function seqLen(file: SafetensorsFile, seq: string): number {
  let n = 0;
  for (const k of file.tensors.keys()) {
    if (!k.startsWith(`${seq}.`)) continue;
    const index = k.slice(seq.length + 1).split('.')[0]!;
    if (!/^\d+$/.test(index)) fail(file, `${k}: ${JSON.stringify(index)} is not an index of ${seq}`);
    n = Math.max(n, Number(index) + 1);
  }
  return n;
}

/** Dimension i of tensor k's shape, or a ModelFileError when the tensor has no such dimension. */
export function dimReader(file: SafetensorsFile): (k: string, i: number) => number {
  return (k, i) => {
    const s = file.info(k).shape;
    if (s.length <= i) fail(file, `${k} has shape [${s.join(', ')}], which has no dimension ${i}`);
    return s[i]!;
  };
}

/** spandrel's get_pixelshuffle_params (HAT and DAT's order of reading): upsample.0, .2, … each multiplies by isqrt(out // in). */
export function pixelShuffleScale(file: SafetensorsFile, dim: (k: string, i: number) => number): number {
  let scale = 1;
  for (let i = 0; i < 10 && file.has(`upsample.${i}.weight`); i += 2) {
    const inC = dim(`upsample.${i}.weight`, 1);
    if (inC === 0) fail(file, `upsample.${i}.weight takes no channels`);
    scale *= Math.floor(Math.sqrt(Math.floor(dim(`upsample.${i}.weight`, 0) / inC)));
  }
  return scale;
}

/**
 * torch's strict load_state_dict into the model the config builds: every key of `want` there, none more, each shape
 * equal, and every tensor but the buffers (`isBuffer`: recomputed or not read) a float.
 * @param name the model as the missing and unexpected messages name it (`a HAT (…)`)
 * @param shapeName the model as the shape message names it
 */
export function checkStrictLoad(file: SafetensorsFile, want: Map<string, number[]>, name: string, shapeName: string, isBuffer: (k: string) => boolean): void {
  const missing = [...want.keys()].filter((k) => !file.has(k));
  if (missing.length > 0) fail(file, `${name} missing ${missing.length} tensor${missing.length > 1 ? 's' : ''}: ${missing.slice(0, 4).join(', ')}${missing.length > 4 ? ', …' : ''}`);
  const unexpected = [...file.tensors.keys()].filter((k) => !want.has(k));
  if (unexpected.length > 0) fail(file, `${name} with unexpected tensor${unexpected.length > 1 ? 's' : ''}: ${unexpected.slice(0, 4).join(', ')}${unexpected.length > 4 ? ', …' : ''}`);
  for (const [k, s] of want) {
    const info = file.info(k);
    if (info.shape.join() !== s.join()) fail(file, `${k} has shape [${info.shape.join(', ')}], expected [${s.join(', ')}] for ${shapeName}`);
    if (!isBuffer(k) && !FLOAT_DTYPES.has(info.dtype)) fail(file, `${k} has dtype ${info.dtype}, expected a float type`);
  }
}

/** A state dict's shapes as they are recorded, in the module's order (the order the missing-tensor message lists them in). */
export function stateShapeRecorder() {
  const m = new Map<string, number[]>();
  const conv = (k: string, o: number, i: number, kernel = 3) => {
    m.set(`${k}.weight`, [o, i, kernel, kernel]);
    m.set(`${k}.bias`, [o]);
  };
  /** A LayerNorm's (or any per-channel) weight and bias. */
  const vec = (k: string, n: number) => {
    m.set(`${k}.weight`, [n]);
    m.set(`${k}.bias`, [n]);
  };
  const linear = (k: string, o: number, i: number, bias = true) => {
    m.set(`${k}.weight`, [o, i]);
    if (bias) m.set(`${k}.bias`, [o]);
  };
  /** The residual conv of SwinIR and DAT: one 3×3 conv ('1conv'), or 3×3 to E/4, 1×1, 3×3 back ('3conv'). */
  const resi = (k: string, kind: '1conv' | '3conv', E: number) => {
    if (kind === '1conv') return conv(k, E, E);
    const q = Math.floor(E / 4);
    conv(`${k}.0`, q, E);
    conv(`${k}.2`, q, q, 1);
    conv(`${k}.4`, E, q);
  };
  /** The 'pixelshuffle' upsampler: conv_before_upsample, a conv per factor (one ×3, or ×2 each), conv_last. */
  const pixelShuffle = (E: number, numFeat: number, scale: number, outChannels: number) => {
    conv('conv_before_upsample.0', numFeat, E);
    if (scale === 3) conv('upsample.0', 9 * numFeat, numFeat);
    else for (let k = 0; 2 ** k < scale; k++) conv(`upsample.${2 * k}`, 4 * numFeat, numFeat);
    conv('conv_last', outChannels, numFeat);
  };
  return { m, conv, vec, linear, resi, pixelShuffle };
}

/** The graph's `image` input [B, C, H, W] and the mean the network works around (RGB_MEAN for 3 channels, else 0). */
export function imageAndMean(g: OnnxGraph, inChannels: number): { image: string; mean: string } {
  const image = g.input('image', DataType.FLOAT, ['batch', inChannels, 'height', 'width']);
  const mean = inChannels === 3 ? g.f32(RGB_MEAN, [1, 3, 1, 1]) : g.f32([0], [1, 1, 1, 1]);
  return { image, mean };
}

/** Layout changes, activations and convs the three networks share. */
export function convOps(g: OnnxGraph) {
  const lrelu = (t: string, alpha: number) => g.op('LeakyRelu', [t], { alpha: { float: alpha } });
  return {
    toNHWC: (t: string) => g.op('Transpose', [t], { perm: [0, 2, 3, 1] }),
    toNCHW: (t: string) => g.op('Transpose', [t], { perm: [0, 3, 1, 2] }),
    lrelu,
    /** The residual conv ('1conv', or '3conv' with LeakyReLU 0.2 between) on [B, E, H, W]. */
    resiConv: (t: string, key: string, resi: '1conv' | '3conv'): string =>
      resi === '1conv' ? g.conv(t, key) : g.conv(lrelu(g.conv(lrelu(g.conv(t, `${key}.0`), 0.2), `${key}.2`), 0.2), `${key}.4`),
    /** The 'pixelshuffle' upsampler: conv_before_upsample and nn.LeakyReLU() (the default slope, 0.01), conv + pixel shuffle per factor, conv_last. */
    pixelShuffle: (t: string, scale: number): string => {
      let y = lrelu(g.conv(t, 'conv_before_upsample.0'), 0.01);
      if (scale === 3) y = g.op('DepthToSpace', [g.conv(y, 'upsample.0')], { blocksize: 3, mode: 'CRD' });
      else for (let k = 0; 2 ** k < scale; k++) y = g.op('DepthToSpace', [g.conv(y, `upsample.${2 * k}`)], { blocksize: 2, mode: 'CRD' });
      return g.conv(y, 'conv_last');
    },
    /** The 'pixelshuffledirect' upsampler: one conv and pixel shuffle. */
    pixelShuffleDirect: (t: string, scale: number): string => {
      const y = g.conv(t, 'upsample.0');
      return scale > 1 ? g.op('DepthToSpace', [y], { blocksize: scale, mode: 'CRD' }) : y;
    },
  };
}

/** relative_position_index for wh×ww windows (SwinIR's and HAT's square ones, DAT's rectangles): [N, N] indices into the (2wh−1)(2ww−1) bias table. */
export function windowPositionIndex(wh: number, ww: number): number[] {
  const n = wh * ww;
  const out: number[] = [];
  for (let a = 0; a < n; a++)
    for (let b = 0; b < n; b++) out.push((Math.floor(a / ww) - Math.floor(b / ww) + wh - 1) * (2 * ww - 1) + (a % ww) - (b % ww) + ww - 1);
  return out;
}

/**
 * The region ids of an h×w image's wh×ww windows shifted by half a window, window by window ([nW, wh·ww], as
 * window_partition lays them out): calculate_mask before the pairwise comparison, which the graph makes (regionMask).
 */
export function shiftedWindowRegions(h: number, w: number, wh: number, ww: number): Float32Array {
  const [sh, sw] = [Math.floor(wh / 2), Math.floor(ww / 2)];
  const region = (i: number, n: number, win: number, shift: number) => (i < n - win ? 0 : i < n - shift ? 1 : 2);
  const out = new Float32Array(h * w);
  let at = 0;
  for (let wy = 0; wy < h / wh; wy++)
    for (let wx = 0; wx < w / ww; wx++)
      for (let y = 0; y < wh; y++) for (let x = 0; x < ww; x++) out[at++] = region(wy * wh + y, h, wh, sh) * 3 + region(wx * ww + x, w, ww, sw);
  return out;
}

/** torch.roll of [B, H, W, C] by sy along H and sx along W: the last s rows/columns move to the front (s < 0: the first |s| to the back); a 0 shift is skipped. */
export function rollTokens(g: OnnxGraph, t: string, sy: number, sx: number): string {
  let out = t;
  for (const [axis, s] of [[1, sy], [2, sx]] as const) {
    if (s === 0) continue;
    const a = g.op('Slice', [out, g.i64([-s]), g.i64([INT64_MAX]), g.i64([axis])]);
    const b = g.op('Slice', [out, g.i64([0]), g.i64([-s]), g.i64([axis])]);
    out = g.op('Concat', [a, b], { axis });
  }
  return out;
}

/**
 * calculate_mask from a region-id input ([windows, N]: each window's tokens' regions, computed outside the graph):
 * −100 between tokens of different regions, else 0; [windows, 1, N, N].
 */
export function regionMask(g: OnnxGraph, input: string, windows: string, N: number): string {
  const regions = g.input(input, DataType.FLOAT, [windows, N]);
  const diff = g.op('Sub', [g.op('Unsqueeze', [regions, g.i64([1])]), g.op('Unsqueeze', [regions, g.i64([2])])]);
  return g.op('Unsqueeze', [g.op('Where', [g.op('Equal', [diff, g.f32([0], [])]), g.f32([0], []), g.f32([-100], [])]), g.i64([1])]);
}
