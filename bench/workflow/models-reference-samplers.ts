/**
 * Writes the tiny fixture checkpoint and runs the reference's samplers and
 * custom-sampling nodes on it (models-reference-samplers.py), saving what they
 * computed as the expected values of services/workflow/test/models-samplers.test.ts
 * (services/workflow/test/fixtures/models-samplers-reference.json). By hand:
 *
 *   REF_PYTHON=/path/to/venv/bin/python COMFY_DIR=/path/to/ComfyUI TORCHSDE_DIR=/path/to/torchsde \
 *     npx tsx bench/workflow/models-reference-samplers.ts
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TINY, writeFixture } from '../../services/workflow/test/models-fixture.ts';

const python = process.env.REF_PYTHON ?? 'python3';
if (!process.env.COMFY_DIR) throw new Error('set COMFY_DIR to a ComfyUI source tree (commit a125cd84)');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-ref-samplers-'));
const ckpt = path.join(dir, 'tiny.safetensors');
writeFixture(ckpt, TINY);
const out = path.join(import.meta.dirname, '../../services/workflow/test/fixtures/models-samplers-reference.json');
try {
  execFileSync(python, [path.join(import.meta.dirname, 'models-reference-samplers.py'), process.env.COMFY_DIR, ckpt, out], {
    stdio: 'inherit',
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
