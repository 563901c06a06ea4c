/**
 * ControlNets and T2I adapters against the reference on generated files
 * (bench/workflow/models-reference-control.ts): the ControlNet's and the
 * adapter's own outputs, then sampling with ControlNetApplyAdvanced (start and
 * end percent, a hint scaled and centre-cropped), the deprecated
 * ControlNetApply (the negative takes the control), a ControlNet and an
 * adapter stacked, a difference ControlNet; then the nodes over HTTP and the
 * WebSocket on SQLite and PostgreSQL, and the errors of bad files.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { onOneStorage } from '@svc/testkit';
import { AppliedControl, ControlNetModel, differenceControlNet, loadControl, T2IAdapterModel, type Planar } from '../src/models/controlnet.ts';
import { ClipModel, loadCheckpoint, sample, UNetModel, unloadAll, type ConditioningEntry } from '../src/models/sd1.ts';
import { discreteSchedule } from '../src/models/model-sampling.ts';
import { resizeHint } from '../src/nodes/sd/control-nodes.ts';
import { timestepEmbedding } from '../src/models/unet-graph.ts';
import { startWorkflow } from './helpers.ts';
import { closeTo, pattern, readReference } from './models-compare.ts';
import { CONTROL_BASE, writeControlNet, writeDiffusersControlNet, writeT2IAdapter, writeXLControlNet } from './models-control-fixture.ts';
import { SDXL_TINY, writeXLFixture } from './models-fixture-xl.ts';
import { XLClipModel } from '../src/models/sdxl.ts';
import { writeFixture } from './models-fixture.ts';
import { image, putInput, readOutput, run, type Server } from './nodes-helpers.ts';

const ref = readReference('models-reference-control.json');

/** The reference script's hint: byte (x·k + y·3k + c·50 + x·y) mod 256. */
function hintBytes(w: number, h: number, k: number): number[] {
  const out: number[] = [];
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) for (let c = 0; c < 3; c++) out.push((x * k + y * 3 * k + c * 50 + x * y) % 256);
  return out;
}

function planarHint(w: number, h: number, k: number): Planar {
  const b = hintBytes(w, h, k);
  const data = new Float32Array(3 * h * w);
  for (let c = 0; c < 3; c++) for (let i = 0; i < h * w; i++) data[c * h * w + i] = b[i * 3 + c]! / 255;
  return { shape: [1, 3, h, w], data };
}

function writeFiles(dir: string): Record<'base' | 'cn' | 'bare' | 'diff' | 't2i', string> {
  const files = {
    base: path.join(dir, 'base.safetensors'),
    cn: path.join(dir, 'cn.safetensors'),
    bare: path.join(dir, 'cn_bare.safetensors'),
    diff: path.join(dir, 'cn_diff.safetensors'),
    t2i: path.join(dir, 't2i.safetensors'),
  };
  writeFixture(files.base, CONTROL_BASE);
  writeControlNet(files.cn, CONTROL_BASE);
  writeControlNet(files.bare, CONTROL_BASE, { prefix: '' }, 8);
  writeControlNet(files.diff, CONTROL_BASE, { difference: true }, 10);
  writeT2IAdapter(files.t2i, CONTROL_BASE);
  return files;
}

/** Decoded bytes against the reference's: within one level, and at most 0.1% of them off by one. */
function sameImage(data: number[], b64: string, what: string): void {
  const expected = Buffer.from(b64, 'base64');
  assert.equal(data.length, expected.length, `${what}: size`);
  let off = 0;
  let worst = 0;
  data.forEach((v, i) => {
    const d = Math.abs(v - expected[i]!);
    worst = Math.max(worst, d);
    if (d > 1) off++;
  });
  assert.ok(off <= expected.length * 0.001, `${what}: ${off} of ${expected.length} bytes differ by more than one level (worst ${worst})`);
}

describe('ControlNets and T2I adapters in the model layer, against the reference', () => {
  let dir: string;
  let files: ReturnType<typeof writeFiles>;
  let model: UNetModel;
  let pos: ConditioningEntry[];
  let neg: ConditioningEntry[];
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'control-'));
    files = writeFiles(dir);
    const ck = await loadCheckpoint(files.base);
    model = new UNetModel(ck);
    const clip = new ClipModel(ck);
    pos = await clip.encode('a house, (garden:1.2)');
    neg = await clip.encode('blurry');
  });
  after(async () => {
    await unloadAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the ControlNet and the adapter compute what the reference does', async () => {
    const net = await loadControl(files.cn);
    assert.ok(net instanceof ControlNetModel);
    assert.equal(net.spec.hintChannels, 3);
    assert.equal(net.spec.unet.inputBlocks.length, 12);
    const x = pattern([2, 4, 8, 8]);
    const [t, o] = pos[0]!;
    void o;
    const context = { shape: [2, t.shape[1]!, t.shape[2]!], data: new Float32Array([...t.data, ...t.data]) };
    const out = await net.forward({ x: x.data, shape: x.shape, sigma: 1, timestep: 700, context, batched: 1, schedule: discreteSchedule() }, planarHint(64, 64, 5));
    assert.equal(out.output.length, 12);
    out.output.forEach((v, i) => closeTo(v, ref.forward.output[i], 2e-4, `out_${i}`));
    closeTo(out.middle[0]!, ref.forward.middle, 2e-4, 'middle');
    void timestepEmbedding;

    const adapter = await loadControl(files.t2i);
    assert.ok(adapter instanceof T2IAdapterModel);
    assert.deepEqual([adapter.spec.cin, adapter.spec.channels, adapter.spec.xl, adapter.spec.useConv], [192, [32, 64, 128, 128], false, false]);
    const f = await adapter.forward(planarHint(64, 64, 5));
    assert.equal(f.input.length, ref.t2i_forward.input.length);
    f.input.forEach((v, i) => {
      const e = ref.t2i_forward.input[i];
      if (e === null) assert.equal(v, null, `input[${i}] is empty`);
      else closeTo(v!, e, 2e-4, `input[${i}]`);
    });
  });

  test('a ControlNet in the diffusers layout reads as the same weights in the single-file layout', async () => {
    const diffusers = path.join(dir, 'diffusion_pytorch_model.safetensors');
    writeDiffusersControlNet(diffusers, CONTROL_BASE, 8);
    const a = (await loadControl(files.bare)) as ControlNetModel;
    const b = await loadControl(diffusers);
    assert.ok(b instanceof ControlNetModel);
    assert.deepEqual(b.spec, a.spec);
    const x = pattern([1, 4, 8, 8]);
    const [t] = pos[0]!;
    const call = { x: x.data, shape: x.shape, sigma: 1, timestep: 400, context: t, batched: 1, schedule: discreteSchedule() };
    const [oa, ob] = [await a.forward(call, planarHint(64, 64, 3)), await b.forward(call, planarHint(64, 64, 3))];
    oa.output.forEach((v, i) => assert.deepEqual(ob.output[i]!.data, v.data, `out_${i}`));
    assert.deepEqual(ob.middle[0]!.data, oa.middle[0]!.data);
  });

  /** KSampler's path with the conditioning the reference's nodes made. */
  const sampleWith = (p: ConditioningEntry[], n: ConditioningEntry[], seed: number, opts: { steps?: number; sampler?: string; scheduler?: string } = {}) =>
    sample({ model, positive: p, negative: n, cfg: 6, samplerName: opts.sampler ?? 'euler', scheduler: opts.scheduler ?? 'normal', steps: opts.steps ?? 4, seed, latent: { shape: [1, 4, 8, 8], data: new Float32Array(256) } });
  const withControl = (list: ConditioningEntry[], c: AppliedControl, toUncond = false): ConditioningEntry[] => list.map(([t, o]) => [t, { ...o, control: c, control_apply_to_uncond: toUncond }]);

  test('sampling: ControlNetApplyAdvanced with a percent range and a scaled hint, a ControlNet without control_model., ControlNetApply, stacked, a T2I adapter, a difference ControlNet', async () => {
    const cn = await loadControl(files.cn);
    const bare = await loadControl(files.bare);
    const t2i = await loadControl(files.t2i);
    const diff = differenceControlNet((await loadControl(files.diff)) as ControlNetModel, model);
    const apply = (net: typeof cn, hint: Planar, strength: number, range: [number, number], prev?: AppliedControl) => new AppliedControl(net, hint, strength, range, resizeHint, prev);

    let c = apply(cn, planarHint(90, 50, 7), 0.8, [0.1, 0.9]);
    closeTo(await sampleWith(withControl(pos, c), withControl(neg, c), 31), ref.advanced.latent, 5e-4, 'advanced');
    c = apply(bare, planarHint(64, 64, 3), 1.3, [0, 1]);
    closeTo(await sampleWith(withControl(pos, c), withControl(neg, c), 32, { sampler: 'euler_ancestral', scheduler: 'karras' }), ref.bare.latent, 5e-4, 'bare');
    c = apply(cn, planarHint(48, 80, 11), 0.9, [0, 1]);
    closeTo(await sampleWith(withControl(pos, c, true), neg, 33), ref.old.latent, 5e-4, 'ControlNetApply');
    const first = apply(cn, planarHint(64, 64, 5), 0.7, [0, 1]);
    const second = apply(t2i, planarHint(70, 70, 9), 0.6, [0, 1], first);
    closeTo(await sampleWith(withControl(pos, second, true), withControl(neg, first), 34), ref.stacked.latent, 5e-4, 'stacked');
    c = apply(t2i, planarHint(64, 64, 13), 1.1, [0, 0.5]);
    closeTo(await sampleWith(withControl(pos, c), withControl(neg, c), 35, { sampler: 'dpmpp_2m', scheduler: 'karras', steps: 5 }), ref.t2i.latent, 5e-4, 'T2I adapter');
    c = apply(diff, planarHint(64, 64, 17), 1, [0, 1]);
    closeTo(await sampleWith(withControl(pos, c), withControl(neg, c), 36), ref.diff.latent, 5e-4, 'difference');
    closeTo(await sampleWith(pos, neg, 37), ref.none.latent, 5e-4, 'no control');
  });

  test('SDXL: a ControlNet with label_emb gets each entry\'s adm vector, as the reference\'s', async () => {
    const xl = path.join(dir, 'sdxl.safetensors');
    const xlCn = path.join(dir, 'cn_sdxl.safetensors');
    writeXLFixture(xl, SDXL_TINY);
    writeXLControlNet(xlCn, SDXL_TINY);
    const ck = await loadCheckpoint(xl);
    const xlModel = new UNetModel(ck);
    const clip = new XLClipModel(ck);
    const net = await loadControl(xlCn);
    assert.ok(net instanceof ControlNetModel);
    assert.equal(net.spec.unet.admInChannels, xlModel.checkpoint.detected.unet.admInChannels);
    const c = new AppliedControl(net, planarHint(64, 48, 19), 0.9, [0, 0.8], resizeHint);
    const [p, n] = [await clip.encode('a lighthouse at dusk'), await clip.encode('fog')];
    const out = await sample({ model: xlModel, positive: withControl(p, c), negative: withControl(n, c), cfg: 5, samplerName: 'euler', scheduler: 'normal', steps: 4, seed: 38, latent: { shape: [1, 4, 6, 8], data: new Float32Array(192) } });
    // The XL fixtures' sampling tolerance (models-xl.test.ts): tiny random UNets amplify float32 rounding at cfg 5–7.
    closeTo(out, ref.sdxl.latent, 2e-3, 'SDXL ControlNet');
  });
});

onOneStorage('workflow ControlNet nodes', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
    const models = path.join(srv.cfg.dataDir, 'models');
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'control-nodes-'));
    const files = writeFiles(tmp);
    fs.mkdirSync(path.join(models, 'checkpoints'), { recursive: true });
    fs.mkdirSync(path.join(models, 'controlnet'), { recursive: true });
    fs.renameSync(files.base, path.join(models, 'checkpoints', 'base.safetensors'));
    for (const k of ['cn', 'bare', 'diff', 't2i'] as const) fs.renameSync(files[k], path.join(models, 'controlnet', path.basename(files[k])));
    fs.writeFileSync(path.join(models, 'controlnet', 'broken.safetensors'), Buffer.from('not a safetensors file'));
    fs.writeFileSync(path.join(models, 'controlnet', 'unknown.safetensors'), safetensorsOf({ 'foo.weight': [2, 2] }));
    fs.rmSync(tmp, { recursive: true, force: true });
    for (const [w, h, k] of [
      [90, 50, 7],
      [64, 64, 5],
      [70, 70, 9],
      [64, 64, 17],
    ] as const) {
      const b = hintBytes(w, h, k);
      await putInput(srv, `hint_${w}x${h}_${k}.png`, image(w, h, 3, (x, y) => b.slice((y * w + x) * 3, (y * w + x) * 3 + 3)));
    }
  });
  after(async () => {
    await srv.close();
    await unloadAll();
  });

  test('/object_info lists the ControlNet nodes as the reference does', async () => {
    const r = await srv.http.get('/object_info');
    assert.equal(r.status, 200);
    const loader = r.body.ControlNetLoader;
    assert.deepEqual(loader.input.required.control_net_name, [['broken.safetensors', 'cn.safetensors', 'cn_bare.safetensors', 'cn_diff.safetensors', 't2i.safetensors', 'unknown.safetensors']]);
    assert.deepEqual(loader.output, ['CONTROL_NET']);
    assert.equal(loader.display_name, 'Load ControlNet Model');
    assert.equal(loader.category, 'loaders');
    assert.deepEqual(Object.keys(r.body.DiffControlNetLoader.input.required), ['model', 'control_net_name']);
    assert.equal(r.body.DiffControlNetLoader.display_name, 'Load ControlNet Model (diff)');
    const old = r.body.ControlNetApply;
    assert.deepEqual(Object.keys(old.input.required), ['conditioning', 'control_net', 'image', 'strength']);
    assert.deepEqual(old.input.required.strength, ['FLOAT', { default: 1.0, min: 0.0, max: 10.0, step: 0.01 }]);
    assert.equal(old.deprecated, true);
    assert.equal(old.display_name, 'Apply ControlNet (OLD)');
    const adv = r.body.ControlNetApplyAdvanced;
    assert.deepEqual(Object.keys(adv.input.required), ['positive', 'negative', 'control_net', 'image', 'strength', 'start_percent', 'end_percent']);
    assert.deepEqual(adv.input.required.start_percent, ['FLOAT', { default: 0.0, min: 0.0, max: 1.0, step: 0.001 }]);
    assert.deepEqual(adv.input.optional, { vae: ['VAE'] });
    assert.deepEqual(adv.output, ['CONDITIONING', 'CONDITIONING']);
    assert.deepEqual(adv.output_name, ['positive', 'negative']);
    assert.equal(adv.category, 'conditioning/controlnet');
    assert.equal(adv.display_name, 'Apply ControlNet');
  });

  const graph = (extra: Record<string, unknown>, positive: [string, number], negative: [string, number], seed: number) => ({
    ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'base.safetensors' } },
    pos: { class_type: 'CLIPTextEncode', inputs: { text: 'a house, (garden:1.2)', clip: ['ck', 1] } },
    neg: { class_type: 'CLIPTextEncode', inputs: { text: 'blurry', clip: ['ck', 1] } },
    empty: { class_type: 'EmptyLatentImage', inputs: { width: 64, height: 64, batch_size: 1 } },
    ks: { class_type: 'KSampler', inputs: { model: ['ck', 0], seed, steps: 4, cfg: 6, sampler_name: 'euler', scheduler: 'normal', positive, negative, latent_image: ['empty', 0], denoise: 1 } },
    dec: { class_type: 'VAEDecode', inputs: { samples: ['ks', 0], vae: ['ck', 2] } },
    save: { class_type: 'SaveImage', inputs: { images: ['dec', 0], filename_prefix: 'control' } },
    ...extra,
  });
  const load = (name: string) => ({ class_type: 'LoadImage', inputs: { image: name } });

  test('ControlNetLoader → ControlNetApplyAdvanced (start/end percent, a 90×50 hint scaled to 64×64) → KSampler gives the reference\'s image', async () => {
    const res = await run(
      srv,
      graph(
        {
          hint: load('hint_90x50_7.png'),
          cn: { class_type: 'ControlNetLoader', inputs: { control_net_name: 'cn.safetensors' } },
          apply: { class_type: 'ControlNetApplyAdvanced', inputs: { positive: ['pos', 0], negative: ['neg', 0], control_net: ['cn', 0], image: ['hint', 0], strength: 0.8, start_percent: 0.1, end_percent: 0.9, vae: ['ck', 2] } },
        },
        ['apply', 0],
        ['apply', 1],
        31,
      ),
    );
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    sameImage((await readOutput(srv, res.outputs.save.images[0])).data, ref.advanced.bytes, 'advanced');
  });

  test('a ControlNet and a T2I adapter stacked (ControlNetApplyAdvanced, then ControlNetApply on the positive) and a DiffControlNetLoader give the reference\'s images', async () => {
    const res = await run(
      srv,
      graph(
        {
          h1: load('hint_64x64_5.png'),
          h2: load('hint_70x70_9.png'),
          cn: { class_type: 'ControlNetLoader', inputs: { control_net_name: 'cn.safetensors' } },
          t2i: { class_type: 'ControlNetLoader', inputs: { control_net_name: 't2i.safetensors' } },
          a1: { class_type: 'ControlNetApplyAdvanced', inputs: { positive: ['pos', 0], negative: ['neg', 0], control_net: ['cn', 0], image: ['h1', 0], strength: 0.7, start_percent: 0, end_percent: 1 } },
          a2: { class_type: 'ControlNetApply', inputs: { conditioning: ['a1', 0], control_net: ['t2i', 0], image: ['h2', 0], strength: 0.6 } },
          h3: load('hint_64x64_17.png'),
          diff: { class_type: 'DiffControlNetLoader', inputs: { model: ['ck', 0], control_net_name: 'cn_diff.safetensors' } },
          d: { class_type: 'ControlNetApplyAdvanced', inputs: { positive: ['pos', 0], negative: ['neg', 0], control_net: ['diff', 0], image: ['h3', 0], strength: 1, start_percent: 0, end_percent: 1 } },
          ks2: { class_type: 'KSampler', inputs: { model: ['ck', 0], seed: 36, steps: 4, cfg: 6, sampler_name: 'euler', scheduler: 'normal', positive: ['d', 0], negative: ['d', 1], latent_image: ['empty', 0], denoise: 1 } },
          dec2: { class_type: 'VAEDecode', inputs: { samples: ['ks2', 0], vae: ['ck', 2] } },
          save2: { class_type: 'SaveImage', inputs: { images: ['dec2', 0], filename_prefix: 'diff' } },
        },
        ['a2', 0],
        ['a1', 1],
        34,
      ),
    );
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    sameImage((await readOutput(srv, res.outputs.save.images[0])).data, ref.stacked.bytes, 'stacked');
    sameImage((await readOutput(srv, res.outputs.save2.images[0])).data, ref.diff.bytes, 'difference');
  });

  test('a file that is not a ControlNet and a name outside the folder are clear errors; the service keeps serving', async () => {
    for (const [name, message] of [
      ['broken.safetensors', /controlnet file is invalid/],
      ['unknown.safetensors', /could not detect control model type/],
    ] as const) {
      const res = await run(srv, { cn: { class_type: 'ControlNetLoader', inputs: { control_net_name: name } }, p: { class_type: 'PreviewAny', inputs: { source: ['cn', 0] } } });
      assert.ok(res.error, `${name}: an execution_error`);
      assert.equal(res.error.node_type, 'ControlNetLoader');
      assert.match(res.error.exception_message, message);
    }
    const r = await srv.http.post('/prompt', { prompt: { cn: { class_type: 'ControlNetLoader', inputs: { control_net_name: '../checkpoints/base.safetensors' } }, p: { class_type: 'PreviewAny', inputs: { source: ['cn', 0] } } } });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.type, 'prompt_outputs_failed_validation');
    assert.match(JSON.stringify(r.body.node_errors), /Value not in list: control_net_name/);
    assert.equal((await srv.http.get('/system_stats')).status, 200);
  });
});

/** A minimal .safetensors holding zero tensors of the given shapes. */
function safetensorsOf(tensors: Record<string, number[]>): Buffer {
  const header: Record<string, unknown> = {};
  let off = 0;
  for (const [k, shape] of Object.entries(tensors)) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 4;
    header[k] = { dtype: 'F32', shape, data_offsets: [off, off + bytes] };
    off += bytes;
  }
  const json = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([len, json, Buffer.alloc(off)]);
}
