/**
 * The samplers' own cost (everything but the network): each sampler runs
 * `--steps` karras steps on a [1, 4, H, W] latent (default 64×64, a 512×512
 * image) with a synthetic denoiser, D(x, σ) = 0.9·x, so the time is the step
 * arithmetic and the noise (torch randn, the Brownian tree). With REF_PYTHON
 * and COMFY_DIR (and TORCHSDE_DIR for the SDE samplers) the reference's own
 * functions run on the same input in the same run (samplers-reference.py) and
 * the ratios are printed. Run it at nice −15 on a quiet machine:
 *
 *   REF_PYTHON=<venv>/bin/python COMFY_DIR=<ComfyUI a125cd84> TORCHSDE_DIR=<torchsde> npx tsx bench/workflow/samplers.ts [--steps 20] [--runs 5]
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { getSampler } from '../../services/workflow/src/models/samplers.ts';
import { calculateSigmas, DiscreteSchedule } from '../../services/workflow/src/models/schedules.ts';
import { TorchGenerator } from '../../services/workflow/src/models/noise.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};
const steps = arg('steps', 20);
const runs = arg('runs', 5);
const [h, w] = [arg('height', 64), arg('width', 64)];
const names = ['euler', 'euler_ancestral', 'dpmpp_2m', 'dpmpp_2m_sde', 'dpmpp_3m_sde', 'dpmpp_sde', 'deis', 'er_sde', 'sa_solver', 'uni_pc'];
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;

const schedule = new DiscreteSchedule();
const sigmas = calculateSigmas(schedule, 'karras', steps);
const model = async (x: Float32Array) => x.map((v) => v * 0.9);
const ours: Record<string, number[]> = {};
for (const name of names) {
  ours[name] = [];
  for (let r = 0; r < runs; r++) {
    const x = new TorchGenerator(1).randn(4 * h * w).map((v) => v * sigmas[0]!);
    const t0 = performance.now();
    await getSampler(name)(model, x, Float32Array.from(sigmas), { seed: 1, percentToSigma: (p) => schedule.percentToSigma(p) });
    ours[name].push((performance.now() - t0) / 1000);
  }
}
let theirs: Record<string, number[]> | undefined;
if (process.env.REF_PYTHON && process.env.COMFY_DIR) {
  const out = execFileSync(process.env.REF_PYTHON, [path.join(import.meta.dirname, 'samplers-reference.py'), process.env.COMFY_DIR, String(steps), String(runs), String(h), String(w), ...names], {
    env: { ...process.env, OMP_NUM_THREADS: '1' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  theirs = JSON.parse(out.trim().split('\n').at(-1)!);
}
console.log(`${steps} karras steps, latent [1, 4, ${h}, ${w}], synthetic denoiser, median of ${runs} runs (ms per run)`);
console.log(['sampler', 'here', ...(theirs ? ['reference', 'ratio'] : [])].join('\t'));
for (const name of names) {
  const a = median(ours[name]!) * 1000;
  const row = [name, a.toFixed(1)];
  if (theirs) {
    const b = median(theirs[name]!) * 1000;
    row.push(b.toFixed(1), (a / b).toFixed(2));
  }
  console.log(row.join('\t'));
}
