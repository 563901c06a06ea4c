/**
 * Samplers and custom-sampling nodes against values the reference computed on
 * the same generated checkpoint (test/fixtures/models-samplers-reference.json,
 * written by bench/workflow/models-reference-samplers.ts): the Brownian-tree
 * noise of the SDE samplers, every sampler KSampler lists that
 * models-layer.test.ts does not already compare, and the custom-sampling nodes
 * over HTTP and the WebSocket (/object_info identical to the reference's,
 * SamplerCustom, SamplerCustomAdvanced with every guider, noise and Sampler*
 * node, AddNoise), on SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { onOneStorage } from '@svc/testkit';
import { brownianNoiseSampler, seedSequenceState } from '../src/models/brownian.ts';
import { getSampler, SAMPLER_NAMES, SUPPORTED_SAMPLERS } from '../src/models/samplers.ts';
import { ClipModel, loadCheckpoint, sample, unloadAll, UNetModel, type FloatTensor } from '../src/models/sd1.ts';
import { customSamplingNodes } from '../src/nodes/sd/custom-sampling.ts';
import { decodeSafetensors } from '../src/nodes/safetensors.ts';
import { Tensor } from '../src/nodes/latent.ts';
import { startWorkflow } from './helpers.ts';
import { TINY, writeFixture } from './models-fixture.ts';
import { run, type Server } from './nodes-helpers.ts';
import { closeTo, pattern, type Summary } from './models-compare.ts';

const fixtures = path.join(import.meta.dirname, 'fixtures');
const ref = JSON.parse(fs.readFileSync(path.join(fixtures, 'models-samplers-reference.json'), 'utf8'));
const older = JSON.parse(fs.readFileSync(path.join(fixtures, 'models-reference.json'), 'utf8'));

const f = Math.fround;

/**
 * 1e-4 of the largest value, except dpm_adaptive: its step-size controller
 * divides the difference of two nearly equal float32 solutions by a tolerance,
 * so roundings of 1e-6 in the model's output move its error estimate by about
 * 1e-4 and the result by a few 1e-4 (11 steps accepted on both sides).
 */
const tolerance = (key: string) => (key.startsWith('dpm_adaptive') ? 1e-3 : 1e-4);

describe('the model layer against the reference', () => {
  let dir: string;
  let ckptPath: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-samplers-'));
    ckptPath = path.join(dir, 'tiny.safetensors');
    writeFixture(ckptPath, TINY);
  });
  after(async () => {
    await unloadAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("numpy's SeedSequence and torchsde's Brownian tree give the reference's noise (64-bit seeds, clamped ends, long and short queries)", () => {
    // Values numpy 2.4 gives for the same calls.
    assert.deepEqual([...seedSequenceState(12345n, [], 24, 3)], [2888090517, 4151165838, 1159728038]);
    assert.deepEqual([...seedSequenceState(2n ** 64n - 5n, [5n, 3n], 24, 4)], [3458294861, 3145291721, 1441409965, 4214132581]);
    assert.deepEqual([...seedSequenceState(0n, [2n ** 40n + 3n, 33n], 24, 4)], [2579691548, 1680637029, 3144208042, 4126533029]);
    const trees = new Map<string, ReturnType<typeof brownianNoiseSampler>>();
    for (const [key, expected] of Object.entries(ref.brownian) as [string, number[]][]) {
      const [seed, lo, hi, a, b] = key.split(':');
      const id = `${seed}:${lo}:${hi}`;
      if (!trees.has(id)) trees.set(id, brownianNoiseSampler(Float32Array.from([Number(hi), Number(lo)]), BigInt(seed!), 256));
      const got = trees.get(id)!(f(Number(a)), f(Number(b)));
      expected.forEach((v, i) => assert.ok(Math.abs(got[i]! - v) <= 2e-5 * Math.max(1, Math.abs(v)), `${key}[${i}]: ${got[i]} vs ${v}`));
    }
  });

  test(`every sampler KSampler lists gives the reference's latents (${SUPPORTED_SAMPLERS.length} of ${SAMPLER_NAMES.length})`, async () => {
    assert.deepEqual([...SUPPORTED_SAMPLERS], [...SAMPLER_NAMES]);
    const ck = await loadCheckpoint(ckptPath);
    const clip = new ClipModel(ck);
    const model = new UNetModel(ck);
    const positive = await clip.encode('a photo of a cat');
    const negative = await clip.encode('');
    const seen = new Set<string>(Object.keys(older.sample).map((k) => k.split(':')[0]!));
    for (const [key, expected] of Object.entries(ref.sample) as [string, Summary][]) {
      const [samplerName, scheduler, steps, cfg, denoise, seed] = key.split(':');
      seen.add(samplerName!);
      const latent = Number(denoise) === 1 ? { shape: [1, 4, 8, 8], data: new Float32Array(256) } : pattern([1, 4, 8, 8]);
      const out = await sample({ model, positive, negative, latent, samplerName: samplerName!, scheduler: scheduler!, steps: Number(steps), cfg: Number(cfg), denoise: Number(denoise), seed: BigInt(seed!) });
      closeTo(out, expected, tolerance(key), key);
    }
    for (const s of SAMPLER_NAMES) assert.ok(seen.has(s), `${s} is compared with the reference`);
    // A batch of two shares one Brownian tree over the whole batch.
    const batch = await sample({ model, positive, negative, latent: { shape: [2, 4, 8, 8], data: new Float32Array(512) }, samplerName: 'dpmpp_2m_sde', scheduler: 'karras', steps: 4, cfg: 7, seed: 57 });
    closeTo(batch, ref.batch, 1e-4, 'batch of 2');
  });

  test('BasicScheduler, SDTurboScheduler, BetaSamplingScheduler and SamplingPercentToSigma read the model\'s schedule as the reference', async () => {
    const model = new UNetModel(await loadCheckpoint(ckptPath));
    const call = (name: string, inputs: Record<string, unknown>) => customSamplingNodes.find((n) => n.name === name)!.execute({ model, ...inputs }, {} as never) as unknown[];
    const cases: Record<string, [string, Record<string, unknown>]> = {
      'basic:karras:5:1.0': ['BasicScheduler', { scheduler: 'karras', steps: 5, denoise: 1 }],
      'basic:normal:4:0.6': ['BasicScheduler', { scheduler: 'normal', steps: 4, denoise: 0.6 }],
      'basic:beta:3:0.0': ['BasicScheduler', { scheduler: 'beta', steps: 3, denoise: 0 }],
      'turbo:3:1.0': ['SDTurboScheduler', { steps: 3, denoise: 1 }],
      'turbo:2:0.5': ['SDTurboScheduler', { steps: 2, denoise: 0.5 }],
      'turbo:10:0.35': ['SDTurboScheduler', { steps: 10, denoise: 0.35 }],
      'beta:7:0.5:0.7': ['BetaSamplingScheduler', { steps: 7, alpha: 0.5, beta: 0.7 }],
    };
    for (const [key, [name, inputs]] of Object.entries(cases)) {
      const got = [...(call(name, inputs)[0] as Tensor).data];
      const expected = ref.schedulers[key] as number[];
      assert.equal(got.length, expected.length, key);
      expected.forEach((v, i) => assert.ok(Math.abs(got[i]! - v) <= 1e-6 * Math.max(1, v), `${key}[${i}]: ${got[i]} vs ${v}`));
    }
    for (const [key, expected] of Object.entries(ref.percent_to_sigma) as [string, number][]) {
      const [p, actual] = key.split(':');
      const got = call('SamplingPercentToSigma', { sampling_percent: Number(p), return_actual_sigma: actual === 'True' })[0] as number;
      assert.ok(Math.abs(got - expected) <= 1e-6 * Math.max(1, expected), `${key}: ${got} vs ${expected}`);
    }
  });
});

/** The graphs the reference script ran, as one prompt: every result saved by SaveLatent under its key. */
function customGraph(): { prompt: Record<string, unknown>; saves: Record<string, string> } {
  const p: Record<string, unknown> = {
    ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'tiny.safetensors' } },
    pos: { class_type: 'CLIPTextEncode', inputs: { text: 'a photo of a cat', clip: ['ck', 1] } },
    neg: { class_type: 'CLIPTextEncode', inputs: { text: '', clip: ['ck', 1] } },
    mid: { class_type: 'CLIPTextEncode', inputs: { text: 'a dog', clip: ['ck', 1] } },
    empty: { class_type: 'EmptyLatentImage', inputs: { width: 64, height: 64, batch_size: 1 } },
    // The reference's pattern latent: SaveLatent's format read back by LoadLatent is not needed; a LatentFromBatch-free way is the fixture file below.
    karras4: { class_type: 'BasicScheduler', inputs: { model: ['ck', 0], scheduler: 'karras', steps: 4, denoise: 1 } },
    half: { class_type: 'BasicScheduler', inputs: { model: ['ck', 0], scheduler: 'normal', steps: 4, denoise: 0.5 } },
    cfg5: { class_type: 'CFGGuider', inputs: { model: ['ck', 0], positive: ['pos', 0], negative: ['neg', 0], cfg: 5 } },
    init: { class_type: 'LoadLatent', inputs: { latent: 'pattern.latent' } },
  };
  const saves: Record<string, string> = {};
  const save = (key: string, from: [string, number]) => {
    const id = `save_${Object.keys(saves).length}`;
    p[id] = { class_type: 'SaveLatent', inputs: { samples: from, filename_prefix: `samplers/${id}` } };
    saves[key] = id;
  };
  const samplers: Record<string, [string, Record<string, unknown>]> = {
    'select:dpmpp_2m_sde': ['KSamplerSelect', { sampler_name: 'dpmpp_2m_sde' }],
    'euler_ancestral:0.5:0.8': ['SamplerEulerAncestral', { eta: 0.5, s_noise: 0.8 }],
    'euler_ancestral_cfg_pp:0.6:0.9': ['SamplerEulerAncestralCFGPP', { eta: 0.6, s_noise: 0.9 }],
    'lms:3': ['SamplerLMS', { order: 3 }],
    'dpmpp_2m_sde:heun:0.6:0.9:cpu': ['SamplerDPMPP_2M_SDE', { solver_type: 'heun', eta: 0.6, s_noise: 0.9, noise_device: 'cpu' }],
    'dpmpp_3m_sde:0.7:1.1:cpu': ['SamplerDPMPP_3M_SDE', { eta: 0.7, s_noise: 1.1, noise_device: 'cpu' }],
    'dpmpp_sde:0.8:1.0:0.4:gpu': ['SamplerDPMPP_SDE', { eta: 0.8, s_noise: 1.0, r: 0.4, noise_device: 'gpu' }],
    'dpmpp_2s_ancestral:0.5:1.0': ['SamplerDPMPP_2S_Ancestral', { eta: 0.5, s_noise: 1.0 }],
    'dpm_adaptive:2': ['SamplerDPMAdaptative', { order: 2, rtol: 0.05, atol: 0.0078, h_init: 0.05, pcoeff: 0, icoeff: 1, dcoeff: 0, accept_safety: 0.81, eta: 0, s_noise: 1 }],
    'er_sde:reverse:2:0.5:1.0': ['SamplerER_SDE', { solver_type: 'Reverse-time SDE', max_stage: 2, eta: 0.5, s_noise: 1.0 }],
    'er_sde:ode:3:1.0:1.0': ['SamplerER_SDE', { solver_type: 'ODE', max_stage: 3, eta: 1.0, s_noise: 1.0 }],
    'sa_solver:0.8:0.1:0.9:1.0:2:3:pece:simple': [
      'SamplerSASolver',
      { model: ['ck', 0], eta: 0.8, sde_start_percent: 0.1, sde_end_percent: 0.9, s_noise: 1.0, predictor_order: 2, corrector_order: 3, use_pece: true, simple_order_2: true },
    ],
  };
  Object.entries(samplers).forEach(([key, [cls, inputs]], i) => {
    p[`smp${i}`] = { class_type: cls, inputs };
    p[`noise${i}`] = { class_type: 'RandomNoise', inputs: { noise_seed: ref.custom[key].seed } };
    p[`adv${i}`] = { class_type: 'SamplerCustomAdvanced', inputs: { noise: [`noise${i}`, 0], guider: ['cfg5', 0], sampler: [`smp${i}`, 0], sigmas: ['karras4', 0], latent_image: ['empty', 0] } };
    save(`custom:${key}:output`, [`adv${i}`, 0]);
    save(`custom:${key}:denoised`, [`adv${i}`, 1]);
  });
  p.sc1 = {
    class_type: 'SamplerCustom',
    inputs: { model: ['ck', 0], add_noise: true, noise_seed: 60, cfg: 6.5, positive: ['pos', 0], negative: ['neg', 0], sampler: ['smp0', 0], sigmas: ['karras4', 0], latent_image: ['empty', 0] },
  };
  save('sampler_custom_noise:output', ['sc1', 0]);
  save('sampler_custom_noise:denoised', ['sc1', 1]);
  p.sc2 = {
    class_type: 'SamplerCustom',
    inputs: { model: ['ck', 0], add_noise: false, noise_seed: 61, cfg: 6.5, positive: ['pos', 0], negative: ['neg', 0], sampler: ['smp1', 0], sigmas: ['half', 0], latent_image: ['init', 0] },
  };
  save('sampler_custom_plain:output', ['sc2', 0]);
  save('sampler_custom_plain:denoised', ['sc2', 1]);
  p.basic = { class_type: 'BasicGuider', inputs: { model: ['ck', 0], conditioning: ['pos', 0] } };
  p.off = { class_type: 'DisableNoise', inputs: {} };
  p.bg = { class_type: 'SamplerCustomAdvanced', inputs: { noise: ['off', 0], guider: ['basic', 0], sampler: ['smp3', 0], sigmas: ['half', 0], latent_image: ['init', 0] } };
  save('basic_guider', ['bg', 0]);
  p.cfgpp = { class_type: 'KSamplerSelect', inputs: { sampler_name: 'euler_cfg_pp' } };
  p.n62 = { class_type: 'RandomNoise', inputs: { noise_seed: 62 } };
  p.bgpp = { class_type: 'SamplerCustomAdvanced', inputs: { noise: ['n62', 0], guider: ['basic', 0], sampler: ['cfgpp', 0], sigmas: ['karras4', 0], latent_image: ['empty', 0] } };
  save('basic_guider_cfg_pp', ['bgpp', 0]);
  p.n63 = { class_type: 'RandomNoise', inputs: { noise_seed: 63 } };
  p.n64 = { class_type: 'RandomNoise', inputs: { noise_seed: 64 } };
  p.euler = { class_type: 'KSamplerSelect', inputs: { sampler_name: 'euler' } };
  p.dpm2m = { class_type: 'KSamplerSelect', inputs: { sampler_name: 'dpmpp_2m' } };
  for (const [style, smp, noise, cfg1, cfg2, key] of [
    ['regular', 'euler', 'n63', 4, 2, 'dual_regular'],
    ['nested', 'dpm2m', 'n63', 4, 2, 'dual_nested'],
    ['regular', 'euler', 'n64', 1, 1, 'dual_cfg1'],
  ] as const) {
    p[`g_${key}`] = { class_type: 'DualCFGGuider', inputs: { model: ['ck', 0], cond1: ['pos', 0], cond2: ['mid', 0], negative: ['neg', 0], cfg_conds: cfg1, cfg_cond2_negative: cfg2, style } };
    p[`r_${key}`] = { class_type: 'SamplerCustomAdvanced', inputs: { noise: [noise, 0], guider: [`g_${key}`, 0], sampler: [smp, 0], sigmas: ['karras4', 0], latent_image: ['empty', 0] } };
    save(key, [`r_${key}`, 0]);
  }
  p.first = { class_type: 'SplitSigmas', inputs: { sigmas: ['karras4', 0], step: 0 } };
  for (const [key, seed, sig, lat] of [
    ['add_noise:pattern', 65, ['karras4', 0], ['init', 0]],
    ['add_noise:empty', 66, ['half', 0], ['empty', 0]],
    ['add_noise:one', 67, ['first', 0], ['init', 0]],
  ] as const) {
    p[`an_n_${seed}`] = { class_type: 'RandomNoise', inputs: { noise_seed: seed } };
    p[`an_${seed}`] = { class_type: 'AddNoise', inputs: { model: ['ck', 0], noise: [`an_n_${seed}`, 0], sigmas: sig, latent_image: lat } };
    save(key, [`an_${seed}`, 0]);
  }
  // SamplerLCMUpscale: the latent grows between steps (both outputs at the final size).
  const lcm: [number, number, string][] = [
    [1.5, -1, 'bislerp'],
    [1.5, -1, 'bilinear'],
    [2.0, 1, 'nearest-exact'],
    [1.3, 2, 'bicubic'],
    [1.7, 3, 'area'],
  ];
  lcm.forEach(([ratio, steps, method], i) => {
    const key = `${ratio === 2 ? '2.0' : ratio}:${steps}:${method}`;
    p[`lcm_s${i}`] = { class_type: 'SamplerLCMUpscale', inputs: { scale_ratio: ratio, scale_steps: steps, upscale_method: method } };
    p[`lcm_n${i}`] = { class_type: 'RandomNoise', inputs: { noise_seed: ref.lcm_upscale[key].seed } };
    p[`lcm_${i}`] = { class_type: 'SamplerCustomAdvanced', inputs: { noise: [`lcm_n${i}`, 0], guider: ['cfg5', 0], sampler: [`lcm_s${i}`, 0], sigmas: ['karras4', 0], latent_image: ['empty', 0] } };
    save(`lcm_upscale:${key}:output`, [`lcm_${i}`, 0]);
    save(`lcm_upscale:${key}:denoised`, [`lcm_${i}`, 1]);
  });
  return { prompt: p, saves };
}

/** The expected summary of a customGraph key. */
function expectedOf(key: string): Summary {
  const parts = key.split(':');
  if (parts[0] === 'custom') return ref.custom[parts.slice(1, -1).join(':')][parts.at(-1)!];
  if (parts[0] === 'lcm_upscale') return ref.lcm_upscale[parts.slice(1, -1).join(':')][parts.at(-1)!];
  if (parts[0] === 'add_noise') return ref.add_noise[parts[1]!];
  if (parts.length === 2) return ref[parts[0]!][parts[1]!];
  return ref[key];
}

onOneStorage('custom-sampling nodes', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
    const ckDir = path.join(srv.cfg.dataDir, 'models', 'checkpoints');
    fs.mkdirSync(ckDir, { recursive: true });
    writeFixture(path.join(ckDir, 'tiny.safetensors'), TINY);
    // The reference's pattern latent (1.5·sin(0.37 i), [1, 4, 8, 8]) as a .latent file LoadLatent reads.
    const { encodeSafetensors } = await import('../src/nodes/safetensors.ts');
    const p = pattern([1, 4, 8, 8]);
    const bytes = encodeSafetensors({ latent_tensor: new Tensor(p.shape, p.data), latent_format_version_0: new Tensor([0], new Float32Array(0)) });
    fs.mkdirSync(path.join(srv.cfg.dataDir, 'input'), { recursive: true });
    fs.writeFileSync(path.join(srv.cfg.dataDir, 'input', 'pattern.latent'), bytes);
  });
  after(async () => {
    await srv.close();
    await unloadAll();
  });

  test("/object_info: every node of nodes_custom_sampler exactly as the reference's server lists it", async () => {
    const r = await srv.http.get('/object_info');
    assert.equal(r.status, 200);
    for (const [name, expected] of Object.entries({ ...ref.object_info, ...ref.object_info_advanced }) as [string, Record<string, unknown>][]) {
      const got = r.body[name];
      assert.ok(got, `${name} is listed`);
      for (const [k, v] of Object.entries(expected)) assert.deepEqual(got[k], v, `${name}.${k}`);
    }
  });

  test('SamplerCustom, SamplerCustomAdvanced with every guider, noise and Sampler* node, and AddNoise give the reference\'s latents', async () => {
    const { prompt, saves } = customGraph();
    const res = await run(srv, prompt);
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    for (const [key, id] of Object.entries(saves)) {
      const item = res.outputs[id].latents[0];
      const file = path.join(srv.cfg.dataDir, item.type, item.subfolder, item.filename);
      const t = decodeSafetensors(fs.readFileSync(file), 1 << 20).tensors.latent_tensor!;
      closeTo({ shape: [...t.shape], data: t.data }, expectedOf(key), key.includes("dpm_adaptive") ? 1e-3 : 1e-4, key);
    }
    const progress = res.messages.filter((m) => m.type === 'progress' && m.data.node === 'sc1');
    assert.deepEqual(progress.at(-1)?.data.max, 4);
  });

  test('bad inputs are the reference\'s validation errors, not crashes', async () => {
    const bad = await srv.http.post('/prompt', { prompt: { s: { class_type: 'KSamplerSelect', inputs: { sampler_name: 'nope' } }, o: { class_type: 'PreviewAny', inputs: { source: ['s', 0] } } } });
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.body), /value_not_in_list|Value not in list/);
    const mismatch = await srv.http.post('/prompt', {
      prompt: {
        e: { class_type: 'EmptyLatentImage', inputs: { width: 64, height: 64, batch_size: 1 } },
        n: { class_type: 'DisableNoise', inputs: {} },
        a: { class_type: 'SamplerCustomAdvanced', inputs: { noise: ['n', 0], guider: ['n', 0], sampler: ['n', 0], sigmas: ['e', 0], latent_image: ['e', 0] } },
        s: { class_type: 'SaveLatent', inputs: { samples: ['a', 0], filename_prefix: 'x' } },
      },
    });
    assert.equal(mismatch.status, 400);
    assert.match(JSON.stringify(mismatch.body), /return_type_mismatch|Return type mismatch/);
  });
});

// Previews need their own server: the preview flags reach the execution threads through the process environment.
onOneStorage('custom-sampling previews (--preview-method latent2rgb)', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage, { previewMethod: 'latent2rgb', previewSize: '64' });
    fs.mkdirSync(path.join(srv.cfg.dataDir, 'models', 'checkpoints'), { recursive: true });
    writeFixture(path.join(srv.cfg.dataDir, 'models', 'checkpoints', 'tiny.safetensors'), TINY);
  });
  after(async () => {
    await srv.close();
    await unloadAll();
  });

  test('SamplerCustomAdvanced sends one preview frame per step before its result', async () => {
    const { WsClient } = await import('./helpers.ts');
    const { randomUUID } = await import('node:crypto');
    const clientId = randomUUID();
    const ws = new WsClient(srv.url, clientId);
    await ws.opened;
    try {
      const prompt = {
        ck: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'tiny.safetensors' } },
        pos: { class_type: 'CLIPTextEncode', inputs: { text: 'a cat', clip: ['ck', 1] } },
        g: { class_type: 'BasicGuider', inputs: { model: ['ck', 0], conditioning: ['pos', 0] } },
        n: { class_type: 'RandomNoise', inputs: { noise_seed: 3 } },
        smp: { class_type: 'KSamplerSelect', inputs: { sampler_name: 'dpmpp_sde' } },
        sig: { class_type: 'BasicScheduler', inputs: { model: ['ck', 0], scheduler: 'karras', steps: 4, denoise: 1 } },
        e: { class_type: 'EmptyLatentImage', inputs: { width: 96, height: 64, batch_size: 1 } },
        a: { class_type: 'SamplerCustomAdvanced', inputs: { noise: ['n', 0], guider: ['g', 0], sampler: ['smp', 0], sigmas: ['sig', 0], latent_image: ['e', 0] } },
        s: { class_type: 'SaveLatent', inputs: { samples: ['a', 1], filename_prefix: 'preview/x' } },
      };
      const r = await srv.http.post('/prompt', { prompt, client_id: clientId });
      assert.equal(r.status, 200);
      const msgs = await ws.promptDone(r.body.prompt_id);
      assert.equal(msgs.find((m) => m.type === 'execution_error'), undefined);
      assert.equal(ws.binary.length, 4);
      for (const frame of ws.binary) assert.equal(frame.readUInt32BE(0), 1, 'PREVIEW_IMAGE');
    } finally {
      ws.close();
    }
  });
});

test('dpm_adaptive with a zero first step or tolerances it cannot meet stops with a clear error (the reference would loop forever)', async () => {
  const run = getSampler('dpm_adaptive');
  const sigmas = Float32Array.from([14.6, 3, 0.5, 0]);
  const x = new Float32Array(16).fill(1);
  const model = async (v: Float32Array) => v.map((y) => y * 0.9);
  await assert.rejects(run(model, x, sigmas, { seed: 1 }, { h_init: 0 }), /dpm_adaptive needs h_init > 0/);
  // icoeff 0 keeps the step at 1e-300, which float32 time cannot advance by.
  await assert.rejects(run(model, x, sigmas, { seed: 1 }, { h_init: 1e-300, icoeff: 0 }), /did not reach the last σ in 10000 steps/);
});
