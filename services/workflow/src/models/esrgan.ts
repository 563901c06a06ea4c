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
 * Real-ESRGAN's ×2 and ×1 variants (pixel-unshuffled input) are recognised
 * and refused for now.
 */
import { OnnxGraph } from './graph-builder.ts';
import { DataType } from './onnx-proto.ts';
import { ModelFileError, SafetensorsFile } from './safetensors.ts';
import { createSession, ortTensor, WEIGHTS_LOCATION, type RuntimeOptions, type Session } from './session.ts';

export interface EsrganConfig {
  /** Module names of each weight in the file's own layout. */
  keys: { first: string; rdb(block: number, rdb: number, conv: number): string; trunk: string; ups: string[]; hr: string; last: string };
  inChannels: number;
  outChannels: number;
  features: number;
  blocks: number;
  growth: number;
  scale: number;
}

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
  } else if (file.has('body.0.weight') && file.has('body.1.weight') && !file.has('conv_first.weight')) {
    return fail(file, 'a compact Real-ESRGAN (SRVGGNetCompact) model: not supported yet (ESRGAN/RRDBNet models are)');
  } else {
    return fail(file, 'not an upscale model this service can run: ESRGAN/RRDBNet weights (conv_first + body.N.rdb1… or model.0 + model.1.sub.N.RDB1…) are not there');
  }
  let blocks = 0;
  while (file.has(`${keys.rdb(blocks, 1, 1)}.weight`)) blocks++;
  const [features, inChannels] = shape(keys.first) as [number, number];
  const growth = shape(keys.rdb(0, 1, 1))[0]!;
  const outChannels = shape(keys.last)[0]!;
  if (inChannels !== 3 && inChannels !== 1) {
    fail(file, `its first conv takes ${inChannels} channels: a pixel-unshuffled Real-ESRGAN ×2/×1 model, not supported yet (×4 and ×8 RRDBNet models are)`);
  }
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
  return { keys, inChannels, outChannels, features, blocks, growth, scale: 2 ** keys.ups.length };
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

/** image [B, C, H, W] in [0, 1] → [B, C_out, sH, sW], unclamped. */
export function buildEsrganGraph(g: OnnxGraph, cfg: EsrganConfig): Uint8Array {
  const image = g.input('image', DataType.FLOAT, ['batch', cfg.inChannels, 'height', 'width']);
  const feat = g.conv(image, cfg.keys.first);
  let h = feat;
  for (let b = 0; b < cfg.blocks; b++) {
    let t = h;
    for (let r = 1; r <= 3; r++) t = rdb(g, t, cfg, b, r);
    h = g.add(g.scale(t, 0.2), h);
  }
  h = g.add(feat, g.conv(h, cfg.keys.trunk));
  for (const up of cfg.keys.ups) h = lrelu(g, g.conv(g.upsample2x(h), up));
  h = g.conv(lrelu(g, g.conv(h, cfg.keys.hr)), cfg.keys.last);
  g.output(h, 'upscaled', ['batch', cfg.outChannels, 'out_height', 'out_width']);
  return g.encode('esrgan');
}

/** A loaded upscale model (UPSCALE_MODEL): the file, its architecture and, once used, its session. */
export class UpscaleModel {
  private session: Promise<Session> | undefined;

  private constructor(
    readonly file: SafetensorsFile,
    readonly config: EsrganConfig,
  ) {}

  static async open(path: string): Promise<UpscaleModel> {
    if (/\.(ckpt|pt|pth|bin)$/i.test(path)) throw new ModelFileError(path, 'pickled model files (.ckpt, .pt, .pth, .bin) cannot be loaded safely here: convert it to .safetensors');
    const file = await SafetensorsFile.open(path);
    return new UpscaleModel(file, detectEsrgan(file));
  }

  get scale(): number {
    return this.config.scale;
  }

  describe(): string {
    return `<UPSCALE_MODEL ESRGAN ×${this.scale}>`;
  }

  toJSON(): string {
    return this.describe();
  }

  /** One tile through the network: [1, C, h, w] → [1, C_out, s·h, s·w]. */
  async run(tile: Float32Array, dims: readonly number[], opts: RuntimeOptions = {}): Promise<{ data: Float32Array; dims: number[] }> {
    this.session ??= createSession(buildEsrganGraph(new OnnxGraph(this.file, WEIGHTS_LOCATION, ''), this.config), this.file, opts).catch((err: unknown) => {
      this.session = undefined;
      throw new ModelFileError(this.file.path, `its weights do not form a valid model (${(err as Error).message.split('\n')[0]})`);
    });
    const s = await this.session;
    const out = (await s.run({ image: ortTensor('float32', tile, dims) })).upscaled!;
    return { data: out.data as Float32Array, dims: [...out.dims] };
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
  o: { tile: number; overlap: number; scale: number; outChannels: number; step?: () => void },
): Promise<{ data: Float32Array; dims: [number, number, number, number] }> {
  const [B, C, H, W] = samples.dims;
  const oh = Math.round(H * o.scale);
  const ow = Math.round(W * o.scale);
  const oc = o.outChannels;
  const output = new Float32Array(B * oc * oh * ow);
  const crop = (b: number, y0: number, x0: number, h: number, w: number): Float32Array => {
    const t = new Float32Array(C * h * w);
    for (let c = 0; c < C; c++) for (let y = 0; y < h; y++) t.set(samples.data.subarray(((b * C + c) * H + y0 + y) * W + x0, ((b * C + c) * H + y0 + y) * W + x0 + w), (c * h + y) * w);
    return t;
  };
  for (let b = 0; b < B; b++) {
    if (H <= o.tile && W <= o.tile) {
      const r = await fn(crop(b, 0, 0, H, W), [1, C, H, W]);
      output.set(r.data.subarray(0, oc * oh * ow), b * oc * oh * ow);
      o.step?.();
      continue;
    }
    const out = new Float32Array(oc * oh * ow);
    const div = new Float32Array(oh * ow);
    const positions = (size: number) => {
      if (size <= o.tile) return [0];
      const p: number[] = [];
      for (let v = 0; v < size - o.overlap; v += o.tile - o.overlap) p.push(v);
      return p;
    };
    const feather = Math.round(o.scale * o.overlap);
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
    for (const py of positions(H))
      for (const px of positions(W)) {
        const y0 = Math.max(0, Math.min(H - o.overlap, py));
        const x0 = Math.max(0, Math.min(W - o.overlap, px));
        const h = Math.min(o.tile, H - y0);
        const w = Math.min(o.tile, W - x0);
        const r = await fn(crop(b, y0, x0, h, w), [1, C, h, w]);
        const [, , th, tw] = r.dims as [number, number, number, number];
        const my = ramp(th);
        const mx = ramp(tw);
        const uy = Math.round(y0 * o.scale);
        const ux = Math.round(x0 * o.scale);
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
