import os from 'node:os';
import path from 'node:path';
import type { ServiceConfig } from '@svc/kernel';
import { parseCachePolicy, type CachePolicy } from './engine/cache.ts';
import { DEFAULT_LIMITS, type ExecutorLimits } from './engine/executor.ts';
import { parseDevice, type DeviceSpec } from './models/device.ts';
import { resolvePrecision, type UNetPrecision } from './models/precision.ts';

/** How prompts execute: threads (slots) and the bounds of one prompt. */
export interface ExecutionConfig {
  /** Execution threads, each running one prompt at a time; 0 runs prompts on the main thread (no isolation). */
  threads: number;
  /** An interrupted thread that has not answered within this is terminated (a node stuck in synchronous code). */
  interruptGraceMs: number;
  /** A prompt's wall-clock limit (0: none). */
  timeLimitMs: number;
  /** Each execution thread's JavaScript heap limit in MB (0: V8's default). */
  memoryLimitMb: number;
  /** Niceness added to each execution thread (Linux): the thread that answers HTTP and sockets is scheduled first. */
  nice: number;
  limits: Required<ExecutorLimits>;
}

export interface WorkflowConfig extends ServiceConfig {
  runtime: 'local' | 'cloud';
  dirs: { input: string; output: string; temp: string; user: string; models: string; customNodes: string };
  /** `--api-key` / WORKFLOW_API_KEY: required as a Bearer token or ?token= on every route and the WebSocket. */
  apiKey?: string;
  /** `--enable-cors-header [origin]`: answers CORS and turns the Origin guard off. */
  corsOrigin?: string;
  multiUser: boolean;
  maxHistory: number;
  cache: CachePolicy;
  enableTestNodes: boolean;
  maxUploadSize: number;
  execution: ExecutionConfig;
  /** `--device` (WORKFLOW_DEVICE): where models run, cpu (default), webgpu or cuda[:N]; `--cuda-provider-dir` (WORKFLOW_CUDA_PROVIDER_DIR): ONNX Runtime's CUDA provider libraries. */
  device: DeviceSpec;
  /** The diffusion model's compute precision: fp16 on a GPU, fp32 on the CPU; `--force-fp16`, `--force-fp32`, `--fp16-unet`, `--fp32-unet`, `--force-upcast-attention`, `--dont-upcast-attention` (precision.ts). */
  precision: UNetPrecision;
  cudaProviderDir?: string;
  /** `--ffmpeg-path` / WORKFLOW_FFMPEG_PATH: the ffmpeg the video and MP3 nodes run (default: `ffmpeg` on PATH; ffprobe beside it). */
  ffmpegPath?: string;
  /** `--preview-method` (none, auto, latent2rgb, taesd; default none as the reference) and `--preview-size` (512): sampler previews. */
  preview: { method: 'none' | 'auto' | 'latent2rgb' | 'taesd'; size: number };
  /** `--max-model-memory` (MB; WORKFLOW_MAX_MODEL_MEMORY): loaded models beyond it are unloaded, least recently used first, per execution thread; 0 = no limit. */
  maxModelMemoryMb: number;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function nonNegative(v: string | undefined, name: string, fallback: number): number {
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a number >= 0, got ${v}`);
  return n;
}

/**
 * --execution-threads, --prompt-time-limit (s), --prompt-memory-limit (MB), --interrupt-grace-ms and the
 * per-prompt bounds. The local runtime runs one prompt at a time, in queue order, without time or memory
 * bounds (a user's own long jobs); the hosted runtime runs one per core with both bounds on.
 */
function executionConfig(f: Record<string, unknown>, env: NodeJS.ProcessEnv, runtime: 'local' | 'cloud'): ExecutionConfig {
  const cloud = runtime === 'cloud';
  const flag = (name: string, envName: string) => str(f[name]) ?? (typeof f[name] === 'number' ? String(f[name]) : undefined) ?? env[envName];
  const int = (name: string, envName: string, fallback: number) => Math.floor(nonNegative(flag(name, envName), name, fallback));
  return {
    threads: int('executionThreads', 'WORKFLOW_EXECUTION_THREADS', cloud ? Math.max(1, os.availableParallelism()) : 1),
    interruptGraceMs: int('interruptGraceMs', 'WORKFLOW_INTERRUPT_GRACE_MS', 100),
    timeLimitMs: Math.round(nonNegative(flag('promptTimeLimit', 'WORKFLOW_PROMPT_TIME_LIMIT'), 'prompt-time-limit', cloud ? 3600 : 0) * 1000),
    memoryLimitMb: int('promptMemoryLimit', 'WORKFLOW_PROMPT_MEMORY_LIMIT', cloud ? 4096 : 0),
    nice: Math.min(19, int('executionNice', 'WORKFLOW_EXECUTION_NICE', 5)),
    limits: {
      maxOutputBytes: int('maxOutputBytes', 'WORKFLOW_MAX_OUTPUT_BYTES', DEFAULT_LIMITS.maxOutputBytes),
      maxOutputItems: int('maxOutputItems', 'WORKFLOW_MAX_OUTPUT_ITEMS', DEFAULT_LIMITS.maxOutputItems),
      maxExpandedNodes: int('maxExpandedNodes', 'WORKFLOW_MAX_EXPANDED_NODES', DEFAULT_LIMITS.maxExpandedNodes),
      maxExpansionDepth: int('maxExpansionDepth', 'WORKFLOW_MAX_EXPANSION_DEPTH', DEFAULT_LIMITS.maxExpansionDepth),
    },
  };
}

function positiveInt(v: string | undefined, name: string, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${v}`);
  return n;
}

/**
 * Makes `--ffmpeg-path` known to the video and MP3 nodes (src/nodes/ffmpeg.ts) of this process and of the
 * execution threads it starts afterwards (a thread's environment is a copy of the process's).
 */
export function publishFfmpegPath(config: WorkflowConfig): void {
  process.env.WORKFLOW_FFMPEG_RESOLVED = config.ffmpegPath ?? 'ffmpeg';
  // --preview-method and --preview-size reach the sampler nodes (src/models/preview.ts) the same way.
  process.env.WORKFLOW_PREVIEW_RESOLVED = `${config.preview.method}:${config.preview.size}`;
}

function previewConfig(method: string | undefined, size: string | undefined): WorkflowConfig['preview'] {
  const m = method ?? 'none';
  if (m !== 'none' && m !== 'auto' && m !== 'latent2rgb' && m !== 'taesd') throw new Error(`--preview-method must be one of none, auto, latent2rgb, taesd, got ${m}`);
  const px = positiveInt(size, 'preview-size', 512);
  if (px > 4096) throw new Error(`--preview-size must be at most 4096, got ${px}`);
  return { method: m, size: px };
}

/** Workflow flags on top of the kernel's: the reference's names where it has them. */
export function workflowConfig(base: ServiceConfig, env = process.env): WorkflowConfig {
  const f = base.flags;
  const runtime = str(f.runtime) ?? env.WORKFLOW_RUNTIME ?? 'local';
  if (runtime !== 'local' && runtime !== 'cloud') throw new Error(`--runtime must be local or cloud, got ${runtime}`);
  const d = base.dataDir;
  const cacheFlag = f.cacheNone === true ? 'none' : str(f.cacheLru) !== undefined ? `lru:${f.cacheLru}` : (str(f.cache) ?? env.WORKFLOW_CACHE);
  const cors = f.enableCorsHeader;
  const device = parseDevice(str(f.device) ?? env.WORKFLOW_DEVICE ?? 'cpu');
  return {
    ...base,
    runtime,
    dirs: {
      input: path.resolve(str(f.inputDirectory) ?? path.join(d, 'input')),
      output: path.resolve(str(f.outputDirectory) ?? path.join(d, 'output')),
      temp: path.resolve(str(f.tempDirectory) ?? path.join(d, 'temp')),
      user: path.resolve(str(f.userDirectory) ?? path.join(d, 'user')),
      models: path.join(d, 'models'),
      customNodes: path.join(d, 'custom_nodes'),
    },
    apiKey: str(f.apiKey) ?? env.WORKFLOW_API_KEY ?? undefined,
    corsOrigin: cors === true ? '*' : str(cors),
    multiUser: f.multiUser === true,
    maxHistory: positiveInt(str(f.maxHistory) ?? env.WORKFLOW_MAX_HISTORY, 'max-history', 10_000),
    cache: { ...parseCachePolicy(cacheFlag), noSubgraphCaching: f.disableSubgraphCaching === true },
    enableTestNodes: f.enableTestNodes === true || env.WORKFLOW_TEST_NODES === '1',
    execution: executionConfig(f, env, runtime),
    ffmpegPath: str(f.ffmpegPath) ?? env.WORKFLOW_FFMPEG_PATH ?? undefined,
    device,
    precision: resolvePrecision(f, device, env),
    cudaProviderDir: str(f.cudaProviderDir) ?? env.WORKFLOW_CUDA_PROVIDER_DIR ?? undefined,
    maxModelMemoryMb: nonNegative(str(f.maxModelMemory) ?? env.WORKFLOW_MAX_MODEL_MEMORY, 'max-model-memory', 0),
    preview: previewConfig(str(f.previewMethod) ?? env.WORKFLOW_PREVIEW_METHOD, str(f.previewSize) ?? env.WORKFLOW_PREVIEW_SIZE),
    maxUploadSize: positiveInt(str(f.maxUploadSize) ?? env.WORKFLOW_MAX_UPLOAD_MB, 'max-upload-size', 100) * 1024 * 1024,
  };
}
