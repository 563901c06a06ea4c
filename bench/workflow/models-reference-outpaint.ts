/**
 * Runs the reference's outpainting chain (ImagePadForOutpaint into
 * VAEEncodeForInpaint and InpaintModelConditioning) on the tiny fixture
 * checkpoint's VAE (models-reference-outpaint.py), saving what they computed
 * as services/workflow/test/fixtures/models-reference-outpaint.json. By hand:
 *
 *   REF_PYTHON=/path/to/venv/bin/python COMFY_DIR=/path/to/ComfyUI npx tsx bench/workflow/models-reference-outpaint.ts
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TINY, writeFixture } from '../../services/workflow/test/models-fixture.ts';

const python = process.env.REF_PYTHON ?? 'python3';
const comfy = process.env.COMFY_DIR;
if (!comfy) throw new Error('set COMFY_DIR to a ComfyUI source tree (commit a125cd84)');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-ref-outpaint-'));
const ckpt = path.join(dir, 'tiny.safetensors');
writeFixture(ckpt, TINY);
const out = path.join(import.meta.dirname, '../../services/workflow/test/fixtures/models-reference-outpaint.json');
execFileSync(python, [path.join(import.meta.dirname, 'models-reference-outpaint.py'), comfy, ckpt, out], { stdio: 'inherit', env: { ...process.env, OMP_NUM_THREADS: '1' } });
fs.rmSync(dir, { recursive: true, force: true });
