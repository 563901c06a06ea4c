/**
 * CONTROL_NET as the reference's comfy/controlnet.py runs it: a loaded
 * ControlNet or T2I adapter (ControlModel), and one application of it with a
 * hint image, a strength and a start/end percent, chained to the control
 * applied before it (AppliedControl, the reference's ControlBase copy). At
 * each model call the chain gives the UNet its residuals: each control's own,
 * scaled by its strength, summed with those of the controls before it.
 */
import type { ControlCall, ControlResiduals, ControlSource, ResidualTensor } from './control-residuals.ts';
import { ControlLoraModel } from './control-lora.ts';
import { buildControlNetGraph } from './controlnet-graph.ts';
import { CONTROL_PREFIX, detectControl, type ControlNetSpec, type T2IAdapterSpec } from './detect-control.ts';
import { OnnxGraph } from './graph-builder.ts';
import { UNET_PREFIX } from './detect.ts';
import { LoadedLora, WeightPatches } from './lora.ts';
import { unetPrecision } from './precision.ts';
import { ortTensor, WEIGHTS_LOCATION, type OrtTensor } from './session.ts';
import { loadCheckpoint, UNetModel, type Checkpoint } from './sd1.ts';
import { buildT2IAdapterGraph } from './t2i-adapter-graph.ts';
import { timestepEmbedding } from './unet-graph.ts';

/** Planar [B, C, H, W] floats (a hint image, a residual). */
export type Planar = ResidualTensor;

/** A ControlNet's weights and what its graph computes. */
export class ControlNetModel {
  readonly kind = 'controlnet';
  readonly spec: ControlNetSpec;
  /** Pixels per latent cell the hint is scaled to. */
  readonly compressionRatio = 8;

  constructor(
    readonly checkpoint: Checkpoint,
    /** The `_shuffle` ControlNets' output averaged over each plane (global_average_pooling). */
    readonly globalAveragePooling = false,
  ) {
    this.spec = detectControl(checkpoint.file) as ControlNetSpec;
  }

  /** SetUnionControlNetType's control_type extra argument: [] (auto) or one type number. */
  readonly controlType: readonly number[] = [];

  /** DiffControlNetLoader's: the same file read as the model's weights plus its own (the patches say how). */
  withCheckpoint(checkpoint: Checkpoint): ControlNetModel {
    return Object.assign(Object.create(ControlNetModel.prototype) as ControlNetModel, this, { checkpoint });
  }

  /** SetUnionControlNetType: a copy with this control type (other ControlNets take the argument and ignore it, as the reference's). */
  withControlType(controlType: readonly number[]): ControlNetModel {
    return Object.assign(Object.create(ControlNetModel.prototype) as ControlNetModel, this, { controlType });
  }

  /** cldm.ControlNet.forward: x (scaled) [N, C, h, w], hint [1 or N, c, 8h, 8w] → one residual per input block and one for the middle. */
  async forward(call: ControlCall, hint: Planar): Promise<{ output: Planar[]; middle: Planar[] }> {
    const cfg = this.spec.unet;
    const n = call.shape[0]!;
    const union = this.spec.union;
    const typed = !!union && this.controlType.length > 0;
    // The diffusion model's precision (controlnet.py asks unet_dtype for it): float16 on a GPU, float32 in and out either way.
    const p = unetPrecision();
    const half = p.dtype === 'fp16';
    const kind = (union ? (typed ? 'controlnet:union-typed' : 'controlnet:union') : 'controlnet') + (half ? ':fp16' : '');
    const build = () => buildControlNetGraph(new OnnxGraph(this.checkpoint.file, WEIGHTS_LOCATION, CONTROL_PREFIX, { half, upcastAttention: p.upcastAttention }), cfg, this.spec.hintChannels, union && { types: union.types, typed });
    if (call.context.shape[2] !== cfg.contextDim) throw new Error(`the conditioning has width ${call.context.shape[2]}; this ControlNet's cross-attention takes ${cfg.contextDim}`);
    if (hint.shape[1] !== this.spec.hintChannels) throw new Error(`this ControlNet takes a hint of ${this.spec.hintChannels} channels, got ${hint.shape[1]}`);
    const feeds: Record<string, OrtTensor> = {
      x: ortTensor('float32', call.x, call.shape),
      hint: ortTensor('float32', hint.data, hint.shape),
      t_emb: ortTensor('float32', timestepEmbedding(new Array(n).fill(call.timestep), cfg.modelChannels), [n, cfg.modelChannels]),
      context: ortTensor('float32', call.context.data, call.context.shape),
    };
    if (cfg.admInChannels) {
      if (!call.y || call.y.length !== n * cfg.admInChannels) throw new Error(`this ControlNet needs each conditioning's adm vector of ${cfg.admInChannels} values: use an SDXL model's conditioning`);
      feeds.y = ortTensor('float32', call.y, [n, cfg.admInChannels]);
    }
    if (union) Object.assign(feeds, unionFeeds(this.controlType, union.types));
    const out = await this.checkpoint.run(kind, build, feeds);
    const planar = (t: OrtTensor): Planar => ({ shape: [...t.dims], data: t.data as Float32Array });
    return { output: cfg.inputBlocks.map((_, i) => planar(out[`out_${i}`]!)), middle: [planar(out.mid!)] };
  }
}

/** The reference's UNION_CONTROLNET_TYPES (comfy/cldm/control_types.py), SetUnionControlNetType's list after "auto". */
export const UNION_CONTROLNET_TYPES: Record<string, number> = {
  openpose: 0,
  depth: 1,
  'hed/pidi/scribble/ted': 2,
  'canny/lineart/anime_lineart/mlsd': 3,
  normal: 4,
  segment: 5,
  tile: 6,
  repaint: 7,
};

/** A union ControlNet's inputs for its control types: the one-hot type's sinusoidal embedding (ControlAddEmbedding) and the task row. */
function unionFeeds(controlType: readonly number[], types: number): Record<string, OrtTensor> {
  const over = controlType.filter((c) => c >= types);
  if (over.length) {
    const max = Math.max(...controlType);
    const name = Object.entries(UNION_CONTROLNET_TYPES).find(([, v]) => v === max)?.[0] ?? String(max);
    throw new Error(`Control type ${name}(${max}) is out of range for the number of control types(${types}) supported.\nPlease consider using the ProMax ControlNet Union model.\nhttps://huggingface.co/xinsir/controlnet-union-sdxl-1.0/tree/main`);
  }
  const oneHot = new Array<number>(types).fill(0);
  for (const c of controlType) oneHot[c] = 1;
  const feeds: Record<string, OrtTensor> = { ctype_emb: ortTensor('float32', timestepEmbedding(oneHot, 256), [1, 256 * types]) };
  // union_controlnet_merge takes the first type only (range(min(1, len))).
  if (controlType.length) feeds.task_index = ortTensor('int64', BigInt64Array.from([BigInt(controlType[0]!)]), [1]);
  return feeds;
}

/** A T2I adapter's weights: features from the hint alone, once per hint size. */
export class T2IAdapterModel {
  readonly kind = 't2i';
  readonly spec: T2IAdapterSpec;
  readonly compressionRatio = 8;

  constructor(readonly checkpoint: Checkpoint) {
    this.spec = detectControl(checkpoint.file) as T2IAdapterSpec;
  }

  /** Adapter.forward: the lists as the reference returns them (reversed, with the empty places). */
  async forward(hint: Planar): Promise<{ input: (Planar | null)[]; middle: (Planar | null)[] }> {
    const [, , h, w] = hint.shape as [number, number, number, number];
    // float32 whatever the diffusion model's precision: the reference runs the adapter in x_noisy's dtype, the sampler's float32.
    const kind = `t2i:${h}x${w}`;
    const build = () => buildT2IAdapterGraph(new OnnxGraph(this.checkpoint.file, WEIGHTS_LOCATION, ''), this.spec, h, w);
    const out = await this.checkpoint.run(kind, build, { hint: ortTensor('float32', hint.data, hint.shape) });
    const feats = [0, 1, 2, 3].map((i) => ({ shape: [...out[`feat_${i}`]!.dims], data: out[`feat_${i}`]!.data as Float32Array }));
    const list: (Planar | null)[] = [];
    feats.forEach((f, i) => {
      const empty = this.spec.xl ? (i === 0 ? 3 : i === 2 ? 2 : 1) : 2;
      for (let k = 0; k < empty; k++) list.push(null);
      list.push(f);
    });
    list.reverse();
    return this.spec.xl ? { input: list.slice(1), middle: list.slice(0, 1) } : { input: list, middle: [] };
  }
}

export { ControlLoraModel };

export type ControlModel = ControlNetModel | T2IAdapterModel | ControlLoraModel;

/** comfy.utils.common_upscale of a planar hint to width×height with the reference's method and center crop (given by the caller's layer). */
export type HintResize = (hint: Planar, width: number, height: number) => Planar;

/** broadcast_image_to: a hint of one image stays one (it broadcasts); others are cut or repeated per conditioning entry. */
export function broadcastHint(t: Planar, target: number, batched: number): Planar {
  const b = t.shape[0]!;
  if (b === 1) return t;
  const per = Math.floor(target / batched);
  const plane = t.data.length / b;
  const take = (count: number) => {
    const data = new Float32Array(count * plane);
    for (let i = 0; i < count; i++) data.set(t.data.subarray((i % Math.min(b, per)) * plane, ((i % Math.min(b, per)) + 1) * plane), i * plane);
    return data;
  };
  const one = take(per);
  if (per === target) return { shape: [per, ...t.shape.slice(1)], data: one };
  const data = new Float32Array(target * plane);
  for (let k = 0; k * per < target; k++) data.set(one.subarray(0, Math.min(per, target - k * per) * plane), k * per * plane);
  return { shape: [target, ...t.shape.slice(1)], data };
}

/** torch.mean over the channels, keepdim: a colour hint for an adapter that takes grey. */
function meanChannels(t: Planar): Planar {
  const [b, c, h, w] = t.shape as [number, number, number, number];
  const plane = h * w;
  const data = new Float32Array(b * plane);
  for (let n = 0; n < b; n++)
    for (let i = 0; i < plane; i++) {
      let s = 0;
      for (let k = 0; k < c; k++) s = Math.fround(s + t.data[(n * c + k) * plane + i]!);
      data[n * plane + i] = Math.fround(s / c);
    }
  return { shape: [b, 1, h, w], data };
}

/** control_merge: each residual × strength (float32), added to the previous control's at the same place. */
function merge(own: { input?: (Planar | null)[]; middle?: (Planar | null)[]; output?: (Planar | null)[] }, strength: number, pooled: boolean, prev: ControlResiduals | null): ControlResiduals {
  const s = Math.fround(strength);
  const scale = (t: Planar | null): Planar | null => {
    if (!t) return null;
    let src = t.data;
    if (pooled) {
      // The mean of each plane, spread over it.
      const [b, c, h, w] = t.shape as [number, number, number, number];
      src = new Float32Array(t.data.length);
      for (let p = 0; p < b * c; p++) {
        let sum = 0;
        for (let i = 0; i < h * w; i++) sum += t.data[p * h * w + i]!;
        src.fill(Math.fround(sum / (h * w)), p * h * w, (p + 1) * h * w);
      }
    }
    const data = new Float32Array(src.length);
    for (let i = 0; i < src.length; i++) data[i] = src[i]! * s;
    return { shape: t.shape, data };
  };
  const out: ControlResiduals = { input: (own.input ?? []).map(scale), middle: (own.middle ?? []).map(scale), output: (own.output ?? []).map(scale) };
  if (!prev) return out;
  for (const key of ['input', 'middle', 'output'] as const) {
    const o = out[key];
    prev[key].forEach((p, i) => {
      if (i >= o.length) o.push(p);
      else if (p) {
        const cur = o[i];
        if (!cur) o[i] = p;
        else {
          // Batches that differ broadcast as torch adds them (a one-image residual over the batch).
          const big = cur.data.length >= p.data.length ? cur : p;
          const small = big === cur ? p : cur;
          const data = new Float32Array(big.data.length);
          for (let k = 0; k < data.length; k++) data[k] = p === big ? p.data[k]! + small.data[k % small.data.length]! : small.data[k % small.data.length]! + big.data[k]!;
          o[i] = { shape: big.shape, data };
        }
      }
    });
  }
  return out;
}

/** One ControlNetApply: the control, its hint (planar, [0, 1]), strength and percent range, over the control applied before it. */
export class AppliedControl implements ControlSource {
  private hint?: Planar;
  private adapterOut?: { input: (Planar | null)[]; middle: (Planar | null)[] };

  constructor(
    readonly model: ControlModel,
    readonly hintImage: Planar,
    readonly strength: number,
    readonly percent: readonly [number, number],
    readonly resize: HintResize,
    readonly previous?: ControlSource,
  ) {}

  /** The hint at the latent's size (8 pixels a cell), made once per size. */
  private hintFor(h: number, w: number): Planar {
    const ratio = this.model.compressionRatio;
    let [width, height] = [w * ratio, h * ratio];
    if (this.model.kind === 't2i') {
      // scale_image_to: sides rounded up to the unshuffle factor.
      const r = this.model.spec.unshuffle;
      [width, height] = [Math.ceil(width / r) * r, Math.ceil(height / r) * r];
    }
    if (!this.hint || this.hint.shape[2] !== height || this.hint.shape[3] !== width) {
      let t = this.resize(this.hintImage, width, height);
      if (this.model.kind === 't2i' && this.model.spec.inputChannels === 1 && t.shape[1]! > 1) t = meanChannels(t);
      this.hint = t;
      this.adapterOut = undefined;
    }
    return this.hint;
  }

  async residuals(call: ControlCall): Promise<ControlResiduals | null> {
    const prev = this.previous ? await this.previous.residuals(call) : null;
    const start = call.schedule.percentToSigma(this.percent[0]);
    const end = call.schedule.percentToSigma(this.percent[1]);
    if (call.sigma > start || call.sigma < end) return prev;
    const [n, , h, w] = call.shape as [number, number, number, number];
    if (this.model.kind === 't2i') {
      // The adapter sees only the hint: computed once, broadcast as the reference's (its batch fixed at the first call's).
      this.hintFor(h, w);
      if (!this.adapterOut) {
        if (this.hint!.shape[0] !== 1 && this.hint!.shape[0] !== n) this.hint = broadcastHint(this.hint!, n, call.batched);
        this.adapterOut = await this.model.forward(this.hint!);
      }
      return merge(this.adapterOut, this.strength, false, prev);
    }
    const hint = broadcastHint(this.hintFor(h, w), n, call.batched);
    const own = await this.model.forward(call, hint);
    return merge(own, this.strength, this.model.globalAveragePooling, prev);
  }
}

/**
 * DiffControlNetLoader: a ControlNet stored as differences, read as the
 * model's UNet weights plus its own wherever both have the key (the model's
 * base weights, in float32).
 */
export function differenceControlNet(net: ControlNetModel, model: UNetModel): ControlNetModel {
  if (!net.spec.difference) return net;
  const base = model.checkpoint.file;
  const targets = new Map<string, string>();
  for (const [k, info] of net.checkpoint.file.tensors) {
    if (!k.startsWith(CONTROL_PREFIX)) continue;
    const src = `${UNET_PREFIX}${k.slice(CONTROL_PREFIX.length)}`;
    if (base.has(src) && base.info(src).shape.join() === info.shape.join()) targets.set(k, src);
  }
  const lora = LoadedLora.sums(base, targets, `difference:${base.path}`);
  return net.withCheckpoint(net.checkpoint.withPatches(new WeightPatches(net.checkpoint.file, CONTROL_PREFIX, [{ lora, strength: 1 }])));
}

/** ControlNetLoader: a ControlNet or T2I adapter file (cached as the checkpoints are); `_shuffle` names average their output as the reference's loader decides. */
export async function loadControl(path: string): Promise<ControlModel> {
  const checkpoint = await loadCheckpoint(path, 'control');
  const spec = detectControl(checkpoint.file);
  if (spec.kind === 't2i') return new T2IAdapterModel(checkpoint);
  if (spec.kind === 'control_lora') return new ControlLoraModel(checkpoint);
  const stem = path.replace(/\.[^./\\]*$/, '');
  return new ControlNetModel(checkpoint, stem.endsWith('_shuffle') || stem.endsWith('_shuffle_fp16'));
}
