/**
 * Generated files for the LoRA, embedding and model-part tests (and the
 * reference run that makes their expected values, bench/workflow/models-reference-patches.ts):
 * LoRA files in the kohya, LoCon (with and without Tucker mid), diffusers and
 * PEFT layouts for the tiny checkpoint of models-fixture.ts, and a textual
 * inversion. Values come from a seeded generator; nothing is committed.
 */
import fs from 'node:fs';

export interface RawTensor {
  shape: number[];
  data: Float32Array;
}

/** A float32 .safetensors file from named tensors (keys in the given order). */
export function writeTensors(file: string, tensors: Record<string, RawTensor>): void {
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const [k, t] of Object.entries(tensors)) {
    header[k] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + t.data.length * 4] };
    offset += t.data.length * 4;
  }
  let json = Buffer.from(JSON.stringify(header));
  const pad = (8 - (json.length % 8)) % 8;
  json = Buffer.concat([json, Buffer.alloc(pad, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const body = Buffer.concat(Object.values(tensors).map((t) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength)));
  fs.writeFileSync(file, Buffer.concat([len, json, body]));
}

/** Deterministic values in [-scale, scale). */
export function seeded(shape: number[], seed: number, scale: number): RawTensor {
  let s = seed >>> 0 || 1;
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = ((s / 2 ** 32) * 2 - 1) * scale;
  }
  return { shape, data };
}

const scalar = (v: number): RawTensor => ({ shape: [], data: Float32Array.of(v) });

/** A LoRA for the TINY checkpoint touching the UNet (kohya, LoCon, LoCon+mid, diffusers) and the text encoder (kohya, PEFT). */
export function loraTensors(): Record<string, RawTensor> {
  const k1 = 'lora_unet_down_blocks_0_attentions_0_transformer_blocks_0_attn1_to_q';
  const k2 = 'lora_unet_down_blocks_0_resnets_0_conv1';
  const k3 = 'lora_unet_up_blocks_1_resnets_0_conv2';
  const k4 = 'unet.mid_block.attentions.0.transformer_blocks.0.attn2.processor.to_k';
  const k5 = 'lora_te_text_model_encoder_layers_0_mlp_fc1';
  const k6 = 'text_encoder.text_model.encoder.layers.1.self_attn.q_proj';
  return {
    [`${k1}.lora_up.weight`]: seeded([32, 4], 11, 0.5),
    [`${k1}.lora_down.weight`]: seeded([4, 32], 12, 0.5),
    [`${k1}.alpha`]: scalar(2),
    [`${k2}.lora_up.weight`]: seeded([32, 4, 1, 1], 21, 0.3),
    [`${k2}.lora_down.weight`]: seeded([4, 32, 3, 3], 22, 0.3),
    [`${k2}.alpha`]: scalar(4),
    [`${k3}.lora_up.weight`]: seeded([32, 4, 1, 1], 31, 0.3),
    [`${k3}.lora_mid.weight`]: seeded([4, 4, 3, 3], 32, 0.3),
    [`${k3}.lora_down.weight`]: seeded([4, 32, 1, 1], 33, 0.3),
    [`${k3}.alpha`]: scalar(3),
    [`${k4}_lora.up.weight`]: seeded([64, 2], 41, 0.4),
    [`${k4}_lora.down.weight`]: seeded([2, 32], 42, 0.4),
    [`${k5}.lora_up.weight`]: seeded([64, 4], 51, 0.5),
    [`${k5}.lora_down.weight`]: seeded([4, 32], 52, 0.5),
    [`${k5}.alpha`]: scalar(4),
    [`${k6}.lora_B.weight`]: seeded([32, 2], 61, 0.5),
    [`${k6}.lora_A.weight`]: seeded([2, 32], 62, 0.5),
  };
}

/** A textual inversion of two vectors for the TINY text encoder (width 32). */
export function embeddingTensors(): Record<string, RawTensor> {
  return { emb_params: seeded([2, 32], 71, 0.05) };
}

export const EMBEDDING_PROMPTS = ['a embedding:tiny_emb cat', '(embedding:tiny_emb:1.2) dog, embedding:tiny_emb.safetensors'];

/** TAESD encoder and decoder files (the reference's nn.Sequential layout, 64 channels, 4 latent channels), seeded. */
export function taesdTensors(part: 'encoder' | 'decoder'): Record<string, RawTensor> {
  const t: Record<string, RawTensor> = {};
  let seed = part === 'encoder' ? 1000 : 2000;
  const conv = (k: string, o: number, i: number, bias = true) => {
    const a = Math.sqrt(3 / (i * 9));
    t[`${k}.weight`] = seeded([o, i, 3, 3], seed++, a);
    if (bias) t[`${k}.bias`] = seeded([o], seed++, 0.05);
  };
  const block = (i: number) => {
    for (const c of [0, 2, 4]) conv(`${i}.conv.${c}`, 64, 64);
  };
  if (part === 'decoder') {
    conv('1', 64, 4);
    for (const i of [3, 4, 5, 8, 9, 10, 13, 14, 15, 18]) block(i);
    for (const i of [7, 12, 17]) conv(String(i), 64, 64, false);
    conv('19', 3, 64);
  } else {
    conv('0', 64, 3);
    for (const i of [1, 3, 4, 5, 7, 8, 9, 11, 12, 13]) block(i);
    for (const i of [2, 6, 10]) conv(String(i), 64, 64, false);
    conv('14', 4, 64);
  }
  return t;
}
