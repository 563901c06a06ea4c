/**
 * Writes the fixtures of the union ControlNet, Control-LoRA and T2I light
 * adapter tests (services/workflow/test/models-control-more-fixture.ts) and runs
 * the reference on them (models-reference-control-more.py), saving what it
 * computed as the tests' expected values
 * (services/workflow/test/fixtures/models-reference-control-more.json). By hand,
 * where torch and a ComfyUI source tree are at hand:
 *
 *   REF_PYTHON=/path/to/venv/bin/python COMFY_DIR=/path/to/ComfyUI npx tsx bench/workflow/models-reference-control-more.ts
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeFixture } from '../../services/workflow/test/models-fixture.ts';
import { CONTROL_BASE } from '../../services/workflow/test/models-control-fixture.ts';
import { UNION_BASE, UNION_XL, writeControlLora, writeLightAdapter, writeUnionControlNet, writeXLControlLora, writeXLUnionControlNet } from '../../services/workflow/test/models-control-more-fixture.ts';
import { SDXL_TINY, writeXLFixture } from '../../services/workflow/test/models-fixture-xl.ts';

const python = process.env.REF_PYTHON ?? 'python3';
const comfy = process.env.COMFY_DIR;
if (!comfy) throw new Error('set COMFY_DIR to a ComfyUI source tree (commit a125cd84)');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-ref-control-more-'));
const files = {
  unionBase: path.join(dir, 'union-base.safetensors'),
  union: path.join(dir, 'union.safetensors'),
  base: path.join(dir, 'base.safetensors'),
  lora: path.join(dir, 'control-lora.safetensors'),
  xl: path.join(dir, 'sdxl.safetensors'),
  xlLora: path.join(dir, 'control-lora-xl.safetensors'),
  light: path.join(dir, 't2i-light.safetensors'),
  unionXl: path.join(dir, 'union-xl-base.safetensors'),
  unionXlNet: path.join(dir, 'union-xl.safetensors'),
};
writeFixture(files.unionBase, UNION_BASE);
writeUnionControlNet(files.union, UNION_BASE);
writeFixture(files.base, CONTROL_BASE);
writeControlLora(files.lora, CONTROL_BASE);
writeXLFixture(files.xl, SDXL_TINY);
writeXLControlLora(files.xlLora, SDXL_TINY);
writeLightAdapter(files.light);
writeXLFixture(files.unionXl, UNION_XL);
writeXLUnionControlNet(files.unionXlNet, UNION_XL);
const out = path.join(import.meta.dirname, '../../services/workflow/test/fixtures/models-reference-control-more.json');
try {
  execFileSync(python, [path.join(import.meta.dirname, 'models-reference-control-more.py'), comfy, files.unionBase, files.union, files.base, files.lora, files.xl, files.xlLora, files.light, files.unionXl, files.unionXlNet, out], {
    stdio: 'inherit',
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
