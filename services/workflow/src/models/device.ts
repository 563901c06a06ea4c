/**
 * Where the models run (`--device`): the CPU, a GPU through the WebGPU
 * execution provider bundled in onnxruntime-node, or a CUDA GPU through
 * ONNX Runtime's CUDA provider where its libraries are on the host (never
 * downloaded: `--cuda-provider-dir` names them). A device that is missing or
 * fails is found at start-up by a probe session, not by the first prompt.
 * Operators a GPU provider lacks run on the CPU, as ONNX Runtime places them.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { DataType, encodeModel } from './onnx-proto.ts';

export type DeviceSpec = { kind: 'cpu' } | { kind: 'webgpu' } | { kind: 'cuda'; index: number };

export class DeviceError extends Error {}

/** `cpu`, `webgpu`, `cuda` or `cuda:N` (the reference's `--cuda-device N` in one word). */
export function parseDevice(text: string): DeviceSpec {
  const s = text.trim().toLowerCase();
  if (s === 'cpu') return { kind: 'cpu' };
  if (s === 'webgpu' || s === 'gpu') return { kind: 'webgpu' };
  const m = /^cuda(?::(\d{1,3}))?$/.exec(s);
  if (m) return { kind: 'cuda', index: m[1] === undefined ? 0 : Number(m[1]) };
  throw new DeviceError(`--device must be cpu, webgpu, cuda or cuda:N, got ${JSON.stringify(text)}`);
}

export function deviceName(d: DeviceSpec): string {
  return d.kind === 'cuda' ? `cuda:${d.index}` : d.kind;
}

/** The session option for the device (ONNX Runtime adds the CPU for what the provider cannot run). */
export function executionProviders(d: DeviceSpec): Array<string | { name: string; deviceId?: number }> {
  if (d.kind === 'cuda') return [{ name: 'cuda', deviceId: d.index }];
  if (d.kind === 'webgpu') return ['webgpu'];
  return ['cpu'];
}

/** The libraries ONNX Runtime loads for its CUDA provider, from the folder of its own library. */
export const CUDA_PROVIDER_LIBRARIES = ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'];

/** onnxruntime-node's folder of native libraries for this platform. */
export function ortLibraryDir(): string {
  const pkg = createRequire(import.meta.url).resolve('onnxruntime-node/package.json');
  const bin = path.join(path.dirname(pkg), 'bin');
  const napi = fs.existsSync(bin) ? fs.readdirSync(bin).filter((d) => d.startsWith('napi-v')).sort() : [];
  return path.join(bin, napi.at(-1) ?? 'napi-v6', process.platform, process.arch);
}

/**
 * Makes ONNX Runtime's CUDA provider loadable: present already beside its
 * library, or linked there from `providerDir` (an onnxruntime-gpu release of
 * the same version). CUDA's own libraries (cudart, cuBLAS, cuDNN) are found
 * by the system's loader (LD_LIBRARY_PATH, set before the process starts).
 */
export function installCudaProvider(providerDir: string | undefined, libDir = ortLibraryDir()): void {
  const missing = CUDA_PROVIDER_LIBRARIES.filter((f) => !fs.existsSync(path.join(libDir, f)));
  if (!missing.length) return;
  if (!providerDir) throw new DeviceError(`--device cuda: ONNX Runtime's CUDA provider is not installed (${missing.join(', ')} missing in ${libDir}); pass --cuda-provider-dir with the folder holding them (from an onnxruntime-gpu release of the same version, for CUDA 12)`);
  const absent = CUDA_PROVIDER_LIBRARIES.filter((f) => !fs.existsSync(path.join(providerDir, f)));
  if (absent.length) throw new DeviceError(`--cuda-provider-dir ${providerDir} lacks ${absent.join(', ')}`);
  for (const f of missing) {
    try {
      fs.symlinkSync(path.resolve(providerDir, f), path.join(libDir, f));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw new DeviceError(`--device cuda: cannot link ${f} into ${libDir} (${(err as Error).message}); copy ${CUDA_PROVIDER_LIBRARIES.join(' and ')} there instead`);
    }
  }
}

/** A one-operator model (y = x + x) every provider can run. */
function probeModel(): Uint8Array {
  return encodeModel({
    name: 'device-probe',
    nodes: [{ op: 'Add', inputs: ['x', 'x'], outputs: ['y'], attrs: {} }],
    initializers: [],
    inputs: [{ name: 'x', elemType: DataType.FLOAT, dims: [4] }],
    outputs: [{ name: 'y', elemType: DataType.FLOAT, dims: [4] }],
  });
}

/** The first line of ONNX Runtime's message, without its source paths. */
function ortMessage(err: unknown): string {
  const first = String((err as Error)?.message ?? err).split('\n')[0]!;
  return first.replace(/\/onnxruntime_src\/\S+\s*/g, '').trim();
}

/**
 * Creates and runs a session on the device: a GPU that is absent, a driver
 * that fails or a provider that cannot load is a DeviceError saying which.
 */
export async function probeDevice(d: DeviceSpec, opts: { cudaProviderDir?: string } = {}): Promise<void> {
  if (d.kind === 'cpu') return;
  if (d.kind === 'cuda') installCudaProvider(opts.cudaProviderDir);
  const m = (await import('onnxruntime-node')) as unknown as typeof import('onnxruntime-node') & { default?: typeof import('onnxruntime-node') };
  const ort = m.default ?? m;
  try {
    const session = await ort.InferenceSession.create(probeModel(), { executionProviders: executionProviders(d) as never });
    const out = await session.run({ x: new ort.Tensor('float32', Float32Array.from([1, 2, 3, 4]), [4]) });
    const y = out.y!.data as Float32Array;
    await session.release();
    if (y[3] !== 8) throw new Error(`the probe computed ${Array.from(y).join(', ')} for 2·(1, 2, 3, 4)`);
  } catch (err) {
    const what = d.kind === 'webgpu' ? 'no usable WebGPU adapter (a GPU with a Vulkan driver)' : `CUDA device ${d.index} cannot run ONNX Runtime's CUDA provider`;
    throw new DeviceError(`--device ${deviceName(d)}: ${what}: ${ortMessage(err)}`);
  }
}
