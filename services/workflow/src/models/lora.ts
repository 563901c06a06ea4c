/**
 * LoRA and LyCORIS LoCon patches for SD1.x, as the reference's comfy/lora.py:
 * the key names a LoRA file may use for each weight (kohya `lora_unet_…` and
 * `lora_te_…` in the diffusers layout or the checkpoint's own, diffusers
 * `unet.…processor.to_q_lora`, PEFT `lora_A/lora_B`, `lycoris_…`, generic
 * `diffusion_model.…` and `text_encoders.…`), the adapters (up·down with
 * alpha/rank, LoCon's Tucker `lora_mid`, LyCORIS LoHa, LoKr, GLoRA, OFT and
 * BOFT (lycoris.ts), DoRA magnitudes on any of them, full `diff`/`diff_b`,
 * `w_norm`/`b_norm`, `set_weight`) and the patched weight
 * w + strength·alpha/rank·(up·down), computed in float32. Patched weights go to the ONNX graph as external data of their
 * own (graph-builder.ts); the checkpoint itself is never copied.
 */
import type { UNetConfig } from './detect.ts';
import { applyDora, boftDiff, gloraDiff, lohaDiff, lokrDiff, matmul, oftDiff, PatchShapeError, type Tensor } from './lycoris.ts';
import { ModelFileError, SafetensorsFile } from './safetensors.ts';

/** Resnet sub-modules: the checkpoint's name → diffusers' (comfy.utils UNET_MAP_RESNET). */
const RESNET: Record<string, string> = {
  'in_layers.2': 'conv1',
  'emb_layers.1': 'time_emb_proj',
  'out_layers.3': 'conv2',
  skip_connection: 'conv_shortcut',
  'in_layers.0': 'norm1',
  'out_layers.0': 'norm2',
};
const ATTENTION = ['proj_in', 'proj_out', 'norm'];
const TRANSFORMER_BLOCK = ['norm1', 'norm2', 'norm3', 'attn1.to_q', 'attn1.to_k', 'attn1.to_v', 'attn1.to_out.0', 'attn2.to_q', 'attn2.to_k', 'attn2.to_v', 'attn2.to_out.0', 'ff.net.0.proj', 'ff.net.2'];
const BASIC: [string, string][] = [
  ['input_blocks.0.0', 'conv_in'],
  ['out.0', 'conv_norm_out'],
  ['out.2', 'conv_out'],
  ['time_embed.0', 'time_embedding.linear_1'],
  ['time_embed.2', 'time_embedding.linear_2'],
];
/** CLIP layer sub-modules → kohya's names (LORA_CLIP_MAP). */
const CLIP_MAP: Record<string, string> = {
  'mlp.fc1': 'mlp_fc1',
  'mlp.fc2': 'mlp_fc2',
  'self_attn.k_proj': 'self_attn_k_proj',
  'self_attn.q_proj': 'self_attn_q_proj',
  'self_attn.v_proj': 'self_attn_v_proj',
  'self_attn.out_proj': 'self_attn_out_proj',
};

/** diffusers module name → the checkpoint's (comfy.utils.unet_to_diffusers), modules only. */
export function unetToDiffusers(cfg: UNetConfig): Map<string, string> {
  const map = new Map<string, string>();
  const attention = (d: string, n: string, depth: number) => {
    for (const a of ATTENTION) map.set(`${d}.${a}`, `${n}.${a}`);
    for (let t = 0; t < depth; t++) for (const b of TRANSFORMER_BLOCK) map.set(`${d}.transformer_blocks.${t}.${b}`, `${n}.transformer_blocks.${t}.${b}`);
  };
  const resnet = (d: string, n: string) => {
    for (const [k, v] of Object.entries(RESNET)) map.set(`${d}.${v}`, `${n}.${k}`);
  };
  // Levels from the input blocks: res blocks per level, a downsample between levels.
  const levels: number[][] = [[]];
  for (const b of cfg.inputBlocks) {
    if (b.kind === 'res') levels[levels.length - 1]!.push(b.index);
    else if (b.kind === 'down') levels.push([]);
  }
  let n = 1;
  levels.forEach((blocks, x) => {
    blocks.forEach((index, i) => {
      resnet(`down_blocks.${x}.resnets.${i}`, `input_blocks.${index}.0`);
      const depth = cfg.inputBlocks.find((b) => b.index === index)!.depth;
      if (depth) attention(`down_blocks.${x}.attentions.${i}`, `input_blocks.${index}.1`, depth);
      n = index + 1;
    });
    if (x < levels.length - 1) map.set(`down_blocks.${x}.downsamplers.0.conv`, `input_blocks.${n}.0.op`);
    n++;
  });
  if (cfg.middleDepth) attention('mid_block.attentions.0', 'middle_block.1', cfg.middleDepth);
  resnet('mid_block.resnets.0', 'middle_block.0');
  resnet('mid_block.resnets.1', 'middle_block.2');
  let o = 0;
  for (let x = 0; x < levels.length; x++) {
    const l = levels[levels.length - 1 - x]!.length + 1;
    for (let i = 0; i < l && o < cfg.outputBlocks.length; i++, o++) {
      const b = cfg.outputBlocks[o]!;
      resnet(`up_blocks.${x}.resnets.${i}`, `output_blocks.${o}.0`);
      if (b.depth) attention(`up_blocks.${x}.attentions.${i}`, `output_blocks.${o}.1`, b.depth);
      if (i === l - 1 && b.upsample) map.set(`up_blocks.${x}.upsamplers.0.conv`, b.upsample);
    }
  }
  for (const [k, v] of BASIC) map.set(v, k);
  return map;
}

/** Every name a LoRA may give a weight → the weight's key in the model file. */
export interface KeyMapTarget {
  file: SafetensorsFile;
  unet?: { prefix: string; config: UNetConfig };
  clip?: { prefix: string };
}

export function loraKeyMap(t: KeyMapTarget): Map<string, string> {
  const map = new Map<string, string>();
  const keys = [...t.file.tensors.keys()];
  if (t.unet) {
    const p = t.unet.prefix;
    for (const k of keys) {
      if (!k.startsWith(p) || !k.endsWith('.weight')) continue;
      const m = k.slice(p.length, -'.weight'.length);
      map.set(`lora_unet_${m.replaceAll('.', '_')}`, k);
      map.set(`diffusion_model.${m}`, k);
    }
    for (const [d, native] of unetToDiffusers(t.unet.config)) {
      const k = `${p}${native}.weight`;
      if (!t.file.has(k)) continue;
      const u = d.replaceAll('.', '_');
      map.set(`lora_unet_${u}`, k);
      map.set(`lycoris_${u}`, k);
      let dl = d.replaceAll('.to_', '.processor.to_');
      if (dl.endsWith('.to_out.0')) dl = dl.slice(0, -2);
      map.set(dl, k);
      map.set(`unet.${dl}`, k);
    }
  }
  if (t.clip) {
    const p = t.clip.prefix;
    for (const k of keys) {
      if (!k.startsWith(p) || !k.endsWith('.weight')) continue;
      // The reference's model key is clip_l.transformer.text_model.<rest>.
      map.set(`text_encoders.clip_l.transformer.text_model.${k.slice(p.length, -'.weight'.length)}`, k);
    }
    for (let b = 0; b < 32; b++)
      for (const [c, kohya] of Object.entries(CLIP_MAP)) {
        const k = `${p}encoder.layers.${b}.${c}.weight`;
        if (!t.file.has(k)) continue;
        map.set(`lora_te_text_model_encoder_layers_${b}_${kohya}`, k);
        map.set(`lora_te1_text_model_encoder_layers_${b}_${kohya}`, k);
        map.set(`text_encoder.text_model.encoder.layers.${b}.${c}`, k);
      }
  }
  return map;
}

/** Tensor names in the LoRA file, per adapter (comfy/weight_adapter), with the layer's alpha and DoRA magnitudes. */
type Adapter = (
  | { kind: 'lora'; up: string; down: string; mid?: string }
  | { kind: 'loha'; w1a: string; w1b: string; w2a: string; w2b: string; t1?: string; t2?: string }
  | { kind: 'lokr'; w1?: string; w2?: string; w1a?: string; w1b?: string; w2a?: string; w2b?: string; t2?: string }
  | { kind: 'glora'; a1: string; a2: string; b1: string; b2: string }
  | { kind: 'oft'; blocks: string }
  | { kind: 'boft'; blocks: string; rescale?: string }
  | { kind: 'diff'; tensor: string }
  | { kind: 'set'; tensor: string }
) & { alpha?: number; dora?: string };

/** The up/down names of each LoRA layout the reference reads (LoRAAdapter.load). */
const LORA_LAYOUTS: [up: string, down: string, mid?: string][] = [
  ['.lora_up.weight', '.lora_down.weight', '.lora_mid.weight'],
  ['_lora.up.weight', '_lora.down.weight'],
  ['.lora_B.weight', '.lora_A.weight'],
  ['.lora.up.weight', '.lora.down.weight'],
  ['.lora_B', '.lora_A'],
  ['.lora_linear_layer.up.weight', '.lora_linear_layer.down.weight'],
  ['.lora_B.default.weight', '.lora_A.default.weight'],
];

/** A LoRA file read against one model's key map: target weight key → adapters. */
export class LoadedLora {
  private constructor(
    readonly file: SafetensorsFile,
    readonly patches: Map<string, Adapter>,
    readonly signature: string,
  ) {}

  /**
   * Weights added whole from another file (a difference ControlNet's
   * control_model.X plus the model's diffusion_model.X): target key → the
   * source tensor in `file` of the same shape.
   */
  static sums(file: SafetensorsFile, targets: Map<string, string>, signature: string): LoadedLora {
    const patches = new Map<string, Adapter>();
    for (const [target, tensor] of targets) patches.set(target, { kind: 'diff', tensor });
    return new LoadedLora(file, patches, signature);
  }

  static async load(path: string, keyMap: Map<string, string>): Promise<LoadedLora> {
    const file = await SafetensorsFile.open(path);
    const fail = (problem: string): never => {
      throw new ModelFileError(path, problem);
    };
    const has = (k: string) => file.has(k);
    const patches = new Map<string, Adapter>();
    const need = (name: string) => {
      if (!has(name)) fail(`${name} is missing`);
      return name;
    };
    const opt = (name: string) => (has(name) ? name : undefined);
    for (const [x, target] of keyMap) {
      let alpha: number | undefined;
      if (has(`${x}.alpha`)) {
        const a = await file.readFloat32(`${x}.alpha`);
        if (a.length !== 1 || !Number.isFinite(a[0]!)) fail(`${x}.alpha must be one finite number`);
        alpha = a[0]!;
      }
      const dora = opt(`${x}.dora_scale`);
      // The adapters in the reference's order (weight_adapter.adapters): when a layer has keys of two, the later one wins.
      let found: Adapter | undefined;
      for (const [up, down, mid] of LORA_LAYOUTS) {
        if (!has(x + up)) continue;
        if (!has(x + down)) fail(`${x}${up} has no ${x}${down}`);
        found = { kind: 'lora', up: x + up, down: x + down, mid: mid && has(x + mid) ? x + mid : undefined };
        break;
      }
      if (has(`${x}.hada_w1_a`)) {
        const t1 = opt(`${x}.hada_t1`);
        found = { kind: 'loha', w1a: `${x}.hada_w1_a`, w1b: need(`${x}.hada_w1_b`), w2a: need(`${x}.hada_w2_a`), w2b: need(`${x}.hada_w2_b`), t1, t2: t1 && need(`${x}.hada_t2`) };
      }
      const lokr = (n: string) => opt(`${x}.lokr_${n}`);
      if (lokr('w1') || lokr('w2') || lokr('w1_a') || lokr('w2_a')) found = { kind: 'lokr', w1: lokr('w1'), w2: lokr('w2'), w1a: lokr('w1_a'), w1b: lokr('w1_b'), w2a: lokr('w2_a'), w2b: lokr('w2_b'), t2: lokr('t2') };
      if (has(`${x}.a1.weight`)) found = { kind: 'glora', a1: `${x}.a1.weight`, a2: need(`${x}.a2.weight`), b1: need(`${x}.b1.weight`), b2: need(`${x}.b2.weight`) };
      if (has(`${x}.oft_blocks`)) {
        const rank = file.info(`${x}.oft_blocks`).shape.length;
        if (rank === 3) found = { kind: 'oft', blocks: `${x}.oft_blocks` };
        else if (rank === 4) found = { kind: 'boft', blocks: `${x}.oft_blocks`, rescale: opt(`${x}.rescale`) };
        else fail(`${x}.oft_blocks must have 3 (OFT) or 4 (BOFT) dimensions`);
      }
      if (found) patches.set(target, { ...found, alpha, dora });
      const bias = `${target.slice(0, -'.weight'.length)}.bias`;
      if (has(`${x}.w_norm`)) {
        patches.set(target, { kind: 'diff', tensor: `${x}.w_norm` });
        if (has(`${x}.b_norm`)) patches.set(bias, { kind: 'diff', tensor: `${x}.b_norm` });
      }
      if (has(`${x}.diff`)) patches.set(target, { kind: 'diff', tensor: `${x}.diff` });
      if (has(`${x}.diff_b`)) patches.set(bias, { kind: 'diff', tensor: `${x}.diff_b` });
      if (has(`${x}.set_weight`)) patches.set(target, { kind: 'set', tensor: `${x}.set_weight` });
    }
    if (patches.size === 0) fail('none of its keys names a weight of this model (a LoRA for another model family?)');
    const st = file.tensors.size;
    return new LoadedLora(file, patches, `${path}:${st}`);
  }
}

/** One LoRA applied with a strength (LoraLoader's strength_model or strength_clip). */
export interface AppliedLora {
  lora: LoadedLora;
  strength: number;
}

/** The patched weights of one model part, laid out in one external-data file. */
export class WeightPatches {
  readonly location = 'patches.bin';
  /** Target key → where its float32 values sit in the patches file. */
  readonly plan = new Map<string, { offset: number; length: number; shape: readonly number[] }>();
  readonly key: string;

  constructor(
    readonly target: SafetensorsFile,
    readonly prefix: string,
    readonly applied: readonly AppliedLora[],
  ) {
    let offset = 0;
    for (const a of applied) {
      if (a.strength === 0) continue;
      for (const k of a.lora.patches.keys()) {
        if (!k.startsWith(prefix) || this.plan.has(k) || !target.has(k)) continue;
        const info = target.info(k);
        const count = info.shape.reduce((x, y) => x * y, 1);
        this.plan.set(k, { offset, length: count * 4, shape: info.shape });
        offset += count * 4;
      }
    }
    this.key = applied.map((a) => `${a.lora.signature}@${a.strength}`).join('|');
  }

  get empty(): boolean {
    return this.plan.size === 0;
  }

  /** calculate_weight for every planned key, in order of application: the bytes of the patches file. */
  async data(): Promise<Uint8Array> {
    const last = [...this.plan.values()].at(-1);
    const out = new Float32Array(last ? (last.offset + last.length) / 4 : 0);
    for (const [k, { offset, shape }] of this.plan) {
      const w = Float32Array.from(await this.target.readFloat32(k));
      for (const { lora, strength } of this.applied) {
        const p = lora.patches.get(k);
        if (!p || strength === 0) continue;
        await applyPatch(w, shape, p, strength, lora.file, k);
      }
      out.set(w, offset / 4);
    }
    return new Uint8Array(out.buffer);
  }
}

async function applyPatch(w: Float32Array, shape: readonly number[], p: Adapter, strength: number, file: SafetensorsFile, key: string): Promise<void> {
  const fail = (problem: string): never => {
    throw new ModelFileError(file.path, problem);
  };
  const count = w.length;
  const read = async (name: string): Promise<Tensor> => ({ data: await file.readFloat32(name), shape: file.info(name).shape, name });
  const maybe = async (name: string | undefined) => (name === undefined ? undefined : read(name));
  if (p.kind === 'set' || p.kind === 'diff') {
    const v = await file.readFloat32(p.tensor);
    const vs = file.info(p.tensor).shape;
    if (v.length !== count || vs.join() !== shape.join()) fail(`${p.tensor} has shape [${vs.join(', ')}], the weight ${key} [${shape.join(', ')}]`);
    if (p.kind === 'set') w.set(v);
    else {
      const s = Math.fround(strength);
      for (let i = 0; i < count; i++) w[i] = w[i]! + Math.fround(s * v[i]!);
    }
    return;
  }
  try {
    // Each adapter's difference and the alpha it is scaled by (the reference's alpha / rank, or its own rule).
    let diff: Float32Array;
    let alpha: number;
    switch (p.kind) {
      case 'lora': {
        const r = await loraDiff(p, shape, file, key, fail);
        if (!p.dora) return addLowRank(w, r, Math.fround(strength * r.alpha));
        diff = matmul(r.up, r.out, r.rank, r.down, r.inner);
        alpha = r.alpha;
        break;
      }
      case 'loha': {
        const w1b = await read(p.w1b);
        diff = lohaDiff({ w1a: await read(p.w1a), w1b, w2a: await read(p.w2a), w2b: await read(p.w2b), t1: await maybe(p.t1), t2: await maybe(p.t2) }, shape);
        alpha = p.alpha === undefined ? 1 : p.alpha / w1b.shape[0]!;
        break;
      }
      case 'lokr': {
        const r = lokrDiff({ w1: await maybe(p.w1), w2: await maybe(p.w2), w1a: await maybe(p.w1a), w1b: await maybe(p.w1b), w2a: await maybe(p.w2a), w2b: await maybe(p.w2b), t2: await maybe(p.t2), name: key }, shape);
        diff = r.diff;
        alpha = p.alpha !== undefined && r.rank !== undefined ? p.alpha / r.rank : 1;
        break;
      }
      case 'glora': {
        const r = gloraDiff({ a1: await read(p.a1), a2: await read(p.a2), b1: await read(p.b1), b2: await read(p.b2) }, w, shape);
        diff = r.diff;
        alpha = p.alpha === undefined ? 1 : p.alpha / r.rank;
        break;
      }
      case 'oft':
      case 'boft': {
        // alpha is OFT's norm constraint here, and what DoRA scales the difference by (the reference's quirk: 0 without one).
        alpha = p.alpha ?? 0;
        diff = p.kind === 'oft' ? oftDiff(await read(p.blocks), alpha, strength, w, shape) : boftDiff(await read(p.blocks), await maybe(p.rescale), alpha, strength, w, shape);
        if (!p.dora) {
          const s = Math.fround(strength);
          for (let i = 0; i < count; i++) w[i] = w[i]! + Math.fround(s * diff[i]!);
          return;
        }
        break;
      }
    }
    if (p.dora) return applyDora(w, shape, diff, alpha, strength, await read(p.dora));
    const s = Math.fround(strength * alpha);
    for (let i = 0; i < count; i++) w[i] = w[i]! + Math.fround(s * diff[i]!);
  } catch (err) {
    if (err instanceof PatchShapeError) fail(`${key}: ${err.message}`);
    throw err;
  }
}

interface LowRank {
  up: Float32Array;
  down: Float32Array;
  out: number;
  rank: number;
  inner: number;
  alpha: number;
}

/** up·down of a LoRA layer (LoCon's Tucker mid folded into down), checked against the weight; alpha is alpha/rank. */
async function loraDiff(p: { up: string; down: string; mid?: string; alpha?: number }, shape: readonly number[], file: SafetensorsFile, key: string, fail: (problem: string) => never): Promise<LowRank> {
  const upShape = file.info(p.up).shape;
  let downShape = file.info(p.down).shape;
  if (upShape.length < 2 || downShape.length < 2) fail(`${p.up} and ${p.down} must be matrices or conv weights`);
  const out = upShape[0]!;
  const rank = upShape.slice(1).reduce((a, b) => a * b, 1);
  if (downShape[0] !== rank) fail(`${p.up} [${upShape.join(', ')}] and ${p.down} [${downShape.join(', ')}] disagree on the rank`);
  let down = await file.readFloat32(p.down);
  if (p.mid) {
    // LoCon's Tucker form: down'[r, i, y, x] = Σ_k down[k, i] · mid[r, k, y, x].
    const mid = await file.readFloat32(p.mid);
    const ms = file.info(p.mid).shape;
    const inDim = downShape.slice(1).reduce((a, b) => a * b, 1);
    if (ms.length !== 4 || ms[1] !== downShape[0]) fail(`${p.mid} [${ms.join(', ')}] does not fit ${p.down} [${downShape.join(', ')}]`);
    const [r, k, kh, kw] = ms as [number, number, number, number];
    if (r !== rank) fail(`${p.mid} [${ms.join(', ')}] does not fit ${p.up} [${upShape.join(', ')}]`);
    const nd = new Float32Array(r * inDim * kh * kw);
    for (let ri = 0; ri < r; ri++)
      for (let i = 0; i < inDim; i++)
        for (let s = 0; s < kh * kw; s++) {
          let acc = 0;
          for (let kk = 0; kk < k; kk++) acc += down[kk * inDim + i]! * mid[(ri * k + kk) * kh * kw + s]!;
          nd[(ri * inDim + i) * kh * kw + s] = acc;
        }
    down = nd;
    downShape = [r, inDim, kh, kw];
  }
  const inner = downShape.slice(1).reduce((a, b) => a * b, 1);
  const count = shape.reduce((a, b) => a * b, 1);
  if (out * inner !== count) fail(`${p.up} [${upShape.join(', ')}] · ${p.down} [${downShape.join(', ')}] does not give the weight ${key} [${shape.join(', ')}]`);
  const up = await file.readFloat32(p.up);
  return { up, down, out, rank, inner, alpha: p.alpha === undefined ? 1 : p.alpha / rank };
}

/** w += s·(up·down), one output row at a time (the product is never held whole). */
function addLowRank(w: Float32Array, r: LowRank, s: number): void {
  const { up, down, out, rank, inner } = r;
  const row = new Float64Array(inner);
  for (let o = 0; o < out; o++) {
    row.fill(0);
    for (let k = 0; k < rank; k++) {
      const u = up[o * rank + k]!;
      if (u === 0) continue;
      const base = k * inner;
      for (let i = 0; i < inner; i++) row[i]! += u * down[base + i]!;
    }
    const at = o * inner;
    for (let i = 0; i < inner; i++) w[at + i] = w[at + i]! + Math.fround(s * Math.fround(row[i]!));
  }
}
