/**
 * The compute precision of the diffusion model (the UNet graph), the
 * reference's rule and flags: float16 on a GPU (CUDA or WebGPU), float32 on
 * the CPU; `--force-fp16` / `--force-fp32` for every model, `--fp16-unet` /
 * `--fp32-unet` for the diffusion model alone (it wins over the --force pair,
 * as in the reference); `--force-upcast-attention` runs attention in float32
 * inside a float16 graph, `--dont-upcast-attention` never does. Flags of one
 * pair together are a start-up error, as the reference's mutually exclusive
 * groups are.
 *
 * The other parts (issue 26), by the reference's model_management rules:
 * - ControlNets follow the diffusion model (controlnet.py asks unet_dtype);
 *   T2I adapters run in the sampler's float32 (x_noisy's dtype) and upscale
 *   models in float32 (spandrel is never cast), as the reference's do.
 * - The VAE (and a VAELoader's TAESD): float16 only with `--fp16-vae`
 *   (vae_dtype: an SD VAE's working dtypes are bf16 and fp32, so --force-fp16
 *   does not reach it). Where the reference picks bf16 (a GPU that has it)
 *   this runs float32: ONNX Runtime has no bf16 convolutions, and bf16 keeps
 *   float32's range, which float16 does not (an SD1.x VAE overflows in it).
 *   `--bf16-vae` is a start-up error; `--cpu-vae` runs the VAE's sessions on
 *   the CPU.
 * - The text encoders compute in float32 as the reference's do (its CLIP runs
 *   with dtype=torch.float32); their flags choose how the weights are stored:
 *   `--fp16-text-enc`, `--bf16-text-enc`, `--fp8_e4m3fn-text-enc`,
 *   `--fp8_e5m2-text-enc` round every weight to that type first, as the
 *   reference's storage does. The default here is the file's own values
 *   (`--fp32-text-enc`); the reference's default stores float16, the same
 *   numbers for an fp16 checkpoint.
 */
import { deviceName, type DeviceSpec } from './device.ts';

export interface UNetPrecision {
  /** The UNet graph's weights and activations. */
  dtype: 'fp16' | 'fp32';
  /** Attention in float32 within a float16 graph. */
  upcastAttention: boolean;
  /** Why: `default for cuda:0`, `--force-fp16`, … (the start-up log says it). */
  reason: string;
  /** The VAE's compute dtype (absent: fp32 on the device). */
  vae?: VaePrecision;
  /** How the text encoders' weights are stored; they compute in float32 (absent: the file's own values). */
  textEncoder?: TextEncoderPrecision;
}

export interface VaePrecision {
  dtype: 'fp16' | 'fp32';
  /** --cpu-vae: the VAE's sessions on the CPU whatever the device. */
  cpu: boolean;
  reason: string;
}

/** The reference's text-encoder storage dtypes; fp32 = the values as the file holds them. */
export type TextEncoderStorage = 'fp32' | 'fp16' | 'bf16' | 'fp8_e4m3fn' | 'fp8_e5m2';

export interface TextEncoderPrecision {
  storage: TextEncoderStorage;
  reason: string;
}

const TEXT_ENCODER_FLAGS: Array<[string, TextEncoderStorage, string]> = [
  ['fp8_e4m3fnTextEnc', 'fp8_e4m3fn', '--fp8_e4m3fn-text-enc'],
  ['fp8_e5m2TextEnc', 'fp8_e5m2', '--fp8_e5m2-text-enc'],
  ['fp16TextEnc', 'fp16', '--fp16-text-enc'],
  ['bf16TextEnc', 'bf16', '--bf16-text-enc'],
  ['fp32TextEnc', 'fp32', '--fp32-text-enc'],
];

/** `--fp16-vae` / `--fp32-vae` / `--bf16-vae` (one of them), `--cpu-vae`: the reference's vae_dtype for an SD VAE (working dtypes bf16, fp32). */
export function resolveVaePrecision(f: Flags, device: DeviceSpec): VaePrecision {
  const set = (['fp16Vae', 'fp32Vae', 'bf16Vae'] as const).filter((k) => on(f, k, undefined));
  if (set.length > 1) throw new PrecisionError(`${set.map(flagName).join(' and ')} cannot be used together`);
  if (set[0] === 'bf16Vae') throw new PrecisionError('--bf16-vae is not supported: ONNX Runtime has no bf16 convolutions; the VAE runs in fp16 or fp32 here (--fp16-vae, --fp32-vae)');
  const cpu = on(f, 'cpuVae', undefined);
  if (set[0] === 'fp16Vae') return { dtype: 'fp16', cpu, reason: '--fp16-vae' };
  if (set[0] === 'fp32Vae') return { dtype: 'fp32', cpu, reason: '--fp32-vae' };
  // The reference: bf16 where the device has it (never fp16 unasked), else fp32; bf16 is not run here, its range is kept.
  const where = cpu || device.kind === 'cpu' ? 'the default on the CPU' : `the default on ${deviceName(device)} (the reference would pick bf16 where the GPU has it)`;
  return { dtype: 'fp32', cpu, reason: where };
}

/** `--fp16-text-enc`, `--fp32-text-enc`, `--bf16-text-enc`, `--fp8_e4m3fn-text-enc`, `--fp8_e5m2-text-enc` (one of them). */
export function resolveTextEncoderPrecision(f: Flags): TextEncoderPrecision {
  const set = TEXT_ENCODER_FLAGS.filter(([k]) => on(f, k, undefined));
  if (set.length > 1) throw new PrecisionError(`${set.map(([, , n]) => n).join(' and ')} cannot be used together`);
  if (set[0]) return { storage: set[0][1], reason: set[0][2] };
  return { storage: 'fp32', reason: "the default here: the file's own values (the reference stores float16)" };
}

function flagName(key: string): string {
  return '--' + key.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
}

export class PrecisionError extends Error {}

type Flags = Record<string, unknown>;

function on(f: Flags, name: string, env: string | undefined): boolean {
  const v = f[name];
  if (v === true || v === 'true' || v === '1') return true;
  return env === '1' || env === 'true';
}

/** From `--force-fp16`, `--force-fp32`, `--fp16-unet`, `--fp32-unet`, `--force-upcast-attention`, `--dont-upcast-attention` (or WORKFLOW_UNET_DTYPE=fp16|fp32). */
export function resolvePrecision(f: Flags, device: DeviceSpec, env: NodeJS.ProcessEnv = process.env): UNetPrecision {
  const forceFp16 = on(f, 'forceFp16', undefined);
  const forceFp32 = on(f, 'forceFp32', undefined);
  const envDtype = env.WORKFLOW_UNET_DTYPE;
  if (envDtype !== undefined && envDtype !== '' && envDtype !== 'fp16' && envDtype !== 'fp32') throw new PrecisionError(`WORKFLOW_UNET_DTYPE must be fp16 or fp32, got ${JSON.stringify(envDtype)}`);
  const fp16Unet = on(f, 'fp16Unet', undefined) || envDtype === 'fp16';
  const fp32Unet = on(f, 'fp32Unet', undefined) || envDtype === 'fp32';
  const upcast = on(f, 'forceUpcastAttention', undefined);
  const noUpcast = on(f, 'dontUpcastAttention', undefined);
  if (forceFp16 && forceFp32) throw new PrecisionError('--force-fp16 and --force-fp32 cannot be used together');
  if (fp16Unet && fp32Unet) throw new PrecisionError('--fp16-unet and --fp32-unet cannot be used together');
  if (upcast && noUpcast) throw new PrecisionError('--force-upcast-attention and --dont-upcast-attention cannot be used together');
  const unsupported: Record<string, string> = { bf16Unet: '--bf16-unet', fp64Unet: '--fp64-unet', 'fp8_e4m3fnUnet': '--fp8_e4m3fn-unet', 'fp8_e5m2Unet': '--fp8_e5m2-unet', 'fp8_e8m0fnuUnet': '--fp8_e8m0fnu-unet' };
  for (const [key, flag] of Object.entries(unsupported)) {
    if (f[key] !== undefined) throw new PrecisionError(`${flag} is not supported: the diffusion model computes in fp16 or fp32 here (--fp16-unet, --fp32-unet)`);
  }
  let dtype: UNetPrecision['dtype'];
  let reason: string;
  if (fp16Unet) [dtype, reason] = ['fp16', envDtype === 'fp16' && !on(f, 'fp16Unet', undefined) ? 'WORKFLOW_UNET_DTYPE=fp16' : '--fp16-unet'];
  else if (fp32Unet) [dtype, reason] = ['fp32', envDtype === 'fp32' && !on(f, 'fp32Unet', undefined) ? 'WORKFLOW_UNET_DTYPE=fp32' : '--fp32-unet'];
  else if (forceFp16) [dtype, reason] = ['fp16', '--force-fp16'];
  else if (forceFp32) [dtype, reason] = ['fp32', '--force-fp32'];
  else [dtype, reason] = device.kind === 'cpu' ? ['fp32', 'the default on the CPU'] : ['fp16', `the default on ${deviceName(device)}`];
  return { dtype, upcastAttention: dtype === 'fp16' && upcast && !noUpcast, reason, vae: resolveVaePrecision(f, device), textEncoder: resolveTextEncoderPrecision(f) };
}

/** How the precision is named in the start-up log and /system_stats (torch's dtype names, as the reference prints them). */
export function precisionName(p: UNetPrecision): string {
  return p.dtype === 'fp16' ? 'torch.float16' : 'torch.float32';
}

/** torch's names of the parts' dtypes, as the reference's load messages print them. */
export const TORCH_DTYPE: Record<TextEncoderStorage, string> = { fp32: 'torch.float32', fp16: 'torch.float16', bf16: 'torch.bfloat16', fp8_e4m3fn: 'torch.float8_e4m3fn', fp8_e5m2: 'torch.float8_e5m2' };

let current: UNetPrecision = { dtype: 'fp32', upcastAttention: false, reason: 'the default on the CPU' };

/** The precision every UNet session made from now on is built in (set at start-up and in each execution thread). */
export function configurePrecision(p: UNetPrecision): void {
  current = p;
}

export function unetPrecision(): UNetPrecision {
  return current;
}

/** The VAE's precision (fp32 unless configured). */
export function vaePrecision(): VaePrecision {
  return current.vae ?? { dtype: 'fp32', cpu: false, reason: 'the default' };
}

/** The text encoders' weight storage (the file's own values unless configured). */
export function textEncoderPrecision(): TextEncoderPrecision {
  return current.textEncoder ?? { storage: 'fp32', reason: 'the default' };
}

/** float32 → IEEE half bits, round to nearest even (for the few constants a half graph holds). */
export function toHalfBits(x: number): number {
  const f = new Float32Array([x]);
  const b = new Uint32Array(f.buffer)[0]!;
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let v = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    if (rest > half || (rest === half && v & 1)) v++;
    return sign | v;
  }
  let v = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && v & 1)) v++;
  return sign | v;
}
