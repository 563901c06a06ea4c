/**
 * Peak memory of one UNet evaluation with whole and sliced attention, on the
 * tests' generated SDXL layout at a 1024×1024 image (latent 128×128, batch 2
 * as a CFG step): each setting runs in a process of its own and reports its
 * peak RSS and time. The score matrices of the 64×64-token level are
 * [2, 2, 4096, 4096] floats (256 MiB) whole.
 *
 *   npx tsx bench/workflow/attention-memory.ts [--limits inf,64,16] (MiB)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const child = process.argv[2] === '--child';
if (child) {
  const [file, limit] = process.argv.slice(3);
  const { loadCheckpoint, UNetModel } = await import('../../services/workflow/src/models/sd1.ts');
  const { XLClipModel } = await import('../../services/workflow/src/models/sdxl.ts');
  UNetModel.attentionLimitBytes = limit === 'inf' ? Infinity : Number(limit) * 2 ** 20;
  const ck = await loadCheckpoint(file!);
  const model = new UNetModel(ck);
  const shape = [2, 4, 128, 128];
  const [ctx] = model.withAdm(await new XLClipModel(ck).encode('a castle'), shape, 'positive')[0]!;
  const x = Float32Array.from({ length: 2 * 4 * 128 * 128 }, (_, i) => Math.sin(i * 0.37));
  const twice = { ...ctx, data: Float32Array.from([...ctx.data, ...ctx.data]), shape: [2, ...ctx.shape.slice(1)] };
  await model.eps(x, shape, 700, twice); // session made and run once
  const t0 = performance.now();
  await model.eps(x, shape, 700, twice);
  const ms = performance.now() - t0;
  console.log(JSON.stringify({ limit, ms: Math.round(ms), maxRssMiB: Math.round(process.resourceUsage().maxRSS / 1024) }));
  process.exit(0);
}

const limits = (process.argv.includes('--limits') ? process.argv[process.argv.indexOf('--limits') + 1]! : 'inf,64,16').split(',');
const { SDXL_TINY, writeXLFixture } = await import('../../services/workflow/test/models-fixture-xl.ts');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attn-mem-'));
const file = path.join(dir, 'sdxl.safetensors');
writeXLFixture(file, SDXL_TINY);
try {
  for (const limit of limits) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', import.meta.filename, '--child', file, limit], { encoding: 'utf8', env: { ...process.env, OMP_NUM_THREADS: '1' } });
    console.log(out.trim().split('\n').at(-1));
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
