/**
 * How a UNet's output becomes the denoised latent (the reference's
 * comfy/model_sampling.py: EPS, V_PREDICTION, X0, IMG_TO_IMG, and
 * comfy_extras/nodes_model_advanced.py's LCM), the discrete σ schedules they
 * run on (ModelSamplingDiscrete, with zero-terminal-SNR rescaling, and the
 * LCM-distilled 50-step one), the latent formats (scale factor and preview
 * factors of SD1.x/SD2.x and SDXL), SDXL's adm vector (model_base.SDXL and
 * SDXLRefiner encode_adm) and RescaleCFG's CFG function. Plain functions on
 * Float32Arrays: nothing here runs a model.
 */
import { DiscreteSchedule } from './schedules.ts';
import { timestepEmbedding } from './unet-graph.ts';

export type SamplingKind = 'eps' | 'v_prediction' | 'lcm' | 'x0' | 'img_to_img';

export interface LatentFormat {
  name: 'sd15' | 'sdxl';
  scaleFactor: number;
  /** Latent → RGB preview factors [channel][rgb], and their bias. */
  rgbFactors: number[][];
  rgbBias: number[];
}

export const SD15_FORMAT: LatentFormat = {
  name: 'sd15',
  scaleFactor: 0.18215,
  rgbFactors: [
    [0.3512, 0.2297, 0.3227],
    [0.325, 0.4974, 0.235],
    [-0.2829, 0.1762, 0.2721],
    [-0.212, -0.2616, -0.7177],
  ],
  rgbBias: [0, 0, 0],
};

export const SDXL_FORMAT: LatentFormat = {
  name: 'sdxl',
  scaleFactor: 0.13025,
  rgbFactors: [
    [0.3651, 0.4232, 0.4341],
    [-0.2533, -0.0042, 0.1068],
    [0.1076, 0.1111, -0.0362],
    [-0.3165, -0.2492, -0.2188],
  ],
  rgbBias: [0.1084, -0.0175, -0.0011],
};

const f = Math.fround;

/** The linear-β schedule's σ in float64 (before the reference rounds them to float32). */
function sigmas64(linearStart = 0.00085, linearEnd = 0.012, timesteps = 1000): Float64Array {
  const out = new Float64Array(timesteps);
  const a = Math.sqrt(linearStart);
  const b = Math.sqrt(linearEnd);
  const step = (b - a) / (timesteps - 1);
  let cumprod = 1;
  for (let i = 0; i < timesteps; i++) {
    const root = i < timesteps / 2 ? a + step * i : b - step * (timesteps - 1 - i);
    cumprod *= 1 - root * root;
    out[i] = Math.sqrt((1 - cumprod) / cumprod);
  }
  return out;
}

/** rescale_zero_terminal_snr_sigmas, in float64 as the reference. */
function rescaleZeroTerminalSnr(sigmas: Float64Array): Float64Array {
  const n = sigmas.length;
  const sq = Float64Array.from(sigmas, (s) => Math.sqrt(1 / (s * s + 1)));
  const s0 = sq[0]!;
  const sT = sq[n - 1]!;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let v = sq[i]! - sT;
    v *= s0 / (s0 - sT);
    let bar = v * v;
    if (i === n - 1) bar = 4.8973451890853435e-8;
    out[i] = Math.sqrt((1 - bar) / bar);
  }
  return out;
}

/** Replaces a schedule's tables (the reference's set_sigmas: float32 σ, log of the values given, rounded). */
function setSigmas(s: DiscreteSchedule, sigmas: ArrayLike<number>): void {
  const w = s as unknown as { sigmas: Float32Array; logSigmas: Float32Array };
  w.sigmas = Float32Array.from(sigmas);
  w.logSigmas = Float32Array.from(sigmas, (v) => Math.log(v));
}

/** ModelSamplingDiscreteDistilled: every 20th σ of the 1,000 (50 in all); timesteps mapped back to the 1,000. */
export class DistilledSchedule extends DiscreteSchedule {
  readonly skipSteps: number;

  constructor(zsnr = false, originalTimesteps = 50) {
    super();
    if (zsnr) setSigmas(this, rescaleZeroTerminalSnr(sigmas64()));
    const n = this.sigmas.length;
    this.skipSteps = Math.floor(n / originalTimesteps);
    const valid = new Float32Array(originalTimesteps);
    for (let x = 0; x < originalTimesteps; x++) valid[originalTimesteps - 1 - x] = this.sigmas[n - 1 - x * this.skipSteps]!;
    // set_sigmas on float32 values: the logs are of the rounded σ.
    setSigmas(this, valid);
  }

  override timestep(sigma: number): number {
    return super.timestep(sigma) * this.skipSteps + (this.skipSteps - 1);
  }

  override sigma(t: number): number {
    const tc = Math.min(Math.max(f(f(t - (this.skipSteps - 1)) / this.skipSteps), 0), this.sigmas.length - 1);
    const lo = Math.floor(tc);
    const hi = Math.ceil(tc);
    const w = f(tc - lo);
    return f(Math.exp(f(f(f(1 - w) * this.logSigmas[lo]!) + f(w * this.logSigmas[hi]!))));
  }
}

/** ModelSamplingDiscrete's schedule, optionally with zero terminal SNR. */
export function discreteSchedule(zsnr = false): DiscreteSchedule {
  const s = new DiscreteSchedule();
  if (zsnr) setSigmas(s, rescaleZeroTerminalSnr(sigmas64()));
  return s;
}

/** A model's sampling: its σ schedule and how its output becomes the denoised latent. */
export class ModelSampling {
  readonly sigmaData = 1;

  constructor(
    readonly kind: SamplingKind,
    readonly schedule: DiscreteSchedule,
  ) {}

  /** The ModelSamplingDiscrete node's choice (`sampling`, `zsnr`). */
  static discrete(kind: SamplingKind, zsnr = false): ModelSampling {
    return new ModelSampling(kind, kind === 'lcm' ? new DistilledSchedule(zsnr) : discreteSchedule(zsnr));
  }

  /** calculate_input: what the UNet sees at σ, x / √(σ² + σ_data²) in float32 steps as torch computes it. */
  input(sigma: number, x: Float32Array): Float32Array {
    if (this.kind === 'img_to_img') return x;
    const d = f(Math.sqrt(f(f(sigma * sigma) + this.sigmaData * this.sigmaData)));
    return x.map((v) => v / d);
  }

  /** calculate_denoised(σ, model output, model input), in place into `out`. */
  denoised(sigma: number, output: Float32Array, input: Float32Array, out = new Float32Array(input.length)): Float32Array {
    const n = input.length;
    // float32 at every step, in torch's order of operations (the latent is large at high σ: rounding order shows).
    const sd2 = f(this.sigmaData * this.sigmaData);
    switch (this.kind) {
      case 'eps':
        for (let i = 0; i < n; i++) out[i] = input[i]! - f(output[i]! * sigma);
        break;
      case 'v_prediction': {
        const s2 = f(f(sigma * sigma) + sd2);
        const root = f(Math.sqrt(s2));
        for (let i = 0; i < n; i++) out[i] = f(f(input[i]! * sd2) / s2) - f(f(f(output[i]! * sigma) * this.sigmaData) / root);
        break;
      }
      case 'lcm': {
        const st = this.schedule.timestep(sigma) * 10;
        const cSkip = 0.25 / (st * st + 0.25);
        const cOut = st / Math.sqrt(st * st + 0.25);
        for (let i = 0; i < n; i++) out[i] = cOut * (input[i]! - output[i]! * sigma) + cSkip * input[i]!;
        break;
      }
      case 'x0':
      case 'img_to_img':
        out.set(output);
        break;
    }
    return out;
  }
}

/** The sampling a checkpoint was made for (the reference's model_type and sampling settings). */
export function defaultSampling(modelType: 'eps' | 'v_prediction' | undefined, zsnr = false): ModelSampling {
  return ModelSampling.discrete(modelType ?? 'eps', zsnr);
}

export type AdmFamily = 'sdxl' | 'sdxl_refiner';

/**
 * SDXL's `y` for one conditioning entry: the pooled text embedding followed
 * by 256-wide sinusoidal embeddings of height, width, crop_h, crop_w and
 * target height/width (base) or aesthetic score (refiner; 6 for positive
 * prompts, 2.5 for negative ones unless the entry says). Width and height
 * default to the latent's size × 8, as the reference's encode_model_conds.
 */
export function encodeAdm(family: AdmFamily, options: Record<string, unknown>, latentShape: readonly number[], promptType: 'positive' | 'negative', admWidth: number): Float32Array {
  const pooled = options.pooled_output as { data?: Float32Array; shape?: number[] } | undefined;
  if (!pooled || !(pooled.data instanceof Float32Array)) throw new Error('this conditioning has no pooled_output: SDXL needs one from an SDXL text encoder (CLIPTextEncode with its CLIP, or CLIPTextEncodeSDXL)');
  const num = (k: string, d: number) => {
    const v = options[k];
    return typeof v === 'number' && Number.isFinite(v) ? v : d;
  };
  const width = num('width', latentShape[3]! * 8);
  const height = num('height', latentShape[2]! * 8);
  const values =
    family === 'sdxl'
      ? [height, width, num('crop_h', 0), num('crop_w', 0), num('target_height', height), num('target_width', width)]
      : [height, width, num('crop_h', 0), num('crop_w', 0), num('aesthetic_score', promptType === 'negative' ? 2.5 : 6)];
  // The first row of the pooled output (one per entry).
  const pooledWidth = admWidth - values.length * 256;
  if (pooled.data.length < pooledWidth || (pooled.shape && pooled.shape[pooled.shape.length - 1] !== pooledWidth)) {
    throw new Error(`the pooled_output is ${pooled.shape?.[pooled.shape.length - 1] ?? pooled.data.length} wide; this model's adm needs ${pooledWidth}`);
  }
  const y = new Float32Array(admWidth);
  y.set(pooled.data.subarray(0, pooledWidth));
  values.forEach((v, i) => y.set(timestepEmbedding([v], 256), pooledWidth + i * 256));
  return y;
}

/**
 * RescaleCFG (the reference's sampler_cfg_function): CFG on the v-space
 * predictions, rescaled to the conditional prediction's standard deviation
 * per batch item, mixed by `multiplier`. Takes and returns denoised latents.
 */
export function rescaleCfg(multiplier: number, cond: Float32Array, uncond: Float32Array, x: Float32Array, sigma: number, cfg: number, batch: number): Float32Array {
  const n = x.length;
  const per = n / batch;
  const s2 = sigma * sigma + 1;
  const root = Math.sqrt(s2);
  const out = new Float32Array(n);
  const vc = new Float64Array(per);
  const vx = new Float64Array(per);
  for (let b = 0; b < batch; b++) {
    const o = b * per;
    for (let i = 0; i < per; i++) {
      const xs = x[o + i]! / s2;
      // args["cond"] = x − cond_denoised; back to v: (x/(σ²+1) − (x − (x − cond))) · √(σ²+1) / σ
      const c = ((xs - cond[o + i]!) * root) / sigma;
      const u = ((xs - uncond[o + i]!) * root) / sigma;
      vc[i] = c;
      vx[i] = u + cfg * (c - u);
    }
    const std = (v: Float64Array) => {
      let m = 0;
      for (const t of v) m += t;
      m /= v.length;
      let s = 0;
      for (const t of v) s += (t - m) ** 2;
      return Math.sqrt(s / Math.max(1, v.length - 1));
    };
    const ratio = std(vc) / std(vx);
    for (let i = 0; i < per; i++) {
      const final = multiplier * vx[i]! * ratio + (1 - multiplier) * vx[i]!;
      const xs = x[o + i]! / s2;
      // x − (x_orig − (x − final·σ/√(σ²+1))) as the reference returns, then cfg_result = x − that.
      const ret = x[o + i]! - (xs - (final * sigma) / root);
      out[o + i] = x[o + i]! - ret;
    }
  }
  return out;
}

/** torch.round: halves to the even neighbour. */
function roundHalfEven(v: number): number {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** torch interpolate(mode='bilinear', align_corners=False) of one plane (sh×sw → dh×dw). */
function bilinear(src: Float32Array, sh: number, sw: number, dh: number, dw: number): Float32Array {
  if (sh === dh && sw === dw) return src;
  const out = new Float32Array(dh * dw);
  for (let y = 0; y < dh; y++) {
    const fy = Math.max((y + 0.5) * (sh / dh) - 0.5, 0);
    const y0 = Math.min(Math.floor(fy), sh - 1);
    const y1 = Math.min(y0 + 1, sh - 1);
    const ly = fy - y0;
    for (let x = 0; x < dw; x++) {
      const fx = Math.max((x + 0.5) * (sw / dw) - 0.5, 0);
      const x0 = Math.min(Math.floor(fx), sw - 1);
      const x1 = Math.min(x0 + 1, sw - 1);
      const lx = fx - x0;
      out[y * dw + x] = (src[y0 * sw + x0]! * (1 - lx) + src[y0 * sw + x1]! * lx) * (1 - ly) + (src[y1 * sw + x0]! * (1 - lx) + src[y1 * sw + x1]! * lx) * ly;
    }
  }
  return out;
}

/** "Zero" in pixel space as SD latents (the reference's blank_inpaint_image_like). */
const BLANK_INPAINT = [0.8223, -0.6876, 0.6364, 0.138];

/**
 * An inpainting UNet's extra input channels for one conditioning entry (the
 * reference's concat_cond with concat_keys mask, masked_image): the mask
 * (the entry's concat_mask, else the LATENT's noise mask; resized to the
 * latent, first channel, rounded) and the masked image (the entry's
 * concat_latent_image scaled in, else the latent itself); a mask or image
 * of another size is resized as the reference's common_upscale(…, "bilinear",
 * "center") (cut to the latent's aspect first), and either is fitted to the
 * batch as its resize_to_batch_size; without a mask, ones and the blank
 * image. [B, 1 + C, h, w].
 */
export function inpaintConcat(options: Record<string, unknown>, latentShape: readonly number[], latentIn: Float32Array, denoiseMask: { shape: number[]; data: Float32Array } | undefined, scaleFactor: number): Float32Array {
  const [B, C, h, w] = latentShape as [number, number, number, number];
  const plane = h * w;
  const out = new Float32Array(B * (1 + C) * plane);
  const isTensor = (v: unknown): v is { shape: number[]; data: Float32Array } => typeof v === 'object' && v !== null && Array.isArray((v as { shape: unknown }).shape) && (v as { data: unknown }).data instanceof Float32Array;
  const mask = isTensor(options.concat_mask) ? options.concat_mask : denoiseMask;
  if (!mask) {
    for (let b = 0; b < B; b++) {
      out.fill(1, b * (1 + C) * plane, (b * (1 + C) + 1) * plane);
      for (let c = 0; c < C; c++) out.fill(BLANK_INPAINT[c] ?? 0, (b * (1 + C) + 1 + c) * plane, (b * (1 + C) + 2 + c) * plane);
    }
    return out;
  }
  const mh = mask.shape[mask.shape.length - 2]!;
  const mw = mask.shape[mask.shape.length - 1]!;
  // [:, :1] of a mask shaped like the latent; any other leading dims are planes.
  const planes: Float32Array[] = [];
  if (mask.shape.length === 4) for (let i = 0; i < mask.shape[0]!; i++) planes.push(mask.data.subarray(i * mask.shape[1]! * mh * mw, (i * mask.shape[1]! + 1) * mh * mw));
  else for (let i = 0; i < mask.data.length / (mh * mw); i++) planes.push(mask.data.subarray(i * mh * mw, (i + 1) * mh * mw));
  const m = planes.map((p) => centreBilinear(p, mh, mw, h, w).map(roundHalfEven));
  let image: Float32Array = latentIn;
  let ish = [B, C, h, w];
  if (isTensor(options.concat_latent_image)) {
    image = options.concat_latent_image.data.map((v) => v * scaleFactor);
    ish = options.concat_latent_image.shape;
  }
  const [ib, ic, ih, iw] = ish as [number, number, number, number];
  if (ic !== C) throw new Error(`the inpainting image latent has ${ic} channels; this model's latents have ${C}`);
  for (let b = 0; b < B; b++) {
    out.set(m[batchSource(b, m.length, B)]!, b * (1 + C) * plane);
    const src = batchSource(b, ib, B);
    for (let c = 0; c < C; c++) out.set(centreBilinear(image.subarray((src * C + c) * ih * iw, (src * C + c + 1) * ih * iw), ih, iw, h, w), (b * (1 + C) + 1 + c) * plane);
  }
  return out;
}

/** comfy.utils.resize_to_batch_size: which of `from` items becomes item `i` of `to` (evenly spread, not cycled). */
export function batchSource(i: number, from: number, to: number): number {
  if (from === to || to <= 1) return i;
  if (to < from) return Math.min(roundHalfEven(i * ((from - 1) / (to - 1))), from - 1);
  return Math.min(Math.floor((i + 0.5) * (from / to)), from - 1);
}

/** common_upscale(…, "bilinear", "center") of one plane: the middle of the source at the target's aspect, then bilinear. */
export function centreBilinear(src: Float32Array, sh: number, sw: number, dh: number, dw: number): Float32Array {
  if (sh === dh && sw === dw) return src;
  const oldAspect = sw / sh;
  const newAspect = dw / dh;
  let x = 0;
  let y = 0;
  if (oldAspect > newAspect) x = roundHalfEven((sw - sw * (newAspect / oldAspect)) / 2);
  else if (oldAspect < newAspect) y = roundHalfEven((sh - sh * (oldAspect / newAspect)) / 2);
  if (x === 0 && y === 0) return bilinear(src, sh, sw, dh, dw);
  const ch = sh - 2 * y;
  const cw = sw - 2 * x;
  if (ch <= 0 || cw <= 0) throw new Error(`a ${sw}×${sh} mask or image cannot be cut to the aspect of ${dw}×${dh}: nothing is left of it`);
  const cut = new Float32Array(ch * cw);
  for (let r = 0; r < ch; r++) cut.set(src.subarray((r + y) * sw + x, (r + y) * sw + x + cw), r * cw);
  return bilinear(cut, ch, cw, dh, dw);
}
