/**
 * The compute precision of the diffusion model (the UNet graph), the
 * reference's rule and flags: float16 on a GPU (CUDA or WebGPU), float32 on
 * the CPU; `--force-fp16` / `--force-fp32` for every model, `--fp16-unet` /
 * `--fp32-unet` for the diffusion model alone (it wins over the --force pair,
 * as in the reference); `--force-upcast-attention` runs attention in float32
 * inside a float16 graph, `--dont-upcast-attention` never does. Flags of one
 * pair together are a start-up error, as the reference's mutually exclusive
 * groups are. The text encoders and the VAE stay float32 here.
 */
import { deviceName, type DeviceSpec } from './device.ts';

export interface UNetPrecision {
  /** The UNet graph's weights and activations. */
  dtype: 'fp16' | 'fp32';
  /** Attention in float32 within a float16 graph. */
  upcastAttention: boolean;
  /** Why: `default for cuda:0`, `--force-fp16`, … (the start-up log says it). */
  reason: string;
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
  return { dtype, upcastAttention: dtype === 'fp16' && upcast && !noUpcast, reason };
}

/** How the precision is named in the start-up log and /system_stats (torch's dtype names, as the reference prints them). */
export function precisionName(p: UNetPrecision): string {
  return p.dtype === 'fp16' ? 'torch.float16' : 'torch.float32';
}

let current: UNetPrecision = { dtype: 'fp32', upcastAttention: false, reason: 'the default on the CPU' };

/** The precision every UNet session made from now on is built in (set at start-up and in each execution thread). */
export function configurePrecision(p: UNetPrecision): void {
  current = p;
}

export function unetPrecision(): UNetPrecision {
  return current;
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
