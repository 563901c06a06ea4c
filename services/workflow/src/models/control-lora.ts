/**
 * Control-LoRAs (a file with `lora_controlnet`), as the reference's
 * ControlLora (comfy/controlnet.py) runs them: when sampled, a ControlNet is
 * built with the sampled model's UNet config from the model's own weights
 * (time_embed, label_emb, input and middle blocks, LoRA patches included),
 * the file's whole tensors (hint block, zero convs, norms, biases) put in
 * their place, and every linear or conv layer the file has `up`/`down` for
 * computing with weight + up·down (ControlLoraOps). The graph reads the
 * model's weights from the model's file and the Control-LoRA's from its own;
 * up·down is a MatMul of two initializers, folded once when the session is made.
 */
import type { ControlCall, ResidualTensor } from './control-residuals.ts';
import { buildControlNetGraph } from './controlnet-graph.ts';
import { detectControl, type ControlLoraSpec } from './detect-control.ts';
import { UNET_PREFIX, type UNetConfig } from './detect.ts';
import { OnnxGraph } from './graph-builder.ts';
import { DataType } from './onnx-proto.ts';
import { unetPrecision } from './precision.ts';
import { ModelFileError, type SafetensorsFile } from './safetensors.ts';
import type { Checkpoint } from './sd1.ts';
import { ortTensor, WEIGHTS_LOCATION, type OrtTensor } from './session.ts';
import { timestepEmbedding } from './unet-graph.ts';

/** The external-data name a Control-LoRA's own file goes by in its sessions. */
const OWN_LOCATION = 'control_lora.safetensors';

const ONNX_DTYPE: Record<string, number> = { F32: DataType.FLOAT, F16: DataType.FLOAT16, BF16: DataType.BFLOAT16 };

/**
 * A ControlNet graph whose weights are the model's UNet's (under
 * model.diffusion_model.) except where the Control-LoRA's file has the tensor,
 * plus up·down on the layers it gives them for.
 */
class ControlLoraGraph extends OnnxGraph {
  constructor(
    model: SafetensorsFile,
    private readonly own: SafetensorsFile,
    private readonly lowRank: ReadonlySet<string>,
    precision: { half?: boolean; upcastAttention?: boolean } = {},
  ) {
    super(model, WEIGHTS_LOCATION, UNET_PREFIX, precision);
  }

  private module(key: string): string | undefined {
    return key.endsWith('.weight') && this.lowRank.has(key.slice(0, -'.weight'.length)) ? key.slice(0, -'.weight'.length) : undefined;
  }

  override has(key: string): boolean {
    return this.own.has(key) || super.has(key);
  }

  override shape(key: string): readonly number[] {
    return this.own.has(key) ? this.own.info(key).shape : super.shape(key);
  }

  /** A tensor of the Control-LoRA's file, as float32. */
  private ownWeight(key: string): string {
    const known = this.weightNames.get(`own:${key}`);
    if (known) return known;
    const info = this.own.info(key);
    const dataType = ONNX_DTYPE[info.dtype];
    if (dataType === undefined) throw new ModelFileError(this.own.path, `tensor ${JSON.stringify(key)} has dtype ${info.dtype}, expected a float type`);
    const name = `own:${key}`;
    this.inits.push({ name, dataType, dims: info.shape, external: { location: OWN_LOCATION, offset: this.own.fileOffset(key), length: info.end - info.begin } });
    const value = dataType === DataType.FLOAT ? name : this.op('Cast', [name], { to: DataType.FLOAT });
    this.weightNames.set(`own:${key}`, value);
    return value;
  }

  override w(key: string): string {
    if (!this.half) return this.weight32(key);
    // A half graph: the sum in float32 (the reference adds in the compute type), then float16 once; ORT folds it.
    const known = this.weightNames.get(`half:${key}`);
    if (known) return known;
    const value = !this.own.has(key) && !this.module(key) ? super.w(key) : this.op('Cast', [this.weight32(key)], { to: DataType.FLOAT16 });
    this.weightNames.set(`half:${key}`, value);
    return value;
  }

  /** The weight in float32: the file's tensor or the model's, plus up·down where the file has them. */
  private weight32(key: string): string {
    const m = this.module(key);
    const base = this.own.has(key) ? this.ownWeight(key) : super.wFloat(key);
    if (!m) return base;
    const known = this.weightNames.get(`lora:${key}`);
    if (known) return known;
    // weight + (up.flatten(1) · down.flatten(1)).reshape(weight.shape), in float32 as ControlLoraOps computes it.
    const flat = (k: string) => this.op('Reshape', [this.ownWeight(k), this.i64([this.own.info(k).shape[0]!, -1])]);
    const product = this.op('MatMul', [flat(`${m}.up`), flat(`${m}.down`)]);
    const value = this.add(base, this.op('Reshape', [product, this.i64([...this.shape(key)])]));
    this.weightNames.set(`lora:${key}`, value);
    return value;
  }

  override wTransposed(key: string, dims: [number, number]): string | undefined {
    if (this.own.has(key) || this.module(key)) return undefined;
    return super.wTransposed(key, dims);
  }
}

/** Each Control-LoRA checkpoint's number in its model's session kinds (a changed file is another checkpoint, so another number). */
const ids = new WeakMap<Checkpoint, number>();
let nextId = 0;

/** A Control-LoRA: its ControlNet is made for the model it is sampled with. */
export class ControlLoraModel {
  readonly kind = 'control_lora';
  readonly spec: ControlLoraSpec;
  readonly compressionRatio = 8;
  /** ControlLora never averages (the reference's takes no global_average_pooling from the file name). */
  readonly globalAveragePooling = false;
  /** The models whose weights were checked against this file. */
  private readonly checked = new WeakSet<SafetensorsFile>();

  constructor(readonly checkpoint: Checkpoint) {
    this.spec = detectControl(checkpoint.file) as ControlLoraSpec;
    if (!ids.has(checkpoint)) ids.set(checkpoint, nextId++);
  }

  /** That the file's tensors fit the model's UNet (set_attr_param would put them in its layers). */
  private check(model: Checkpoint, cfg: UNetConfig): void {
    const base = model.file;
    if (this.checked.has(base)) return;
    const own = this.checkpoint.file;
    const fail = (problem: string): never => {
      throw new ModelFileError(own.path, `this Control-LoRA does not fit the model ${model.file.path}: ${problem}`);
    };
    if (!cfg?.inputBlocks) fail('the model has no UNet');
    for (const m of this.spec.lowRank) {
      const key = `${m}.weight`;
      const shape = own.has(key) ? own.info(key).shape : base.has(UNET_PREFIX + key) ? base.info(UNET_PREFIX + key).shape : fail(`the model has no ${key} for ${m}.up/.down`);
      const out = own.info(`${m}.up`).shape[0]!;
      const inner = own.info(`${m}.down`).shape.slice(1).reduce((a, b) => a * b, 1);
      if (shape.length < 2 || shape[0] !== out || shape.slice(1).reduce((a, b) => a * b, 1) !== inner) fail(`${m}.up · ${m}.down does not give ${key} [${shape.join(', ')}]`);
    }
    for (const [k, info] of own.tensors) {
      if (!/\.(weight|bias)$/.test(k) || !base.has(UNET_PREFIX + k)) continue;
      const s = base.info(UNET_PREFIX + k).shape;
      if (s.join() !== info.shape.join()) fail(`${k} is [${info.shape.join(', ')}], the model's [${s.join(', ')}]`);
    }
    this.checked.add(base);
  }

  /** SetUnionControlNetType gives every control the argument; a Control-LoRA ignores it. */
  withControlType(): ControlLoraModel {
    return this;
  }

  async forward(call: ControlCall, hint: ResidualTensor): Promise<{ output: ResidualTensor[]; middle: ResidualTensor[] }> {
    const model = call.model as Checkpoint | undefined;
    if (!model) throw new Error('a Control-LoRA is made from the sampled model: it runs only inside a sampler');
    const cfg = model.detected.unet;
    this.check(model, cfg);
    const n = call.shape[0]!;
    if (call.context.shape[2] !== cfg.contextDim) throw new Error(`the conditioning has width ${call.context.shape[2]}; this model's cross-attention takes ${cfg.contextDim}`);
    if (hint.shape[1] !== this.spec.hintChannels) throw new Error(`this Control-LoRA takes a hint of ${this.spec.hintChannels} channels, got ${hint.shape[1]}`);
    const own = this.checkpoint.file;
    const lowRank = new Set(this.spec.lowRank);
    // The sampled model's precision, as the reference's ControlLora takes the model's dtype.
    const p = unetPrecision();
    const half = p.dtype === 'fp16';
    const build = () => buildControlNetGraph(new ControlLoraGraph(model.file, own, lowRank, { half, upcastAttention: p.upcastAttention }), cfg, this.spec.hintChannels);
    const feeds: Record<string, OrtTensor> = {
      x: ortTensor('float32', call.x, call.shape),
      hint: ortTensor('float32', hint.data, hint.shape),
      t_emb: ortTensor('float32', timestepEmbedding(new Array(n).fill(call.timestep), cfg.modelChannels), [n, cfg.modelChannels]),
      context: ortTensor('float32', call.context.data, call.context.shape),
    };
    if (cfg.admInChannels) {
      if (!call.y || call.y.length !== n * cfg.admInChannels) throw new Error(`this Control-LoRA's model needs each conditioning's adm vector of ${cfg.admInChannels} values`);
      feeds.y = ortTensor('float32', call.y, [n, cfg.admInChannels]);
    }
    // The session is the model's (its file, float32 copy and LoRA patches), with this file hard-linked beside it (read in place).
    const extra = async () => [{ name: OWN_LOCATION, path: own.path }];
    const out = await model.run(`control_lora:${ids.get(this.checkpoint)}${half ? ':fp16' : ''}`, build, feeds, extra);
    const planar = (t: OrtTensor): ResidualTensor => ({ shape: [...t.dims], data: t.data as Float32Array });
    return { output: cfg.inputBlocks.map((_, i) => planar(out[`out_${i}`]!)), middle: [planar(out.mid!)] };
  }
}
