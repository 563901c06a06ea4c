/**
 * ONNX Runtime sessions over a checkpoint's own bytes. ONNX Runtime reads
 * external data only from files beside the model file (it refuses absolute
 * paths and paths that leave the model's folder, symbolic links included),
 * so each session gets a private folder holding the graph and a hard link to
 * the checkpoint (and to any other weight file its graph reads, such as a
 * Control-LoRA's): no copy of the weights. Where a hard link cannot be made
 * (another file system, a file system without links) the checkpoint is read
 * into memory once and handed over as external data.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as Ort from 'onnxruntime-node';
import { executionProviders, type DeviceSpec } from './device.ts';
import { FLOAT32_LOCATION, type Float32Copy } from './float32-copy.ts';
import { counted, nativeCall } from './native-calls.ts';
import type { SafetensorsFile } from './safetensors.ts';

/** The external-data name every graph uses for its checkpoint. */
export const WEIGHTS_LOCATION = 'weights.safetensors';

export interface RuntimeOptions {
  /** Threads per operator (ORT intra-op); 0 = ORT's default. */
  threads?: number;
  /** Where per-session folders go (default: the OS temp folder). */
  workDir?: string;
  /** This session's device instead of the configured one (--cpu-vae puts the VAE's on the CPU). */
  device?: DeviceSpec;
}

let device: DeviceSpec = { kind: 'cpu' };

/**
 * WORKFLOW_MODEL_THREADS=n: n threads per operator where the caller sets none (ORT's default is a thread per core,
 * whose pool spins between operators). The test runner sets 1: two test files share the cores, and the spinning
 * cost about a third of the model tests' CPU time for no speed.
 */
function envThreads(): { intraOpNumThreads?: number; interOpNumThreads?: number } {
  const n = Number(process.env.WORKFLOW_MODEL_THREADS);
  return Number.isInteger(n) && n > 0 ? { intraOpNumThreads: n, interOpNumThreads: 1 } : {};
}

/** The device every session made from now on runs on (`--device`; probed at start-up, device.ts). */
export function configureDevice(d: DeviceSpec): void {
  device = d;
}

export function sessionDevice(): DeviceSpec {
  return device;
}

export type Session = Ort.InferenceSession;
export type OrtTensor = Ort.Tensor;

// ONNX Runtime's native library (some 45 MB) loads with the first model, not with the server.
let ortModule: typeof Ort | undefined;
async function loadOrt(): Promise<typeof Ort> {
  if (!ortModule) {
    // A CommonJS package: its exports arrive as the default export (and named ones, depending on the loader).
    const m = (await import('onnxruntime-node')) as unknown as typeof Ort & { default?: typeof Ort };
    ortModule = m.default ?? m;
  }
  return ortModule;
}

/** A tensor for a session's inputs (a session exists, so the runtime is loaded). */
export function ortTensor(type: 'float32', data: Float32Array, dims: readonly number[]): OrtTensor;
export function ortTensor(type: 'int64', data: BigInt64Array, dims: readonly number[]): OrtTensor;
export function ortTensor(type: 'bool', data: Uint8Array, dims: readonly number[]): OrtTensor;
export function ortTensor(type: 'float32' | 'int64' | 'bool', data: Float32Array | BigInt64Array | Uint8Array, dims: readonly number[]): OrtTensor {
  if (!ortModule) throw new Error('ONNX Runtime is not loaded yet');
  return new ortModule.Tensor(type as 'float32', data as Float32Array, dims);
}

/**
 * Another external-data file a graph reads: bytes made for it (LoRA-patched weights), written beside the model for
 * the session's creation only, or a file on disk (a Control-LoRA's own), hard-linked beside it as the checkpoint is
 * (read into memory only where no link can be made).
 */
export type ExtraWeights = { name: string; data: Uint8Array } | { name: string; path: string };

/**
 * @param float32 the checkpoint's float32 copy the graph's half weights point into (written up to date here, then linked beside the model)
 */
export async function createSession(model: Uint8Array, file: SafetensorsFile, opts: RuntimeOptions = {}, extra: readonly ExtraWeights[] = [], float32?: Float32Copy): Promise<Session> {
  const ort = await loadOrt();
  const base = opts.workDir ?? os.tmpdir();
  await fs.promises.mkdir(base, { recursive: true });
  const dir = await fs.promises.mkdtemp(path.join(base, 'svc-onnx-'));
  const on = opts.device ?? device;
  const sessionOptions: Ort.InferenceSession.SessionOptions = {
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    ...(opts.threads ? { intraOpNumThreads: opts.threads, interOpNumThreads: 1 } : envThreads()),
    ...(on.kind !== 'cpu' ? { executionProviders: executionProviders(on) as Ort.InferenceSession.SessionOptions['executionProviders'] } : {}),
  };
  try {
    const modelPath = path.join(dir, 'model.onnx');
    await fs.promises.writeFile(modelPath, model);
    let linked = true;
    try {
      await fs.promises.link(file.path, path.join(dir, WEIGHTS_LOCATION));
    } catch {
      linked = false;
    }
    const copy = float32 && !float32.empty ? float32 : undefined;
    if (copy) {
      await copy.flush();
      if (linked) {
        try {
          await fs.promises.link(copy.path, path.join(dir, FLOAT32_LOCATION));
        } catch {
          linked = false;
        }
      }
    }
    for (const e of extra) {
      if (e.name.includes('/') || e.name === WEIGHTS_LOCATION || e.name === FLOAT32_LOCATION) throw new Error(`bad external data name ${e.name}`);
      if (!linked) continue;
      if ('data' in e) await fs.promises.writeFile(path.join(dir, e.name), e.data);
      else {
        try {
          await fs.promises.link(e.path, path.join(dir, e.name));
        } catch {
          linked = false;
        }
      }
    }
    if (linked) return counted(await nativeCall(() => ort.InferenceSession.create(modelPath, sessionOptions)));
    const bytes = await fs.promises.readFile(file.path);
    const external = [{ path: WEIGHTS_LOCATION, data: bytes as Uint8Array }];
    for (const e of extra) external.push({ path: e.name, data: 'data' in e ? e.data : ((await fs.promises.readFile(e.path)) as Uint8Array) });
    if (copy) external.push({ path: FLOAT32_LOCATION, data: await fs.promises.readFile(copy.path) });
    return counted(await nativeCall(() => ort.InferenceSession.create(model, { ...sessionOptions, externalData: external })));
  } finally {
    // Once created the session holds its weights: the folder is not needed any more.
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
}
