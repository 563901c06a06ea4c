import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';
import { image, loaded, run, type Server } from './nodes-helpers.ts';

/** A safetensors file written the way the test expects the format (independent of the service's encoder). */
function safetensors(tensors: Record<string, { shape: number[]; data: number[]; dtype?: 'F32' | 'F16' }>, metadata?: Record<string, string>): Buffer {
  const header: Record<string, unknown> = metadata ? { __metadata__: metadata } : {};
  const blobs: Buffer[] = [];
  let off = 0;
  for (const [name, t] of Object.entries(tensors)) {
    const size = t.dtype === 'F16' ? 2 : 4;
    const b = Buffer.alloc(t.data.length * size);
    t.data.forEach((v, i) => (size === 4 ? b.writeFloatLE(v, i * 4) : b.writeUInt16LE(v, i * 2)));
    header[name] = { dtype: t.dtype ?? 'F32', shape: t.shape, data_offsets: [off, off + b.length] };
    off += b.length;
    blobs.push(b);
  }
  const json = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([len, json, ...blobs]);
}

function parse(buf: Buffer): { header: Record<string, any>; tensor(name: string): { shape: number[]; data: number[] } } {
  const n = Number(buf.readBigUInt64LE(0));
  assert.equal((8 + n) % 8, 0, 'header padded to 8 bytes');
  const header = JSON.parse(buf.subarray(8, 8 + n).toString());
  return {
    header,
    tensor(name) {
      const h = header[name];
      assert.equal(h.dtype, 'F32');
      const data: number[] = [];
      for (let o = h.data_offsets[0]; o < h.data_offsets[1]; o += 4) data.push(buf.readFloatLE(8 + n + o));
      return { shape: h.shape, data };
    },
  };
}

const ramp = (shape: number[], f: (i: number) => number = (i) => i) => ({ shape, data: Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => f(i)) });

/** Close to within float32 rounding. */
function close(actual: number[], expected: number[], tol = 1e-5, what = 'values'): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) assert.ok(Math.abs(actual[i]! - expected[i]!) <= tol * Math.max(1, Math.abs(expected[i]!)), `${what}[${i}]: ${actual[i]} vs ${expected[i]}`);
}

forEachStorage('workflow latent nodes', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  function putLatent(t: { shape: number[]; data: number[] }, marker = true): string {
    const name = `${randomUUID().slice(0, 8)}.latent`;
    const tensors: Record<string, { shape: number[]; data: number[] }> = { latent_tensor: t };
    if (marker) tensors.latent_format_version_0 = { shape: [0], data: [] };
    fs.writeFileSync(path.join(srv.cfg.dataDir, 'input', name), safetensors(tensors));
    return name;
  }

  /** Runs graph + SaveLatent of `link` and returns the saved tensor and the file's header. */
  async function savedLatent(graph: Record<string, unknown>, link: [string, number]) {
    const prefix = `lat/${randomUUID().slice(0, 8)}`;
    const r = await run(srv, { ...graph, save: { class_type: 'SaveLatent', inputs: { samples: link, filename_prefix: prefix } } });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    const item = r.outputs.save.latents[0];
    const p = parse(fs.readFileSync(path.join(srv.cfg.dataDir, 'output', item.subfolder, item.filename)));
    return { item, header: p.header, ...p.tensor('latent_tensor') };
  }

  async function preview(graph: Record<string, unknown>, link: [string, number]): Promise<any[]> {
    const r = await run(srv, { ...graph, show: { class_type: 'PreviewAny', inputs: { source: link } } });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    return r.outputs.show.text.map((t: string) => JSON.parse(t));
  }

  const load = (name: string) => ({ class_type: 'LoadLatent', inputs: { latent: name } });

  test('object_info lists the latent nodes as the reference does', async () => {
    const r = await srv.http.get('/object_info');
    assert.equal(r.status, 200);
    const info = r.body;
    const expect: Array<[string, string, string]> = [
      ['EmptyLatentImage', 'latent', 'nodes'],
      ['LatentUpscale', 'latent', 'nodes'],
      ['LatentUpscaleBy', 'latent', 'nodes'],
      ['LatentFromBatch', 'latent/batch', 'nodes'],
      ['RepeatLatentBatch', 'latent/batch', 'nodes'],
      ['LatentRotate', 'latent/transform', 'nodes'],
      ['LatentFlip', 'latent/transform', 'nodes'],
      ['LatentCrop', 'latent/transform', 'nodes'],
      ['LatentComposite', 'latent', 'nodes'],
      ['LatentBlend', '_for_testing', 'nodes'],
      ['SetLatentNoiseMask', 'latent/inpaint', 'nodes'],
      ['SaveLatent', '_for_testing', 'nodes'],
      ['LoadLatent', '_for_testing', 'nodes'],
      ['LatentCompositeMasked', 'latent', 'comfy_extras.nodes_mask'],
      ['LatentAdd', 'latent/advanced', 'comfy_extras.nodes_latent'],
      ['LatentSubtract', 'latent/advanced', 'comfy_extras.nodes_latent'],
      ['LatentMultiply', 'latent/advanced', 'comfy_extras.nodes_latent'],
      ['LatentInterpolate', 'latent/advanced', 'comfy_extras.nodes_latent'],
      ['LatentConcat', 'latent/advanced', 'comfy_extras.nodes_latent'],
      ['LatentCut', 'latent/advanced', 'comfy_extras.nodes_latent'],
      ['LatentBatch', 'latent/batch', 'comfy_extras.nodes_latent'],
      ['LatentBatchSeedBehavior', 'latent/advanced', 'comfy_extras.nodes_latent'],
      ['LatentApplyOperation', 'latent/advanced/operations', 'comfy_extras.nodes_latent'],
      ['LatentOperationTonemapReinhard', 'latent/advanced/operations', 'comfy_extras.nodes_latent'],
      ['RebatchLatents', 'latent/batch', 'comfy_extras.nodes_rebatch'],
      ['RebatchImages', 'image/batch', 'comfy_extras.nodes_rebatch'],
    ];
    for (const [name, category, mod] of expect) {
      assert.ok(info[name], `${name} listed`);
      assert.equal(info[name].category, category, `${name} category`);
      assert.equal(info[name].python_module, mod, `${name} module`);
    }
    assert.deepEqual(info.EmptyLatentImage.input.required.width, ['INT', { default: 512, min: 16, max: 16384, step: 8, tooltip: 'The width of the latent images in pixels.' }]);
    assert.deepEqual(info.EmptyLatentImage.output, ['LATENT']);
    assert.deepEqual(info.EmptyLatentImage.output_tooltips, ['The empty latent image batch.']);
    assert.deepEqual(info.LatentUpscale.input.required.upscale_method, [['nearest-exact', 'bilinear', 'area', 'bicubic', 'bislerp']]);
    assert.deepEqual(info.LatentUpscale.input.required.samples, ['LATENT']);
    assert.deepEqual(info.LatentConcat.input.required.dim, ['COMBO', { multiselect: false, options: ['x', '-x', 'y', '-y', 't', '-t'] }]);
    assert.deepEqual(info.LatentBatchSeedBehavior.input.required.seed_behavior, ['COMBO', { default: 'fixed', multiselect: false, options: ['random', 'fixed'] }]);
    assert.equal(info.RebatchLatents.input_is_list ?? info.RebatchLatents.is_input_list, true);
    assert.deepEqual(info.RebatchLatents.output_is_list, [true]);
    assert.equal(info.RebatchImages.display_name, 'Rebatch Images');
    assert.equal(info.SaveLatent.output_node, true);
    assert.equal(info.LatentApplyOperation.experimental, true);
  });

  test('EmptyLatentImage → SaveLatent writes a safetensors file the reference reads', async () => {
    const s = await savedLatent({ e: { class_type: 'EmptyLatentImage', inputs: { width: 64, height: 72, batch_size: 2 } } }, ['e', 0]);
    assert.deepEqual(s.shape, [2, 4, 9, 8]);
    assert.ok(s.data.every((v) => v === 0));
    assert.deepEqual(s.header.latent_format_version_0, { dtype: 'F32', shape: [0], data_offsets: [0, 0] });
    assert.match(s.item.filename, /^[0-9a-f]{8}_00001_\.latent$/);
    assert.equal(s.item.type, 'output');
    assert.equal(JSON.parse(s.header.__metadata__.prompt).save.class_type, 'SaveLatent');
    // Validation as the reference: step 8 is not enforced, min is.
    const bad = await srv.http.post('/prompt', { prompt: { e: { class_type: 'EmptyLatentImage', inputs: { width: 8, height: 64, batch_size: 1 } }, s: { class_type: 'SaveLatent', inputs: { samples: ['e', 0], filename_prefix: 'x' } } } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.node_errors.e.errors[0].type, 'value_smaller_than_min');
  });

  test('LoadLatent: values, old files scaled by 1/0.18215, half floats; a missing file fails validation', async () => {
    const t = ramp([1, 2, 2, 3], (i) => i - 3.5);
    let s = await savedLatent({ l: load(putLatent(t)) }, ['l', 0]);
    assert.deepEqual(s.shape, [1, 2, 2, 3]);
    close(s.data, t.data, 0);
    s = await savedLatent({ l: load(putLatent(t, false)) }, ['l', 0]);
    close(s.data, t.data.map((v) => Math.fround(v * Math.fround(1 / 0.18215))), 1e-6);
    const half = `${randomUUID().slice(0, 8)}.latent`;
    // 0x3c00 = 1.0, 0xc000 = -2.0, 0x3800 = 0.5 in IEEE half precision.
    fs.writeFileSync(path.join(srv.cfg.dataDir, 'input', half), safetensors({ latent_format_version_0: { shape: [0], data: [] }, latent_tensor: { shape: [1, 1, 1, 3], data: [0x3c00, 0xc000, 0x3800], dtype: 'F16' } }));
    s = await savedLatent({ l: load(half) }, ['l', 0]);
    assert.deepEqual(s.data, [1, -2, 0.5]);
    // The list of .latent files is rendered like LoadImage's (re-read after uploads).
    const info = (await srv.http.get('/object_info/LoadLatent')).body.LoadLatent;
    assert.ok(Array.isArray(info.input.required.latent[0]));
    const r = await srv.http.post('/prompt', { prompt: { l: load('nope.latent'), s: { class_type: 'SaveLatent', inputs: { samples: ['l', 0], filename_prefix: 'x' } } } });
    assert.equal(r.status, 400);
    assert.equal(r.body.node_errors.l.errors[0].type, 'custom_validation_failed');
    assert.match(r.body.node_errors.l.errors[0].details, /Invalid latent file: nope\.latent/);
    const broken = `${randomUUID().slice(0, 8)}.latent`;
    fs.writeFileSync(path.join(srv.cfg.dataDir, 'input', broken), Buffer.from('\xff\xff\xff\xff\xff\xff\xff\x7fjunk', 'latin1'));
    const e = await run(srv, { l: load(broken), s: { class_type: 'SaveLatent', inputs: { samples: ['l', 0], filename_prefix: 'x' } } });
    assert.match(e.error?.exception_message ?? '', /HeaderTooLarge/);
  });

  test('flip, rotate, crop, from-batch, repeat: indices as torch moves them', async () => {
    // [B=2, C=1, H=2, W=3]: value = 100·b + 10·y + x.
    const t = ramp([2, 1, 2, 3], (i) => 100 * Math.floor(i / 6) + 10 * Math.floor((i % 6) / 3) + (i % 3));
    const name = putLatent(t);
    let s = await savedLatent({ l: load(name), f: { class_type: 'LatentFlip', inputs: { samples: ['l', 0], flip_method: 'x-axis: vertically' } } }, ['f', 0]);
    assert.deepEqual(s.data, [10, 11, 12, 0, 1, 2, 110, 111, 112, 100, 101, 102]);
    s = await savedLatent({ l: load(name), f: { class_type: 'LatentFlip', inputs: { samples: ['l', 0], flip_method: 'y-axis: horizontally' } } }, ['f', 0]);
    assert.deepEqual(s.data.slice(0, 6), [2, 1, 0, 12, 11, 10]);
    // torch.rot90(dims=[3, 2]), k = 1: clockwise.
    s = await savedLatent({ l: load(name), f: { class_type: 'LatentRotate', inputs: { samples: ['l', 0], rotation: '90 degrees' } } }, ['f', 0]);
    assert.deepEqual(s.shape, [2, 1, 3, 2]);
    assert.deepEqual(s.data.slice(0, 6), [10, 0, 11, 1, 12, 2]);
    s = await savedLatent({ l: load(name), f: { class_type: 'LatentRotate', inputs: { samples: ['l', 0], rotation: '270 degrees' } } }, ['f', 0]);
    assert.deepEqual(s.data.slice(0, 6), [2, 12, 1, 11, 0, 10]);
    s = await savedLatent({ l: load(name), f: { class_type: 'LatentRotate', inputs: { samples: ['l', 0], rotation: '180 degrees' } } }, ['f', 0]);
    assert.deepEqual(s.data.slice(0, 6), [12, 11, 10, 2, 1, 0]);
    // A 2x3 latent is smaller than 8, so x is pulled to W - 8 = -5: Python's negative slice start.
    s = await savedLatent({ l: load(name), c: { class_type: 'LatentCrop', inputs: { samples: ['l', 0], width: 64, height: 64, x: 8, y: 0 } } }, ['c', 0]);
    assert.deepEqual(s.shape, [2, 1, 2, 3]);
    const big = putLatent(ramp([1, 1, 10, 10]));
    s = await savedLatent({ l: load(big), c: { class_type: 'LatentCrop', inputs: { samples: ['l', 0], width: 64, height: 64, x: 24, y: 16 } } }, ['c', 0]);
    // x = 24 // 8 = 3 > 10 - 8 → 2; y = 2; 8×8 from (2, 2).
    assert.deepEqual(s.shape, [1, 1, 8, 8]);
    assert.equal(s.data[0], 22);
    assert.equal(s.data[63], 99);
    s = await savedLatent({ l: load(name), b: { class_type: 'LatentFromBatch', inputs: { samples: ['l', 0], batch_index: 5, length: 3 } } }, ['b', 0]);
    assert.deepEqual(s.shape, [1, 1, 2, 3]);
    assert.equal(s.data[0], 100);
    const p = await preview({ l: load(name), b: { class_type: 'LatentFromBatch', inputs: { samples: ['l', 0], batch_index: 1, length: 1 } }, r: { class_type: 'RepeatLatentBatch', inputs: { samples: ['b', 0], amount: 3 } } }, ['r', 0]);
    assert.deepEqual(p[0], { samples: '<Tensor [3, 1, 2, 3]>', batch_index: [1, 2, 3] });
    s = await savedLatent({ l: load(name), r: { class_type: 'RepeatLatentBatch', inputs: { samples: ['l', 0], amount: 2 } } }, ['r', 0]);
    assert.deepEqual(s.shape, [4, 1, 2, 3]);
    assert.deepEqual([s.data[0], s.data[6], s.data[12], s.data[18]], [0, 100, 0, 100]);
  });

  test('upscale: torch nearest-exact, bilinear and bislerp values; sizes from the reference rules', async () => {
    const name = putLatent({ shape: [1, 2, 1, 2], data: [0, 1, 1, 0] });
    let s = await savedLatent({ l: load(name), u: { class_type: 'LatentUpscaleBy', inputs: { samples: ['l', 0], upscale_method: 'bilinear', scale_by: 2 } } }, ['u', 0]);
    assert.deepEqual(s.shape, [1, 2, 2, 4]);
    // torch bilinear 2 → 4 (half-pixel, clamped): 0, 0.25, 0.75, 1.
    close(s.data.slice(0, 4), [0, 0.25, 0.75, 1]);
    close(s.data.slice(8, 12), [1, 0.75, 0.25, 0]);
    s = await savedLatent({ l: load(name), u: { class_type: 'LatentUpscaleBy', inputs: { samples: ['l', 0], upscale_method: 'nearest-exact', scale_by: 2 } } }, ['u', 0]);
    assert.deepEqual(s.data.slice(0, 4), [0, 0, 1, 1]);
    // bislerp of the unit vectors (0,1) and (1,0) along x: slerp on the quarter circle, magnitude 1.
    s = await savedLatent({ l: load(name), u: { class_type: 'LatentUpscaleBy', inputs: { samples: ['l', 0], upscale_method: 'bislerp', scale_by: 2 } } }, ['u', 0]);
    const c0 = s.data.slice(0, 4);
    const c1 = s.data.slice(8, 12);
    const expect = [0, 0.25, 0.75, 1].map((r) => [Math.sin((r * Math.PI) / 2), Math.cos((r * Math.PI) / 2)]);
    close(c0, expect.map((e) => e[0]!), 1e-5, 'bislerp c0');
    close(c1, expect.map((e) => e[1]!), 1e-5, 'bislerp c1');
    // A bislerp whose result would pass the latent limit fails before allocating it.
    const many = await run(srv, { e: { class_type: 'EmptyLatentImage', inputs: { width: 64, height: 64, batch_size: 4096 } }, u: { class_type: 'LatentUpscale', inputs: { samples: ['e', 0], upscale_method: 'bislerp', width: 2048, height: 2048, crop: 'disabled' } }, s: { class_type: 'SaveLatent', inputs: { samples: ['u', 0], filename_prefix: 'x' } } });
    assert.equal(many.error?.exception_type, 'RangeError');
    assert.match(many.error?.exception_message, /exceeds the limit/);
    // width 0: height kept at ≥ 64 and width from the aspect ratio, both // 8.
    const wide = putLatent(ramp([1, 1, 2, 4]));
    s = await savedLatent({ l: load(wide), u: { class_type: 'LatentUpscale', inputs: { samples: ['l', 0], upscale_method: 'nearest-exact', width: 0, height: 80, crop: 'disabled' } } }, ['u', 0]);
    assert.deepEqual(s.shape, [1, 1, 10, 20]);
    s = await savedLatent({ l: load(wide), u: { class_type: 'LatentUpscale', inputs: { samples: ['l', 0], upscale_method: 'nearest-exact', width: 0, height: 0, crop: 'disabled' } } }, ['u', 0]);
    assert.deepEqual(s.shape, [1, 1, 2, 4]);
    // center crop to a square keeps the middle columns (1 and 2) before scaling to 8×8.
    s = await savedLatent({ l: load(wide), u: { class_type: 'LatentUpscale', inputs: { samples: ['l', 0], upscale_method: 'nearest-exact', width: 64, height: 64, crop: 'center' } } }, ['u', 0]);
    assert.deepEqual(s.shape, [1, 1, 8, 8]);
    assert.deepEqual(s.data.slice(0, 8), [1, 1, 1, 1, 2, 2, 2, 2]);
  });

  test('composite, blend, arithmetic, concat, cut, batch and the tonemap operation', async () => {
    const to = putLatent(ramp([1, 1, 4, 4], () => 0));
    const from = putLatent(ramp([1, 1, 2, 2], () => 1));
    let s = await savedLatent({ a: load(to), b: load(from), c: { class_type: 'LatentComposite', inputs: { samples_to: ['a', 0], samples_from: ['b', 0], x: 24, y: 8, feather: 0 } } }, ['c', 0]);
    assert.deepEqual(s.data, [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0]);
    const from3 = putLatent(ramp([1, 1, 3, 3], () => 1));
    s = await savedLatent({ a: load(to), b: load(from3), c: { class_type: 'LatentComposite', inputs: { samples_to: ['a', 0], samples_from: ['b', 0], x: 8, y: 8, feather: 16 } } }, ['c', 0]);
    // feather 2 at the top and left edges (x, y ≠ 0): rows/cols 0 scaled by 0.5, 1 by 1; the far edges touch the border.
    close(s.data, [0, 0, 0, 0, 0, 0.25, 0.5, 0.5, 0, 0.5, 1, 1, 0, 0.5, 1, 1]);
    const a = putLatent({ shape: [1, 2, 1, 1], data: [3, 4] });
    const b = putLatent({ shape: [1, 2, 1, 1], data: [1, -2] });
    s = await savedLatent({ a: load(a), b: load(b), o: { class_type: 'LatentAdd', inputs: { samples1: ['a', 0], samples2: ['b', 0] } } }, ['o', 0]);
    assert.deepEqual(s.data, [4, 2]);
    s = await savedLatent({ a: load(a), b: load(b), o: { class_type: 'LatentSubtract', inputs: { samples1: ['a', 0], samples2: ['b', 0] } } }, ['o', 0]);
    assert.deepEqual(s.data, [2, 6]);
    s = await savedLatent({ a: load(a), o: { class_type: 'LatentMultiply', inputs: { samples: ['a', 0], multiplier: -0.5 } } }, ['o', 0]);
    assert.deepEqual(s.data, [-1.5, -2]);
    s = await savedLatent({ a: load(a), b: load(b), o: { class_type: 'LatentBlend', inputs: { samples1: ['a', 0], samples2: ['b', 0], blend_factor: 0.25 } } }, ['o', 0]);
    close(s.data, [0.25 * 3 + 0.75 * 1, 0.25 * 4 + 0.75 * -2]);
    // Interpolate: directions mixed and renormalised, magnitudes mixed linearly (|a| = 5, |b| = √5).
    s = await savedLatent({ a: load(a), b: load(b), o: { class_type: 'LatentInterpolate', inputs: { samples1: ['a', 0], samples2: ['b', 0], ratio: 0.5 } } }, ['o', 0]);
    const t = [0.5 * (3 / 5) + 0.5 * (1 / Math.sqrt(5)), 0.5 * (4 / 5) + 0.5 * (-2 / Math.sqrt(5))];
    const mt = Math.hypot(t[0]!, t[1]!);
    const mag = 0.5 * 5 + 0.5 * Math.sqrt(5);
    close(s.data, [(t[0]! / mt) * mag, (t[1]! / mt) * mag]);
    const wide = putLatent(ramp([1, 1, 2, 2]));
    s = await savedLatent({ a: load(wide), b: load(wide), o: { class_type: 'LatentConcat', inputs: { samples1: ['a', 0], samples2: ['b', 0], dim: '-x' } } }, ['o', 0]);
    assert.deepEqual(s.shape, [1, 1, 2, 4]);
    assert.deepEqual(s.data, [0, 1, 0, 1, 2, 3, 2, 3]);
    s = await savedLatent({ a: load(wide), b: load(wide), o: { class_type: 'LatentConcat', inputs: { samples1: ['a', 0], samples2: ['b', 0], dim: 'y' } } }, ['o', 0]);
    assert.deepEqual(s.shape, [1, 1, 4, 2]);
    s = await savedLatent({ a: load(wide), o: { class_type: 'LatentCut', inputs: { samples: ['a', 0], dim: 'x', index: -1, amount: 5 } } }, ['o', 0]);
    assert.deepEqual(s.data, [1, 3]);
    const p = await preview({ a: load(wide), b: load(putLatent(ramp([2, 1, 1, 1]))), o: { class_type: 'LatentBatch', inputs: { samples1: ['a', 0], samples2: ['b', 0] } } }, ['o', 0]);
    // The second latent is resized (bilinear, center) to 2×2 and appended; batch indices restart per input.
    assert.deepEqual(p[0], { samples: '<Tensor [3, 1, 2, 2]>', batch_index: [0, 0, 1] });
    const q = await preview({ a: load(wide), o: { class_type: 'LatentBatchSeedBehavior', inputs: { samples: ['a', 0], seed_behavior: 'fixed' } } }, ['o', 0]);
    assert.deepEqual(q[0].batch_index, [0]);
    // Reinhard tonemap: magnitudes 5 and 1, their mean and unbiased std (torch.std) set the curve's top.
    const tm = putLatent({ shape: [1, 2, 1, 2], data: [3, 0, 4, 1] });
    s = await savedLatent({ a: load(tm), op: { class_type: 'LatentOperationTonemapReinhard', inputs: { multiplier: 1 } }, o: { class_type: 'LatentApplyOperation', inputs: { samples: ['a', 0], operation: ['op', 0] } } }, ['o', 0]);
    const mags = [5, 1].map((m) => m + 1e-10);
    const mean = (mags[0]! + mags[1]!) / 2;
    const std = Math.sqrt(((mags[0]! - mean) ** 2 + (mags[1]! - mean) ** 2) / 1);
    const top = std * 5 + mean;
    const nm = mags.map((m) => (m / top / (m / top + 1)) * top);
    close(s.data, [(3 / mags[0]!) * nm[0]!, 0, (4 / mags[0]!) * nm[0]!, (1 / mags[1]!) * nm[1]!]);
  });

  test('TrimVideoLatent drops leading frames; LatentOperationSharpen is the reference kernel over reflected borders', async () => {
    const video = putLatent(ramp([1, 2, 4, 1, 2]));
    let s = await savedLatent({ l: load(video), t: { class_type: 'TrimVideoLatent', inputs: { samples: ['l', 0], trim_amount: 3 } } }, ['t', 0]);
    assert.deepEqual(s.shape, [1, 2, 1, 1, 2]);
    assert.deepEqual(s.data, [6, 7, 14, 15]);
    // Sharpen, radius 1, σ 1, alpha 0.1 on [1, 2, 4, 4]: direct 2-D correlation with the kernel the reference builds.
    const t = ramp([1, 2, 4, 4], (i) => ((i * 37) % 11) - 5 + (i === 3 ? 0.5 : 0));
    const name = putLatent(t);
    s = await savedLatent({ l: load(name), op: { class_type: 'LatentOperationSharpen', inputs: { sharpen_radius: 1, sigma: 1, alpha: 0.1 } }, o: { class_type: 'LatentApplyOperation', inputs: { samples: ['l', 0], operation: ['op', 0] } } }, ['o', 0]);
    const xs = [-1, 0, 1];
    const g = xs.flatMap((y) => xs.map((x) => Math.exp(-(x * x + y * y) / 2)));
    const gs = g.reduce((a, b) => a + b);
    const k = g.map((v) => (v / gs) * -1);
    k[4] = k[4]! - k.reduce((a, b) => a + b) + 1;
    const at = (c: number, y: number, x: number) => Math.fround(t.data[c * 16 + y * 4 + x]!);
    const lum = (y: number, x: number) => Math.hypot(at(0, y, x), at(1, y, x)) + 1e-6;
    const refl = (i: number) => (i < 0 ? -i : i > 3 ? 6 - i : i);
    const expected: number[] = [];
    for (let c = 0; c < 2; c++) for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) {
      let acc = 0;
      for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) acc += k[(dy + 1) * 3 + dx + 1]! * (at(c, refl(y + dy), refl(x + dx)) / lum(refl(y + dy), refl(x + dx)));
      expected.push(lum(y, x) * acc);
    }
    close(s.data, expected, 1e-4, 'sharpen');
  });

  test('SetLatentNoiseMask, LatentCompositeMasked and RebatchLatents/RebatchImages', async () => {
    const dst = putLatent(ramp([1, 1, 2, 2], () => 0));
    const src = putLatent(ramp([1, 1, 2, 2], () => 1));
    let s = await savedLatent({ a: load(dst), b: load(src), c: { class_type: 'LatentCompositeMasked', inputs: { destination: ['a', 0], source: ['b', 0], x: 8, y: 0, resize_source: false } } }, ['c', 0]);
    assert.deepEqual(s.data, [0, 1, 0, 1]);
    const withMask = { a: load(dst), b: load(src), m: { class_type: 'SolidMask', inputs: { value: 0.25, width: 16, height: 16 } } };
    s = await savedLatent({ ...withMask, c: { class_type: 'LatentCompositeMasked', inputs: { destination: ['a', 0], source: ['b', 0], x: 0, y: 0, resize_source: false, mask: ['m', 0] } } }, ['c', 0]);
    assert.deepEqual(s.data, [0.25, 0.25, 0.25, 0.25]);
    let p = await preview({ ...withMask, n: { class_type: 'SetLatentNoiseMask', inputs: { samples: ['a', 0], mask: ['m', 0] } } }, ['n', 0]);
    assert.deepEqual(p[0], { samples: '<Tensor [1, 1, 2, 2]>', noise_mask: '<Tensor [1, 1, 16, 16]>' });
    // Three latents of 2, 1 and 2 items rebatched by 2: [0, 1], [2, 3], [4]; the last input has a noise mask.
    const graph = {
      a: load(putLatent(ramp([2, 1, 1, 1]))),
      b: load(putLatent(ramp([1, 1, 1, 1]))),
      c: load(putLatent(ramp([2, 1, 1, 1]))),
      cm: { class_type: 'SolidMask', inputs: { value: 0.5, width: 8, height: 8 } },
      cn: { class_type: 'SetLatentNoiseMask', inputs: { samples: ['c', 0], mask: ['cm', 0] } },
    };
    // Lists come from RebatchLatents itself: first split [a] into 1-item batches, then rebatch the list.
    p = await preview({ ...graph, ab: { class_type: 'LatentBatch', inputs: { samples1: ['a', 0], samples2: ['b', 0] } }, split: { class_type: 'RebatchLatents', inputs: { latents: ['ab', 0], batch_size: 1 } }, re: { class_type: 'RebatchLatents', inputs: { latents: ['split', 0], batch_size: 2 } } }, ['re', 0]);
    assert.deepEqual(p, [
      { samples: '<Tensor [2, 1, 1, 1]>', batch_index: [0, 1] },
      { samples: '<Tensor [1, 1, 1, 1]>', batch_index: [0] },
    ]);
    p = await preview({ ...graph, re: { class_type: 'RebatchLatents', inputs: { latents: ['cn', 0], batch_size: 1 } } }, ['re', 0]);
    assert.deepEqual(p, [
      { samples: '<Tensor [1, 1, 1, 1]>', batch_index: [0], noise_mask: '<Tensor [1, 1, 8, 8]>' },
      { samples: '<Tensor [1, 1, 1, 1]>', batch_index: [1], noise_mask: '<Tensor [1, 1, 8, 8]>' },
    ]);
    // RebatchImages: 3 frames by 2 → batches of 2 and 1.
    const img = await loaded(srv, image(2, 2, 3, (x) => [x * 100, 0, 0]));
    const r = await run(srv, {
      ...img,
      rep: { class_type: 'RepeatImageBatch', inputs: { image: ['load', 0], amount: 3 } },
      re: { class_type: 'RebatchImages', inputs: { images: ['rep', 0], batch_size: 2 } },
      size: { class_type: 'GetImageSize', inputs: { image: ['re', 0] } },
      show: { class_type: 'PreviewAny', inputs: { source: ['size', 2] } },
    });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.deepEqual(r.outputs.show.text, ['2', '1']);
  });
});
