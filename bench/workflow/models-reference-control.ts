/**
 * Writes the ControlNet fixtures the control tests use (a base checkpoint, a
 * ControlNet with and without `control_model.`, a difference ControlNet, a
 * T2I adapter, an SDXL checkpoint and an SDXL ControlNet: services/workflow/test/models-control-fixture.ts) and runs the
 * reference on them (models-reference-control.py), saving what it computed as
 * the tests' expected values (services/workflow/test/fixtures/models-reference-control.json).
 * By hand, where torch and a ComfyUI source tree are at hand:
 *
 *   REF_PYTHON=/path/to/venv/bin/python COMFY_DIR=/path/to/ComfyUI npx tsx bench/workflow/models-reference-control.ts
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeFixture } from '../../services/workflow/test/models-fixture.ts';
import { CONTROL_BASE, EXAMPLE_TINY, writeControlNet, writeT2IAdapter, writeXLControlNet } from '../../services/workflow/test/models-control-fixture.ts';
import { SDXL_TINY, writeXLFixture } from '../../services/workflow/test/models-fixture-xl.ts';

const python = process.env.REF_PYTHON ?? 'python3';
const comfy = process.env.COMFY_DIR;
if (!comfy) throw new Error('set COMFY_DIR to a ComfyUI source tree (commit a125cd84)');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-ref-control-'));
const files = {
  base: path.join(dir, 'base.safetensors'),
  cn: path.join(dir, 'cn.safetensors'),
  bare: path.join(dir, 'cn_bare.safetensors'),
  diff: path.join(dir, 'cn_diff.safetensors'),
  t2i: path.join(dir, 't2i.safetensors'),
  xl: path.join(dir, 'sdxl.safetensors'),
  xlCn: path.join(dir, 'cn_sdxl.safetensors'),
  tiny: path.join(dir, 'tiny.safetensors'),
  tinyCn: path.join(dir, 'cn_tiny.safetensors'),
};
writeFixture(files.base, CONTROL_BASE);
writeControlNet(files.cn, CONTROL_BASE);
writeControlNet(files.bare, CONTROL_BASE, { prefix: '' }, 8);
writeControlNet(files.diff, CONTROL_BASE, { difference: true }, 10);
writeT2IAdapter(files.t2i, CONTROL_BASE);
writeXLFixture(files.xl, SDXL_TINY);
writeXLControlNet(files.xlCn, SDXL_TINY);
writeFixture(files.tiny, EXAMPLE_TINY);
writeControlNet(files.tinyCn, EXAMPLE_TINY);
const examples = path.join(import.meta.dirname, '../../services/workflow/test/fixtures/examples');
const out = path.join(import.meta.dirname, '../../services/workflow/test/fixtures/models-reference-control.json');
try {
  execFileSync(python, [path.join(import.meta.dirname, 'models-reference-control.py'), comfy, files.base, files.cn, files.bare, files.diff, files.t2i, files.xl, files.xlCn, files.tiny, files.tinyCn, path.join(examples, 'controlnet_example.json'), path.join(examples, 'input_scribble_example.png'), out], {
    stdio: 'inherit',
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
