/**
 * Runs the reference on the tiny fixture checkpoint with conditioning areas,
 * masks and timestep ranges, a LoRA in several layouts and a textual
 * inversion (models-reference-patches.py), saving what it computed as
 * services/workflow/test/fixtures/models-reference-patches.json. By hand:
 *
 *   REF_PYTHON=/path/to/venv/bin/python COMFY_DIR=/path/to/ComfyUI npx tsx bench/workflow/models-reference-patches.ts
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TINY, writeFixture } from '../../services/workflow/test/models-fixture.ts';
import { embeddingTensors, loraTensors, taesdTensors, writeTensors } from '../../services/workflow/test/models-patches-fixture.ts';

const python = process.env.REF_PYTHON ?? 'python3';
const comfy = process.env.COMFY_DIR;
if (!comfy) throw new Error('set COMFY_DIR to a ComfyUI source tree (commit a125cd84)');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-ref-patches-'));
const ckpt = path.join(dir, 'tiny.safetensors');
writeFixture(ckpt, TINY);
writeTensors(path.join(dir, 'lora.safetensors'), loraTensors());
fs.mkdirSync(path.join(dir, 'embeddings'));
writeTensors(path.join(dir, 'embeddings', 'tiny_emb.safetensors'), embeddingTensors());
writeTensors(path.join(dir, 'taesd_encoder.safetensors'), taesdTensors('encoder'));
writeTensors(path.join(dir, 'taesd_decoder.safetensors'), taesdTensors('decoder'));
const out = path.join(import.meta.dirname, '../../services/workflow/test/fixtures/models-reference-patches.json');
execFileSync(python, [path.join(import.meta.dirname, 'models-reference-patches.py'), comfy, dir, out], { stdio: 'inherit', env: { ...process.env, OMP_NUM_THREADS: '1' } });
fs.rmSync(dir, { recursive: true, force: true });
