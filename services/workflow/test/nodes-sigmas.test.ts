import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { Tensor } from '../src/nodes/latent.ts';
import { gitsSigmas } from '../src/nodes/gits.ts';
import { alignYourSteps, ltxvSigmas, sigmaNodes } from '../src/nodes/sigmas.ts';
import { startWorkflow } from './helpers.ts';
import { run, type Server } from './nodes-helpers.ts';

/** Calls a SIGMAS node's function directly (pure: no context needed). */
function call(name: string, inputs: Record<string, unknown>): number[][] {
  const def = sigmaNodes.find((n) => n.name === name)!;
  const out = def.execute(inputs, {} as never) as Tensor[];
  return out.map((t) => [...t.data]);
}

function close(actual: number[], expected: number[], what: string, rel = 2e-6): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  expected.forEach((e, i) => assert.ok(Math.abs(actual[i]! - e) <= rel * Math.max(1e-3, Math.abs(e)), `${what}[${i}]: ${actual[i]} vs ${e}`));
}

const lin = (a: number, b: number, n: number) => Array.from({ length: n }, (_, i) => (n === 1 ? a : a + ((b - a) * i) / (n - 1)));

test('k-diffusion schedules: the reference formulas (float32)', () => {
  const [smax, smin] = [14.614642, 0.0291675];
  close(call('KarrasScheduler', { steps: 20, sigma_max: smax, sigma_min: smin, rho: 7 })[0]!, [...lin(0, 1, 20).map((r) => (smax ** (1 / 7) + r * (smin ** (1 / 7) - smax ** (1 / 7))) ** 7), 0], 'karras');
  close(call('ExponentialScheduler', { steps: 10, sigma_max: smax, sigma_min: smin })[0]!, [...lin(Math.log(smax), Math.log(smin), 10).map(Math.exp), 0], 'exponential');
  close(call('PolyexponentialScheduler', { steps: 7, sigma_max: smax, sigma_min: smin, rho: 2 })[0]!, [...lin(1, 0, 7).map((r) => Math.exp(r ** 2 * (Math.log(smax) - Math.log(smin)) + Math.log(smin))), 0], 'polyexponential');
  close(call('VPScheduler', { steps: 5, beta_d: 19.9, beta_min: 0.1, eps_s: 0.001 })[0]!, [...lin(1, 0.001, 5).map((t) => Math.sqrt(Math.expm1((19.9 * t * t) / 2 + 0.1 * t))), 0], 'vp', 1e-5);
  const lap = lin(0, 1, 9).map((x) => Math.min(smax, Math.max(smin, Math.exp(0 - 0.5 * Math.sign(0.5 - x) * Math.log(1 - 2 * Math.abs(0.5 - x) + 1e-5)))));
  close(call('LaplaceScheduler', { steps: 9, sigma_max: smax, sigma_min: smin, mu: 0, beta: 0.5 })[0]!, lap, 'laplace (no trailing zero)', 1e-5);
  close(call('KarrasScheduler', { steps: 1, sigma_max: 2, sigma_min: 1, rho: 7 })[0]!, [2, 0], 'one step');
});

test('Align Your Steps (log-linear interpolation of the published levels) and the LTXV schedule', () => {
  const SD1 = [14.6146412293, 6.4745760956, 3.8636745985, 2.694615152, 1.8841921177, 1.3943805092, 0.9642583904, 0.6523686016, 0.3977456272, 0.1515232662, 0.0291671582];
  close([...alignYourSteps('SD1', 10, 1).data], [...SD1.slice(0, 10), 0], 'ays 10 steps');
  // 4 steps: 5 points on the reversed log curve (np.interp), reversed back; the last set to 0.
  const ys = SD1.map(Math.log).reverse();
  const at = (x: number) => {
    const p = x * 10;
    const k = Math.min(9, Math.floor(p));
    return Math.exp(ys[k]! + (ys[k + 1]! - ys[k]!) * (p - k));
  };
  const five = [0, 0.25, 0.5, 0.75, 1].map(at).reverse();
  close([...alignYourSteps('SD1', 4, 1).data], [...five.slice(0, 4), 0], 'ays 4 steps');
  // denoise 0.5 of 4 steps keeps the last round(2) + 1 levels.
  close([...alignYourSteps('SD1', 4, 0.5).data], [five[2]!, five[3]!, 0], 'ays denoise');
  assert.equal(alignYourSteps('SVD', 4, 0).data.length, 0);
  // OptimalSteps: the same interpolation over its own tables (FLUX has 10 steps as published).
  close(call('OptimalStepsScheduler', { model_type: 'FLUX', steps: 10, denoise: 1 })[0]!, [0.9968, 0.9886, 0.9819, 0.975, 0.966, 0.9471, 0.9158, 0.8287, 0.5512, 0.2808, 0], 'optimal steps');
  assert.equal(call('OptimalStepsScheduler', { model_type: 'Wan', steps: 7, denoise: 1 })[0]!.length, 8);
  assert.throws(() => call('OptimalStepsScheduler', { model_type: '__proto__', steps: 7, denoise: 1 }), /__proto__/);
  // LTXV without a latent: 4096 tokens, so the shift is max_shift; stretched to end at `terminal`.
  const lin = [1, 0.75, 0.5, 0.25, 0];
  const e = Math.exp(2.05);
  const raw = lin.map((v) => (v === 0 ? 0 : e / (e + (1 / v - 1))));
  close([...ltxvSigmas(4, 2.05, 0.95, false, 0.1, 4096).data], raw, 'ltxv', 1e-5);
  const scale = (1 - raw[3]!) / (1 - 0.1);
  close([...ltxvSigmas(4, 2.05, 0.95, true, 0.1, 4096).data], raw.map((v) => (v === 0 ? 0 : 1 - (1 - v) / scale)), 'ltxv stretched', 1e-5);
});

test('GITSScheduler: the published levels per coeff, log-linear beyond 20 steps, denoise — values the reference computed (float32)', () => {
  // [coeff, steps, denoise, the reference's GITSScheduler.execute output], produced by running comfy_extras/nodes_gits.py.
  const cases: Array<[number, number, number, number[]]> = [
    [1.2, 10, 1.0, [14.614641189575195, 5.85520076751709, 2.8448498249053955, 1.6705001592636108, 1.0889533758163452, 0.748070478439331, 0.501183807849884, 0.32104822993278503, 0.1989491581916809, 0.09824532270431519, 0.0]],
    [0.8, 2, 1.0, [14.614641189575195, 7.490016460418701, 0.0]],
    [1.5, 25, 1.0, [14.614641189575195, 3.502596616744995, 1.7629297971725464, 1.2085057497024536, 0.901753306388855, 0.7213385105133057, 0.5984838008880615, 0.5135321617126465, 0.4597837030887604, 0.42391830682754517, 0.3885338306427002, 0.37053734064102173, 0.3525213301181793, 0.3344570994377136, 0.3163168430328369, 0.298078328371048, 0.279177725315094, 0.2599124014377594, 0.2401832491159439, 0.2198844701051712, 0.1989491581916809, 0.1756467968225479, 0.15004600584506989, 0.12042129784822464, 0.07706007361412048, 0.0]],
    [1.05, 10, 0.5, [1.5117926597595215, 0.9535092115402222, 0.5951632261276245, 0.34370604157447815, 0.13792116940021515, 0.0]],
    [1.35, 30, 0.6, [0.45573690533638, 0.4097547233104706, 0.3729766309261322, 0.34370604157447815, 0.32842981815338135, 0.313201367855072, 0.298078328371048, 0.28224247694015503, 0.2663591206073761, 0.25053367018699646, 0.23352164030075073, 0.21624818444252014, 0.1989491581916809, 0.17933174967765808, 0.15871579945087433, 0.13792116940021515, 0.11000646650791168, 0.06554020196199417, 0.0]],
    [1.2, 4, 0.1, [0.0]],
  ];
  for (const [coeff, steps, denoise, expected] of cases) close([...gitsSigmas(coeff, steps, denoise).data], expected, `gits ${coeff}/${steps}/${denoise}`, 1e-6);
  assert.equal(gitsSigmas(1.2, 10, 0).data.length, 0);
  // A coeff between the table's rows is the reference's KeyError.
  assert.throws(() => gitsSigmas(1.23, 10, 1), (e: any) => e.pyType === 'KeyError' && e.message === '1.23');
});

test('sigma tools: split, split by denoise, flip, set first, extend', () => {
  const s = new Tensor([5], Float32Array.from([8, 4, 2, 1, 0]));
  assert.deepEqual(call('SplitSigmas', { sigmas: s, step: 2 }), [[8, 4, 2], [2, 1, 0]]);
  assert.deepEqual(call('SplitSigmas', { sigmas: s, step: 10 }), [[8, 4, 2, 1, 0], []]);
  // steps 4, denoise 0.5 → 2: sigmas[:-2], sigmas[-3:].
  assert.deepEqual(call('SplitSigmasDenoise', { sigmas: s, denoise: 0.5 }), [[8, 4, 2], [2, 1, 0]]);
  // denoise 0: sigmas[:-0] is empty in Python.
  assert.deepEqual(call('SplitSigmasDenoise', { sigmas: s, denoise: 0 }), [[], [0]]);
  // round(4 · 0.375) = round(1.5) = 2 (half to even).
  assert.deepEqual(call('SplitSigmasDenoise', { sigmas: s, denoise: 0.375 })[1], [2, 1, 0]);
  assert.deepEqual(call('FlipSigmas', { sigmas: s }), [[0.0001, 1, 2, 4, 8].map(Math.fround)]);
  assert.deepEqual(call('SetFirstSigma', { sigmas: s, sigma: 136 }), [[136, 4, 2, 1, 0]]);
  // Linear, 2 sub-steps: one midpoint inserted after each sigma inside [end, start].
  assert.deepEqual(call('ExtendIntermediateSigmas', { sigmas: s, steps: 2, start_at_sigma: -1, end_at_sigma: 2, spacing: 'linear' }), [[8, 6, 4, 3, 2, 1.5, 1, 0]]);
  const cos = call('ExtendIntermediateSigmas', { sigmas: new Tensor([2], Float32Array.from([4, 0])), steps: 3, start_at_sigma: -1, end_at_sigma: 0, spacing: 'cosine' })[0]!;
  close(cos, [4, 4 - 4 * Math.sin(Math.PI / 6), 4 - 4 * Math.sin(Math.PI / 3), 0], 'cosine spacing');
});

forEachStorage('workflow sigma and empty-latent nodes over HTTP', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  test('object_info lists them with the reference schemas; a schedule runs in a prompt', async () => {
    const info = (await srv.http.get('/object_info')).body;
    for (const n of ['KarrasScheduler', 'ExponentialScheduler', 'PolyexponentialScheduler', 'LaplaceScheduler', 'VPScheduler']) {
      assert.equal(info[n].category, 'sampling/custom_sampling/schedulers', n);
      assert.equal(info[n].python_module, 'comfy_extras.nodes_custom_sampler', n);
      assert.deepEqual(info[n].output, ['SIGMAS'], n);
    }
    assert.deepEqual(info.KarrasScheduler.input.required.sigma_max, ['FLOAT', { default: 14.614642, min: 0.0, max: 5000.0, step: 0.01, round: false }]);
    assert.deepEqual(info.SplitSigmas.output_name, ['high_sigmas', 'low_sigmas']);
    assert.equal(info.ExtendIntermediateSigmas.category, 'sampling/custom_sampling/sigmas');
    assert.deepEqual(info.ExtendIntermediateSigmas.input.required.spacing, [['linear', 'cosine', 'sine']]);
    assert.deepEqual(info.StableCascade_EmptyLatentImage.output_name, ['stage_c', 'stage_b']);
    assert.equal(info.EmptySD3LatentImage.python_module, 'comfy_extras.nodes_sd3');
    assert.equal(info.EmptyHunyuanLatentVideo.python_module, 'comfy_extras.nodes_hunyuan');
    const r = await run(srv, {
      k: { class_type: 'KarrasScheduler', inputs: { steps: 4, sigma_max: 10, sigma_min: 0.1, rho: 7 } },
      sp: { class_type: 'SplitSigmas', inputs: { sigmas: ['k', 0], step: 1 } },
      show: { class_type: 'PreviewAny', inputs: { source: ['sp', 1] } },
    });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.deepEqual(r.outputs.show.text, [JSON.stringify('<Tensor [4]>')]);
  });

  test('empty latents of the model families have the reference shapes; oversized ones fail clearly', async () => {
    const shapes: Array<[string, Record<string, unknown>, number[], number?]> = [
      ['EmptySD3LatentImage', { width: 1024, height: 512, batch_size: 2 }, [2, 16, 64, 128]],
      ['EmptyHunyuanLatentVideo', { width: 848, height: 480, length: 25, batch_size: 1 }, [1, 16, 7, 60, 106]],
      ['EmptyHunyuanImageLatent', { width: 2048, height: 1024, batch_size: 1 }, [1, 64, 32, 64]],
      ['EmptyMochiLatentVideo', { width: 848, height: 480, length: 25, batch_size: 1 }, [1, 12, 5, 60, 106]],
      ['EmptyLTXVLatentVideo', { width: 768, height: 512, length: 97, batch_size: 1 }, [1, 128, 13, 16, 24]],
      ['EmptyCosmosLatentVideo', { width: 1280, height: 704, length: 121, batch_size: 1 }, [1, 16, 16, 88, 160]],
      ['StableCascade_EmptyLatentImage', { width: 1024, height: 1024, compression: 42, batch_size: 1 }, [1, 16, 24, 24]],
      ['StableCascade_EmptyLatentImage', { width: 1024, height: 1024, compression: 42, batch_size: 1 }, [1, 4, 256, 256], 1],
      ['EmptyLatentAudio', { seconds: 47.6, batch_size: 1 }, [1, 64, 1024]],
      ['EmptyAceStepLatentAudio', { seconds: 120, batch_size: 1 }, [1, 8, 16, 1291]],
      ['EmptyChromaRadianceLatentImage', { width: 64, height: 32, batch_size: 1 }, [1, 3, 32, 64]],
      ['EmptyLatentHunyuan3Dv2', { resolution: 3072, batch_size: 1 }, [1, 64, 3072]],
    ];
    for (const [cls, inputs, shape, slot] of shapes) {
      const prefix = `e/${randomUUID().slice(0, 8)}`;
      const r = await run(srv, { e: { class_type: cls, inputs }, s: { class_type: 'SaveLatent', inputs: { samples: ['e', slot ?? 0], filename_prefix: prefix } } });
      assert.equal(r.error, undefined, `${cls}: ${JSON.stringify(r.error)}`);
      const item = r.outputs.s.latents[0];
      const buf = fs.readFileSync(path.join(srv.cfg.dataDir, 'output', item.subfolder, item.filename));
      const header = JSON.parse(buf.subarray(8, 8 + Number(buf.readBigUInt64LE(0))).toString());
      assert.deepEqual(header.latent_tensor.shape, shape, cls);
    }
    const big = await run(srv, { e: { class_type: 'EmptyLatentImage', inputs: { width: 16384, height: 16384, batch_size: 64 } }, s: { class_type: 'SaveLatent', inputs: { samples: ['e', 0], filename_prefix: 'big' } } });
    assert.equal(big.error?.exception_type, 'RangeError');
    assert.match(big.error?.exception_message, /exceeds the limit/);
  });
});
