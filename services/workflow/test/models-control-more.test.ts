/**
 * Union ControlNets, Control-LoRAs and T2I light adapters against the
 * reference on generated files (bench/workflow/models-reference-control-more.ts):
 * each one's own outputs, sampling with ControlNetApplyAdvanced (and
 * SetUnionControlNetType's types), the reference's detection of each layout,
 * hostile files; then the nodes over HTTP and the WebSocket.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { onOneStorage } from '@svc/testkit';
import { AppliedControl, ControlLoraModel, ControlNetModel, loadControl, T2IAdapterModel, type ControlModel, type Planar } from '../src/models/controlnet.ts';
import { ClipModel, configureRuntime, loadCheckpoint, sample, UNetModel, unloadAll, type ConditioningEntry } from '../src/models/sd1.ts';
import { discreteSchedule } from '../src/models/model-sampling.ts';
import { XLClipModel } from '../src/models/sdxl.ts';
import { resizeHint } from '../src/nodes/sd/control-nodes.ts';
import { startWorkflow } from './helpers.ts';
import { closeTo, pattern, readReference } from './models-compare.ts';
import { CONTROL_BASE, controlNetSpecs, diffusersName } from './models-control-fixture.ts';
import { controlLoraSpecs, lightAdapterSpecs, UNION_BASE, UNION_XL, unionSpecs, writeControlLora, writeLightAdapter, writeUnionControlNet, writeXLControlLora, writeXLUnionControlNet } from './models-control-more-fixture.ts';
import { SDXL_TINY, writeXLFixture } from './models-fixture-xl.ts';
import { writeFixture, writeSpecs, type Spec } from './models-fixture.ts';
import { image, putInput, readOutput, run, type Server } from './nodes-helpers.ts';

const ref = readReference('models-reference-control-more.json');

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

const withControl = (list: ConditioningEntry[], c: AppliedControl): ConditioningEntry[] => list.map(([t, o]) => [t, { ...o, control: c, control_apply_to_uncond: false }]);
const apply = (net: ControlModel, hint: Planar, strength: number, range: [number, number]) => new AppliedControl(net, hint, strength, range, resizeHint);

/** The reference's forward on pattern(2, 4, 8, 8), a 64×64 hint, timestep 700 and the positive's context twice. */
async function forwardLikeReference(net: ControlNetModel | ControlLoraModel, pos: ConditioningEntry[], model?: UNetModel) {
  const x = pattern([2, 4, 8, 8]);
  const [t] = pos[0]!;
  const context = { shape: [2, t.shape[1]!, t.shape[2]!], data: new Float32Array([...t.data, ...t.data]) };
  return net.forward({ x: x.data, shape: x.shape, sigma: 1, timestep: 700, context, batched: 1, schedule: discreteSchedule(), model: model?.checkpoint }, planarHint(64, 64, 5));
}

function sameForward(out: { output: Planar[]; middle: Planar[] }, expected: any, what: string): void {
  assert.equal(out.output.length, expected.output.length, `${what}: outputs`);
  out.output.forEach((v, i) => closeTo(v, expected.output[i], 2e-4, `${what} out_${i}`));
  closeTo(out.middle[0]!, expected.middle, 2e-4, `${what} middle`);
}

describe('union ControlNets (ControlNet++) against the reference', () => {
  let dir: string;
  let model: UNetModel;
  let union: string;
  let pos: ConditioningEntry[];
  let neg: ConditioningEntry[];
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'control-union-'));
    const base = path.join(dir, 'union-base.safetensors');
    union = path.join(dir, 'union.safetensors');
    writeFixture(base, UNION_BASE);
    writeUnionControlNet(union, UNION_BASE);
    const ck = await loadCheckpoint(base);
    model = new UNetModel(ck);
    const clip = new ClipModel(ck);
    pos = await clip.encode('a house, (garden:1.2)');
    neg = await clip.encode('blurry');
  });
  after(async () => {
    await unloadAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('its outputs, with no type (auto) and with a type (the hint features fused with the type\'s task embedding)', async () => {
    const net = await loadControl(union);
    assert.ok(net instanceof ControlNetModel);
    assert.deepEqual(net.spec.union, { types: 6 });
    assert.equal(net.spec.unet.modelChannels, 320);
    sameForward(await forwardLikeReference(net, pos), ref.union_forward_auto, 'auto');
    sameForward(await forwardLikeReference(net.withControlType([3]), pos), ref.union_forward_canny, 'canny');
    // The type changes the outputs (the comparison above would not see a type ignored).
    assert.notDeepEqual(ref.union_forward_auto.output[0].head, ref.union_forward_canny.output[0].head);
  });

  test('sampling: no type, SetUnionControlNetType depth, then auto again', async () => {
    const net = (await loadControl(union)) as ControlNetModel;
    const run = (c: AppliedControl, seed: number) => sample({ model, positive: withControl(pos, c), negative: withControl(neg, c), cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 4, seed, latent: { shape: [1, 4, 8, 8], data: new Float32Array(256) } });
    closeTo(await run(apply(net, planarHint(90, 50, 7), 0.8, [0, 1]), 41), ref.union_auto.latent, 5e-4, 'auto');
    const depth = net.withControlType([1]);
    closeTo(await run(apply(depth, planarHint(64, 64, 5), 0.9, [0.1, 0.9]), 42), ref.union_depth.latent, 5e-4, 'depth');
    closeTo(await run(apply(depth.withControlType([]), planarHint(64, 64, 5), 0.9, [0.1, 0.9]), 42), ref.union_back_to_auto.latent, 5e-4, 'back to auto');
  });

  test('SDXL (xinsir\'s layout: eight types, label_emb as add_embedding): canny, each entry\'s adm vector to it', async () => {
    const xl = path.join(dir, 'union-xl-base.safetensors');
    const xlNet = path.join(dir, 'union-xl.safetensors');
    writeXLFixture(xl, UNION_XL);
    writeXLUnionControlNet(xlNet, UNION_XL);
    const ck = await loadCheckpoint(xl);
    const xlModel = new UNetModel(ck);
    const clip = new XLClipModel(ck);
    const net = await loadControl(xlNet);
    assert.ok(net instanceof ControlNetModel);
    assert.deepEqual(net.spec.union, { types: 8 });
    assert.equal(net.spec.unet.admInChannels, xlModel.checkpoint.detected.unet.admInChannels);
    const c = apply(net.withControlType([3]), planarHint(64, 48, 19), 0.9, [0, 0.8]);
    const [p, n] = [await clip.encode('a lighthouse at dusk'), await clip.encode('fog')];
    const out = await sample({ model: xlModel, positive: withControl(p, c), negative: withControl(n, c), cfg: 5, samplerName: 'euler', scheduler: 'normal', steps: 4, seed: 45, latent: { shape: [1, 4, 6, 8], data: new Float32Array(192) } });
    // The XL fixtures' sampling tolerance (models-xl.test.ts).
    closeTo(out, ref.union_xl_canny.latent, 2e-3, 'SDXL union canny');
  });

  test('a type beyond the file\'s task embeddings is the reference\'s error when sampled', async () => {
    const net = (await loadControl(union)) as ControlNetModel;
    await assert.rejects(forwardLikeReference(net.withControlType([6]), pos), /Control type tile\(6\) is out of range for the number of control types\(6\) supported/);
  });
});

describe('union ControlNets: layouts the reference reads otherwise, and bad files', () => {
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'control-union-files-'));
  });
  after(async () => {
    await unloadAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('union parts in the single-file layout are left out (a plain ControlNet), as the reference\'s loader leaves them', async () => {
    for (const prefix of ['control_model.', '']) {
      const file = path.join(dir, `single-${prefix || 'bare'}.safetensors`);
      const extra = unionSpecs(6, 32).map(([k, shape, init]): Spec => [prefix + k, shape, init]);
      writeSpecs(file, [...controlNetSpecs(CONTROL_BASE, { prefix }), ...extra], {}, 3);
      const net = await loadControl(file);
      assert.ok(net instanceof ControlNetModel);
      assert.equal(net.spec.union, undefined);
      assert.ok(![...net.checkpoint.file.tensors.keys()].some((k) => k.includes('task_embedding')));
    }
  });

  test('a union ControlNet for a UNet that is not 320 channels wide, or with a part of the wrong shape, is a clear error', async () => {
    const narrow = path.join(dir, 'narrow.safetensors');
    const net = controlNetSpecs(CONTROL_BASE, { prefix: '' }).map(([k, shape, init]): Spec => [diffusersName(k, CONTROL_BASE), shape, init]);
    writeSpecs(narrow, [...net, ...unionSpecs(6, 32)], {}, 3);
    await assert.rejects(loadControl(narrow), /needs 320 model channels/);
    const bad = path.join(dir, 'bad.safetensors');
    const wide = controlNetSpecs(UNION_BASE, { prefix: '' }).map(([k, shape, init]): Spec => [diffusersName(k, UNION_BASE), shape, init]);
    writeSpecs(bad, [...wide, ...unionSpecs(6).map(([k, shape, init]): Spec => [k, k === 'spatial_ch_projs.weight' ? [320, 64] : shape, init])], {}, 3);
    await assert.rejects(loadControl(bad), /spatial_ch_projs\.weight has shape \[320, 64\], expected \[320, 320\]/);
    const partsOnly = path.join(dir, 'parts-only.safetensors');
    writeSpecs(partsOnly, unionSpecs(6), {}, 3);
    await assert.rejects(loadControl(partsOnly), /union ControlNet parts .* without a ControlNet in the diffusers layout/);
  });
});

describe('Control-LoRAs against the reference', () => {
  let dir: string;
  let model: UNetModel;
  let lora: string;
  let pos: ConditioningEntry[];
  let neg: ConditioningEntry[];
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'control-lora-'));
    const base = path.join(dir, 'base.safetensors');
    lora = path.join(dir, 'control-lora.safetensors');
    writeFixture(base, CONTROL_BASE);
    writeControlLora(lora, CONTROL_BASE);
    const ck = await loadCheckpoint(base);
    model = new UNetModel(ck);
    const clip = new ClipModel(ck);
    pos = await clip.encode('a house, (garden:1.2)');
    neg = await clip.encode('blurry');
  });
  after(async () => {
    await unloadAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('its ControlNet, made from the model\'s weights, the file\'s and up·down, computes what the reference\'s does', async () => {
    const net = await loadControl(lora);
    assert.ok(net instanceof ControlLoraModel);
    assert.equal(net.spec.hintChannels, 3);
    assert.ok(net.spec.lowRank.includes('input_blocks.1.0.in_layers.2'));
    sameForward(await forwardLikeReference(net, pos, model), ref.lora_forward, 'Control-LoRA');
    await assert.rejects(forwardLikeReference(net, pos), /runs only inside a sampler/);
  });

  test('sampling with ControlNetApplyAdvanced (a percent range, a scaled hint)', async () => {
    const net = await loadControl(lora);
    const c = apply(net, planarHint(90, 50, 7), 0.8, [0.1, 0.9]);
    const out = await sample({ model, positive: withControl(pos, c), negative: withControl(neg, c), cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 4, seed: 43, latent: { shape: [1, 4, 8, 8], data: new Float32Array(256) } });
    closeTo(out, ref.lora.latent, 5e-4, 'Control-LoRA');
  });

  test('SDXL: label_emb from the model (with up·down), each entry\'s adm vector to it', async () => {
    const xl = path.join(dir, 'sdxl.safetensors');
    const xlLora = path.join(dir, 'control-lora-xl.safetensors');
    writeXLFixture(xl, SDXL_TINY);
    writeXLControlLora(xlLora, SDXL_TINY);
    const ck = await loadCheckpoint(xl);
    const xlModel = new UNetModel(ck);
    const clip = new XLClipModel(ck);
    const net = await loadControl(xlLora);
    assert.ok(net instanceof ControlLoraModel);
    assert.ok(net.spec.lowRank.some((m) => m.startsWith('label_emb.')), 'label_emb has an up·down');
    const c = apply(net, planarHint(64, 48, 19), 0.9, [0, 0.8]);
    const [p, n] = [await clip.encode('a lighthouse at dusk'), await clip.encode('fog')];
    const out = await sample({ model: xlModel, positive: withControl(p, c), negative: withControl(n, c), cfg: 5, samplerName: 'euler', scheduler: 'normal', steps: 4, seed: 44, latent: { shape: [1, 4, 6, 8], data: new Float32Array(192) } });
    // The XL fixtures' sampling tolerance (models-xl.test.ts).
    closeTo(out, ref.xl_lora.latent, 2e-3, 'SDXL Control-LoRA');
    // Made for SDXL, sampled with the SD1.5-shaped model: a clear error naming both.
    const wrong = apply(net, planarHint(64, 64, 5), 1, [0, 1]);
    await assert.rejects(
      sample({ model, positive: withControl(pos, wrong), negative: withControl(neg, wrong), cfg: 6, samplerName: 'euler', scheduler: 'normal', steps: 1, seed: 1, latent: { shape: [1, 4, 8, 8], data: new Float32Array(256) } }),
      /this Control-LoRA does not fit the model/,
    );
  });

  test('hostile Control-LoRAs: a name that is no ControlNet module, an up without its down, no hint block', async () => {
    const good = controlLoraSpecs(controlNetSpecs(CONTROL_BASE, { prefix: '' }));
    const cases: [string, Spec[], RegExp][] = [
      ['stray', [...good, ['output_blocks.0.0.in_layers.2.weight', [4, 4, 3, 3], 'w']], /output_blocks\.0\.0\.in_layers\.2\.weight names no module of a ControlNet/],
      ['lonely-up', good.filter(([k]) => k !== 'input_blocks.1.0.in_layers.2.down'), /input_blocks\.1\.0\.in_layers\.2\.up has no input_blocks\.1\.0\.in_layers\.2\.down/],
      ['no-hint', good.filter(([k]) => !k.startsWith('input_hint_block.0.')), /without input_hint_block\.0\.weight/],
    ];
    for (const [name, specs, message] of cases) {
      const file = path.join(dir, `${name}.safetensors`);
      writeSpecs(file, specs, {}, 5);
      await assert.rejects(loadControl(file), message, name);
    }
  });

  // The file is hard-linked beside each session's graph as the checkpoint is, read in place; where no link can be made
  // (the sessions' work folder on another file system) both are read into memory instead: the same outputs.
  test('where its file cannot be hard-linked beside the session (another file system), it is read into memory: the same outputs', async (t) => {
    const other = fs.existsSync('/dev/shm') ? fs.mkdtempSync('/dev/shm/control-lora-') : undefined;
    if (!other || fs.statSync(other).dev === fs.statSync(dir).dev) {
      if (other) fs.rmSync(other, { recursive: true, force: true });
      t.skip('no second file system for the sessions\' work folder');
      return;
    }
    configureRuntime({ workDir: other });
    try {
      await unloadAll();
      const fresh = new UNetModel(await loadCheckpoint(path.join(dir, 'base.safetensors')));
      const net = await loadControl(lora);
      assert.ok(net instanceof ControlLoraModel);
      sameForward(await forwardLikeReference(net, pos, fresh), ref.lora_forward, 'Control-LoRA read into memory');
      assert.deepEqual(fs.readdirSync(other).filter((n) => n.startsWith('svc-onnx-')), [], 'no session folder left behind');
    } finally {
      configureRuntime({});
      await unloadAll();
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});

describe('T2I light adapters against the reference', () => {
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'control-light-'));
  });
  after(async () => {
    await unloadAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('its features (float16 weights, the reference\'s fixed widths) are the reference\'s, in its list order', async () => {
    const file = path.join(dir, 't2i-light.safetensors');
    writeLightAdapter(file);
    const adapter = await loadControl(file);
    assert.ok(adapter instanceof T2IAdapterModel);
    assert.deepEqual([adapter.spec.light, adapter.spec.cin, adapter.spec.inputChannels, adapter.spec.channels], [true, 192, 3, [320, 640, 1280, 1280]]);
    const f = await adapter.forward(planarHint(64, 64, 5));
    assert.equal(f.input.length, ref.light_forward.input.length);
    f.input.forEach((v, i) => {
      const e = ref.light_forward.input[i];
      if (e === null) assert.equal(v, null, `input[${i}] is empty`);
      else closeTo(v!, e, 2e-4, `input[${i}]`);
    });
    assert.deepEqual(f.middle, []);
  });

  test('a light adapter with other widths, a missing block or a stray tensor is a clear error (the reference loads it strictly)', async () => {
    const good = lightAdapterSpecs();
    const cases: [string, Spec[], RegExp][] = [
      ['narrow', good.map(([k, shape, init]): Spec => [k, k === 'body.3.out_conv.weight' ? [640, 320, 1, 1] : shape, init]), /body\.3\.out_conv\.weight has shape \[640, 320, 1, 1\], expected \[1280, 320, 1, 1\]/],
      ['missing', good.filter(([k]) => !k.startsWith('body.2.body.3.')), /body\.2\.body\.3\.block1\.weight is missing/],
      ['stray', [...good, ['body.4.in_conv.weight', [4, 4, 1, 1], 'w']], /body\.4\.in_conv\.weight is not a tensor of a T2I light adapter/],
    ];
    for (const [name, specs, message] of cases) {
      const file = path.join(dir, `${name}.safetensors`);
      writeSpecs(file, specs, { dtype: 'F16' }, 5);
      await assert.rejects(loadControl(file), message, name);
    }
  });
});

onOneStorage('workflow nodes for union ControlNets and Control-LoRAs', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
    const models = path.join(srv.cfg.dataDir, 'models');
    fs.mkdirSync(path.join(models, 'checkpoints'), { recursive: true });
    fs.mkdirSync(path.join(models, 'controlnet'), { recursive: true });
    writeFixture(path.join(models, 'checkpoints', 'union-base.safetensors'), UNION_BASE);
    writeFixture(path.join(models, 'checkpoints', 'base.safetensors'), CONTROL_BASE);
    writeUnionControlNet(path.join(models, 'controlnet', 'union.safetensors'), UNION_BASE);
    writeControlLora(path.join(models, 'controlnet', 'control-lora.safetensors'), CONTROL_BASE);
    const bad = lightAdapterSpecs().filter(([k]) => !k.startsWith('body.1.out_conv.'));
    writeSpecs(path.join(models, 'controlnet', 't2i-light-broken.safetensors'), bad, { dtype: 'F16' }, 5);
    for (const [w, h, k] of [
      [90, 50, 7],
      [64, 64, 5],
    ] as const) {
      const b = hintBytes(w, h, k);
      await putInput(srv, `hint_${w}x${h}_${k}.png`, image(w, h, 3, (x, y) => b.slice((y * w + x) * 3, (y * w + x) * 3 + 3)));
    }
  });
  after(async () => {
    await srv.close();
    await unloadAll();
  });

  test('/object_info lists SetUnionControlNetType as the reference does', async () => {
    const r = await srv.http.get('/object_info');
    assert.equal(r.status, 200);
    const n = r.body.SetUnionControlNetType;
    assert.deepEqual(n.input.required, { control_net: ['CONTROL_NET'], type: [['auto', 'openpose', 'depth', 'hed/pidi/scribble/ted', 'canny/lineart/anime_lineart/mlsd', 'normal', 'segment', 'tile', 'repaint']] });
    assert.deepEqual(n.output, ['CONTROL_NET']);
    assert.equal(n.category, 'conditioning/controlnet');
    assert.equal(n.python_module, 'comfy_extras.nodes_controlnet');
  });

  const graph = (ckpt: string, cn: Record<string, unknown>, hint: string, strength: number, range: [number, number], seed: number) => ({
    ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: ckpt } },
    pos: { class_type: 'CLIPTextEncode', inputs: { text: 'a house, (garden:1.2)', clip: ['ck', 1] } },
    neg: { class_type: 'CLIPTextEncode', inputs: { text: 'blurry', clip: ['ck', 1] } },
    hint: { class_type: 'LoadImage', inputs: { image: hint } },
    ...cn,
    apply: { class_type: 'ControlNetApplyAdvanced', inputs: { positive: ['pos', 0], negative: ['neg', 0], control_net: ['cn', 0], image: ['hint', 0], strength, start_percent: range[0], end_percent: range[1] } },
    empty: { class_type: 'EmptyLatentImage', inputs: { width: 64, height: 64, batch_size: 1 } },
    ks: { class_type: 'KSampler', inputs: { model: ['ck', 0], seed, steps: 4, cfg: 6, sampler_name: 'euler', scheduler: 'normal', positive: ['apply', 0], negative: ['apply', 1], latent_image: ['empty', 0], denoise: 1 } },
    dec: { class_type: 'VAEDecode', inputs: { samples: ['ks', 0], vae: ['ck', 2] } },
    save: { class_type: 'SaveImage', inputs: { images: ['dec', 0], filename_prefix: 'control' } },
  });

  test('ControlNetLoader (a union ControlNet) → SetUnionControlNetType depth → ControlNetApplyAdvanced → KSampler gives the reference\'s image', async () => {
    const cn = {
      load: { class_type: 'ControlNetLoader', inputs: { control_net_name: 'union.safetensors' } },
      cn: { class_type: 'SetUnionControlNetType', inputs: { control_net: ['load', 0], type: 'depth' } },
    };
    const res = await run(srv, graph('union-base.safetensors', cn, 'hint_64x64_5.png', 0.9, [0.1, 0.9], 42));
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    sameImage((await readOutput(srv, res.outputs.save.images[0])).data, ref.union_depth.bytes, 'union depth');
  });

  test('ControlNetLoader (a Control-LoRA) → ControlNetApplyAdvanced → KSampler gives the reference\'s image; a type beyond the union file\'s is an execution error', async () => {
    const res = await run(srv, graph('base.safetensors', { cn: { class_type: 'ControlNetLoader', inputs: { control_net_name: 'control-lora.safetensors' } } }, 'hint_90x50_7.png', 0.8, [0.1, 0.9], 43));
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    sameImage((await readOutput(srv, res.outputs.save.images[0])).data, ref.lora.bytes, 'Control-LoRA');
    const cn = {
      load: { class_type: 'ControlNetLoader', inputs: { control_net_name: 'union.safetensors' } },
      cn: { class_type: 'SetUnionControlNetType', inputs: { control_net: ['load', 0], type: 'repaint' } },
    };
    const bad = await run(srv, graph('union-base.safetensors', cn, 'hint_64x64_5.png', 0.9, [0, 1], 42));
    assert.ok(bad.error);
    assert.equal(bad.error.node_type, 'KSampler');
    assert.match(bad.error.exception_message, /Control type repaint\(7\) is out of range for the number of control types\(6\) supported/);
  });

  test('a broken light adapter is a clear ControlNetLoader error', async () => {
    const res = await run(srv, { cn: { class_type: 'ControlNetLoader', inputs: { control_net_name: 't2i-light-broken.safetensors' } }, p: { class_type: 'PreviewAny', inputs: { source: ['cn', 0] } } });
    assert.ok(res.error);
    assert.equal(res.error.node_type, 'ControlNetLoader');
    assert.match(res.error.exception_message, /controlnet file is invalid.*body\.1\.out_conv\.weight is missing/);
    assert.equal((await srv.http.get('/system_stats')).status, 200);
  });
});
