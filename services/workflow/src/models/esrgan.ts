/**
 * ESRGAN-class upscale models (the RRDBNet that the reference loads through
 * spandrel from models/upscale_models): detected from the file's keys in
 * either layout, the original ESRGAN one (`model.0`, `model.1.sub.N.RDB1…`)
 * or BasicSR/Real-ESRGAN's (`conv_first`, `body.N.rdb1…`), written as an
 * ONNX graph whose weights are read from the file in place. The forward pass
 * is the published architecture: a conv, residual-in-residual dense blocks
 * (five 3×3 convs with dense concatenation, LeakyReLU 0.2, residuals scaled
 * by 0.2), a trunk conv added to the first features, nearest ×2 upsampling
 * with a conv and LeakyReLU per factor of two, an HR conv and the last conv.
 * Real-ESRGAN's ×2 and ×1 variants take the image pixel-unshuffled by 2 or
 * 4 (reflect-padded to a multiple first, the output cropped back), as
 * spandrel runs them; and its compact model (SRVGGNetCompact: convs with
 * PReLU, a pixel shuffle, plus the input enlarged by nearest neighbour).
 */
import { roundHalfEven } from './conditioning.ts';
import { OnnxGraph } from './graph-builder.ts';
import { DataType } from './onnx-proto.ts';
import { PyDict } from './pickle.ts';
import { ModelFileError, SafetensorsFile } from './safetensors.ts';
import { TorchFile } from './torch-zip.ts';
import { createSession, ortTensor, WEIGHTS_LOCATION, type RuntimeOptions, type Session } from './session.ts';
import { buildDATGraph, datHasShifted, datPadded, datRegions, describeDAT, detectDAT, type DATConfig } from './dat.ts';
import { buildDRCTGraph, describeDRCT, detectDRCT, DRCT_MULTIPLE, drctShifted, type DRCTConfig } from './drct.ts';
import { buildHATGraph, describeHAT, detectHAT, overlapWindowIndex, type HATConfig } from './hat.ts';
import { buildSwin2SRGraph, describeSwin2SR, detectSwin2SR, swin2srShifted, type Swin2SRConfig } from './swin2sr.ts';
import { buildSwinIRGraph, canonicalUpscaleKeys, describeSwinIR, detectSwinIR, hasShiftedBlocks, shiftRegions, type SwinIRConfig } from './swinir.ts';

export interface EsrganConfig {
  /** Module names of each weight in the file's own layout. */
  keys: { first: string; rdb(block: number, rdb: number, conv: number): string; trunk: string; ups: string[]; hr: string; last: string };
  inChannels: number;
  outChannels: number;
  features: number;
  blocks: number;
  growth: number;
  /** The network's own factor (2 per upsampling conv). */
  netScale: number;
  /** Pixel-unshuffle of the input (1: none; 2 and 4 for Real-ESRGAN ×2 and ×1). */
  shuffle: number;
  /** What the image grows by: netScale / shuffle. */
  scale: number;
}

/** SRVGGNetCompact: body.0 conv, then PReLU and conv pairs, the last conv giving C·s² channels. */
export interface CompactConfig {
  kind: 'compact';
  convs: string[];
  prelus: string[];
  inChannels: number;
  outChannels: number;
  features: number;
  scale: number;
  shuffle: 1;
}

export type UpscaleConfig = (EsrganConfig & { kind: 'rrdb' }) | CompactConfig | SwinIRConfig | Swin2SRConfig | HATConfig | DATConfig | DRCTConfig;

function fail(file: SafetensorsFile, problem: string): never {
  throw new ModelFileError(file.path, problem);
}

/** The file's RRDBNet, or a ModelFileError saying what it is not. */
export function detectEsrgan(file: SafetensorsFile): EsrganConfig {
  const shape = (k: string) => file.info(`${k}.weight`).shape;
  const conv3 = (k: string) => file.has(`${k}.weight`) && shape(k).length === 4;
  let keys: EsrganConfig['keys'];
  if (conv3('conv_first') && conv3('body.0.rdb1.conv1')) {
    const ups: string[] = [];
    for (let i = 1; conv3(`conv_up${i}`); i++) ups.push(`conv_up${i}`);
    keys = { first: 'conv_first', rdb: (b, r, c) => `body.${b}.rdb${r}.conv${c}`, trunk: file.has('conv_body.weight') ? 'conv_body' : 'trunk_conv', ups, hr: 'conv_hr', last: 'conv_last' };
  } else if (conv3('model.0') && conv3('model.1.sub.0.RDB1.conv1.0')) {
    // model.1.sub holds the blocks then the trunk conv; after it, an upsampling step is [Upsample, conv, LeakyReLU], then HR conv, LeakyReLU, last conv.
    const convs = [...file.tensors.keys()]
      .map((k) => /^model\.(\d+)\.weight$/.exec(k)?.[1])
      .filter((i): i is string => i !== undefined && Number(i) >= 2)
      .map(Number)
      .sort((a, b) => a - b)
      .map((i) => `model.${i}`);
    if (convs.length < 2) fail(file, 'an ESRGAN (old layout) without its HR and last convs');
    let trunk = -1;
    for (let i = 0; file.has(`model.1.sub.${i}.RDB1.conv1.0.weight`); i++) trunk = i + 1;
    keys = { first: 'model.0', rdb: (b, r, c) => `model.1.sub.${b}.RDB${r}.conv${c}.0`, trunk: `model.1.sub.${trunk}`, ups: convs.slice(0, -2), hr: convs.at(-2)!, last: convs.at(-1)! };
  } else {
    return fail(file, 'not an upscale model this service can run: ESRGAN/RRDBNet weights (conv_first + body.N.rdb1… or model.0 + model.1.sub.N.RDB1…) are not there');
  }
  let blocks = 0;
  while (file.has(`${keys.rdb(blocks, 1, 1)}.weight`)) blocks++;
  const [features, inChannels] = shape(keys.first) as [number, number];
  const growth = shape(keys.rdb(0, 1, 1))[0]!;
  const outChannels = shape(keys.last)[0]!;
  // spandrel: an input of 4× or 16× the output's channels is a pixel-unshuffled Real-ESRGAN ×2 or ×1.
  const shuffle = inChannels === outChannels * 4 ? 2 : inChannels === outChannels * 16 ? 4 : 1;
  if (shuffle === 1 && inChannels !== outChannels) fail(file, `its first conv takes ${inChannels} channels and its last gives ${outChannels}: not an RRDBNet this service can run`);
  if (![1, 3, 4].includes(outChannels)) fail(file, `it gives ${outChannels} channels (1, 3 or 4 are images)`);
  if (!conv3(keys.trunk) || !conv3(keys.hr) || !conv3(keys.last)) fail(file, 'an RRDBNet without its trunk, HR or last conv');
  if (keys.ups.length === 0 || keys.ups.length > 4) fail(file, `an RRDBNet with ${keys.ups.length} upsampling convs (1 to 4 are read)`);
  // Every conv's shape must fit the dense wiring; a hostile header must not reach ONNX Runtime with shapes that do not add up.
  for (let b = 0; b < blocks; b++)
    for (let r = 1; r <= 3; r++)
      for (let c = 1; c <= 5; c++) {
        const s = shape(keys.rdb(b, r, c));
        const want = [c === 5 ? features : growth, features + (c - 1) * growth, 3, 3];
        if (s.join() !== want.join()) fail(file, `${keys.rdb(b, r, c)}.weight has shape [${s.join(', ')}], expected [${want.join(', ')}]`);
      }
  for (const k of [keys.trunk, ...keys.ups, keys.hr]) {
    const s = shape(k);
    if (s.join() !== [features, features, 3, 3].join()) fail(file, `${k}.weight has shape [${s.join(', ')}], expected [${features}, ${features}, 3, 3]`);
  }
  if (shape(keys.last).slice(1).join() !== [features, 3, 3].join()) fail(file, `${keys.last}.weight does not take ${features} channels`);
  const netScale = 2 ** keys.ups.length;
  if (netScale % shuffle !== 0) fail(file, `a pixel-unshuffle by ${shuffle} with a ×${netScale} network`);
  return { keys, inChannels, outChannels, features, blocks, growth, netScale, shuffle, scale: netScale / shuffle };
}

/** SRVGGNetCompact's layout and shapes (spandrel's Compact), or null when the file is not one. */
export function detectCompact(file: SafetensorsFile): CompactConfig | null {
  if (!file.has('body.0.weight') || !file.has('body.1.weight') || file.has('conv_first.weight') || file.has('body.0.rdb1.conv1.weight')) return null;
  let highest = -1;
  for (const k of file.tensors.keys()) {
    const m = /^body\.(\d+)\./.exec(k);
    if (m) highest = Math.max(highest, Number(m[1]));
  }
  const shape = (k: string) => (file.has(k) ? file.info(k).shape : undefined);
  const first = shape('body.0.weight');
  if (!first || first.length !== 4) fail(file, 'body.0.weight is not a conv: not a compact upscale model');
  const [features, inChannels] = first as [number, number];
  if (highest < 2 || highest % 2 !== 0) fail(file, `a compact model ends with body.${highest}, which is not its last conv`);
  const convs: string[] = [];
  const prelus: string[] = [];
  for (let i = 0; i <= highest; i++) {
    if (i % 2 === 1) {
      const s = shape(`body.${i}.weight`);
      if (!s || s.join() !== String(features)) fail(file, `body.${i}.weight must be ${features} PReLU slopes`);
      prelus.push(`body.${i}`);
      continue;
    }
    const s = shape(`body.${i}.weight`);
    const bias = shape(`body.${i}.bias`);
    const want = i === highest ? undefined : [features, i === 0 ? inChannels : features, 3, 3];
    if (!s || s.length !== 4 || s[2] !== 3 || s[3] !== 3 || (want && s.join() !== want.join()) || (i === highest && s[1] !== features)) fail(file, `body.${i}.weight has shape [${s?.join(', ') ?? ''}], not a 3×3 conv of this compact model`);
    if (!bias || bias.join() !== String(s![0])) fail(file, `body.${i}.bias does not match body.${i}.weight`);
    convs.push(`body.${i}`);
  }
  // spandrel's get_scale_and_output_channels: the last conv gives out·s² channels, out tried as the input's, 3, 4, 1.
  const lastOut = shape(`body.${highest}.weight`)![0]!;
  for (const c of [inChannels, 3, 4, 1]) {
    const r = lastOut / c;
    if (Number.isInteger(r) && Number.isInteger(Math.sqrt(r))) {
      const scale = Math.sqrt(r);
      if (scale > 16) fail(file, `a ×${scale} compact model (at most ×16 is run)`);
      return { kind: 'compact', convs, prelus, inChannels, outChannels: c, features, scale, shuffle: 1 };
    }
  }
  return fail(file, `its last conv gives ${lastOut} channels, not channels × scale²`);
}

/**
 * The upscale model in the file (keys canonical, canonicalUpscaleKeys): a compact Real-ESRGAN, a HAT, a Swin2SR, a SwinIR, a DAT,
 * a DRCT or an RRDBNet (spandrel's order). `rpeLast`: the last row of DAT's first rpe_biases, which spandrel reads values of.
 */
export function detectUpscaleModel(file: SafetensorsFile, rpeLast: () => number[] = () => []): UpscaleConfig {
  return detectCompact(file) ?? detectHAT(file) ?? detectSwin2SR(file) ?? detectSwinIR(file) ?? detectDAT(file, rpeLast) ?? detectDRCT(file) ?? { kind: 'rrdb', ...detectEsrgan(file) };
}

function lrelu(g: OnnxGraph, x: string): string {
  return g.op('LeakyRelu', [x], { alpha: { float: 0.2 } });
}

function rdb(g: OnnxGraph, x: string, cfg: EsrganConfig, b: number, r: number): string {
  const feats = [x];
  for (let c = 1; c <= 4; c++) feats.push(lrelu(g, g.conv(feats.length === 1 ? x : g.op('Concat', [...feats], { axis: 1 }), cfg.keys.rdb(b, r, c))));
  const x5 = g.conv(g.op('Concat', [...feats], { axis: 1 }), cfg.keys.rdb(b, r, 5));
  return g.add(g.scale(x5, 0.2), x);
}

/**
 * x·s as a depthwise 1×1 Conv rather than a Mul by a constant: ONNX Runtime's NCHWc layout pass (graph optimisation
 * level `all`) takes a Conv, and the Add after it, into the blocked layout, but not a Mul by a scalar. With the Mul,
 * each block's output, the next dense block's first Concat input, stayed in NCHW, so every Concat ran in NCHW and
 * every conv of the network reordered its input into the blocked layout and its output back (about 12 % of the time).
 */
function scaleChannels(g: OnnxGraph, x: string, channels: number, s: number): string {
  return g.op('Conv', [x, g.f32(new Array(channels).fill(s), [channels, 1, 1, 1])], { kernel_shape: [1, 1], group: channels });
}

/** image [B, C, H, W] in [0, 1] → [B, C_out, sH, sW], unclamped. */
export function buildEsrganGraph(g: OnnxGraph, cfg: EsrganConfig): Uint8Array {
  const image = g.input('image', DataType.FLOAT, ['batch', cfg.inChannels, 'height', 'width']);
  const feat = g.conv(image, cfg.keys.first);
  let h = feat;
  for (let b = 0; b < cfg.blocks; b++) {
    let t = h;
    for (let r = 1; r <= 3; r++) t = rdb(g, t, cfg, b, r);
    h = g.add(scaleChannels(g, t, cfg.features, 0.2), h);
  }
  h = g.add(feat, g.conv(h, cfg.keys.trunk));
  for (const up of cfg.keys.ups) h = lrelu(g, g.conv(g.upsample2x(h), up));
  h = g.conv(lrelu(g, g.conv(h, cfg.keys.hr)), cfg.keys.last);
  g.output(h, 'upscaled', ['batch', cfg.outChannels, 'out_height', 'out_width']);
  return g.encode('esrgan');
}

/** image [B, C, H, W] → SRVGGNetCompact's output [B, C_out, sH, sW]. */
export function buildCompactGraph(g: OnnxGraph, cfg: CompactConfig): Uint8Array {
  const image = g.input('image', DataType.FLOAT, ['batch', cfg.inChannels, 'height', 'width']);
  let h = image;
  cfg.convs.forEach((conv, i) => {
    h = g.conv(h, conv);
    const slope = cfg.prelus[i];
    if (slope) h = g.op('PRelu', [h, g.wReshaped(`${slope}.weight`, [cfg.features, 1, 1])]);
  });
  const s = cfg.scale;
  if (s > 1) {
    h = g.op('DepthToSpace', [h], { blocksize: s, mode: 'CRD' });
    h = g.add(h, g.op('Resize', [image, '', g.f32([1, 1, s, s], [4])], { mode: 'nearest', coordinate_transformation_mode: 'asymmetric', nearest_mode: 'floor' }));
  } else h = g.add(h, image);
  g.output(h, 'upscaled', ['batch', cfg.outChannels, 'out_height', 'out_width']);
  return g.encode('compact');
}

/**
 * spandrel's pad_tensor: the bottom and right padded by `ph` and `pw`,
 * reflecting as far as the image allows (size − 1) and replicating the rest.
 */
export function padImage(x: Float32Array, dims: readonly number[], ph: number, pw: number): { data: Float32Array; dims: number[] } {
  const [b, c, h, w] = dims as [number, number, number, number];
  const rh = Math.min(ph, h - 1);
  const rw = Math.min(pw, w - 1);
  // Padded index → source index: itself, its reflection, or (replicated) the last reflected one.
  const src = (i: number, n: number, r: number) => (i < n ? i : i < n + r ? 2 * (n - 1) - i : n - 1 - r);
  const H = h + ph;
  const W = w + pw;
  const cols = Int32Array.from({ length: W }, (_, x) => src(x, w, rw));
  const out = new Float32Array(b * c * H * W);
  for (let p = 0; p < b * c; p++)
    for (let y = 0; y < H; y++) {
      const row = (p * h + src(y, h, rh)) * w;
      const at = (p * H + y) * W;
      for (let xx = 0; xx < W; xx++) out[at + xx] = x[row + cols[xx]!]!;
    }
  return { data: out, dims: [b, c, H, W] };
}

/** torch.pixel_unshuffle by `f` (sizes divisible by it): [B, C, H, W] → [B, C·f², H/f, W/f]. */
export function pixelUnshuffle(x: Float32Array, dims: readonly number[], f: number): { data: Float32Array; dims: number[] } {
  const [b, c, h, w] = dims as [number, number, number, number];
  const oh = h / f;
  const ow = w / f;
  const out = new Float32Array(x.length);
  for (let n = 0; n < b; n++)
    for (let ch = 0; ch < c; ch++)
      for (let i = 0; i < f; i++)
        for (let j = 0; j < f; j++) {
          const base = (((n * c + ch) * f + i) * f + j) * oh * ow;
          for (let y = 0; y < oh; y++) {
            const row = ((n * c + ch) * h + y * f + i) * w;
            for (let xx = 0; xx < ow; xx++) out[base + y * ow + xx] = x[row + xx * f + j]!;
          }
        }
  return { data: out, dims: [b, c * f * f, oh, ow] };
}

/** spandrel's canonicalize_state_dict: the keys under which a checkpoint may hold the real state dict, in its order. */
const UNWRAP_KEYS = ['model_state_dict', 'state_dict', 'params_ema', 'params-ema', 'params', 'model', 'net'];

/**
 * The file's state dict as spandrel sees it: after load_torch_file's choice (safetensors.ts), a PyTorch file's
 * dict nested under one of UNWRAP_KEYS (BasicSR saves `params` and `params_ema` side by side), or under its only key.
 */
async function openStateDict(path: string): Promise<SafetensorsFile> {
  const file = await SafetensorsFile.open(path);
  if (file.format !== 'torch') return file;
  const torch = await TorchFile.open(path);
  let sd = torch.stateDict();
  const key = UNWRAP_KEYS.find((k) => sd.map.get(k) instanceof PyDict);
  if (key) sd = sd.map.get(key) as PyDict;
  if (sd.map.size === 1) {
    const only = sd.map.values().next().value;
    if (only instanceof PyDict) sd = only;
  }
  return SafetensorsFile.ofTorch(torch, torch.tensorsOf(sd));
}

/** A loaded upscale model (UPSCALE_MODEL): the file, its architecture and, once used, its session. */
export class UpscaleModel {
  private session: Promise<Session> | undefined;

  private constructor(
    readonly file: SafetensorsFile,
    readonly config: UpscaleConfig,
  ) {}

  static async open(path: string): Promise<UpscaleModel> {
    const file = canonicalUpscaleKeys(await openStateDict(path));
    const rpe = 'layers.0.blocks.0.attn.attns.0.rpe_biases';
    const rpeValues = file.has(rpe) ? await file.readFloat32(rpe) : new Float32Array(0);
    return new UpscaleModel(file, detectUpscaleModel(file, () => [...rpeValues.subarray(Math.max(0, rpeValues.length - 2))]));
  }

  get scale(): number {
    return this.config.scale;
  }

  describe(): string {
    const cfg = this.config;
    if (cfg.kind === 'swinir') return `<UPSCALE_MODEL SwinIR ×${this.scale} (${describeSwinIR(cfg)})>`;
    if (cfg.kind === 'swin2sr') return `<UPSCALE_MODEL Swin2SR ×${this.scale} (${describeSwin2SR(cfg)})>`;
    if (cfg.kind === 'hat') return `<UPSCALE_MODEL HAT ×${this.scale} (${describeHAT(cfg)})>`;
    if (cfg.kind === 'dat') return `<UPSCALE_MODEL DAT ×${this.scale} (${describeDAT(cfg)})>`;
    if (cfg.kind === 'drct') return `<UPSCALE_MODEL DRCT ×${this.scale} (${describeDRCT(cfg)})>`;
    return `<UPSCALE_MODEL ${cfg.kind === 'compact' ? 'Compact' : 'ESRGAN'} ×${this.scale}>`;
  }

  toJSON(): string {
    return this.describe();
  }

  /** One tile through the network: [1, C, h, w] → [1, C_out, s·h, s·w]. */
  async run(tile: Float32Array, dims: readonly number[], opts: RuntimeOptions = {}): Promise<{ data: Float32Array; dims: number[] }> {
    const cfg = this.config;
    const graph = (g: OnnxGraph) =>
      cfg.kind === 'compact' ? buildCompactGraph(g, cfg) : cfg.kind === 'swinir' ? buildSwinIRGraph(g, cfg) : cfg.kind === 'swin2sr' ? buildSwin2SRGraph(g, cfg) : cfg.kind === 'hat' ? buildHATGraph(g, cfg) : cfg.kind === 'dat' ? buildDATGraph(g, cfg) : cfg.kind === 'drct' ? buildDRCTGraph(g, cfg) : buildEsrganGraph(g, cfg);
    this.session ??= createSession(graph(new OnnxGraph(this.file, WEIGHTS_LOCATION, '')), this.file, opts).catch((err: unknown) => {
      this.session = undefined;
      throw new ModelFileError(this.file.path, `its weights do not form a valid model (${(err as Error).message.split('\n')[0]})`);
    });
    const s = await this.session;
    // spandrel's ImageModelDescriptor: the tile padded to the architecture's size requirements (ESRGAN: at least 2
    // pixels, a multiple of 4 when pixel-unshuffled; SwinIR, Swin2SR, HAT and DAT: at least 16; DRCT: a multiple of 16), the output clamped to [0, 1] and cropped back.
    const [b, , h, w] = dims as [number, number, number, number];
    const [minimum, multiple] = cfg.kind === 'rrdb' ? [cfg.shuffle > 1 ? 4 : 2, cfg.shuffle > 1 ? 4 : 1] : cfg.kind === 'swinir' || cfg.kind === 'swin2sr' || cfg.kind === 'hat' || cfg.kind === 'dat' ? [16, 1] : cfg.kind === 'drct' ? [0, DRCT_MULTIPLE] : [0, 1];
    const need = (n: number) => Math.ceil(Math.max(minimum, n) / multiple) * multiple;
    let input = { data: tile, dims: [...dims] };
    if (need(h) !== h || need(w) !== w) input = padImage(tile, dims, need(h) - h, need(w) - w);
    if (cfg.shuffle > 1) input = pixelUnshuffle(input.data, input.dims, cfg.shuffle);
    const feeds: Record<string, ReturnType<typeof ortTensor>> = {};
    // Swin2SR's pixelshuffle_aux: its bicubic branch and output are sized from the image before the window padding.
    if (cfg.kind === 'swin2sr' && cfg.upsampler === 'pixelshuffle_aux') feeds.out_size = ortTensor('int64', BigInt64Array.from([input.dims[2]!, input.dims[3]!].map((n) => BigInt(n * cfg.scale))), [2]);
    if (cfg.kind === 'swinir' || cfg.kind === 'swin2sr' || cfg.kind === 'hat') {
      // check_image_size: reflect-padded again to a multiple of the window (its output is cropped with the rest).
      const [ph, pw] = [input.dims[2]!, input.dims[3]!].map((n) => (cfg.window - (n % cfg.window)) % cfg.window) as [number, number];
      if (ph || pw) input = padImage(input.data, input.dims, ph, pw);
      const [H, W] = [input.dims[2]!, input.dims[3]!];
      if (cfg.kind === 'swin2sr' ? swin2srShifted(cfg) : hasShiftedBlocks(cfg)) feeds.regions = ortTensor('float32', shiftRegions(cfg, H, W), [(H * W) / cfg.window ** 2, cfg.window ** 2]);
      if (cfg.kind === 'hat') {
        const index = overlapWindowIndex(cfg, H, W);
        feeds.overlap = ortTensor('int64', index, [index.length]);
      }
    }
    if (cfg.kind === 'drct' && cfg.upsampler !== '') {
      // DRCT does not pad to its window: spandrel's window partition fails on a padded tile the window does not divide.
      const [H, W] = [input.dims[2]!, input.dims[3]!];
      if (H % cfg.window !== 0 || W % cfg.window !== 0) throw new ModelFileError(this.file.path, `a DRCT with a ${cfg.window}-pixel window cannot run a ${W}×${H} tile (padded to a multiple of ${DRCT_MULTIPLE}, not of its window)`);
      if (drctShifted(cfg)) feeds.regions = ortTensor('float32', shiftRegions(cfg, H, W), [(H * W) / cfg.window ** 2, cfg.window ** 2]);
    }
    if (cfg.kind === 'dat' && datHasShifted(cfg)) {
      // DAT zero-pads inside its spatial attention; the masks are for that padded size.
      const [H, W] = [datPadded(cfg, input.dims[2]!), datPadded(cfg, input.dims[3]!)];
      const n = (H * W) / (cfg.split[0] * cfg.split[1]);
      feeds.regions0 = ortTensor('float32', datRegions(cfg, H, W, 0), [n, cfg.split[0] * cfg.split[1]]);
      feeds.regions1 = ortTensor('float32', datRegions(cfg, H, W, 1), [n, cfg.split[0] * cfg.split[1]]);
    }
    feeds.image = ortTensor('float32', input.data, input.dims);
    const out = (await s.run(feeds)).upscaled!;
    const [, oc, OH, OW] = out.dims as [number, number, number, number];
    const [th, tw] = [h * cfg.scale, w * cfg.scale];
    const src = out.data as Float32Array;
    const data = th === OH && tw === OW ? src : new Float32Array(b * oc * th * tw);
    if (data !== src) for (let p = 0; p < b * oc; p++) for (let y = 0; y < th; y++) data.set(src.subarray((p * OH + y) * OW, (p * OH + y) * OW + tw), (p * th + y) * tw);
    for (let i = 0; i < data.length; i++) data[i] = data[i]! < 0 ? 0 : data[i]! > 1 ? 1 : data[i]!;
    return { data, dims: [b, oc, th, tw] };
  }

  async release(): Promise<void> {
    const s = this.session;
    this.session = undefined;
    await s?.then((x) => x.release()).catch(() => {});
  }
}

/**
 * comfy.utils.tiled_scale for 2-D images: a sample that fits one tile goes
 * through whole; otherwise tiles of `tile` pixels overlapping by `overlap`
 * are upscaled and blended with masks that ramp over the (scaled) overlap,
 * summed and divided by the summed masks. Planar [B, C, H, W] in and out.
 */
export async function tiledScale(
  samples: { data: Float32Array; dims: [number, number, number, number] },
  fn: (tile: Float32Array, dims: number[]) => Promise<{ data: Float32Array; dims: number[] }>,
  o: { tile: number; tileX?: number; tileY?: number; overlap: number; scale: number; outChannels: number; step?: () => void },
): Promise<{ data: Float32Array; dims: [number, number, number, number] }> {
  const [B, C, H, W] = samples.dims;
  const tileX = o.tileX ?? o.tile;
  const tileY = o.tileY ?? o.tile;
  // Python's round (halves to even): positions and sizes scaled by a fraction (a VAE encoder's 1/8) may fall on a half.
  const oh = roundHalfEven(H * o.scale);
  const ow = roundHalfEven(W * o.scale);
  const oc = o.outChannels;
  const output = new Float32Array(B * oc * oh * ow);
  const crop = (b: number, y0: number, x0: number, h: number, w: number): Float32Array => {
    const t = new Float32Array(C * h * w);
    for (let c = 0; c < C; c++) for (let y = 0; y < h; y++) t.set(samples.data.subarray(((b * C + c) * H + y0 + y) * W + x0, ((b * C + c) * H + y0 + y) * W + x0 + w), (c * h + y) * w);
    return t;
  };
  for (let b = 0; b < B; b++) {
    if (H <= tileY && W <= tileX) {
      const r = await fn(crop(b, 0, 0, H, W), [1, C, H, W]);
      output.set(r.data.subarray(0, oc * oh * ow), b * oc * oh * ow);
      o.step?.();
      continue;
    }
    const out = new Float32Array(oc * oh * ow);
    const div = new Float32Array(oh * ow);
    const positions = (size: number, tile: number) => {
      if (size <= tile) return [0];
      if (tile <= o.overlap) throw new Error(`a tile of ${tile} does not exceed the overlap of ${o.overlap}`);
      const p: number[] = [];
      for (let v = 0; v < size - o.overlap; v += tile - o.overlap) p.push(v);
      return p;
    };
    const feather = roundHalfEven(o.scale * o.overlap);
    const ramp = (n: number): Float32Array => {
      const m = new Float32Array(n).fill(1);
      if (feather >= n) return m;
      for (let t = 0; t < feather; t++) {
        const a = (t + 1) / feather;
        m[t]! *= a;
        m[n - 1 - t]! *= a;
      }
      return m;
    };
    for (const py of positions(H, tileY))
      for (const px of positions(W, tileX)) {
        const y0 = Math.max(0, Math.min(H - o.overlap, py));
        const x0 = Math.max(0, Math.min(W - o.overlap, px));
        const h = Math.min(tileY, H - y0);
        const w = Math.min(tileX, W - x0);
        const r = await fn(crop(b, y0, x0, h, w), [1, C, h, w]);
        const [, , th, tw] = r.dims as [number, number, number, number];
        const my = ramp(th);
        const mx = ramp(tw);
        const uy = roundHalfEven(y0 * o.scale);
        const ux = roundHalfEven(x0 * o.scale);
        for (let y = 0; y < th && uy + y < oh; y++)
          for (let x = 0; x < tw && ux + x < ow; x++) {
            // torch multiplies the mask one dimension at a time, in float32.
            const m = Math.fround(my[y]! * mx[x]!);
            const at = (uy + y) * ow + ux + x;
            div[at] = Math.fround(div[at]! + m);
            for (let c = 0; c < oc; c++) out[c * oh * ow + at] = Math.fround(out[c * oh * ow + at]! + Math.fround(r.data[(c * th + y) * tw + x]! * m));
          }
        o.step?.();
      }
    for (let c = 0; c < oc; c++) for (let i = 0; i < oh * ow; i++) output[(b * oc + c) * oh * ow + i] = Math.fround(out[c * oh * ow + i]! / div[i]!);
  }
  return { data: output, dims: [B, oc, oh, ow] };
}
