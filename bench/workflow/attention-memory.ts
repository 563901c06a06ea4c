/**
 * Peak memory and time of one UNet evaluation (batch 2, a CFG step) on the
 * tests' generated SDXL layout at several image sizes, each in a process of
 * its own. Attention is ONNX Runtime's fused MultiHeadAttention (flash
 * attention on the CPU), so no [B, heads, T, T] score matrix is held: the
 * line also prints what the largest one would have been (the unfused form's
 * floor), to show the peak does not follow it.
 *
 *   npx tsx bench/workflow/attention-memory.ts [--sizes 512,1024,1536]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const child = process.argv[2] === '--child';
if (child) {
  const [file, px] = process.argv.slice(3);
  const { loadCheckpoint, UNetModel } = await import('../../services/workflow/src/models/sd1.ts');
  const { XLClipModel } = await import('../../services/workflow/src/models/sdxl.ts');
  const ck = await loadCheckpoint(file!);
  const model = new UNetModel(ck);
  const lat = Number(px) / 8;
  const shape = [2, 4, lat, lat];
  const [ctx] = model.withAdm(await new XLClipModel(ck).encode('a castle'), shape, 'positive')[0]!;
  const x = Float32Array.from({ length: 2 * 4 * lat * lat }, (_, i) => Math.sin(i * 0.37));
  const twice = { ...ctx, data: Float32Array.from([...ctx.data, ...ctx.data]), shape: [2, ...ctx.shape.slice(1)] };
  await model.eps(x, shape, 700, twice); // session made and run once
  const t0 = performance.now();
  await model.eps(x, shape, 700, twice);
  const ms = performance.now() - t0;
  // The widest attention runs at the first transformer level (half the latent side in SDXL), 2 heads in this layout.
  const tokens = (lat / 2) ** 2;
  const scoresMiB = (2 * 2 * tokens * tokens * 4) / 2 ** 20;
  console.log(JSON.stringify({ image: `${px}x${px}`, ms: Math.round(ms), maxRssMiB: Math.round(process.resourceUsage().maxRSS / 1024), unfusedScoreMatrixMiB: Math.round(scoresMiB) }));
  process.exit(0);
}

const sizes = (process.argv.includes('--sizes') ? process.argv[process.argv.indexOf('--sizes') + 1]! : '512,1024,1536').split(',');
const { SDXL_TINY, writeXLFixture } = await import('../../services/workflow/test/models-fixture-xl.ts');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attn-mem-'));
const file = path.join(dir, 'sdxl.safetensors');
writeXLFixture(file, SDXL_TINY);
try {
  for (const px of sizes) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', import.meta.filename, '--child', file, px], { encoding: 'utf8', env: { ...process.env, OMP_NUM_THREADS: '1' } });
    console.log(out.trim().split('\n').at(-1));
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
