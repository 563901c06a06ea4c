/**
 * Runs the reference's upscale path (spandrel's ModelLoader, comfy.utils.tiled_scale) on the generated SwinIR, Swin2SR, HAT, DAT and DRCT files
 * of services/workflow/test/swinir-fixture.ts, saving services/workflow/test/fixtures/models-reference-swinir.json.
 * By hand:
 *
 *   REF_PYTHON=/path/to/venv/bin/python COMFY_DIR=/path/to/ComfyUI SPANDREL_DIR=/path/to/spandrel/libs/spandrel \
 *     npx tsx bench/workflow/models-reference-swinir.ts
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DAT_CASES, DRCT_CASES, HAT_CASES, SWIN2SR_CASES, SWINIR_CASES, writeDAT, writeDRCT, writeHAT, writeSwin2SR, writeSwinIR } from '../../services/workflow/test/swinir-fixture.ts';

const python = process.env.REF_PYTHON ?? 'python3';
const comfy = process.env.COMFY_DIR;
const spandrel = process.env.SPANDREL_DIR;
if (!comfy || !spandrel) throw new Error('set COMFY_DIR (ComfyUI a125cd84) and SPANDREL_DIR (spandrel/libs/spandrel)');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-ref-swinir-'));
const cases = [...SWINIR_CASES, ...SWIN2SR_CASES, ...HAT_CASES, ...DAT_CASES, ...DRCT_CASES].map((c) => {
  const file = path.join(dir, `${c.name}.safetensors`);
  if ('gc' in c) writeDRCT(file, c);
  else if ('split' in c) writeDAT(file, c);
  else if ('overlapWindow' in c) writeHAT(file, c);
  else if ('qkvBias' in c) writeSwin2SR(file, c);
  else writeSwinIR(file, c);
  return { name: c.name, file, width: c.width, height: c.height };
});
fs.writeFileSync(path.join(dir, 'cases.json'), JSON.stringify(cases));
const out = path.join(import.meta.dirname, '../../services/workflow/test/fixtures/models-reference-swinir.json');
execFileSync(python, [path.join(import.meta.dirname, 'models-reference-swinir.py'), comfy, spandrel, path.join(dir, 'cases.json'), out], { stdio: 'inherit', env: { ...process.env, OMP_NUM_THREADS: '1' } });
fs.rmSync(dir, { recursive: true, force: true });
