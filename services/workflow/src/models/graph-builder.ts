/**
 * Builds ONNX graphs layer by layer from a checkpoint's tensors. Weights are
 * never read: each becomes an initializer whose external data is the
 * tensor's byte range in the .safetensors file; fp16/bf16 weights are read
 * from the checkpoint's float32 copy (float32-copy.ts) where the session has
 * one, else through a Cast to float32 that ONNX Runtime folds at creation.
 * Layers are written the way the reference's torch modules compute, so the
 * same checkpoint gives the same numbers (within float32 rounding).
 *
 * A graph built `half` (the UNet in fp16, precision.ts) computes in float16:
 * fp16 weights are read as they are, others cast to float16; its inputs and
 * outputs stay float32 (cast at the boundary), group-norm statistics are
 * taken in float32, and attention runs in float32 where upcast.
 *
 * A graph built with `storage` (the text encoders' --fp16-text-enc, …)
 * computes in float32 from weights rounded to that type first, as the
 * reference's CLIP stores its weights and casts them up to compute.
 */
import { DataType, encodeModel, type GraphSpec, type NodeSpec, type TensorValue, type ValueInfo } from './onnx-proto.ts';
import { FLOAT32_LOCATION, type Float32Copy } from './float32-copy.ts';
import type { WeightPatches } from './lora.ts';
import { toHalfBits, type TextEncoderStorage } from './precision.ts';
import { ModelFileError, type SafetensorsFile } from './safetensors.ts';

const ONNX_DTYPE: Record<string, number> = { F32: DataType.FLOAT, F16: DataType.FLOAT16, BF16: DataType.BFLOAT16, F64: DataType.DOUBLE };

/** The ONNX type each storage rounds to, and the file dtype whose values it holds exactly (no rounding needed). */
const STORAGE: Record<Exclude<TextEncoderStorage, 'fp32'>, { to: number; exact: string }> = {
  fp16: { to: DataType.FLOAT16, exact: 'F16' },
  bf16: { to: DataType.BFLOAT16, exact: 'BF16' },
  fp8_e4m3fn: { to: DataType.FLOAT8E4M3FN, exact: 'F8_E4M3' },
  fp8_e5m2: { to: DataType.FLOAT8E5M2, exact: 'F8_E5M2' },
};

export class OnnxGraph {
  private readonly nodes: NodeSpec[] = [];
  protected readonly inits: TensorValue[] = [];
  protected readonly weightNames = new Map<string, string>();
  private readonly inputs: ValueInfo[] = [];
  private readonly outputs: ValueInfo[] = [];
  private n = 0;
  /** LoRA-patched weights: their float32 values come from the patches file instead of the checkpoint. */
  readonly patches?: WeightPatches;

  /** Patches for the graphs built while a patched model's session is made (set around the synchronous build, see sd1.ts). */
  static activePatches: WeightPatches | undefined;

  /** Where half-precision weights of the graphs built now are read as float32 (set around the synchronous build, see sd1.ts). */
  static activeFloat32: Float32Copy | undefined;
  /** The float32 copy this graph's half weights are read from, if any. */
  readonly float32?: Float32Copy;

  /**
   * @param file the checkpoint
   * @param location the external-data file name the session will find the checkpoint under
   * @param prefix key prefix of this model's tensors (e.g. `model.diffusion_model.`)
   */
  /** Computes in float16 (weights and activations); float32 at the inputs and outputs. */
  readonly half: boolean;
  /** In a half graph: attention (and its softmax) in float32. */
  readonly upcastAttention: boolean;
  /** A float32 graph whose weights are rounded to this type first (the text encoders' storage); undefined: as the file holds them. */
  readonly storage?: Exclude<TextEncoderStorage, 'fp32'>;

  constructor(
    readonly file: SafetensorsFile,
    readonly location: string,
    readonly prefix: string,
    precision: { half?: boolean; upcastAttention?: boolean; storage?: TextEncoderStorage } = {},
  ) {
    this.half = precision.half === true;
    if (precision.storage && precision.storage !== 'fp32' && !this.half) this.storage = precision.storage;
    this.upcastAttention = this.half && precision.upcastAttention === true;
    const p = OnnxGraph.activePatches;
    if (p && p.target === file && p.prefix === prefix && !p.empty) this.patches = p;
    const c = OnnxGraph.activeFloat32;
    if (c && c.source === file.path) this.float32 = c;
  }

  has(key: string): boolean {
    return this.file.has(this.prefix + key);
  }

  shape(key: string): readonly number[] {
    return this.file.info(this.prefix + key).shape;
  }

  fresh(hint: string): string {
    return `${hint}_${this.n++}`;
  }

  input(name: string, elemType: number, dims: (number | string)[]): string {
    this.inputs.push({ name, elemType, dims });
    return name;
  }

  /** The element type activations have here: FLOAT16 in a half graph. */
  get computeType(): number {
    return this.half ? DataType.FLOAT16 : DataType.FLOAT;
  }

  /** A float32 input (the samplers' type) as the graph computes it: cast to float16 in a half graph. */
  floatInput(name: string, dims: (number | string)[]): string {
    const v = this.input(name, DataType.FLOAT, dims);
    return this.half ? this.op('Cast', [v], { to: DataType.FLOAT16 }) : v;
  }

  /** A value in float32 (a half graph's numerically sensitive parts). */
  toFloat(x: string): string {
    return this.half ? this.op('Cast', [x], { to: DataType.FLOAT }) : x;
  }

  /** A float32 value back in the compute type. */
  toCompute(x: string): string {
    return this.half ? this.op('Cast', [x], { to: DataType.FLOAT16 }) : x;
  }

  output(value: string, name: string, dims: (number | string)[]): void {
    this.op(this.half ? 'Cast' : 'Identity', [value], this.half ? { to: DataType.FLOAT } : {}, name);
    this.outputs.push({ name, elemType: DataType.FLOAT, dims });
  }

  /** A value holding checkpoint tensor `key` in the compute type (float32, or float16 in a half graph). */
  w(key: string): string {
    if (!this.half) return this.wFloat(key);
    const full = this.prefix + key;
    const known = this.weightNames.get(`${full}#h`);
    if (known) return known;
    let value: string;
    const info = this.file.info(full);
    if (info.dtype === 'F16' && !this.patches?.plan.has(full)) {
      const name = `w:${full}`;
      this.inits.push({ name, dataType: DataType.FLOAT16, dims: info.shape, external: { location: this.location, offset: this.file.fileOffset(full), length: info.end - info.begin } });
      value = name;
    } else {
      // float32, bf16 (through its float32 copy or cast) and LoRA-patched weights: cast once; ORT folds it at creation.
      value = this.op('Cast', [this.wFloat(key)], { to: DataType.FLOAT16 });
    }
    this.weightNames.set(`${full}#h`, value);
    return value;
  }

  /** Whether `key`'s float32 value is rounded to the storage type (a file dtype the storage holds exactly is not). */
  private rounds(full: string): boolean {
    return this.storage !== undefined && !this.patches?.plan.has(full) && this.file.info(full).dtype !== STORAGE[this.storage].exact;
  }

  /** A float32 value holding checkpoint tensor `key` (rounded to the storage type where the graph has one). */
  protected wFloat(key: string): string {
    const full = this.prefix + key;
    if (!this.rounds(full)) return this.wFile(key);
    const known = this.weightNames.get(`${full}#s`);
    if (known) return known;
    // Rounded as the reference's load into a float16/bf16/fp8 parameter rounds (to nearest even); ORT folds both casts at creation.
    // fp8 without saturation, as torch's conversion: out of range is NaN (e4m3fn) or inf (e5m2), not the largest value.
    const fp8 = this.storage!.startsWith('fp8');
    const value = this.op('Cast', [this.op('Cast', [this.wFile(key)], { to: STORAGE[this.storage!].to, ...(fp8 ? { saturate: 0 } : {}) })], { to: DataType.FLOAT });
    this.weightNames.set(`${full}#s`, value);
    return value;
  }

  /** A float32 value holding checkpoint tensor `key` as the file (or its patches) holds it. */
  private wFile(key: string): string {
    const full = this.prefix + key;
    const known = this.weightNames.get(full);
    if (known) return known;
    const patched = this.patches?.plan.get(full);
    if (patched) {
      const name = `p:${full}`;
      this.inits.push({ name, dataType: DataType.FLOAT, dims: patched.shape, external: { location: this.patches!.location, offset: patched.offset, length: patched.length } });
      this.weightNames.set(full, name);
      return name;
    }
    const info = this.file.info(full);
    const dataType = ONNX_DTYPE[info.dtype];
    if (dataType === undefined) throw new ModelFileError(this.file.path, `tensor ${JSON.stringify(full)} has dtype ${info.dtype}, expected a float type`);
    const name = `w:${full}`;
    if (this.float32 && (info.dtype === 'F16' || info.dtype === 'BF16')) {
      const at = this.float32.plan(this.file.fileOffset(full), info.end - info.begin, info.dtype);
      this.inits.push({ name, dataType: DataType.FLOAT, dims: info.shape, external: { location: FLOAT32_LOCATION, ...at } });
      this.weightNames.set(full, name);
      return name;
    }
    this.inits.push({ name, dataType, dims: info.shape, external: { location: this.location, offset: this.file.fileOffset(full), length: info.end - info.begin } });
    const value = dataType === DataType.FLOAT ? name : this.op('Cast', [name], { to: DataType.FLOAT });
    this.weightNames.set(full, value);
    return value;
  }

  /**
   * Checkpoint tensor `key` as a [rows, cols] matrix transposed, read from the
   * float32 copy (written there transposed once); undefined without a copy or
   * for a LoRA-patched weight (the caller transposes in the graph then).
   */
  wTransposed(key: string, [rows, cols]: [number, number]): string | undefined {
    const full = this.prefix + key;
    if (this.half || !this.float32 || this.patches?.plan.has(full) || this.rounds(full)) return undefined;
    const info = this.file.info(full);
    if (info.dtype !== 'F32' && info.dtype !== 'F16' && info.dtype !== 'BF16') return undefined;
    // A shape that does not hold the matrix is the graph's to refuse (a clear ModelFileError from the session).
    if (info.shape.reduce((a, b) => a * b, 1) !== rows * cols) return undefined;
    const name = `wT:${full}`;
    if (!this.weightNames.has(`${full}#T`)) {
      const at = this.float32.plan(this.file.fileOffset(full), info.end - info.begin, info.dtype, [rows, cols]);
      this.inits.push({ name, dataType: DataType.FLOAT, dims: [cols, rows], external: { location: FLOAT32_LOCATION, ...at } });
      this.weightNames.set(`${full}#T`, name);
    }
    return name;
  }

  /** A checkpoint tensor viewed with another shape (e.g. a [C,C,1,1] conv weight as [C,C]). */
  wReshaped(key: string, dims: number[]): string {
    const shape = this.shape(key);
    if (shape.length === dims.length && shape.every((s, i) => s === dims[i])) return this.w(key);
    return this.op('Reshape', [this.w(key), this.i64(dims)]);
  }

  /** A constant in the compute type (float16 in a half graph). */
  constant(values: number[], dims: number[]): string {
    if (!this.half) return this.f32(values, dims);
    const name = this.fresh('c');
    this.inits.push({ name, dataType: DataType.FLOAT16, dims, raw: new Uint8Array(Uint16Array.from(values.map(toHalfBits)).buffer) });
    return name;
  }

  f32(values: number[], dims: number[]): string {
    const name = this.fresh('c');
    this.inits.push({ name, dataType: DataType.FLOAT, dims, raw: new Uint8Array(Float32Array.from(values).buffer) });
    return name;
  }

  i64(values: number[], dims: number[] = [values.length]): string {
    const name = this.fresh('i');
    this.inits.push({ name, dataType: DataType.INT64, dims, raw: new Uint8Array(BigInt64Array.from(values.map(BigInt)).buffer) });
    return name;
  }

  op(type: string, inputs: string[], attrs: NodeSpec['attrs'] = {}, out?: string): string {
    const o = out ?? this.fresh(type);
    this.nodes.push({ op: type, inputs, outputs: [o], attrs });
    return o;
  }

  opN(type: string, inputs: string[], count: number, attrs: NodeSpec['attrs'] = {}): string[] {
    const outs = Array.from({ length: count }, () => this.fresh(type));
    this.nodes.push({ op: type, inputs, outputs: outs, attrs });
    return outs;
  }

  add(a: string, b: string): string {
    return this.op('Add', [a, b]);
  }

  mul(a: string, b: string): string {
    return this.op('Mul', [a, b]);
  }

  scale(a: string, s: number): string {
    return this.mul(a, this.constant([s], []));
  }

  silu(x: string): string {
    return this.mul(x, this.op('Sigmoid', [x]));
  }

  /** torch Conv2d; `key` is the module prefix (`…/weight`, `…/bias`). */
  conv(x: string, key: string, opts: { stride?: number; pads?: [number, number, number, number] } = {}): string {
    const [, , kh, kw] = this.shape(`${key}.weight`) as number[];
    const pads = opts.pads ?? [(kh! - 1) / 2, (kw! - 1) / 2, (kh! - 1) / 2, (kw! - 1) / 2];
    const inputs = [x, this.w(`${key}.weight`)];
    if (this.has(`${key}.bias`)) inputs.push(this.w(`${key}.bias`));
    return this.op('Conv', inputs, { kernel_shape: [kh!, kw!], strides: [opts.stride ?? 1, opts.stride ?? 1], pads });
  }

  /** torch Linear (y = x Wᵀ + b) on the last axis; a [out,in,1,1] weight is taken as [out,in]. */
  linear(x: string, key: string): string {
    const shape = this.shape(`${key}.weight`);
    const wt = this.wTransposed(`${key}.weight`, [shape[0]!, shape[1]!]) ?? this.op('Transpose', [this.wReshaped(`${key}.weight`, [shape[0]!, shape[1]!])], { perm: [1, 0] });
    const y = this.op('MatMul', [x, wt]);
    return this.has(`${key}.bias`) ? this.add(y, this.w(`${key}.bias`)) : y;
  }

  /** A per-channel [C] vector shaped [C,1,1] to broadcast over NCHW. */
  private channelVector(key: string): string {
    const c = this.shape(key)[0]!;
    return this.wReshaped(key, [c, 1, 1]);
  }

  /** torch GroupNorm on NCHW: normalise groups with InstanceNormalization, then the per-channel affine. */
  groupNorm(x: string, key: string, groups: number, eps: number): string {
    const c = this.shape(`${key}.weight`)[0]!;
    if (c % groups !== 0) throw new ModelFileError(this.file.path, `${this.prefix}${key}: ${c} channels cannot form ${groups} groups`);
    // A half graph takes the statistics in float32 (a float16 sum of squares over a group overflows).
    const grouped = this.op('Reshape', [this.toFloat(x), this.i64([0, groups, -1])]);
    const normed = this.op('InstanceNormalization', [grouped, this.f32(new Array(groups).fill(1), [groups]), this.f32(new Array(groups).fill(0), [groups])], { epsilon: { float: eps } });
    const back = this.op('Reshape', [this.toCompute(normed), this.op('Shape', [x])]);
    return this.add(this.mul(back, this.channelVector(`${key}.weight`)), this.channelVector(`${key}.bias`));
  }

  layerNorm(x: string, key: string, eps: number): string {
    return this.op('LayerNormalization', [x, this.w(`${key}.weight`), this.w(`${key}.bias`)], { axis: -1, epsilon: { float: eps } });
  }

  /**
   * Multi-head scaled dot-product attention on [B, T, C] values (heads split
   * from C), with an optional additive mask broadcast over [B, H, Tq, Tk].
   * Unmasked, it is ONNX Runtime's fused MultiHeadAttention (com.microsoft),
   * which on the CPU runs as flash attention: the [B, H, Tq, Tk] scores are
   * never held (a 1024² SDXL step would hold gigabytes of them), it takes
   * about half the time, and it differs from the unfused form by float32
   * rounding. The reference picks its fused attention (SDPA) likewise.
   */
  attention(q: string, k: string, v: string, heads: number, channels: number, mask?: string): string {
    // Upcast (a half graph): the whole attention, softmax included, in float32, as the reference's upcast does.
    if (this.upcastAttention) {
      const f = (t: string) => this.op('Cast', [t], { to: DataType.FLOAT });
      return this.toCompute(this.attentionIn(f(q), f(k), f(v), heads, channels, mask && f(mask), false));
    }
    return this.attentionIn(q, k, v, heads, channels, mask, this.half);
  }

  private attentionIn(q: string, k: string, v: string, heads: number, channels: number, mask: string | undefined, half: boolean): string {
    if (!mask) {
      const out = this.fresh('MultiHeadAttention');
      this.nodes.push({ op: 'MultiHeadAttention', domain: 'com.microsoft', inputs: [q, k, v], outputs: [out], attrs: { num_heads: heads } });
      return out;
    }
    const d = channels / heads;
    const split = (t: string, perm: number[]) => this.op('Transpose', [this.op('Reshape', [t, this.i64([0, 0, heads, d])])], { perm });
    const qh = split(q, [0, 2, 1, 3]);
    const kh = split(k, [0, 2, 3, 1]);
    const vh = split(v, [0, 2, 1, 3]);
    let scores = this.mul(this.op('MatMul', [qh, kh]), half ? this.constant([d ** -0.5], []) : this.f32([d ** -0.5], []));
    scores = this.add(scores, mask);
    const p = this.op('Softmax', [scores], { axis: -1 });
    const out = this.op('Transpose', [this.op('MatMul', [p, vh])], { perm: [0, 2, 1, 3] });
    return this.op('Reshape', [out, this.i64([0, 0, channels])]);
  }

  /** NCHW → [B, H·W, C]. */
  toTokens(x: string): string {
    return this.op('Transpose', [this.op('Reshape', [x, this.i64([0, 0, -1])])], { perm: [0, 2, 1] });
  }

  /** [B, H·W, C] → NCHW with the shape of `like`. */
  fromTokens(t: string, like: string): string {
    return this.op('Reshape', [this.op('Transpose', [t], { perm: [0, 2, 1] }), this.op('Shape', [like])]);
  }

  /** Nearest-neighbour ×2 (torch interpolate scale_factor=2, mode nearest). */
  upsample2x(x: string): string {
    return this.op('Resize', [x, '', this.f32([1, 1, 2, 2], [4])], { mode: 'nearest', coordinate_transformation_mode: 'asymmetric', nearest_mode: 'floor' });
  }

  /** Nearest-neighbour to the height and width of `like` (torch interpolate size=…, mode nearest). */
  upsampleTo(x: string, like: string): string {
    const nc = this.op('Slice', [this.op('Shape', [x]), this.i64([0]), this.i64([2])]);
    const hw = this.op('Slice', [this.op('Shape', [like]), this.i64([2]), this.i64([4])]);
    const sizes = this.op('Concat', [nc, hw], { axis: 0 });
    return this.op('Resize', [x, '', '', sizes], { mode: 'nearest', coordinate_transformation_mode: 'asymmetric', nearest_mode: 'floor' });
  }

  encode(name: string): Uint8Array {
    const spec: GraphSpec = { name, nodes: this.nodes, initializers: this.inits, inputs: this.inputs, outputs: this.outputs };
    return encodeModel(spec);
  }
}
