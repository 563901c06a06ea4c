/**
 * TAESD, the tiny autoencoder the reference loads from models/vae_approx
 * (comfy/taesd/taesd.py): its encoder and decoder as ONNX graphs written
 * from the files' own keys (nn.Sequential indices: 3×3 convs, Blocks of
 * conv-ReLU-conv-ReLU-conv plus skip, nearest ×2 upsampling, tanh clamp),
 * and the VAE the reference's VAELoader makes of them (`taesd`, `taesdxl`,
 * `taesd3`, `taef1` with their scale and shift).
 */
import { OnnxGraph } from './graph-builder.ts';
import { ModelFileError } from './safetensors.ts';
import { ortTensor, WEIGHTS_LOCATION } from './session.ts';
import { cropToCells, VaeModel, vaeGraphPrecision, type Checkpoint, type FloatTensor } from './sd1.ts';

/** VAELoader.load_taesd's vae_scale and vae_shift per name. */
export const TAESD_SCALE: Record<string, [scale: number, shift: number]> = {
  taesd: [0.18215, 0],
  taesdxl: [0.13025, 0],
  taesd3: [1.5305, 0.0609],
  taef1: [0.3611, 0.1159],
};

function relu(g: OnnxGraph, x: string): string {
  return g.op('Relu', [x]);
}

function block(g: OnnxGraph, x: string, i: number): string {
  let h = relu(g, g.conv(x, `${i}.conv.0`));
  h = relu(g, g.conv(h, `${i}.conv.2`));
  h = g.conv(h, `${i}.conv.4`);
  const skip = g.has(`${i}.skip.weight`) ? g.conv(x, `${i}.skip`) : x;
  return relu(g, g.add(h, skip));
}

/** Decoder: z [B, C, h, w] (already shifted and scaled) → [B, 3, 8h, 8w], the network's raw output. */
export function buildTaesdDecoder(g: OnnxGraph): Uint8Array {
  const c = g.shape('1.weight')[1]!;
  const z = g.floatInput('z', ['batch', c, 'height', 'width']);
  // Clamp: tanh(x / 3) · 3
  let h = g.scale(g.op('Tanh', [g.scale(z, 1 / 3)]), 3);
  h = relu(g, g.conv(h, '1'));
  let i = 3;
  for (const up of [true, true, true]) {
    for (let k = 0; k < 3; k++) h = block(g, h, i++);
    if (up) {
      i++; // nn.Upsample has no weights
      h = g.conv(g.upsample2x(h), String(i++));
    }
  }
  h = block(g, h, i++);
  h = g.conv(h, String(i));
  g.output(h, 'image', ['batch', 3, 'height', 'width']);
  return g.encode('taesd_decoder');
}

/** Encoder: pixels [B, 3, H, W] in [0, 1] → [B, C, H/8, W/8] (before scale and shift). */
export function buildTaesdEncoder(g: OnnxGraph): Uint8Array {
  const image = g.floatInput('image', ['batch', 3, 'height', 'width']);
  let h = g.conv(image, '0');
  h = block(g, h, 1);
  let i = 2;
  for (let level = 0; level < 3; level++) {
    h = g.conv(h, String(i++), { stride: 2 });
    for (let k = 0; k < 3; k++) h = block(g, h, i++);
  }
  h = g.conv(h, String(i));
  g.output(h, 'z', ['batch', 'channels', 'height', 'width']);
  return g.encode('taesd_encoder');
}

/** VAE from TAESD files (VAELoader's `taesd` entries): decode and encode as comfy.sd.VAE runs a TAESD. */
export class TaesdVae extends VaeModel {
  constructor(
    readonly decoder: Checkpoint,
    readonly encoder: Checkpoint | null,
    readonly vaeScale: number,
    readonly vaeShift: number,
    /** A VAELoader's TAESD computes as --fp16-vae says (it is the reference's comfy.sd.VAE); the sampler previews' stays float32 (latent_preview's). */
    readonly followsVaeDtype = true,
  ) {
    super(decoder);
    if (!decoder.file.has('1.weight') || decoder.file.info('1.weight').shape.length !== 4) throw new ModelFileError(decoder.file.path, 'not a TAESD decoder: 1.weight (its first conv) is missing');
  }

  override get downscale(): number {
    return 8;
  }

  private graphPrecision(kind: string): { kind: string; half: boolean } {
    return this.followsVaeDtype ? vaeGraphPrecision(kind) : { kind, half: false };
  }

  get latentChannels(): number {
    return this.decoder.file.info('1.weight').shape[1]!;
  }

  override get latentChannelsOut(): number {
    return this.latentChannels;
  }

  /** latent [B, C, h, w] → pixels [B, 8h, 8w, 3] in [0, 1]: taesd_decoder((x − shift)·scale), then (y − 0.5)·2, then the VAE's (v + 1)/2 clamped. */
  override async decode(latent: FloatTensor): Promise<FloatTensor> {
    const [b, c] = latent.shape as [number, number];
    if (c !== this.latentChannels) throw new Error(`this TAESD decodes latents of ${this.latentChannels} channels, got ${c}`);
    const f = Math.fround;
    const z = latent.data.map((v) => f(f(v - this.vaeShift) * this.vaeScale));
    const { kind, half } = this.graphPrecision('taesd:decoder');
    const build = () => buildTaesdDecoder(new OnnxGraph(this.decoder.file, WEIGHTS_LOCATION, '', { half }));
    await this.decoder.session(kind, build);
    const out = (await this.decoder.run(kind, build, { z: ortTensor('float32', z, latent.shape) })).image!;
    const [, , H, W] = out.dims as [number, number, number, number];
    const src = out.data as Float32Array;
    const px = new Float32Array(b * H * W * 3);
    for (let n = 0; n < b; n++)
      for (let ch = 0; ch < 3; ch++)
        for (let i = 0; i < H * W; i++) {
          const y = f(f(src[(n * 3 + ch) * H * W + i]! - 0.5) * 2);
          const v = f(f(y + 1) / 2);
          px[(n * H * W + i) * 3 + ch] = v < 0 ? 0 : v > 1 ? 1 : v;
        }
    return { shape: [b, H, W, 3], data: px };
  }

  /** TAESD.decode: (taesd_decoder((z − shift)·scale) − 0.5)·2, unclamped [B, 3, 8h, 8w] (tiled decoding blends it). */
  override async decodeRaw(latent: FloatTensor): Promise<FloatTensor> {
    if (latent.shape[1] !== this.latentChannels) throw new Error(`this TAESD decodes latents of ${this.latentChannels} channels, got ${latent.shape[1]}`);
    const f = Math.fround;
    const z = latent.data.map((v) => f(f(v - this.vaeShift) * this.vaeScale));
    const { kind, half } = this.graphPrecision('taesd:decoder');
    const build = () => buildTaesdDecoder(new OnnxGraph(this.decoder.file, WEIGHTS_LOCATION, '', { half }));
    await this.decoder.session(kind, build);
    const out = (await this.decoder.run(kind, build, { z: ortTensor('float32', z, latent.shape) })).image!;
    return { shape: [...out.dims], data: (out.data as Float32Array).map((v) => f(f(v - 0.5) * 2)) };
  }

  /** TAESD.encode: taesd_encoder(x·0.5 + 0.5) / scale + shift for pixels [B, 3, h, w] in [−1, 1]. */
  override async encodeRaw(image: FloatTensor): Promise<FloatTensor> {
    const enc = this.encoder;
    if (!enc) throw new Error('this TAESD has no encoder');
    const f = Math.fround;
    const { kind, half } = this.graphPrecision('taesd:encoder');
    const build = () => buildTaesdEncoder(new OnnxGraph(enc.file, WEIGHTS_LOCATION, '', { half }));
    await enc.session(kind, build);
    const out = (await enc.run(kind, build, { image: ortTensor('float32', image.data.map((v) => f(f(v * 0.5) + 0.5)), image.shape) })).z!;
    return { shape: [...out.dims], data: (out.data as Float32Array).map((v) => f(f(v / this.vaeScale) + this.vaeShift)) };
  }

  /** pixels [B, H, W, 3] → latent: taesd_encoder(x·2 − 1 then ·0.5 + 0.5) / scale + shift, cropped to multiples of 8 about the centre. */
  override async encode(pixels: FloatTensor): Promise<FloatTensor> {
    if (!this.encoder) throw new Error('this TAESD has no encoder');
    const img = cropToCells(pixels, 8);
    return this.encodeRaw({ shape: img.shape, data: img.data.map((v) => Math.fround(Math.fround(v * 2) - 1)) });
  }
}
