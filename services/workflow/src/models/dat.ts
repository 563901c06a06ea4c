/**
 * DAT (Dual Aggregation Transformer, spandrel's DAT architecture) upscale
 * models. Blocks alternate: even ones attend spatially in rectangular
 * windows (half the channels and heads in split[0]×split[1] windows, half in
 * the transposed ones, the queries, keys and values zero-padded to a multiple
 * of the larger split, some blocks on windows shifted by half a split with
 * the attention masks that keep wrapped regions apart, the relative position
 * bias from a small MLP over the offsets), odd ones across channels (q and k
 * L2-normalised over the tokens, a learnt temperature); each mixes in a
 * depthwise-conv branch through channel and spatial interaction gates (1×1
 * convs, inference BatchNorm, GELU, sigmoid), and its feed-forward gates
 * half its hidden channels by a LayerNorm and depthwise conv of the other
 * half (SGFN). Hyperparameters are read from the keys (and the stored
 * rpe_biases' values, for the split) as spandrel's DAT loader reads them,
 * the file held to the model's state dict (strict load), the graph written
 * over the weights in place.
 */
import { OnnxGraph } from './graph-builder.ts';
import { type SafetensorsFile } from './safetensors.ts';
import { checkStrictLoad, convOps, dimReader, fail, imageAndMean, NUM_FEAT, pixelShuffleScale, regionMask, rollTokens, seqLen, shiftedWindowRegions, stateShapeRecorder, windowPositionIndex, type TransformerSRConfig } from './transformer-sr-parts.ts';

export interface DATConfig extends TransformerSRConfig {
  kind: 'dat';
  split: [number, number];
  imgSize: number;
  ffnHidden: number;
  qkvBias: boolean;
  resi: '1conv' | '3conv';
  upsampler: 'pixelshuffle' | 'pixelshuffledirect';
}

/** spandrel's DAT KeyCondition. */
export function looksLikeDAT(file: SafetensorsFile): boolean {
  const all = [
    'conv_first.weight',
    'before_RG.1.weight',
    'before_RG.1.bias',
    'layers.0.blocks.0.norm1.weight',
    'layers.0.blocks.0.norm2.weight',
    'layers.0.blocks.0.ffn.fc1.weight',
    'layers.0.blocks.0.ffn.sg.norm.weight',
    'layers.0.blocks.0.ffn.sg.conv.weight',
    'layers.0.blocks.0.ffn.fc2.weight',
    'layers.0.blocks.0.attn.qkv.weight',
    'layers.0.blocks.0.attn.proj.weight',
    'layers.0.blocks.0.attn.dwconv.0.weight',
    'layers.0.blocks.0.attn.dwconv.1.running_mean',
    'layers.0.blocks.0.attn.channel_interaction.1.weight',
    'layers.0.blocks.0.attn.channel_interaction.2.running_mean',
    'layers.0.blocks.0.attn.channel_interaction.4.weight',
    'layers.0.blocks.0.attn.spatial_interaction.0.weight',
    'layers.0.blocks.0.attn.spatial_interaction.1.running_mean',
    'layers.0.blocks.0.attn.spatial_interaction.3.weight',
    'layers.0.blocks.0.attn.attns.0.rpe_biases',
    'layers.0.blocks.0.attn.attns.0.relative_position_index',
    'layers.0.blocks.0.attn.attns.0.pos.pos_proj.weight',
    'layers.0.blocks.0.attn.attns.0.pos.pos1.0.weight',
    'layers.0.blocks.0.attn.attns.0.pos.pos3.0.weight',
    'norm.weight',
  ];
  return (
    all.every((k) => file.has(k)) &&
    (file.has('conv_after_body.weight') || file.has('conv_after_body.4.weight')) &&
    ((file.has('conv_after_body.weight') && file.has('conv_before_upsample.0.weight') && file.has('conv_last.weight')) || file.has('upsample.0.weight'))
  );
}

/** Whether block b of group g attends over shifted windows (and so holds attn_mask_0/1): DAT's own rule. */
export function datShifted(g: number, b: number): boolean {
  return (g % 2 === 0 && b > 0 && (b - 2) % 4 === 0) || (g % 2 !== 0 && b % 4 === 0);
}

/**
 * The DAT in the file (keys canonical), or null when spandrel's DAT detection
 * does not take it. `rpeLast` is the last row of layers.0.blocks.0's
 * rpe_biases (spandrel reads the split from those values).
 */
export function detectDAT(file: SafetensorsFile, rpeLast: () => number[]): DATConfig | null {
  if (!looksLikeDAT(file)) return null;
  const dim = dimReader(file);
  const inChannels = dim('conv_first.weight', 1);
  const embedDim = dim('conv_first.weight', 0);
  const layers = seqLen(file, 'layers');
  const depths: number[] = [];
  const heads: number[] = [];
  for (let i = 0; i < layers; i++) {
    const d = seqLen(file, `layers.${i}.blocks`);
    depths.push(d);
    heads.push(d >= 2 ? dim(`layers.${i}.blocks.1.attn.temperature`, 0) : dim(`layers.${i}.blocks.0.attn.attns.0.pos.pos3.2.weight`, 0) * 2);
  }
  const upsampler = file.has('conv_last.weight') ? 'pixelshuffle' : 'pixelshuffledirect';
  const resi = file.has('conv_after_body.weight') ? '1conv' : '3conv';
  let scale = 1;
  if (upsampler === 'pixelshuffle') scale = pixelShuffleScale(file, dim);
  else {
    if (inChannels === 0) fail(file, 'a DAT of no input channels');
    scale = Math.trunc(Math.sqrt(Math.floor(dim('upsample.0.weight', 0) / inChannels)));
  }
  const qkvBias = file.has('layers.0.blocks.0.attn.qkv.bias');
  if (embedDim === 0) fail(file, 'conv_first.weight gives no channels');
  const ffnHidden = Math.trunc(embedDim * (dim('layers.0.blocks.0.ffn.fc1.weight', 0) / embedDim));
  let imgSize = 64;
  if (file.has('layers.0.blocks.2.attn.attn_mask_0')) imgSize = Math.trunc(Math.sqrt(dim('layers.0.blocks.2.attn.attn_mask_0', 0) * dim('layers.0.blocks.2.attn.attn_mask_0', 1)));
  const last = rpeLast();
  if (last.length !== 2 || !last.every((v) => Number.isFinite(v) && v >= 0 && v < 64)) fail(file, 'layers.0.blocks.0.attn.attns.0.rpe_biases does not end with the offsets of a window');
  const split = last.map((v) => Math.trunc(v + 1)) as [number, number];

  const [s0, s1] = split;
  if (Math.max(s0, s1) % Math.min(s0, s1) !== 0) fail(file, `a DAT split of ${s0}×${s1}, which zero padding to ${Math.max(s0, s1)} does not tile`);
  if (imgSize % s0 !== 0 || imgSize % s1 !== 0) fail(file, `its stored attention masks are for ${imgSize}-pixel images, not a multiple of its ${s0}×${s1} split`);
  if (upsampler === 'pixelshuffle' && (scale < 1 || (scale & (scale - 1)) !== 0) && scale !== 3) fail(file, `a pixel-shuffle DAT of scale ${scale} (spandrel builds 2^n and 3)`);
  if (scale < 1 || scale > 16) fail(file, `a DAT of scale ${scale} (1 to 16 are run)`);
  heads.forEach((h, i) => {
    if (h < 2 || h % 2 !== 0 || embedDim % h !== 0) fail(file, `layer ${i} splits ${embedDim} channels into ${h} heads (an even count dividing them: half per window orientation)`);
  });
  if (depths.some((d) => d === 0)) fail(file, 'a DAT layer without blocks');
  if (embedDim % 2 !== 0 || ffnHidden % 2 !== 0) fail(file, 'a DAT of odd width');
  const cfg: DATConfig = { kind: 'dat', inChannels, outChannels: inChannels, embedDim, depths, heads, split, imgSize, ffnHidden, qkvBias, resi, upsampler, scale, shuffle: 1 };
  checkStrict(file, cfg);
  return cfg;
}

/** The state dict of spandrel's DAT(**detected): name → shape. */
export function datStateShapes(cfg: DATConfig): Map<string, number[]> {
  const { m, conv, vec, linear, resi: resiOf, pixelShuffle } = stateShapeRecorder();
  const E = cfg.embedDim;
  const [s0, s1] = cfg.split;
  const N = s0 * s1;
  const bn = (k: string, n: number) => {
    vec(k, n);
    m.set(`${k}.running_mean`, [n]);
    m.set(`${k}.running_var`, [n]);
    m.set(`${k}.num_batches_tracked`, []);
  };
  const resi = (k: string) => resiOf(k, cfg.resi, E);
  const gates = (a: string) => {
    conv(`${a}.dwconv.0`, E, 1);
    bn(`${a}.dwconv.1`, E);
    conv(`${a}.channel_interaction.1`, Math.floor(E / 8), E, 1);
    bn(`${a}.channel_interaction.2`, Math.floor(E / 8));
    conv(`${a}.channel_interaction.4`, E, Math.floor(E / 8), 1);
    conv(`${a}.spatial_interaction.0`, Math.floor(E / 16), E, 1);
    bn(`${a}.spatial_interaction.1`, Math.floor(E / 16));
    conv(`${a}.spatial_interaction.3`, 1, Math.floor(E / 16), 1);
  };
  conv('conv_first', E, cfg.inChannels);
  vec('before_RG.1', E);
  const pd = Math.floor(Math.floor(Math.floor(E / 2) / 4) / 4);
  cfg.depths.forEach((depth, i) => {
    for (let j = 0; j < depth; j++) {
      const b = `layers.${i}.blocks.${j}`;
      vec(`${b}.norm1`, E);
      vec(`${b}.norm2`, E);
      linear(`${b}.ffn.fc1`, cfg.ffnHidden, E);
      vec(`${b}.ffn.sg.norm`, cfg.ffnHidden / 2);
      conv(`${b}.ffn.sg.conv`, cfg.ffnHidden / 2, 1);
      linear(`${b}.ffn.fc2`, E, cfg.ffnHidden / 2);
      const a = `${b}.attn`;
      linear(`${a}.qkv`, 3 * E, E, cfg.qkvBias);
      linear(`${a}.proj`, E, E);
      gates(a);
      if (j % 2 === 1) {
        m.set(`${a}.temperature`, [cfg.heads[i]!, 1, 1]);
        continue;
      }
      for (const t of [0, 1]) {
        const s = `${a}.attns.${t}`;
        m.set(`${s}.rpe_biases`, [(2 * s0 - 1) * (2 * s1 - 1), 2]);
        m.set(`${s}.relative_position_index`, [N, N]);
        linear(`${s}.pos.pos_proj`, pd, 2);
        for (const p of ['pos1', 'pos2', 'pos3']) vec(`${s}.pos.${p}.0`, pd);
        linear(`${s}.pos.pos1.2`, pd, pd);
        linear(`${s}.pos.pos2.2`, pd, pd);
        linear(`${s}.pos.pos3.2`, cfg.heads[i]! / 2, pd);
      }
      if (datShifted(i, j)) {
        const n = (cfg.imgSize / s0) * (cfg.imgSize / s1);
        m.set(`${a}.attn_mask_0`, [n, N, N]);
        m.set(`${a}.attn_mask_1`, [n, N, N]);
      }
    }
    resi(`layers.${i}.conv`);
  });
  vec('norm', E);
  resi('conv_after_body');
  if (cfg.upsampler === 'pixelshuffle') pixelShuffle(E, NUM_FEAT, cfg.scale, cfg.inChannels);
  else conv('upsample.0', cfg.scale * cfg.scale * cfg.inChannels, E);
  return m;
}

function checkStrict(file: SafetensorsFile, cfg: DATConfig): void {
  const name = `a DAT (${describeDAT(cfg)})`;
  checkStrictLoad(file, datStateShapes(cfg), name, name, (k) => /(relative_position_index|attn_mask_[01]|num_batches_tracked|rpe_biases)$/.test(k));
}

export function describeDAT(cfg: DATConfig): string {
  return `embed ${cfg.embedDim}, depths [${cfg.depths.join(', ')}], heads [${cfg.heads.join(', ')}], split ${cfg.split.join('×')}, '${cfg.upsampler}' ×${cfg.scale}, ${cfg.resi}`;
}

/** Spatial_Attention's rpe_biases for h×w windows: every (dy, dx) offset, dy-major. */
function rectOffsets(h: number, w: number): number[] {
  const out: number[] = [];
  for (let dy = 1 - h; dy < h; dy++) for (let dx = 1 - w; dx < w; dx++) out.push(dy, dx);
  return out;
}

/** The zero-padded size DAT's spatial attention works on: a multiple of the larger split. */
export function datPadded(cfg: DATConfig, n: number): number {
  const m = Math.max(...cfg.split);
  return n + ((m - (n % m)) % m);
}

/** calculate_mask's region ids for the padded h×w image, window by window: orientation 0 (split[0]×split[1]) or 1 (transposed). */
export function datRegions(cfg: DATConfig, h: number, w: number, orientation: 0 | 1): Float32Array {
  const [s0, s1] = cfg.split;
  return orientation === 0 ? shiftedWindowRegions(h, w, s0, s1) : shiftedWindowRegions(h, w, s1, s0);
}

export function datHasShifted(cfg: DATConfig): boolean {
  return cfg.depths.some((d, i) => Array.from({ length: d }, (_, j) => j).some((j) => j % 2 === 0 && datShifted(i, j)));
}

/** image [B, C, H, W] → [B, C, sH, sW]; `regions0`/`regions1` ([nW, N] for the padded size) when some block is shifted. */
export function buildDATGraph(g: OnnxGraph, cfg: DATConfig): Uint8Array {
  const E = cfg.embedDim;
  const half = E / 2;
  const [s0, s1] = cfg.split;
  const N = s0 * s1;
  const { image, mean } = imageAndMean(g, cfg.inChannels);
  const x = g.op('Sub', [image, mean]); // img_range 1
  const cat = (parts: string[]) => g.op('Concat', parts, { axis: 0 });
  const shp = g.op('Shape', [image]);
  const at = (s: string, i: number) => g.op('Slice', [s, g.i64([i]), g.i64([i + 1])]);
  const [B, H, W] = [at(shp, 0), at(shp, 2), at(shp, 3)];
  // The padded size: H + (m − H mod m) mod m.
  const m = g.i64([Math.max(s0, s1)]);
  const padTo = (n: string) => g.add(n, g.op('Mod', [g.op('Sub', [m, g.op('Mod', [n, m])]), m]));
  const [PH, PW] = [padTo(H), padTo(W)];
  const padB = g.op('Sub', [PH, H]);
  const padR = g.op('Sub', [PW, W]);
  const zero = g.i64([0]);
  const { toNHWC, toNCHW, resiConv: resiOf, pixelShuffle, pixelShuffleDirect } = convOps(g);
  const ln = (t: string, k: string) => g.layerNorm(t, k, 1e-5);
  const bn = (t: string, k: string) => g.op('BatchNormalization', [t, g.w(`${k}.weight`), g.w(`${k}.bias`), g.w(`${k}.running_mean`), g.w(`${k}.running_var`)], { epsilon: { float: 1e-5 } });
  const dwconv = (t: string, k: string, channels: number) => g.op('Conv', [t, g.w(`${k}.weight`), g.w(`${k}.bias`)], { kernel_shape: [3, 3], pads: [1, 1, 1, 1], group: channels });
  const conv1 = (t: string, k: string) => g.conv(t, k);
  const roll = (t: string, sy: number, sx: number): string => rollTokens(g, t, sy, sx);
  const masks: Partial<Record<0 | 1, string>> = {};
  const mask = (o: 0 | 1): string => (masks[o] ??= regionMask(g, `regions${o}`, `windows${o}`, N));

  /** One Spatial_Attention branch on padded [B, PH, PW, 3, half] q/k/v: h×w windows, `heads` heads, the DynamicPosBias bias, a mask; → [B, PH, PW, half]. */
  const spatial = (qkv: string, key: string, wh: number, ww: number, heads: number, windowMask?: string): string => {
    const d = half / heads;
    const [nh, nw] = [g.op('Div', [PH, g.i64([wh])]), g.op('Div', [PW, g.i64([ww])])];
    // img2windows of each of q, k, v: [B, nh, wh, nw, ww, 3, heads, d] → [3, B·nW, heads, wh·ww, d].
    const parted = g.op('Reshape', [qkv, cat([B, nh, g.i64([wh]), nw, g.i64([ww, 3, heads, d])])]);
    const win = g.op('Reshape', [g.op('Transpose', [parted], { perm: [5, 0, 1, 3, 6, 2, 4, 7] }), g.i64([3, -1, heads, wh * ww, d])]);
    const [q, k, v] = [0, 1, 2].map((i) => g.op('Gather', [win, g.i64([i], [])], { axis: 0 }));
    let scores = g.op('MatMul', [g.mul(q!, g.f32([d ** -0.5], [])), g.op('Transpose', [k!], { perm: [0, 1, 3, 2] })]);
    // DynamicPosBias (residual=False): pos3(pos2(pos1(pos_proj(offsets)))), each posK a LayerNorm, ReLU and Linear.
    let pos = g.linear(g.f32(rectOffsets(wh, ww), [(2 * wh - 1) * (2 * ww - 1), 2]), `${key}.pos.pos_proj`);
    for (const p of ['pos1', 'pos2', 'pos3']) pos = g.linear(g.op('Relu', [ln(pos, `${key}.pos.${p}.0`)]), `${key}.pos.${p}.2`);
    const bias = g.op('Transpose', [g.op('Reshape', [g.op('Gather', [pos, g.i64(windowPositionIndex(wh, ww))], { axis: 0 }), g.i64([N, N, heads])])], { perm: [2, 0, 1] });
    scores = g.add(scores, bias);
    if (windowMask) scores = g.op('Reshape', [g.add(g.op('Reshape', [scores, cat([B, g.i64([-1, heads, N, N])])]), windowMask), g.i64([-1, heads, N, N])]);
    const o = g.op('MatMul', [g.op('Softmax', [scores], { axis: -1 }), v!]); // [B·nW, heads, N, d]
    // transpose(1, 2).reshape(-1, N, half), then windows2img.
    const t = g.op('Reshape', [g.op('Transpose', [o], { perm: [0, 2, 1, 3] }), g.i64([-1, N, half])]);
    return g.op('Reshape', [g.op('Transpose', [g.op('Reshape', [t, cat([B, nh, nw, g.i64([wh, ww, half])])])], { perm: [0, 1, 3, 2, 4, 5] }), cat([B, PH, PW, g.i64([half])])]);
  };

  /** The conv branch and the two interaction gates both attention kinds share; `attended` and the result [B, H, W, E]. */
  const mix = (attended: string, v: string, a: string, spatialFirst: boolean): string => {
    const convX = g.op('Gelu', [bn(dwconv(v, `${a}.dwconv.0`, E), `${a}.dwconv.1`)]);
    const channel = (t: string) => conv1(g.op('Gelu', [bn(conv1(g.op('GlobalAveragePool', [t]), `${a}.channel_interaction.1`), `${a}.channel_interaction.2`)]), `${a}.channel_interaction.4`);
    const spatialMap = (t: string) => conv1(g.op('Gelu', [bn(conv1(t, `${a}.spatial_interaction.0`), `${a}.spatial_interaction.1`)]), `${a}.spatial_interaction.3`);
    const attNCHW = toNCHW(attended);
    let out: string;
    if (spatialFirst) {
      // Adaptive_Spatial_Attention: the channel map from the conv branch gates the attention, the spatial map from the attention gates the conv.
      out = g.add(g.mul(attNCHW, g.op('Sigmoid', [channel(convX)])), g.mul(g.op('Sigmoid', [spatialMap(attNCHW)]), convX));
    } else {
      // Adaptive_Channel_Attention: the other way round.
      out = g.add(g.mul(attNCHW, g.op('Sigmoid', [spatialMap(convX)])), g.mul(convX, g.op('Sigmoid', [channel(attNCHW)])));
    }
    return g.linear(toNHWC(out), `${a}.proj`);
  };

  const spatialAttention = (t: string, i: number, j: number): string => {
    const a = `layers.${i}.blocks.${j}.attn`;
    const heads = cfg.heads[i]!;
    const qkvFull = g.linear(t, `${a}.qkv`); // [B, H, W, 3E]
    const v = toNCHW(g.op('Slice', [qkvFull, g.i64([2 * E]), g.i64([3 * E]), g.i64([3])]));
    // [B, H, W, 3, E] zero-padded at the bottom and right.
    const qkv5 = g.op('Reshape', [qkvFull, cat([B, H, W, g.i64([3, E])])]);
    const pads = cat([zero, zero, zero, zero, zero, zero, padB, padR, zero, zero]);
    const padded = g.op('Pad', [qkv5, pads]);
    const branch = (o: 0 | 1) => g.op('Slice', [padded, g.i64([o * half]), g.i64([(o + 1) * half]), g.i64([4])]);
    const shifted = datShifted(i, j);
    const [sh0, sw0] = [Math.floor(s0 / 2), Math.floor(s1 / 2)];
    let x1: string;
    let x2: string;
    if (shifted) {
      x1 = roll(spatial(roll(branch(0), -sh0, -sw0), `${a}.attns.0`, s0, s1, heads / 2, mask(0)), sh0, sw0);
      x2 = roll(spatial(roll(branch(1), -sw0, -sh0), `${a}.attns.1`, s1, s0, heads / 2, mask(1)), sw0, sh0);
    } else {
      x1 = spatial(branch(0), `${a}.attns.0`, s0, s1, heads / 2);
      x2 = spatial(branch(1), `${a}.attns.1`, s1, s0, heads / 2);
    }
    const crop = (u: string) => g.op('Slice', [u, cat([zero, zero]), cat([H, W]), g.i64([1, 2])]);
    const attended = g.op('Concat', [crop(x1), crop(x2)], { axis: -1 });
    return mix(attended, v, a, true);
  };

  const channelAttention = (t: string, i: number, j: number): string => {
    const a = `layers.${i}.blocks.${j}.attn`;
    const heads = cfg.heads[i]!;
    const d = E / heads;
    // qkv [B, N, 3, heads, d] → [3, B, heads, d, N] (q, k, v transposed to channels × tokens).
    const qkv = g.op('Transpose', [g.op('Reshape', [g.linear(t, `${a}.qkv`), cat([B, g.i64([-1, 3, heads, d])])])], { perm: [2, 0, 3, 4, 1] });
    const [q, k, v] = [0, 1, 2].map((n) => g.op('Gather', [qkv, g.i64([n], [])], { axis: 0 }));
    // F.normalize over the tokens: x / max(‖x‖, 1e-12).
    const normalize = (u: string) => g.op('Div', [u, g.op('Max', [g.op('ReduceL2', [u, g.i64([-1])], { keepdims: 1 }), g.f32([1e-12], [])])]);
    let attn = g.mul(g.op('MatMul', [normalize(q!), g.op('Transpose', [normalize(k!)], { perm: [0, 1, 3, 2] })]), g.w(`${a}.temperature`));
    attn = g.op('Softmax', [attn], { axis: -1 });
    // (attn @ v).permute(0, 3, 1, 2).reshape(B, N, C) → tokens as [B, H, W, E].
    const o = g.op('Reshape', [g.op('Transpose', [g.op('MatMul', [attn, v!])], { perm: [0, 3, 1, 2] }), cat([B, H, W, g.i64([E])])]);
    const vImg = g.op('Reshape', [v!, cat([B, g.i64([E]), H, W])]);
    return mix(o, vImg, a, false);
  };

  const sgfn = (t: string, k: string): string => {
    const h = g.op('Gelu', [g.linear(t, `${k}.fc1`)]);
    const hh = cfg.ffnHidden / 2;
    const [x1, x2] = g.opN('Split', [h, g.i64([hh, hh])], 2, { axis: -1 });
    const gate = toNHWC(dwconv(toNCHW(ln(x2!, `${k}.sg.norm`)), `${k}.sg.conv`, hh));
    return g.linear(g.mul(x1!, gate), `${k}.fc2`);
  };

  const resiConv = (t: string, key: string) => resiOf(t, key, cfg.resi);

  const first = g.conv(x, 'conv_first');
  let t = ln(toNHWC(first), 'before_RG.1');
  cfg.depths.forEach((depth, i) => {
    const res = t;
    let r = t;
    for (let j = 0; j < depth; j++) {
      const att = j % 2 === 0 ? spatialAttention(ln(r, `layers.${i}.blocks.${j}.norm1`), i, j) : channelAttention(ln(r, `layers.${i}.blocks.${j}.norm1`), i, j);
      r = g.add(r, att);
      r = g.add(r, sgfn(ln(r, `layers.${i}.blocks.${j}.norm2`), `layers.${i}.blocks.${j}.ffn`));
    }
    t = g.add(res, toNHWC(resiConv(toNCHW(r), `layers.${i}.conv`)));
  });
  const body = g.add(resiConv(toNCHW(ln(t, 'norm')), 'conv_after_body'), first);
  const y = cfg.upsampler === 'pixelshuffle' ? pixelShuffle(body, cfg.scale) : pixelShuffleDirect(body, cfg.scale);
  g.output(g.add(y, mean), 'upscaled', ['batch', cfg.outChannels, 'out_height', 'out_width']);
  return g.encode('dat');
}
