/**
 * A loaded SD1.x checkpoint and what the nodes do with it: encode text,
 * predict noise, sample, decode and encode latents. Sessions are made on
 * first use and kept with the checkpoint; checkpoints are cached by path,
 * size and modification time and shared by prompts. Nothing here knows of
 * HTTP, the engine or the database.
 */
import fs from 'node:fs';
import { ClipTokenizer, tokenizeWithWeights, type TokenizeOptions, type WeightedToken } from './clip-tokenizer.ts';
import { buildClipGraph } from './clip-graph.ts';
import { calcCondBatch, controlToUncond, prepareConds } from './conditioning.ts';
import type { ControlResiduals, ControlSource, ResidualTensor } from './control-residuals.ts';
import { detectCheckpoint, resolveModelType } from './detect-families.ts';
import { CLIP_PREFIX, UNET_PREFIX, VAE_PREFIX, type DetectedCheckpoint, type UNetConfig } from './detect.ts';
import { OnnxGraph } from './graph-builder.ts';
import type { WeightPatches } from './lora.ts';
import { detectPart, partView, type ModelPart } from './parts.ts';
import { defaultSampling, encodeAdm, inpaintConcat, SD15_FORMAT, SDXL_FORMAT, type LatentFormat, type ModelSampling } from './model-sampling.ts';
import { prepareNoise, TorchGenerator } from './noise.ts';
import { CFG_PP_SAMPLERS, getSampler, type SamplerContext, type SamplerOptions, type StepInfo } from './samplers.ts';
import { DiscreteSchedule, ksamplerSigmas } from './schedules.ts';
import { ModelFileError, SafetensorsFile } from './safetensors.ts';
import { deviceName } from './device.ts';
import { Float32Copy, Float32CopyError } from './float32-copy.ts';
import { createSession, ortTensor, sessionDevice, WEIGHTS_LOCATION, type ExtraWeights, type OrtTensor, type RuntimeOptions, type Session } from './session.ts';
import { buildUNetGraph, timestepEmbedding } from './unet-graph.ts';
import { textEncoderPrecision, unetPrecision, vaePrecision } from './precision.ts';
import { buildVaeDecoderGraph, buildVaeEncoderGraph } from './vae-graph.ts';

/** SD1.x latents: 4 channels, scaled by 0.18215 for the UNet (the reference's latent_formats.SD15). */
export const SD15_SCALE_FACTOR = 0.18215;
export const SD15_LATENT_RGB = [
  [0.3512, 0.2297, 0.3227],
  [0.325, 0.4974, 0.235],
  [-0.2829, 0.1762, 0.2721],
  [-0.212, -0.2616, -0.7177],
];

/** A float32 tensor in row-major order. */
export interface FloatTensor {
  shape: number[];
  data: Float32Array;
}

let runtimeOptions: RuntimeOptions = {};

/** Threads and work folder for sessions made from now on. */
export function configureRuntime(opts: RuntimeOptions): void {
  runtimeOptions = { ...opts };
}

export class Checkpoint {
  private readonly sessions = new Map<string, Promise<Session>>();
  /** Float32 values of the half-precision weights, shared by all this checkpoint's sessions (float32-copy.ts). */
  private readonly float32: Float32Copy;

  private constructor(
    readonly file: SafetensorsFile,
    readonly detected: DetectedCheckpoint,
  ) {
    this.float32 = new Float32Copy(file.path, runtimeOptions.workDir);
  }

  static async open(path: string): Promise<Checkpoint> {
    const file = await SafetensorsFile.open(path);
    return new Checkpoint(file, await resolveModelType(file, detectCheckpoint(file)));
  }

  /** A file read by the caller's own detection (DualCLIPLoader's text-encoder files, sdxl.ts). */
  static async openWith(path: string, detect: (file: SafetensorsFile) => DetectedCheckpoint): Promise<Checkpoint> {
    const file = await SafetensorsFile.open(path);
    return new Checkpoint(file, detect(file));
  }

  /**
   * A diffusion model, text encoder or VAE alone (UNETLoader, CLIPLoader,
   * VAELoader): its keys are viewed under the checkpoint's prefixes (no copy),
   * so the same graphs run it. Only the single-file (ldm/OpenAI) layouts are read.
   */
  static async openPart(path: string, part: ModelPart): Promise<Checkpoint> {
    const view = partView(await SafetensorsFile.open(path), part);
    if (part === 'unet') return new Checkpoint(view, await resolveModelType(view, detectCheckpoint(view)));
    return new Checkpoint(view, detectPart(view, part));
  }

  get name(): string {
    return this.file.path;
  }

  /** LoRA patches of the model part this view runs (withPatches); sessions are keyed by them. */
  readonly patches?: WeightPatches;

  /** A view of this checkpoint whose graphs read `patches` for the weights they patch; it shares the checkpoint's sessions. */
  withPatches(patches: WeightPatches): Checkpoint {
    const base = this.patches ? (Object.getPrototypeOf(this) as Checkpoint) : this;
    return Object.assign(Object.create(base) as Checkpoint, { patches });
  }

  /** A session, made once per kind (and patch set); a failed build is forgotten so the next call tries again. `extra`: other files its graph reads. */
  session(kind: string, build: () => Uint8Array, extra: () => Promise<ExtraWeights[]> = async () => []): Promise<Session> {
    const patches = this.patches && !this.patches.empty ? this.patches : undefined;
    const key = patches ? `${kind}#${patches.key}` : kind;
    let s = this.sessions.get(key);
    if (!s) {
      s = (async () => {
        try {
          const data = patches ? await patches.data() : undefined;
          let model: Uint8Array;
          OnnxGraph.activePatches = patches;
          OnnxGraph.activeFloat32 = this.float32;
          try {
            model = build();
          } finally {
            OnnxGraph.activePatches = undefined;
            OnnxGraph.activeFloat32 = undefined;
          }
          // --cpu-vae: the VAE's (and a TAESD's) sessions on the CPU, as the reference's vae_device.
          const opts = vaePrecision().cpu && /^(vae|taesd):/.test(kind) ? { ...runtimeOptions, device: { kind: 'cpu' as const } } : runtimeOptions;
          return await createSession(model, this.file, opts, [...(patches ? [{ name: patches.location, data: data! }] : []), ...(await extra())], this.float32);
        } catch (err) {
          // Shapes that passed detection but do not fit together end here: name the file, not only ONNX Runtime's node.
          if (err instanceof ModelFileError || err instanceof Float32CopyError) throw err;
          onDeviceError(kind, err);
          throw new ModelFileError(this.file.path, `its ${kind} weights do not form a valid model (${(err as Error).message.split('\n')[0]})`);
        }
      })();
      this.sessions.set(key, s);
      s.catch(() => this.sessions.delete(key));
      // Patched sessions of one part: the two most recent patch sets stay (each holds a copy of the patched weights).
      if (patches) {
        const older = [...this.sessions.keys()].filter((k) => k.startsWith(`${kind}#`) && k !== key);
        for (const k of older.slice(0, Math.max(0, older.length - 1))) {
          const old = this.sessions.get(k)!;
          this.sessions.delete(k);
          void old.then((x) => x.release()).catch(() => {});
        }
      }
    }
    return s;
  }

  /** The kinds of session made so far (`unet`, `clip`, `vae_decoder`, …; a patch set's after `#`). */
  sessionKinds(): string[] {
    return [...this.sessions.keys()];
  }

  /** Runs a session; a failure names the file (weights whose shapes passed detection may still not fit together). */
  async run(kind: string, build: () => Uint8Array, feeds: Record<string, OrtTensor>, extra?: () => Promise<ExtraWeights[]>): Promise<Record<string, OrtTensor>> {
    const s = await this.session(kind, build, extra);
    try {
      return await s.run(feeds);
    } catch (err) {
      onDeviceError(kind, err);
      throw new ModelFileError(this.file.path, `its ${kind} weights do not form a valid model (${(err as Error).message.split('\n')[0]})`);
    }
  }

  async release(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(all.map((p) => p.then((s) => s.release()).catch(() => {})));
    await this.float32.dispose();
  }
}

/** On a GPU a failing session is the device's failure (memory, driver, an operator it cannot run), not the file's: said so. */
function onDeviceError(kind: string, err: unknown): void {
  const d = sessionDevice();
  if (d.kind === 'cpu') return;
  throw new Error(`the ${kind.split(':')[0]} failed on ${deviceName(d)}: ${String((err as Error)?.message ?? err).split('\n')[0]}`);
}

interface CacheEntry {
  key: string;
  path: string;
  part: string;
  checkpoint: Promise<Checkpoint>;
  /** Bytes its sessions may hold once loaded (every float weight as float32). */
  bytes?: number;
}
/** Loaded checkpoints, least recently used first. */
const cache = new Map<string, CacheEntry>();

/** A loaded checkpoint (or part) and what its weights take as float32 (/system_stats). */
export interface LoadedModel {
  path: string;
  part: string;
  bytes: number;
}

let cacheListener: ((models: LoadedModel[]) => void) | undefined;

/** Called with the loaded models whenever one is loaded or unloaded (an execution thread reports them to the main thread). */
export function onLoadedModelsChange(fn: ((models: LoadedModel[]) => void) | undefined): void {
  cacheListener = fn;
}

/** The models loaded now, least recently used first (a load in progress is not listed yet). */
export function loadedModels(): LoadedModel[] {
  return [...cache.values()].filter((e) => e.bytes !== undefined).map((e) => ({ path: e.path, part: e.part, bytes: e.bytes! }));
}

function cacheChanged(): void {
  cacheListener?.(loadedModels());
}

let memoryBudget = 0;

/** `--max-model-memory`: loaded models beyond this many bytes are unloaded, least recently used first (0: no limit). */
export function configureModelMemory(bytes: number): void {
  memoryBudget = bytes > 0 ? bytes : 0;
}

/** What a checkpoint's sessions may hold: its float weights as float32 (ONNX Runtime folds fp16/bf16 into float32). */
export function checkpointFootprint(c: Checkpoint): number {
  let n = 0;
  for (const t of c.file.tensors.values()) if (t.dtype === 'F32' || t.dtype === 'F16' || t.dtype === 'BF16' || t.dtype === 'F64') n += t.shape.reduce((a, b) => a * b, 1) * 4;
  return n;
}

/** Unloads the least recently used checkpoints until the loaded ones fit the budget (`keep` stays). */
function evictOver(keep: string): void {
  if (!memoryBudget) return;
  let total = 0;
  for (const e of cache.values()) total += e.bytes ?? 0;
  for (const [at, e] of cache) {
    if (total <= memoryBudget) break;
    if (at === keep || e.bytes === undefined) continue;
    cache.delete(at);
    total -= e.bytes;
    void e.checkpoint.then((c) => c.release()).catch(() => {});
  }
}

/** The checkpoint (or one part, see Checkpoint.openPart) at `path`, loaded once while the file is unchanged. A load that fails leaves nothing cached. */
export function loadCheckpoint(path: string, part: ModelPart | 'checkpoint' = 'checkpoint'): Promise<Checkpoint> {
  return cachedCheckpoint(path, part, () => (part === 'checkpoint' ? Checkpoint.open(path) : Checkpoint.openPart(path, part)));
}

/**
 * The cache behind loadCheckpoint for any way of opening a file (`open`, e.g.
 * a loader's own detection: DualCLIPLoader's and CLIPLoader's text-encoder
 * files), kept apart by `part`: loaded once while the file is unchanged,
 * counted in the memory budget, unloaded with the rest.
 */
export async function cachedCheckpoint(path: string, part: string, open: () => Promise<Checkpoint>): Promise<Checkpoint> {
  const st = await fs.promises.stat(path).catch(() => {
    throw new ModelFileError(path, 'file not found');
  });
  const key = `${st.size}:${st.mtimeMs}:${st.ino}`;
  // Parts are cached apart from whole checkpoints (the same file may be both).
  const at = part === 'checkpoint' ? path : `${part}:${path}`;
  const hit = cache.get(at);
  if (hit && hit.key === key) {
    // Most recently used: last in the eviction order.
    cache.delete(at);
    cache.set(at, hit);
    return hit.checkpoint;
  }
  if (hit) {
    void hit.checkpoint.then((c) => c.release()).catch(() => {});
    cache.delete(at);
    cacheChanged();
  }
  const opened = open();
  const entry: CacheEntry = {
    key,
    path,
    part,
    checkpoint: opened.then((c) => {
      const bytes = checkpointFootprint(c);
      if (memoryBudget && bytes > memoryBudget) {
        const mb = (v: number) => `${Math.ceil(v / 2 ** 20)} MB`;
        throw new ModelFileError(path, `its weights need about ${mb(bytes)} as float32, more than --max-model-memory (${mb(memoryBudget)})`);
      }
      entry.bytes = bytes;
      evictOver(at);
      cacheChanged();
      return c;
    }),
  };
  cache.set(at, entry);
  entry.checkpoint.catch(() => {
    if (cache.get(at) === entry) cache.delete(at);
  });
  return entry.checkpoint;
}

/** Unloads every cached checkpoint (POST /free with unload_models). */
export async function unloadAll(): Promise<void> {
  const entries = [...cache.values()];
  cache.clear();
  cacheChanged();
  await Promise.all(entries.map((e) => e.checkpoint.then((c) => c.release()).catch(() => {})));
}

export function loadedCheckpoints(): string[] {
  return [...cache.keys()];
}

/**
 * A text embedding with, for SDXL, the entry's adm vector `y` ([1 or B, adm]),
 * for inpainting UNets its extra input channels `concat` ([B, k, h, w]), and
 * the control its entries carry with how many entries the batch holds.
 */
export type ModelContext = FloatTensor & { y?: Float32Array; concat?: Float32Array; control?: ControlSource; batched?: number };

/** A sampler_cfg_function (RescaleCFG): the denoised predictions, the unscaled input, σ, cfg, batch size → the guided prediction. */
export type CfgFunction = (cond: Float32Array, uncond: Float32Array, x: Float32Array, sigma: number, cfg: number, batch: number) => Float32Array;

/** MODEL: the UNet of a checkpoint, its sampling (σ schedule, ε/v/lcm output) and latent format. */
export class UNetModel {
  /** The σ schedule and how the output becomes the denoised latent (ModelSamplingDiscrete replaces it on a clone). */
  sampling: ModelSampling;
  readonly latentFormat: LatentFormat;
  /** RescaleCFG's sampler_cfg_function, when patched. */
  cfgFunction?: CfgFunction;

  constructor(readonly checkpoint: Checkpoint) {
    const d = checkpoint.detected;
    this.sampling = defaultSampling(d.modelType, d.zsnr);
    this.latentFormat = d.family === 'sdxl' || d.family === 'sdxl_refiner' ? SDXL_FORMAT : SD15_FORMAT;
  }

  get schedule(): DiscreteSchedule {
    return this.sampling.schedule;
  }

  /** The reference's model.clone() with patches: the same sessions, another sampling or CFG function. */
  clone(patch: { sampling?: ModelSampling; cfgFunction?: CfgFunction } = {}): this {
    return Object.assign(Object.create(Object.getPrototypeOf(this)) as this, this, patch);
  }

  /**
   * SDXL: each entry's tensor gains its adm vector `y` (pooled output and
   * size/crop or aesthetic embeddings, encode_model_conds' defaults from the
   * latent's size); other families' entries pass unchanged.
   */
  withAdm(entries: ConditioningEntry[], latentShape: readonly number[], promptType: 'positive' | 'negative', inpaint?: { latentIn: Float32Array; denoiseMask?: FloatTensor }): ConditioningEntry[] {
    const d = this.checkpoint.detected;
    // An inpainting UNet (more input channels than latent channels) gets each entry's mask and masked image (concat_cond).
    const concat = d.unet.inChannels > latentShape[1]! && inpaint;
    if (!d.unet.admInChannels && !concat) return entries;
    const family = d.family === 'sdxl_refiner' ? 'sdxl_refiner' : 'sdxl';
    return entries.map(([t, opts]) => {
      const c: ModelContext = { ...t };
      if (d.unet.admInChannels) c.y = encodeAdm(family, opts ?? {}, latentShape, promptType, d.unet.admInChannels);
      if (concat) c.concat = inpaintConcat(opts ?? {}, latentShape, inpaint.latentIn, inpaint.denoiseMask, this.latentFormat.scaleFactor);
      return [c, opts];
    });
  }

  /** apply_model: the input scaled for σ, the UNet's output, the denoised latent (ε, v, lcm … by the sampling). */
  async denoised(x: Float32Array, shape: number[], sigma: number, context: ModelContext): Promise<Float32Array> {
    const s = this.sampling;
    const xin = s.input(sigma, x);
    const timestep = s.schedule.timestep(sigma);
    let control: ControlResiduals | null = null;
    if (context.control) {
      // get_control: the ControlNets see what the UNet sees (the scaled input, the timestep, the batch's context and adm rows).
      const y = this.checkpoint.detected.unet.admInChannels ? this.admRows(context, shape[0]!) : undefined;
      control = await context.control.residuals({ x: xin, shape, sigma, timestep, context: { shape: context.shape, data: context.data }, y, batched: context.batched ?? 1, schedule: s.schedule, model: this.checkpoint });
    }
    const out = await this.eps(xin, shape, timestep, context, control);
    return s.denoised(sigma, out, x);
  }

  /** The batch's adm rows [b, adm]: each entry's vector repeated to the batch. */
  private admRows(context: ModelContext, b: number): Float32Array {
    const adm = this.checkpoint.detected.unet.admInChannels;
    if (!context.y || context.y.length % adm !== 0) throw new Error(`this model (${this.checkpoint.detected.family}) needs each conditioning's adm vector of ${adm} values: use its own text encoder's conditioning`);
    const rows = context.y.length / adm;
    if (rows === b) return context.y;
    const y = new Float32Array(b * adm);
    for (let i = 0; i < b; i++) y.set(context.y.subarray((i % rows) * adm, ((i % rows) + 1) * adm), i * adm);
    return y;
  }

  /** The UNet graph in the configured precision (--force-fp16, --fp16-unet, …; precision.ts): float32 in and out either way. */
  private graph(): OnnxGraph {
    const p = unetPrecision();
    return new OnnxGraph(this.checkpoint.file, WEIGHTS_LOCATION, UNET_PREFIX, { half: p.dtype === 'fp16', upcastAttention: p.upcastAttention });
  }

  private build = () => buildUNetGraph(this.graph(), this.checkpoint.detected.unet);


  /** The UNet's raw output (ε or v) for a batch: x [B,C,H,W] (already scaled), one timestep for all, context [B,T,D] (and SDXL's y), and control residuals. */
  async eps(x: Float32Array, shape: number[], timestep: number, context: ModelContext, control: ControlResiduals | null = null): Promise<Float32Array> {
    const b = shape[0]!;
    const cfg = this.checkpoint.detected.unet;
    const { modelChannels: dim, admInChannels: adm } = cfg;
    // One session serves every size: the fused attention holds no score matrix, so nothing is sliced per size.
    const kind = control ? 'unet:control' : 'unet';
    const build = control ? () => buildUNetGraph(this.graph(), cfg, { control: true }) : this.build;
    await this.checkpoint.session(kind, build);
    let xin = x;
    let xshape = shape;
    if (cfg.inChannels !== shape[1]) {
      // Inpainting UNets: [scaled x | mask | masked image] along the channels (the reference's c_concat).
      const k = cfg.inChannels - shape[1]!;
      const plane = shape[2]! * shape[3]!;
      if (!context.concat || context.concat.length !== b * k * plane) throw new Error(`this model takes ${cfg.inChannels} input channels; the latent has ${shape[1]} and no inpainting mask/image came with the conditioning`);
      xin = new Float32Array(b * cfg.inChannels * plane);
      for (let i = 0; i < b; i++) {
        xin.set(x.subarray(i * shape[1]! * plane, (i + 1) * shape[1]! * plane), i * cfg.inChannels * plane);
        xin.set(context.concat.subarray(i * k * plane, (i + 1) * k * plane), (i * cfg.inChannels + shape[1]!) * plane);
      }
      xshape = [b, cfg.inChannels, shape[2]!, shape[3]!];
    }
    const feeds: Record<string, OrtTensor> = {
      x: ortTensor('float32', xin, xshape),
      t_emb: ortTensor('float32', timestepEmbedding(new Array(b).fill(timestep), dim), [b, dim]),
      context: ortTensor('float32', context.data, context.shape),
    };
    if (adm) feeds.y = ortTensor('float32', this.admRows(context, b), [b, adm]);
    if (control) Object.assign(feeds, controlFeeds(control, cfg, xshape));
    const out = await this.checkpoint.run(kind, build, feeds);
    return out.eps!.data as Float32Array;
  }
}

/**
 * The control residuals as the UNet graph's inputs (unet-graph.ts, `control`):
 * each list popped from its end as the reference's apply_control does, and a
 * residual whose shape does not fit its block skipped, as the reference skips
 * it with a warning.
 */
function controlFeeds(control: ControlResiduals, cfg: UNetConfig, xshape: readonly number[]): Record<string, OrtTensor> {
  const zero = ortTensor('float32', new Float32Array(1), [1, 1, 1, 1]);
  // Each input block's output shape: downsamples halve the sides (rounding up, a stride-2 conv with padding 1).
  let [h, w] = [xshape[2]!, xshape[3]!];
  const sizes = cfg.inputBlocks.map((blk) => {
    if (blk.kind === 'down') [h, w] = [Math.floor((h - 1) / 2) + 1, Math.floor((w - 1) / 2) + 1];
    return [blk.outChannels, h, w] as const;
  });
  const fits = (t: ResidualTensor | null | undefined, at: readonly [number, number, number]): t is ResidualTensor =>
    !!t && t.shape.length === 4 && (t.shape[0] === 1 || t.shape[0] === xshape[0]) && t.shape[1] === at[0] && t.shape[2] === at[1] && t.shape[3] === at[2];
  const feed = (t: ResidualTensor | null | undefined, at: readonly [number, number, number]) => (fits(t, at) ? ortTensor('float32', t.data, t.shape) : zero);
  const n = cfg.inputBlocks.length;
  const feeds: Record<string, OrtTensor> = {};
  const { input, middle, output } = control;
  for (let i = 0; i < n; i++) feeds[`ctl_in_${i}`] = feed(input[input.length - 1 - i], sizes[i]!);
  feeds.ctl_mid = feed(middle[middle.length - 1], sizes[n - 1]!);
  for (let j = 0; j < n; j++) feeds[`ctl_out_${j}`] = feed(output[output.length - n + j], sizes[j]!);
  return feeds;
}

/** One CONDITIONING entry: the text embedding [1, 77·k, D] and its options (the reference's dict). */
export type ConditioningEntry = [FloatTensor, Record<string, unknown>];

/** CLIP: the text encoder of a checkpoint, with the layer to stop at (CLIPSetLastLayer). */
export class ClipModel {
  constructor(
    readonly checkpoint: Checkpoint,
    readonly layer = -1,
  ) {}

  withLayer(layer: number): ClipModel {
    return new ClipModel(this.checkpoint, layer);
  }

  /** The text encoder's graph: float32 compute from weights stored as --fp16-text-enc, … say (precision.ts). */
  private graph(): OnnxGraph {
    return new OnnxGraph(this.checkpoint.file, WEIGHTS_LOCATION, CLIP_PREFIX, { storage: textEncoderPrecision().storage });
  }

  private build = () => buildClipGraph(this.graph(), this.checkpoint.detected.clip!, this.layer);

  /** Token chunks → hidden states [chunks, 77, D]. */
  async encodeTokens(chunks: number[][]): Promise<FloatTensor> {
    const ids = new BigInt64Array(chunks.length * 77);
    chunks.forEach((c, i) => c.forEach((t, j) => (ids[i * 77 + j] = BigInt(t))));
    const kind = textKind(`clip:${this.layer}`);
    await this.checkpoint.session(kind, this.build);
    const out = await this.checkpoint.run(kind, this.build, { tokens: ortTensor('int64', ids, [chunks.length, 77]) });
    const h = out.hidden!;
    return { shape: [...h.dims], data: h.data as Float32Array };
  }

  private buildEmbedded = () => buildClipGraph(this.graph(), this.checkpoint.detected.clip!, this.layer, true);

  /**
   * Chunks holding textual-inversion vectors (process_tokens): each vector
   * takes its token's place; one of another width is dropped and the chunk
   * padded at its end, as the reference does.
   */
  async encodeEmbedded(chunks: WeightedToken[][], withEmpty: boolean): Promise<FloatTensor> {
    const D = this.checkpoint.detected.clip!.hiddenSize;
    const rows = chunks.map((c) => {
      const kept = c.filter((t) => !t.embedding || t.embedding.length === D);
      while (kept.length < c.length) kept.push({ token: 49407, weight: 1 });
      return kept;
    });
    if (withEmpty) rows.push(emptyTokens().map((token) => ({ token, weight: 1 })));
    const n = rows.length;
    const ids = new BigInt64Array(n * 77);
    const embeds = new Float32Array(n * 77 * D);
    const use = new Uint8Array(n * 77);
    rows.forEach((c, i) =>
      c.forEach((t, j) => {
        if (t.embedding) {
          use[i * 77 + j] = 1;
          embeds.set(t.embedding, (i * 77 + j) * D);
        } else ids[i * 77 + j] = BigInt(t.token);
      }),
    );
    const kind = textKind(`clip:${this.layer}:embeddings`);
    await this.checkpoint.session(kind, this.buildEmbedded);
    const out = await this.checkpoint.run(kind, this.buildEmbedded, {
      tokens: ortTensor('int64', ids, [n, 77]),
      embeds: ortTensor('float32', embeds, [n, 77, D]),
      use_embeds: ortTensor('bool', use, [n, 77, 1]),
    });
    const h = out.hidden!;
    return { shape: [...h.dims], data: h.data as Float32Array };
  }

  /**
   * CLIPTextEncode: the reference's encode_token_weights. With any weight ≠ 1
   * an empty prompt is encoded too and each weighted token's vector becomes
   * empty + (vector − empty)·weight; chunks are joined along the tokens.
   */
  async encode(text: string, opts: TokenizeOptions = {}): Promise<ConditioningEntry[]> {
    const chunks: WeightedToken[][] = tokenizeWithWeights(text, ClipTokenizer.shared(), opts);
    const hasWeights = chunks.some((c) => c.some((t) => t.weight !== 1));
    const ids = chunks.map((c) => c.map((t) => t.token));
    if (hasWeights) ids.push(emptyTokens());
    const out = chunks.some((c) => c.some((t) => t.embedding)) ? await this.encodeEmbedded(chunks, hasWeights) : await this.encodeTokens(ids);
    const D = out.shape[2]!;
    const per = 77 * D;
    const data = new Float32Array(chunks.length * per);
    data.set(out.data.subarray(0, chunks.length * per));
    if (hasWeights) {
      const empty = out.data.subarray(chunks.length * per);
      chunks.forEach((c, k) =>
        c.forEach(({ weight }, j) => {
          if (weight === 1) return;
          for (let d = 0; d < D; d++) {
            const at = k * per + j * D + d;
            data[at] = (data[at]! - empty[j * D + d]!) * weight + empty[j * D + d]!;
          }
        }),
      );
    }
    return [[{ shape: [1, chunks.length * 77, D], data }, {}]];
  }
}

/** A text encoder's session kind: its weight storage named when it is not the file's own (sessions of two storages never mix). */
export function textKind(kind: string): string {
  const s = textEncoderPrecision().storage;
  return s === 'fp32' ? kind : `${kind}:${s}`;
}

/** A VAE's session kind and graph precision: float16 with --fp16-vae (precision.ts), the kind saying so. */
export function vaeGraphPrecision(kind: string): { kind: string; half: boolean } {
  const half = vaePrecision().dtype === 'fp16';
  return { kind: half ? `${kind}:fp16` : kind, half };
}

function emptyTokens(): number[] {
  const t = new Array(77).fill(49407);
  t[0] = 49406;
  return t;
}

/** VAE: the autoencoder of a checkpoint. */
export class VaeModel {
  constructor(readonly checkpoint: Checkpoint) {}

  get downscale(): number {
    return this.checkpoint.detected.vae!.downscale;
  }

  /** Channels of the latents it makes and reads. */
  get latentChannelsOut(): number {
    return this.checkpoint.detected.vae!.zChannels;
  }

  /** latent [B,4,h,w] → pixels [B,H,W,3] in [0,1] (channels last, as the reference's IMAGE). */
  async decode(latent: FloatTensor): Promise<FloatTensor> {
    const cfg = this.checkpoint.detected.vae!;
    const { kind, half } = vaeGraphPrecision('vae:decoder');
    const build = () => buildVaeDecoderGraph(new OnnxGraph(this.checkpoint.file, WEIGHTS_LOCATION, VAE_PREFIX, { half }), cfg);
    await this.checkpoint.session(kind, build);
    const [b, c, h, w] = latent.shape as [number, number, number, number];
    if (c !== cfg.zChannels) throw new Error(`the VAE decodes latents of ${cfg.zChannels} channels, got ${c}`);
    // A float16 overflow (an SD1.x VAE can) gives NaN, kept as the reference keeps it (no float32 retry): saved as black.
    const out = (await this.checkpoint.run(kind, build, { z: ortTensor('float32', latent.data, latent.shape) })).image!;
    const [, , H, W] = out.dims as [number, number, number, number];
    const src = out.data as Float32Array;
    const px = new Float32Array(b * H * W * 3);
    for (let n = 0; n < b; n++)
      for (let ch = 0; ch < 3; ch++)
        for (let i = 0; i < H * W; i++) {
          const v = (src[(n * 3 + ch) * H * W + i]! + 1) / 2;
          px[(n * H * W + i) * 3 + ch] = v < 0 ? 0 : v > 1 ? 1 : v;
        }
    void h;
    void w;
    return { shape: [b, H, W, 3], data: px };
  }

  /** first_stage_model.decode: latent [B, C, h, w] → the decoder's own output [B, 3, 8h, 8w] (about [−1, 1], unclamped): what tiled decoding blends. */
  async decodeRaw(latent: FloatTensor): Promise<FloatTensor> {
    const cfg = this.checkpoint.detected.vae!;
    const { kind, half } = vaeGraphPrecision('vae:decoder');
    const build = () => buildVaeDecoderGraph(new OnnxGraph(this.checkpoint.file, WEIGHTS_LOCATION, VAE_PREFIX, { half }), cfg);
    await this.checkpoint.session(kind, build);
    if (latent.shape[1] !== cfg.zChannels) throw new Error(`the VAE decodes latents of ${cfg.zChannels} channels, got ${latent.shape[1]}`);
    const out = (await this.checkpoint.run(kind, build, { z: ortTensor('float32', latent.data, latent.shape) })).image!;
    return { shape: [...out.dims], data: out.data as Float32Array };
  }

  /** first_stage_model.encode: pixels [B, 3, h, w] in [−1, 1] (h, w multiples of 8) → latent [B, C, h/8, w/8]. */
  async encodeRaw(image: FloatTensor): Promise<FloatTensor> {
    const cfg = this.checkpoint.detected.vae!;
    if (!cfg.hasEncoder) throw new Error('this VAE has no encoder');
    const { kind, half } = vaeGraphPrecision('vae:encoder');
    const build = () => buildVaeEncoderGraph(new OnnxGraph(this.checkpoint.file, WEIGHTS_LOCATION, VAE_PREFIX, { half }), cfg);
    await this.checkpoint.session(kind, build);
    const out = (await this.checkpoint.run(kind, build, { image: ortTensor('float32', image.data, image.shape) })).z!;
    return { shape: [...out.dims], data: out.data as Float32Array };
  }

  /** pixels [B,H,W,3] in [0,1] → latent [B,4,H/8,W/8], cropping to a multiple of 8 about the centre as the reference. */
  async encode(pixels: FloatTensor): Promise<FloatTensor> {
    const img = cropToCells(pixels, this.downscale);
    return this.encodeRaw({ shape: img.shape, data: img.data.map((v) => v * 2 - 1) });
  }
}

/**
 * vae_encode_crop_pixels then movedim(-1, 1): pixels [B, H, W, ≥3] cropped to
 * multiples of the VAE's cell `r` about the centre, as planar [B, 3, h, w].
 */
export function cropToCells(pixels: FloatTensor, r: number): FloatTensor {
  const [b, H, W, C] = pixels.shape as [number, number, number, number];
  const h = Math.floor(H / r) * r;
  const w = Math.floor(W / r) * r;
  if (h === 0 || w === 0) throw new Error(`an image of ${W}x${H} is smaller than the VAE's ${r}-pixel cell`);
  const oy = Math.floor((H % r) / 2);
  const ox = Math.floor((W % r) / 2);
  const img = new Float32Array(b * 3 * h * w);
  for (let n = 0; n < b; n++)
    for (let ch = 0; ch < 3; ch++)
      for (let y = 0; y < h; y++)
        for (let x = 0; x < w; x++) img[((n * 3 + ch) * h + y) * w + x] = pixels.data[((n * H + y + oy) * W + x + ox) * C + ch]!;
  return { shape: [b, 3, h, w], data: img };
}

export interface SampleOptions {
  model: UNetModel;
  positive: ConditioningEntry[];
  negative: ConditioningEntry[];
  cfg: number;
  samplerName: string;
  scheduler: string;
  steps: number;
  denoise?: number;
  seed: number | bigint | string;
  latent: FloatTensor;
  batchIndex?: number[];
  disableNoise?: boolean;
  startStep?: number;
  lastStep?: number;
  forceFullDenoise?: boolean;
  /** The σ to step through (SamplerCustom's SIGMAS), instead of scheduler, steps and denoise. */
  sigmas?: Float32Array;
  /** The sampler's extra options (the Sampler* nodes' eta, s_noise, order, …). */
  samplerOptions?: SamplerOptions;
  /**
   * DualCFGGuider: a middle conditioning between the positive and the negative;
   * `cfg` scales positive − middle and `cfg2` middle − negative ("regular"), or
   * the nested form negative + cfg2·(middle + cfg·(positive − middle) − negative).
   */
  dual?: { middle: ConditioningEntry[]; cfg2: number; nested: boolean };
  /** LATENT's noise_mask ([B or 1, 1, h, w] at any resolution): where to denoise (1) and where to keep the latent (0). */
  noiseMask?: FloatTensor;
  /** After each step (progress); throwing stops sampling (interrupt). */
  onStep?: (info: StepInfo) => void;
  /** comfy.utils.common_upscale of a latent, for a sampler that enlarges it (SamplerLCMUpscale). */
  upscaleLatent?: (x: Float32Array, shape: readonly number[], width: number, height: number, method: string) => Float32Array;
}

/**
 * comfy.utils.reshape_mask for 4-d latents: the mask's planes bilinearly
 * resized to the latent (torch.interpolate, align_corners false), repeated
 * over the channels and to the batch size.
 */
export function prepareMask(mask: FloatTensor, shape: readonly number[]): Float32Array {
  const [b, c, h, w] = shape as [number, number, number, number];
  const mh = mask.shape[mask.shape.length - 2]!;
  const mw = mask.shape[mask.shape.length - 1]!;
  const planes = mask.data.length / (mh * mw);
  const resized: Float32Array[] = [];
  const sy = mh / h;
  const sx = mw / w;
  for (let p = 0; p < planes; p++) {
    const src = mask.data.subarray(p * mh * mw, (p + 1) * mh * mw);
    const out = new Float32Array(h * w);
    for (let y = 0; y < h; y++) {
      const fy = Math.max((y + 0.5) * sy - 0.5, 0);
      const y0 = Math.min(Math.floor(fy), mh - 1);
      const y1 = Math.min(y0 + 1, mh - 1);
      const ly = fy - y0;
      for (let x = 0; x < w; x++) {
        const fx = Math.max((x + 0.5) * sx - 0.5, 0);
        const x0 = Math.min(Math.floor(fx), mw - 1);
        const x1 = Math.min(x0 + 1, mw - 1);
        const lx = fx - x0;
        const top = src[y0 * mw + x0]! * (1 - lx) + src[y0 * mw + x1]! * lx;
        const bottom = src[y1 * mw + x0]! * (1 - lx) + src[y1 * mw + x1]! * lx;
        out[y * w + x] = top * (1 - ly) + bottom * ly;
      }
    }
    resized.push(out);
  }
  // repeat_to_batch_size: the first b planes, or the planes repeated.
  const full = new Float32Array(b * c * h * w);
  for (let n = 0; n < b; n++) for (let ch = 0; ch < c; ch++) full.set(resized[n % planes]!, (n * c + ch) * h * w);
  return full;
}

/**
 * comfy.sample.sample → CFGGuider: each list's prediction is calc_cond_batch's
 * (conditioning.ts: areas, strengths, masks, timestep ranges), and with cfg ≠ 1
 * the negative's is mixed in as uncond + (cond − uncond)·cfg.
 */
export async function sample(o: SampleOptions): Promise<FloatTensor> {
  const schedule = o.model.schedule;
  let sigmas = o.sigmas ?? ksamplerSigmas(schedule, o.samplerName, o.scheduler, o.steps, o.denoise ?? 1);
  const shape = o.latent.shape;
  const b = shape[0]!;
  if (o.lastStep !== undefined && o.lastStep < sigmas.length - 1) {
    sigmas = sigmas.slice(0, o.lastStep + 1);
    if (o.forceFullDenoise) sigmas[sigmas.length - 1] = 0;
  }
  if (o.startStep !== undefined) {
    if (o.startStep < sigmas.length - 1) sigmas = sigmas.slice(o.startStep);
    else return o.latent;
  }
  if (sigmas.length === 0) return o.latent;
  const sampler = getSampler(o.samplerName);
  const n = o.latent.data.length;
  const noise = o.disableNoise ? new Float32Array(n) : prepareNoise(shape, o.seed, o.batchIndex);

  let latentIn = o.latent.data;
  const scaleFactor = o.model.latentFormat.scaleFactor;
  if (latentIn.some((v) => v !== 0)) latentIn = latentIn.map((v) => v * scaleFactor);

  const [h, w] = [shape[2]!, shape[3]!];
  const inpaint = { latentIn, denoiseMask: o.noiseMask };
  const [pos, neg] = prepareConds(o.model.withAdm(o.positive, shape, 'positive', inpaint), o.model.withAdm(controlToUncond(o.positive, o.negative), shape, 'negative', inpaint), h, w, schedule);
  const D = o.model.checkpoint.detected.unet.contextDim;
  for (const c of [...pos, ...neg]) {
    if (c.context.shape.length !== 3 || c.context.shape[2] !== D) throw new Error(`the conditioning has width ${c.context.shape[2]}; this model's cross-attention takes ${D}`);
  }
  // math.isclose(cfg, 1) skips the negative, unless the sampler reads it (disable_cfg1_optimization).
  const useUncond = Math.abs(o.cfg - 1) > 1e-9 * Math.max(1, Math.abs(o.cfg)) || CFG_PP_SAMPLERS.has(o.samplerName);
  let lastUncond: Float32Array | undefined;
  // apply_model for a batch: the input scaled for σ, the UNet's output, the denoised latent (ε, v or lcm as the model's sampling says).
  const apply = (x: Float32Array, s: number[], sigma: number, context: FloatTensor): Promise<Float32Array> => o.model.denoised(x, s, sigma, context);
  const mid = o.dual ? prepareConds(o.model.withAdm(o.dual.middle, shape, 'negative', inpaint), [], h, w, schedule)[0] : [];
  const dualGuidance = async (x: Float32Array, sigma: number, d: NonNullable<SampleOptions['dual']>, xs: readonly number[]): Promise<Float32Array> => {
    const n = x.length;
    const isOne = (v: number) => Math.abs(v - 1) <= 1e-9 * Math.max(1, Math.abs(v));
    // Guider_DualCFG.predict_noise: with cfg2 = 1 the negative is skipped, and with both 1 the middle too (unless a CFG++ sampler reads them).
    const keepNeg = d.nested || CFG_PP_SAMPLERS.has(o.samplerName) || !isOne(d.cfg2);
    const keepMid = keepNeg || !isOne(o.cfg);
    const [n0, n1, n2] = await calcCondBatch(apply, [keepNeg ? neg : null, keepMid ? mid : null, pos], x, xs, sigma);
    const out = new Float32Array(n);
    if (d.nested) {
      lastUncond = n1!;
      for (let i = 0; i < n; i++) out[i] = n0![i]! + d.cfg2 * (n1![i]! + (n2![i]! - n1![i]!) * o.cfg - n0![i]!);
    } else {
      lastUncond = n0!;
      for (let i = 0; i < n; i++) out[i] = n0![i]! + (n1![i]! - n0![i]!) * d.cfg2 + (n2![i]! - n1![i]!) * o.cfg;
    }
    return out;
  };
  const denoise = async (x: Float32Array, sigma: number, xs: readonly number[] = shape): Promise<Float32Array> => {
    if (o.dual) return dualGuidance(x, sigma, o.dual, xs);
    const n = x.length;
    const [cond, uncond] = await calcCondBatch(apply, [pos, useUncond ? neg : null], x, xs, sigma);
    if (!useUncond) return cond!;
    lastUncond = uncond!;
    const out = new Float32Array(n);
    if (o.model.cfgFunction) return o.model.cfgFunction(cond!, uncond!, x, sigma, o.cfg, b);
    for (let i = 0; i < n; i++) out[i] = uncond![i]! + (cond![i]! - uncond![i]!) * o.cfg;
    return out;
  };
  let model = denoise;
  if (o.noiseMask) {
    // KSamplerX0Inpaint: outside the mask the sampler sees the latent noised to the current σ, and gets the latent back.
    const m = prepareMask(o.noiseMask, shape);
    // ddim draws this noise from seed + 1 (the reference's inpaint_options random).
    const fill = o.samplerName === 'ddim' ? new TorchGenerator(BigInt(o.seed) + 1n).randn(n) : noise;
    model = async (x, sigma, xs) => {
      if (x.length !== n) throw new Error(`a latent with a noise mask cannot change its size while sampling (${shape.join('×')} → ${xs?.join('×')})`);
      const xm = new Float32Array(n);
      for (let i = 0; i < n; i++) xm[i] = x[i]! * m[i]! + (fill[i]! * sigma + latentIn[i]!) * (1 - m[i]!);
      const out = await denoise(xm, sigma);
      for (let i = 0; i < n; i++) out[i] = out[i]! * m[i]! + latentIn[i]! * (1 - m[i]!);
      return out;
    };
  }
  // EPS noise_scaling: full noise at the schedule's top, σ-scaled otherwise.
  const s0 = sigmas[0]!;
  const maxDenoise = Math.abs(schedule.sigmaMax - s0) <= 1e-5 * Math.max(schedule.sigmaMax, s0) || s0 > schedule.sigmaMax;
  const k = maxDenoise ? Math.sqrt(1 + s0 * s0) : s0;
  const x0 = new Float32Array(n);
  for (let i = 0; i < n; i++) x0[i] = noise[i]! * k + latentIn[i]!;
  // torch's global generator after prepare_noise (comfy.sample seeds it with torch.manual_seed and draws the noise from it).
  const globalRandn = () => {
    const gen = new TorchGenerator(o.seed);
    if (!o.batchIndex) gen.randn(n);
    else for (let i = 0; i <= Math.max(-1, ...o.batchIndex); i++) gen.randn(n / b);
    return (count: number) => gen.randn(count);
  };
  const ctx: SamplerContext = { seed: o.seed, callback: o.onStep, uncond: () => lastUncond!, percentToSigma: (p: number) => schedule.percentToSigma(p), shape, upscale: o.upscaleLatent, globalRandn };
  const samples = await sampler(model, x0, sigmas, ctx, o.samplerOptions ?? {});
  const out = new Float32Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = samples[i]! / scaleFactor;
  return { shape: [...(ctx.outShape ?? shape)], data: out };
}
