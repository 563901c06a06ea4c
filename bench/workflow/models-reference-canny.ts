/**
 * Runs the reference's Canny node (kornia.filters.canny through
 * comfy_extras/nodes_canny.py; models-reference-canny.py) on the generated
 * images of services/workflow/test/canny-fixture.ts, saving what it computed
 * as services/workflow/test/fixtures/models-reference-canny.json. By hand:
 *
 *   REF_PYTHON=/path/to/venv/bin/python COMFY_DIR=/path/to/ComfyUI KORNIA_DIR=/path/to/kornia \
 *     npx tsx bench/workflow/models-reference-canny.ts
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CANNY_CASES, cannyFrame } from '../../services/workflow/test/canny-fixture.ts';

const python = process.env.REF_PYTHON ?? 'python3';
const comfy = process.env.COMFY_DIR;
const kornia = process.env.KORNIA_DIR;
if (!comfy || !kornia) throw new Error('set COMFY_DIR (a ComfyUI source tree, commit a125cd84) and KORNIA_DIR (kornia\'s source)');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'models-ref-canny-'));
const cases = CANNY_CASES.map((c) => ({ ...c, frames: Array.from({ length: c.batch }, (_, k) => Buffer.from(cannyFrame(c, k)).toString('base64')) }));
fs.writeFileSync(path.join(dir, 'cases.json'), JSON.stringify(cases));
const out = path.join(import.meta.dirname, '../../services/workflow/test/fixtures/models-reference-canny.json');
execFileSync(python, [path.join(import.meta.dirname, 'models-reference-canny.py'), comfy, kornia, path.join(dir, 'cases.json'), out], { stdio: 'inherit', env: { ...process.env, OMP_NUM_THREADS: '1' } });
fs.rmSync(dir, { recursive: true, force: true });
