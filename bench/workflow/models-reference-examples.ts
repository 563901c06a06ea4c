/**
 * Writes the generated models and input images of the reference's example workflows
 * (services/workflow/test/models-examples-fixture.ts: img2img, inpainting, SDXL base + refiner, ESRGAN upscale)
 * and runs the reference's own nodes on the prompts unchanged (models-reference-examples.py), saving each saved
 * image reduced as the tests' expected values (services/workflow/test/fixtures/models-reference-examples.json).
 * By hand, where torch, a ComfyUI source tree and spandrel's and torchsde's sources are at hand:
 *
 *   REF_PYTHON=/path/to/venv/bin/python COMFY_DIR=/path/to/ComfyUI SPANDREL_DIR=/path/to/spandrel/libs/spandrel \
 *     TORCHSDE_DIR=/path/to/torchsde npx tsx bench/workflow/models-reference-examples.ts [DUMP_DIR]
 *
 * DUMP_DIR, when given, receives the reference's full images as PNGs (to look at; nothing there is committed).
 * EXAMPLES=name,name runs only those examples and keeps the others' values.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FRONTEND_DEFAULTS, writeExampleInputs, writeExampleModels } from '../../services/workflow/test/models-examples-fixture.ts';

const python = process.env.REF_PYTHON ?? 'python3';
const comfy = process.env.COMFY_DIR;
if (!comfy || !process.env.SPANDREL_DIR || !process.env.TORCHSDE_DIR) throw new Error('set COMFY_DIR (a ComfyUI source tree, commit a125cd84), SPANDREL_DIR (spandrel/libs/spandrel) and TORCHSDE_DIR (torchsde\'s source)');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-ref-examples-'));
const models = path.join(dir, 'models');
const input = path.join(dir, 'input');
const twins = await writeExampleModels(models, dir);
await writeExampleInputs(input);
fs.writeFileSync(path.join(dir, 'twins.json'), JSON.stringify({ ...twins, frontend: FRONTEND_DEFAULTS }));
const examples = path.join(import.meta.dirname, '../../services/workflow/test/fixtures/examples');
const out = path.join(import.meta.dirname, '../../services/workflow/test/fixtures/models-reference-examples.json');
const dump = process.argv[2] ? [path.resolve(process.argv[2])] : [];
try {
  execFileSync(python, [path.join(import.meta.dirname, 'models-reference-examples.py'), comfy, models, input, path.join(dir, 'twins.json'), examples, out, ...dump], {
    stdio: 'inherit',
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
