/**
 * CLIP for SD2.x and SDXL checkpoints: the reference's SD2ClipModel
 * (OpenCLIP-H, penultimate layer, final-layer-normed), SDXLClipModel (CLIP-L
 * and OpenCLIP-G, both penultimate and not normed, concatenated along the
 * width; the pooled output is G's) and SDXLRefinerClipModel (OpenCLIP-G
 * alone). CONDITIONING entries carry `pooled_output` as the reference's, and
 * the SDXL text nodes add their size, crop and aesthetic options.
 */
import { ClipTokenizer, tokenizeWithWeights, type TokenizeOptions, type WeightedToken } from './clip-tokenizer.ts';
import { detectHfClip, detectOpenClip, type TextEncoderSpec } from './detect-families.ts';
import { OnnxGraph } from './graph-builder.ts';
import { ModelFileError, SafetensorsFile } from './safetensors.ts';
import { textEncoderPrecision } from './precision.ts';
import { ortTensor, WEIGHTS_LOCATION } from './session.ts';
import type { DetectedCheckpoint, UNetConfig } from './detect.ts';
import { cachedCheckpoint, Checkpoint, ClipModel, textKind, type ConditioningEntry, type FloatTensor } from './sd1.ts';

type DetectedCheckpointFamily = DetectedCheckpoint['family'];
import { buildTextEncoderGraph } from './text-encoder-graph.ts';

const START = 49406;
const END = 49407;

/** One encoder's tokens: CLIP-L pads with the end token, OpenCLIP (pad_with_end=False) with 0 after each chunk's end. */
function padFor(spec: TextEncoderSpec, chunks: WeightedToken[][]): WeightedToken[][] {
  if (spec.name === 'l') return chunks;
  return chunks.map((c) => {
    const end = c.findIndex((t) => t.token === END);
    return c.map((t, i) => (i > end && t.token === END ? { ...t, token: 0 } : t));
  });
}

function emptyChunk(spec: TextEncoderSpec): number[] {
  const t = new Array(77).fill(spec.name === 'l' ? END : 0);
  t[0] = START;
  t[1] = END;
  return t;
}

/** Tokens per encoder name, as the reference's SD2Tokenizer / SDXLTokenizer give them ({g, l} or {h}). */
export type XLTokens = Partial<Record<TextEncoderSpec['name'], WeightedToken[][]>>;

/** One text encoder and the file (checkpoint or text-encoder file) its weights are in. */
export interface TextEncoderPart {
  ck: Checkpoint;
  spec: TextEncoderSpec;
}

/** CLIP of an SD2.x, SDXL or SDXL refiner checkpoint, or of text-encoder files (DualCLIPLoader). */
export class XLClipModel extends ClipModel {
  readonly parts: TextEncoderPart[];
  readonly family: DetectedCheckpointFamily;

  /**
   * @param layerIdx CLIPSetLastLayer's choice; undefined = the model's default (the penultimate layer)
   * @param from text encoders in files of their own, and the family they make (default: the checkpoint's)
   */
  constructor(
    checkpoint: Checkpoint,
    readonly layerIdx?: number,
    from?: { parts: TextEncoderPart[]; family: DetectedCheckpointFamily },
  ) {
    super(checkpoint, layerIdx ?? -2);
    this.parts = from?.parts ?? (checkpoint.detected.textEncoders ?? []).map((spec) => ({ ck: checkpoint, spec }));
    this.family = from?.family ?? checkpoint.detected.family;
  }

  get encoders(): TextEncoderSpec[] {
    return this.parts.map((p) => p.spec);
  }

  override withLayer(layer: number): XLClipModel {
    return new XLClipModel(this.checkpoint, layer, { parts: this.parts, family: this.family });
  }

  /** set_clip_options: a layer beyond an encoder's depth means its last (normed) output. */
  private layerFor(spec: TextEncoderSpec): 'last' | number {
    const idx = this.layerIdx ?? -2;
    return Math.abs(idx) > spec.config.layers ? 'last' : idx;
  }

  /** Tokens per encoder: with textual inversions each encoder reads its own vectors (embedding key clip_l, clip_g or clip_h), as the reference's per-encoder tokenizers. */
  tokenize(text: string, opts: TokenizeOptions = {}): XLTokens {
    const out: XLTokens = {};
    let shared: WeightedToken[][] | undefined;
    for (const e of this.encoders) {
      const forKey = opts.embeddingFor;
      const chunks = forKey ? tokenizeWithWeights(text, ClipTokenizer.shared(), { ...opts, embedding: (name) => forKey(name, `clip_${e.name}`) }) : (shared ??= tokenizeWithWeights(text, ClipTokenizer.shared(), opts));
      out[e.name] = padFor(e, chunks);
    }
    return out;
  }

  /**
   * One encoder over token chunks: hidden states [k, 77, D] and pooled outputs [k, P] (when it projects).
   * Rows with textual-inversion vectors (process_tokens): each vector takes its token's place; one of another
   * width is dropped and the row padded at its end with the encoder's pad token (end for CLIP-L, 0 for OpenCLIP).
   */
  private async run(spec: TextEncoderSpec, rows: Array<number[] | WeightedToken[]>): Promise<{ hidden: FloatTensor; pooled?: Float32Array }> {
    const D = spec.config.hiddenSize;
    const embedded = rows.some((r) => r.some((t) => typeof t !== 'number' && t.embedding !== undefined));
    const pad = spec.name === 'l' ? END : 0;
    const kept = rows.map((r): WeightedToken[] => {
      const k = r.map((t) => (typeof t === 'number' ? { token: t, weight: 1 } : t)).filter((t) => !t.embedding || t.embedding.length === D);
      while (k.length < r.length) k.push({ token: pad, weight: 1 });
      return k;
    });
    const ids = kept.map((r) => r.map((t) => (t.embedding ? 0 : t.token)));
    const layer = this.layerFor(spec);
    const kind = textKind(embedded ? `text:${spec.name}:${layer}:embeddings` : `text:${spec.name}:${layer}`);
    const ck = this.parts.find((p) => p.spec === spec)!.ck;
    const build = () =>
      // float32 compute from weights stored as --fp16-text-enc, … say (precision.ts).
      buildTextEncoderGraph(new OnnxGraph(ck.file, WEIGHTS_LOCATION, spec.prefix, { storage: textEncoderPrecision().storage }), spec, {
        layer,
        // SD2's encoder norms its hidden layer; SDXL's two do not (layer_norm_hidden_state=False).
        layerNormHidden: spec.name === 'h',
        activation: spec.name === 'l' ? 'quick_gelu' : 'gelu',
        embeds: embedded,
      });
    // The session first: it loads the runtime the input tensors need.
    await ck.session(kind, build);
    const tokens = new BigInt64Array(ids.length * 77);
    const eos = new Float32Array(ids.length * 77);
    ids.forEach((c, i) => {
      c.forEach((t, j) => (tokens[i * 77 + j] = BigInt(t)));
      // The pooled row: the first end token (the reference's num_tokens − 1; the last position when there is none).
      const at = c.indexOf(END);
      eos[i * 77 + (at < 0 ? 76 : at)] = 1;
    });
    const feeds: Record<string, ReturnType<typeof ortTensor>> = { tokens: ortTensor('int64', tokens, [ids.length, 77]), eos: ortTensor('float32', eos, [ids.length, 77]) };
    if (embedded) {
      const embeds = new Float32Array(ids.length * 77 * D);
      const use = new Uint8Array(ids.length * 77);
      kept.forEach((r, i) =>
        r.forEach((t, j) => {
          if (!t.embedding) return;
          use[i * 77 + j] = 1;
          embeds.set(t.embedding, (i * 77 + j) * D);
        }),
      );
      feeds.embeds = ortTensor('float32', embeds, [ids.length, 77, D]);
      feeds.use_embeds = ortTensor('bool', use, [ids.length, 77, 1]);
    }
    const out = await ck.run(kind, build, feeds);
    const h = out.hidden!;
    return { hidden: { shape: [...h.dims], data: h.data as Float32Array }, pooled: out.pooled ? (out.pooled.data as Float32Array) : undefined };
  }

  /** encode_token_weights for one encoder: weighted chunks joined along the tokens, the first chunk's pooled output. */
  async encodeWeighted(spec: TextEncoderSpec, chunks: WeightedToken[][]): Promise<{ cond: FloatTensor; pooled?: FloatTensor }> {
    const hasWeights = chunks.some((c) => c.some((t) => t.weight !== 1));
    const rows: Array<number[] | WeightedToken[]> = [...chunks];
    if (hasWeights || rows.length === 0) rows.push(emptyChunk(spec));
    const { hidden, pooled } = await this.run(spec, rows);
    const D = hidden.shape[2]!;
    const per = 77 * D;
    const sections = chunks.length;
    let data: Float32Array;
    if (sections === 0) data = hidden.data.slice(0, per);
    else {
      data = hidden.data.slice(0, sections * per);
      if (hasWeights) {
        const empty = hidden.data.subarray(sections * per);
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
    }
    const P = spec.projection;
    return { cond: { shape: [1, Math.max(1, sections) * 77, D], data }, pooled: pooled && P ? { shape: [1, P], data: pooled.slice(0, P) } : undefined };
  }

  /** The reference's encode_from_tokens (return_pooled) for these tokens, with extra options on the entry. */
  async encodeTokensXL(tokens: XLTokens, extra: Record<string, unknown> = {}): Promise<ConditioningEntry[]> {
    const family = this.family;
    const byName = (n: TextEncoderSpec['name']) => this.encoders.find((e) => e.name === n);
    if (family === 'sdxl') {
      const l = byName('l')!;
      const g = byName('g')!;
      const gOut = await this.encodeWeighted(g, tokens.g ?? []);
      const lOut = await this.encodeWeighted(l, tokens.l ?? []);
      // torch.cat([l_out[:, :cut], g_out[:, :cut]], dim=-1)
      const cut = Math.min(lOut.cond.shape[1]!, gOut.cond.shape[1]!);
      const [Dl, Dg] = [lOut.cond.shape[2]!, gOut.cond.shape[2]!];
      const data = new Float32Array(cut * (Dl + Dg));
      for (let t = 0; t < cut; t++) {
        data.set(lOut.cond.data.subarray(t * Dl, (t + 1) * Dl), t * (Dl + Dg));
        data.set(gOut.cond.data.subarray(t * Dg, (t + 1) * Dg), t * (Dl + Dg) + Dl);
      }
      return [[{ shape: [1, cut, Dl + Dg], data }, { pooled_output: gOut.pooled, ...extra }]];
    }
    const spec = this.encoders[0];
    if (!spec) throw new Error('this checkpoint has no text encoder');
    const out = await this.encodeWeighted(spec, tokens[spec.name] ?? []);
    return [[out.cond, { pooled_output: out.pooled, ...extra }]];
  }

  /** CLIPTextEncode: the same text through every encoder. */
  override async encode(text: string, opts: TokenizeOptions = {}): Promise<ConditioningEntry[]> {
    return this.encodeTokensXL(this.tokenize(text, opts));
  }

  /** CLIPTextEncodeSDXL: text_g through G, text_l through L, the shorter padded with empty chunks. */
  async encodeSDXL(textG: string, textL: string, extra: Record<string, unknown>, opts: TokenizeOptions = {}): Promise<ConditioningEntry[]> {
    if (this.family !== 'sdxl') throw new Error(`CLIPTextEncodeSDXL needs an SDXL CLIP (CLIP-L and OpenCLIP-G); this one is ${this.family}'s`);
    const tokens = this.tokenize(textG, opts);
    tokens.l = this.tokenize(textL, opts).l;
    const empty = this.tokenize('', opts);
    while (tokens.l!.length < tokens.g!.length) tokens.l!.push(...empty.l!);
    while (tokens.l!.length > tokens.g!.length) tokens.g!.push(...empty.g!);
    return this.encodeTokensXL(tokens, extra);
  }
}

/**
 * A text encoder alone in a file (models/text_encoders): transformers' layout
 * (text_model.*, text_projection.weight; an older text_projection [width, proj]
 * as the reference's CLIPSave wrote it) or open_clip's (transformer.resblocks.*).
 */
export function detectTextEncoderFile(file: SafetensorsFile): { layout: TextEncoderSpec['layout']; prefix: string; config: TextEncoderSpec['config']; projection: number; layers30: boolean } {
  if (file.has('transformer.resblocks.0.ln_1.weight')) {
    const c = detectOpenClip(file, '');
    const { projection, ...config } = c;
    return { layout: 'openclip', prefix: '', config, projection, layers30: config.layers > 30 };
  }
  for (const p of ['', 'transformer.', 'clip_l.transformer.', 'clip_g.transformer.']) {
    if (!file.has(`${p}text_model.embeddings.token_embedding.weight`)) continue;
    if (file.has(`${p}text_projection`) && !file.has(`${p}text_projection.weight`)) throw new ModelFileError(file.path, 'a text_projection saved as [width, proj] is not supported yet: save it as text_projection.weight');
    const { projection, ...config } = detectHfClip(file, p)!;
    return { layout: 'hf', prefix: p, config, projection, layers30: file.has(`${p}text_model.encoder.layers.30.mlp.fc1.weight`) };
  }
  throw new ModelFileError(file.path, 'no CLIP text encoder: text_model.embeddings.token_embedding.weight (or open_clip\'s transformer.resblocks.0) is missing');
}

/**
 * DualCLIPLoader type sdxl: one file is OpenCLIP-G, the other CLIP-L. As the
 * reference (SDXLClipModel.load_sd) a file with a 31st layer is G; when
 * neither or both have one (small files), the one with a text projection and
 * the wider one is G, and otherwise the second file.
 */
export async function loadDualClip(path1: string, path2: string): Promise<XLClipModel> {
  // A text-encoder file in the checkpoint's terms: no diffusion model or VAE (never read for a CLIP).
  const asPart = (file: SafetensorsFile): DetectedCheckpoint => ({ family: 'sdxl', referenceShaped: false, unet: undefined as unknown as UNetConfig, clip: detectTextEncoderFile(file).config, vae: null });
  const open = (path: string) => cachedCheckpoint(path, 'dual-clip', () => Checkpoint.openWith(path, asPart));
  const [a, b] = await Promise.all([open(path1), open(path2)]);
  const da = detectTextEncoderFile(a.file);
  const db = detectTextEncoderFile(b.file);
  let gFirst: boolean;
  if (da.layers30 !== db.layers30) gFirst = da.layers30;
  else if ((da.projection > 0) !== (db.projection > 0)) gFirst = da.projection > 0;
  else if (da.config.hiddenSize !== db.config.hiddenSize) gFirst = da.config.hiddenSize > db.config.hiddenSize;
  else gFirst = false;
  const [g, l] = gFirst ? [[a, da], [b, db]] as const : [[b, db], [a, da]] as const;
  if (!g[1].projection) throw new ModelFileError(g[0].file.path, 'OpenCLIP-G needs its text_projection: its pooled output feeds SDXL\'s adm');
  const parts: TextEncoderPart[] = [
    { ck: l[0], spec: { name: 'l', prefix: l[1].prefix, layout: l[1].layout, config: l[1].config, projection: l[1].projection } },
    { ck: g[0], spec: { name: 'g', prefix: g[1].prefix, layout: g[1].layout, config: g[1].config, projection: g[1].projection } },
  ];
  return new XLClipModel(l[0], undefined, { parts, family: 'sdxl' });
}

/**
 * CLIPLoader (type stable_diffusion) on one text-encoder file, as the
 * reference's detect_te_model tells them apart: a 31st layer is OpenCLIP-G
 * (the SDXL refiner's text encoder), a 23rd OpenCLIP-H (SD2.x's); null for
 * anything else, which CLIPLoader reads as CLIP-L (SD1.x).
 */
export async function loadSingleClip(path: string): Promise<XLClipModel | null> {
  // Read again from the (cached) file's keys on every call: a cached checkpoint does not run its detection twice.
  const detectKind = (file: SafetensorsFile) => {
    try {
      const te = detectTextEncoderFile(file);
      return { te, kind: te.config.layers > 30 ? ('g' as const) : te.config.layers > 22 ? ('h' as const) : ('l' as const) };
    } catch (err) {
      // Not a text encoder this reads: the CLIP-L path names the problem.
      if (err instanceof ModelFileError) return undefined;
      throw err;
    }
  };
  const detect = (file: SafetensorsFile): DetectedCheckpoint => {
    const found = detectKind(file);
    if (!found) return { family: 'sd1', referenceShaped: false, unet: undefined as unknown as UNetConfig, clip: null, vae: null };
    return { family: found.kind === 'g' ? 'sdxl_refiner' : found.kind === 'h' ? 'sd2' : 'sd1', referenceShaped: false, unet: undefined as unknown as UNetConfig, clip: found.te.config, vae: null };
  };
  // Only OpenCLIP files are kept here: a CLIP-L goes back to CLIPLoader, which loads it as a cached part.
  const probe = await SafetensorsFile.open(path);
  const probed = detectKind(probe);
  if (!probed || probed.kind === 'l') return null;
  const ck = await cachedCheckpoint(path, 'single-clip', () => Checkpoint.openWith(path, detect));
  const found = detectKind(ck.file);
  if (!found || found.kind === 'l') return null;
  const { te, kind } = found;
  if (kind === 'g' && !te.projection) throw new ModelFileError(path, "OpenCLIP-G needs its text_projection: its pooled output feeds the SDXL refiner's adm");
  const spec: TextEncoderSpec = { name: kind, prefix: te.prefix, layout: te.layout, config: te.config, projection: te.projection };
  return new XLClipModel(ck, undefined, { parts: [{ ck, spec }], family: kind === 'g' ? 'sdxl_refiner' : 'sd2' });
}
