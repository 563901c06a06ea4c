/**
 * Runs the reference's own image code (image-reference.py: ComfyUI's
 * common_upscale, ImageBlur and ImageSharpen with torch and PIL) on the test
 * images and saves the results as the kernel tests' expected values
 * (services/workflow/test/fixtures/image-reference.json). By hand, where torch,
 * Pillow and a ComfyUI source tree are at hand:
 *
 *   REF_PYTHON=/path/to/venv/bin/python COMFY_DIR=/path/to/ComfyUI npx tsx bench/workflow/image-reference.ts
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const python = process.env.REF_PYTHON ?? 'python3';
const comfy = process.env.COMFY_DIR;
if (!comfy) throw new Error('set COMFY_DIR to a ComfyUI source tree (commit a125cd84)');
const out = path.join(import.meta.dirname, '../../services/workflow/test/fixtures/image-reference.json');
execFileSync(python, [path.join(import.meta.dirname, 'image-reference.py'), comfy, out], { stdio: 'inherit', env: { ...process.env, OMP_NUM_THREADS: '1' } });
