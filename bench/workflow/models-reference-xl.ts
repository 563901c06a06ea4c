/**
 * Writes the SD2.x (ε and v), SDXL and SDXL-refiner fixture checkpoints the
 * model tests use and runs the reference on them (models-reference-xl.py),
 * saving what it computed as the tests' expected values
 * (services/workflow/test/fixtures/models-reference-xl.json). By hand, where
 * torch and a ComfyUI source tree are at hand:
 *
 *   REF_PYTHON=/path/to/venv/bin/python COMFY_DIR=/path/to/ComfyUI npx tsx bench/workflow/models-reference-xl.ts
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REFINER_TINY, SD2_TINY, SDXL_TINY, writeXLFixture } from '../../services/workflow/test/models-fixture-xl.ts';

const python = process.env.REF_PYTHON ?? 'python3';
const comfy = process.env.COMFY_DIR;
if (!comfy) throw new Error('set COMFY_DIR to a ComfyUI source tree (commit a125cd84)');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-ref-xl-'));
const files = {
  sd2eps: path.join(dir, 'sd2-eps.safetensors'),
  sd2v: path.join(dir, 'sd2-v.safetensors'),
  sdxl: path.join(dir, 'sdxl.safetensors'),
  refiner: path.join(dir, 'refiner.safetensors'),
  sd2inpaint: path.join(dir, 'sd2-inpaint.safetensors'),
};
writeXLFixture(files.sd2eps, SD2_TINY);
writeXLFixture(files.sd2v, { ...SD2_TINY, vpredSpread: true });
writeXLFixture(files.sdxl, SDXL_TINY);
writeXLFixture(files.refiner, REFINER_TINY);
writeXLFixture(files.sd2inpaint, { ...SD2_TINY, unet: { ...SD2_TINY.unet, inChannels: 9 } });
const out = path.join(import.meta.dirname, '../../services/workflow/test/fixtures/models-reference-xl.json');
try {
  execFileSync(python, [path.join(import.meta.dirname, 'models-reference-xl.py'), comfy, files.sd2eps, files.sd2v, files.sdxl, files.refiner, files.sd2inpaint, out], {
    stdio: 'inherit',
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
