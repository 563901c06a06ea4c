/**
 * Writes the 233M-class SD1.5 checkpoint (test/models-fixture.ts SD15_LOADABLE, seed 1, fp16) and runs the
 * reference's default workflow on it through the reference's own nodes, CheckpointLoaderSimple's detection
 * included (models-reference-loadable.py), into services/workflow/test/fixtures/models-reference-loadable.json.
 * By hand, not in CI:
 *
 *   REF_PYTHON=<venv>/bin/python COMFY_DIR=<ComfyUI a125cd84> npx tsx bench/workflow/models-reference-loadable.ts
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LOADABLE_NAME, SD15_LOADABLE, writeFixture } from '../../services/workflow/test/models-fixture.ts';

const py = process.env.REF_PYTHON;
const comfy = process.env.COMFY_DIR;
if (!py || !comfy) throw new Error('set REF_PYTHON and COMFY_DIR');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-loadable-'));
try {
  writeFixture(path.join(dir, LOADABLE_NAME), SD15_LOADABLE);
  const out = path.join(import.meta.dirname, '..', '..', 'services', 'workflow', 'test', 'fixtures', 'models-reference-loadable.json');
  execFileSync(py, [path.join(import.meta.dirname, 'models-reference-loadable.py'), comfy, dir, LOADABLE_NAME, out], {
    stdio: 'inherit',
    env: { ...process.env, PYTHONPATH: import.meta.dirname, OMP_NUM_THREADS: '1' },
  });
  console.log(`wrote ${out}`);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
