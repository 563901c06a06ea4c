/**
 * Runs the reference's LoRA weight patching on the generated LyCORIS file
 * (LoHa, LoKr, GLoRA, OFT, BOFT, DoRA, w_norm; models-reference-lycoris.py),
 * saving the patched weights as
 * services/workflow/test/fixtures/models-reference-lycoris.json. By hand:
 *
 *   REF_PYTHON=/path/to/venv/bin/python COMFY_DIR=/path/to/ComfyUI npx tsx bench/workflow/models-reference-lycoris.ts
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LYCORIS_CASES, LYCORIS_KEYS, lycorisTarget, lycorisTensors } from '../../services/workflow/test/models-lycoris-fixture.ts';
import { writeTensors } from '../../services/workflow/test/models-patches-fixture.ts';

const python = process.env.REF_PYTHON ?? 'python3';
const comfy = process.env.COMFY_DIR;
if (!comfy) throw new Error('set COMFY_DIR to a ComfyUI source tree (commit a125cd84)');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-ref-lycoris-'));
writeTensors(path.join(dir, 'target.safetensors'), lycorisTarget());
writeTensors(path.join(dir, 'lycoris.safetensors'), lycorisTensors());
fs.writeFileSync(path.join(dir, 'cases.json'), JSON.stringify({ keys: LYCORIS_KEYS, cases: LYCORIS_CASES }));
const out = path.join(import.meta.dirname, '../../services/workflow/test/fixtures/models-reference-lycoris.json');
execFileSync(python, [path.join(import.meta.dirname, 'models-reference-lycoris.py'), comfy, dir, out], { stdio: 'inherit', env: { ...process.env, OMP_NUM_THREADS: '1' } });
fs.rmSync(dir, { recursive: true, force: true });
