import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { onOneStorage, type StorageKind } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';
import { image, putInput, readOutput, run, type Server } from './nodes-helpers.ts';
import { patternPixel } from './esrgan-fixture.ts';
import { withTileHalving } from '../src/nodes/sd/upscale-nodes.ts';
import { SafetensorsFile } from '../src/models/safetensors.ts';
import { tensor, writeTorchFile, type PV } from './torch-zip-writer.ts';
import { DAT_CASES, datSpecs, DRCT_CASES, drctSpecs, writeDRCT, HAT_CASES, hatSpecs, SWIN2SR_CASES, swin2srSpecs, SWINIR_CASES, writeDAT, writeHAT, writeSpecs, writeSwin2SR, writeSwinIR, swinirSpecs, type Spec } from './swinir-fixture.ts';

/**
 * SwinIR (spandrel's architecture) through UpscaleModelLoader and
 * ImageUpscaleWithModel: tiny generated checkpoints with each upsampler
 * ('pixelshuffle' ×2, 'pixelshuffledirect' ×2 with the 3conv residual,
 * 'nearest+conv' ×4, '' with window 7, which spandrel runs with img_range 255,
 * its keys under `module.`), against the bytes the reference computes from
 * the same files with spandrel's ModelLoader and comfy.utils.tiled_scale
 * (test/fixtures/models-reference-swinir.json, written by
 * bench/workflow/models-reference-swinir.ts). Each image's size is not a
 * multiple of the window (padded, then cropped); the pixelshuffledirect one
 * is 530 pixels wide, two tiles blended over their overlap. HAT likewise:
 * ×2 (1conv, patch norm, qkv bias) and ×3 (two groups of 3 and 2 heads, no
 * residual conv, patch norm or qkv bias, overlapping windows twice the size).
 * DAT: 'pixelshuffle' ×2 (one group of four blocks, the third on shifted
 * windows) and 'pixelshuffledirect' ×2 (3conv, groups of one and two blocks,
 * the second group's first block shifted with masks stored for 64 pixels).
 * Swin2SR: 'pixelshuffle' ×2 (two groups of 2 and 3 heads, q/v biases,
 * patch norm), 'nearest+conv' ×4 (3conv, no q/v biases or patch norm),
 * 'pixelshuffledirect' ×2 with window 7 (img_range 255) and
 * 'pixelshuffle_aux' ×2 (the bicubic branch from a window-padded width), one
 * head's logit scale above the ln 100 clamp.
 * DRCT: ×2 (two dense groups of 4 and 3 heads, the first group's blocks
 * with 4, 2, 4, 2, 4 heads, shifted windows in blocks 2 and 4, 1conv, patch
 * norm, qkv bias) and ×3 (window 8 = training size: none shifted; no
 * residual conv, patch norm or qkv bias; fc1 1.5× wide), each tile padded to
 * a multiple of 16 as spandrel's descriptor pads it.
 */
const ref = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'models-reference-swinir.json'), 'utf8')) as Record<
  string,
  { scale: number; size: [number, number]; sum: number; rows: Array<[number, string]> }
>;

function upscalePrompt(model: string, img: string) {
  return {
    '1': { class_type: 'LoadImage', inputs: { image: img } },
    '2': { class_type: 'UpscaleModelLoader', inputs: { model_name: model } },
    '3': { class_type: 'ImageUpscaleWithModel', inputs: { upscale_model: ['2', 0], image: ['1', 0] } },
    '4': { class_type: 'SaveImage', inputs: { images: ['3', 0], filename_prefix: 'up' } },
  };
}

/** The hostile variants of the pixelshuffle model: each a node error of the loader naming the file and what is wrong. */
const HOSTILE: Array<{ name: string; edit?: (s: Spec[]) => Spec[]; bytes?: (b: Buffer) => Buffer; message: RegExp }> = [
  { name: 'truncated', bytes: (b) => b.subarray(0, Math.floor(b.length * 0.6)), message: /truncated\.safetensors: .*(truncated|past the end)/ },
  {
    name: 'wrong_shape',
    edit: (s) => s.map((t) => (t.name === 'layers.1.residual_group.blocks.0.attn.qkv.weight' ? { ...t, shape: [24, 18] } : t)),
    message: /wrong_shape\.safetensors: layers\.1\.residual_group\.blocks\.0\.attn\.qkv\.weight has shape \[24, 18\], expected \[36, 12\]/,
  },
  {
    name: 'missing_mask',
    edit: (s) => s.filter((t) => t.name !== 'layers.1.residual_group.blocks.1.attn_mask'),
    message: /missing_mask\.safetensors: a SwinIR \(.*\) missing 1 tensor: layers\.1\.residual_group\.blocks\.1\.attn_mask/,
  },
  {
    name: 'missing_table',
    edit: (s) => s.filter((t) => t.name !== 'layers.1.residual_group.blocks.0.attn.relative_position_bias_table'),
    message: /missing_table\.safetensors: tensor "layers\.1\.residual_group\.blocks\.0\.attn\.relative_position_bias_table" is missing/,
  },
  {
    name: 'extra_key',
    edit: (s) => [...s, { name: 'absolute_pos_embed', shape: [1, 64, 12], dtype: 'F32' }],
    message: /extra_key\.safetensors: a SwinIR \(.*\) with unexpected tensor: absolute_pos_embed/,
  },
  {
    name: 'bad_heads',
    edit: (s) => s.map((t) => (t.name === 'layers.0.residual_group.blocks.0.attn.relative_position_bias_table' ? { ...t, shape: [49, 5] } : t)),
    message: /bad_heads\.safetensors: layer 0 splits 12 channels into 5 heads/,
  },
  {
    name: 'int_weights',
    edit: (s) => s.map((t) => (t.name === 'conv_last.weight' ? { ...t, dtype: 'I64', values: () => 1 } : t)),
    message: /int_weights\.safetensors: conv_last\.weight has dtype I64, expected a float type/,
  },
];

test('ImageUpscaleWithModel halves the tile after an out-of-memory, as the reference does, and gives up under 128', async () => {
  const tried: number[] = [];
  const oom = () => Object.assign(new Error('Failed to allocate memory for requested buffer of size 123'), {});
  assert.equal(await withTileHalving(async (tile) => (tried.push(tile), tile > 200 ? Promise.reject(oom()) : tile)), 128);
  assert.deepEqual(tried, [512, 256, 128]);
  tried.length = 0;
  await assert.rejects(withTileHalving(async (tile) => (tried.push(tile), Promise.reject(oom()))), /Failed to allocate/);
  assert.deepEqual(tried, [512, 256, 128]);
  tried.length = 0;
  await assert.rejects(withTileHalving(async (tile) => (tried.push(tile), Promise.reject(new Error('shape mismatch')))), /shape mismatch/);
  assert.deepEqual(tried, [512]);
});

/** Hostile variants of the HAT ×2 model. */
const HAT_HOSTILE: typeof HOSTILE = [
  {
    name: 'hat_missing_cab',
    edit: (s) => s.filter((t) => t.name !== 'layers.0.residual_group.blocks.1.conv_block.cab.2.bias'),
    message: /hat_missing_cab\.safetensors: a HAT \(.*\) missing 1 tensor: layers\.0\.residual_group\.blocks\.1\.conv_block\.cab\.2\.bias/,
  },
  {
    name: 'hat_odd_overlap',
    edit: (s) => s.map((t) => (t.name === 'relative_position_index_OCA' ? { ...t, shape: [16, 25], values: () => 0 } : t)),
    message: /hat_odd_overlap\.safetensors: overlapping windows of 5 around windows of 4 do not line up/,
  },
  {
    name: 'hat_bad_table',
    edit: (s) => s.map((t) => (t.name === 'layers.0.residual_group.overlap_attn.relative_position_bias_table' ? { ...t, shape: [64, 2] } : t)),
    message: /hat_bad_table\.safetensors: layers\.0\.residual_group\.overlap_attn\.relative_position_bias_table has shape \[64, 2\], expected \[81, 2\]/,
  },
];

/** Hostile variants of the Swin2SR ×2 model. */
const SWIN2SR_HOSTILE: typeof HOSTILE = [
  {
    // spandrel reads each layer's heads from its first block's logit_scale.
    name: 'swin2sr_no_logit_scale',
    edit: (s) => s.filter((t) => t.name !== 'layers.1.residual_group.blocks.0.attn.logit_scale'),
    message: /swin2sr_no_logit_scale\.safetensors: a Swin2SR without layers\.1\.residual_group\.blocks\.0\.attn\.logit_scale \(each layer's heads are read from it\)/,
  },
  {
    name: 'swin2sr_bad_cpb',
    edit: (s) => s.map((t) => (t.name === 'layers.0.residual_group.blocks.1.attn.cpb_mlp.2.weight' ? { ...t, shape: [2, 256] } : t)),
    message: /swin2sr_bad_cpb\.safetensors: layers\.0\.residual_group\.blocks\.1\.attn\.cpb_mlp\.2\.weight has shape \[2, 256\], expected \[2, 512\] for this Swin2SR/,
  },
];

/** Hostile variants of the DRCT ×2 model. */
const DRCT_HOSTILE: typeof HOSTILE = [
  {
    name: 'drct_missing_adjust',
    edit: (s) => s.filter((t) => t.name !== 'layers.1.adjust3.bias'),
    message: /drct_missing_adjust\.safetensors: a DRCT \(.*\) missing 1 tensor: layers\.1\.adjust3\.bias/,
  },
  {
    // 5 heads: swin1 would reshape 12 channels into 5 heads (spandrel's forward fails).
    name: 'drct_bad_heads',
    edit: (s) => s.map((t) => (t.name === 'layers.0.swin1.attn.relative_position_bias_table' ? { ...t, shape: [49, 5] } : t)),
    message: /drct_bad_heads\.safetensors: group 0's block 1 splits 12 channels into 5 heads/,
  },
];

/** Hostile variants of the DAT ×2 model. */
const DAT_HOSTILE: typeof HOSTILE = [
  {
    name: 'dat_missing_bn',
    edit: (s) => s.filter((t) => t.name !== 'layers.0.blocks.1.attn.dwconv.1.running_var'),
    message: /dat_missing_bn\.safetensors: a DAT \(.*\) missing 1 tensor: layers\.0\.blocks\.1\.attn\.dwconv\.1\.running_var/,
  },
  {
    // spandrel reads the split from the last row of these offsets: (2, 4) makes it 3×5.
    name: 'dat_bad_split',
    edit: (s) => s.map((t) => (t.name === 'layers.0.blocks.0.attn.attns.0.rpe_biases' ? { ...t, values: (k: number) => (k === 40 ? 2 : k === 41 ? 4 : 0) } : t)),
    message: /dat_bad_split\.safetensors: a DAT split of 3×5, which zero padding to 5 does not tile/,
  },
];

onOneStorage('upscale models (SwinIR, Swin2SR, HAT, DAT and DRCT)', (storage: StorageKind) => {
  let srv: Server;

  before(async () => {
    srv = await startWorkflow(storage);
    const dir = path.join(srv.cfg.dataDir, 'models', 'upscale_models');
    fs.mkdirSync(dir, { recursive: true });
    for (const c of [...SWINIR_CASES, ...SWIN2SR_CASES, ...HAT_CASES, ...DAT_CASES, ...DRCT_CASES]) {
      if ('gc' in c) writeDRCT(path.join(dir, `${c.name}.safetensors`), c);
      else if ('split' in c) writeDAT(path.join(dir, `${c.name}.safetensors`), c);
      else if ('overlapWindow' in c) writeHAT(path.join(dir, `${c.name}.safetensors`), c);
      else if ('qkvBias' in c) writeSwin2SR(path.join(dir, `${c.name}.safetensors`), c);
      else writeSwinIR(path.join(dir, `${c.name}.safetensors`), c);
      await putInput(srv, `${c.name}.png`, image(c.width, c.height, 3, (x, y) => [0, 1, 2].map((ch) => patternPixel(x, y, ch))));
    }
    for (const h of HAT_HOSTILE) writeSpecs(path.join(dir, `${h.name}.safetensors`), h.edit!(hatSpecs(HAT_CASES[0]!)));
    for (const h of DRCT_HOSTILE) writeSpecs(path.join(dir, `${h.name}.safetensors`), h.edit!(drctSpecs(DRCT_CASES[0]!)));
    for (const h of DAT_HOSTILE) writeSpecs(path.join(dir, `${h.name}.safetensors`), h.edit!(datSpecs(DAT_CASES[0]!)));
    for (const h of SWIN2SR_HOSTILE) writeSpecs(path.join(dir, `${h.name}.safetensors`), h.edit!(swin2srSpecs(SWIN2SR_CASES[0]!)));
    const base = SWINIR_CASES[0]!;
    for (const h of HOSTILE) {
      const file = path.join(dir, `${h.name}.safetensors`);
      writeSpecs(file, (h.edit ?? ((s) => s))(swinirSpecs(base)));
      if (h.bytes) fs.writeFileSync(file, h.bytes(fs.readFileSync(file)));
    }
    await putInput(srv, 'tiny.png', image(3, 2, 3, (x, y) => [x * 80, y * 100, 50]));
    // BasicSR's .pth: `params` and `params_ema` side by side (spandrel takes params_ema); `params` here is another model.
    const dict = async (f: string): Promise<PV> => {
      const st = await SafetensorsFile.open(path.join(dir, f));
      const out: [string, PV][] = [];
      for (const [name, info] of st.tensors) out.push([name, tensor(info.dtype, [...info.shape], await st.readBytes(info))]);
      return { dict: out, ordered: true };
    };
    writeTorchFile(path.join(dir, 'basicsr_ps_x2.pth'), { dict: [['params', await dict('swinir_nc_x4.safetensors')], ['params_ema', await dict('swinir_ps_x2.safetensors')]] });
  });
  after(() => srv.close());

  const CASES = [...SWINIR_CASES.map((c) => ({ ...c, label: `SwinIR '${c.upsampler}'` })), ...SWIN2SR_CASES.map((c) => ({ ...c, label: `Swin2SR '${c.upsampler}'` })), ...HAT_CASES.map((c) => ({ ...c, label: 'HAT' })), ...DAT_CASES.map((c) => ({ ...c, label: `DAT '${c.upsampler}'` })), ...DRCT_CASES.map((c) => ({ ...c, label: 'DRCT' }))];
  for (const c of CASES) {
    test(`${c.name}: ${c.label} ×${c.scale}, the reference's bytes`, async (t) => {
      const want = ref[c.name]!;
      const r = await run(srv, upscalePrompt(`${c.name}.safetensors`, `${c.name}.png`));
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      const px = await readOutput(srv, r.outputs['4'].images[0]);
      assert.deepEqual([px.width, px.height], want.size);
      let worst = 0;
      let off = 0;
      let count = 0;
      for (const [y, b64] of want.rows) {
        const row = Buffer.from(b64, 'base64');
        for (let i = 0; i < row.length; i++) {
          const d = Math.abs(px.data[y * px.width * 3 + i]! - row[i]!);
          worst = Math.max(worst, d);
          if (d > 0) off++;
          count++;
        }
      }
      t.diagnostic(`${c.name}: largest difference ${worst}, ${off} of ${count} bytes differ`);
      // ONNX Runtime and torch sum the matmuls and convolutions in other orders: a byte may land one below or above.
      assert.ok(worst <= 1, `${c.name}: a byte ${worst} away from the reference's`);
      assert.ok(off / count < 0.05, `${c.name}: ${off} of ${count} bytes off by one`);
      const sum = px.data.reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(sum - want.sum) < px.data.length * 0.01, `byte sum ${sum} vs ${want.sum}`);
      if (c.width > 512) assert.equal(r.messages.filter((m) => m.type === 'progress' && m.data.node === '3').at(-1)?.data.max, 2);
    });
  }

  test("a BasicSR .pth (params and params_ema) is read as spandrel reads it: params_ema", async () => {
    const [a, b] = await Promise.all([run(srv, upscalePrompt('basicsr_ps_x2.pth', 'swinir_ps_x2.png')), run(srv, upscalePrompt('swinir_ps_x2.safetensors', 'swinir_ps_x2.png'))]);
    assert.equal(a.error, undefined, JSON.stringify(a.error));
    assert.deepEqual((await readOutput(srv, a.outputs['4'].images[0])).data, (await readOutput(srv, b.outputs['4'].images[0])).data);
  });

  test('an image smaller than spandrel\'s 16-pixel minimum is padded and cropped back', async () => {
    const r = await run(srv, upscalePrompt('swinir_nc_x4.safetensors', 'tiny.png'));
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    const px = await readOutput(srv, r.outputs['4'].images[0]);
    assert.deepEqual([px.width, px.height], [12, 8]);
  });

  for (const h of [...HOSTILE, ...SWIN2SR_HOSTILE, ...HAT_HOSTILE, ...DAT_HOSTILE, ...DRCT_HOSTILE]) {
    test(`hostile file (${h.name}): a node error of the loader naming the file`, async () => {
      const r = await run(srv, upscalePrompt(`${h.name}.safetensors`, 'tiny.png'));
      assert.equal(r.error?.node_id, '2', JSON.stringify(r.error));
      assert.equal(r.error?.exception_type, 'UnsupportedModelError');
      assert.match(r.error?.exception_message, h.message);
    });
  }

  test('the server still runs SwinIR after the hostile files', async () => {
    const r = await run(srv, upscalePrompt('swinir_ps_x2.safetensors', 'tiny.png'));
    assert.equal(r.error, undefined, JSON.stringify(r.error));
  });
});
