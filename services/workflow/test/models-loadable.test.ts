/**
 * The reference's default workflow queued over HTTP on a generated checkpoint
 * the reference itself loads: the smallest its own CheckpointLoaderSimple
 * detects as SD1.5 (SD15_LOADABLE: 320 channels, SD1.5's CLIP-L and VAE at
 * full size, the UNet cut to one level; 233M parameters, 465 MB in fp16,
 * written at test time from a seeded PRNG). The expected image comes from the
 * reference's own nodes on the same file, its detection included, with
 * nothing stood in for (bench/workflow/models-reference-loadable.ts). One
 * storage: the storage plays no part (models-nodes.test.ts runs the default
 * workflow on both).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { unloadAll } from '../src/models/sd1.ts';
import { startWorkflow } from './helpers.ts';
import { LOADABLE_NAME, SD15_LOADABLE, writeFixture } from './models-fixture.ts';
import { defaultWorkflow, readOutput, run, type Server } from './nodes-helpers.ts';

const ref = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'models-reference-loadable.json'), 'utf8'));

describe('the default workflow on a 233M-class checkpoint the reference loads itself [sqlite]', () => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow('sqlite');
    const dir = path.join(srv.cfg.dataDir, 'models', 'checkpoints');
    fs.mkdirSync(dir, { recursive: true });
    writeFixture(path.join(dir, LOADABLE_NAME), SD15_LOADABLE);
  });
  after(async () => {
    await srv.close();
    await unloadAll();
  });

  test("SaveImage's bytes are the reference's (within one level on 99.9 % of them), the file detected as SD1.5 by both", async (t) => {
    assert.equal(ref.model_class, 'SD15');
    const p = defaultWorkflow(LOADABLE_NAME, 'loadable', ref.width, ref.height) as Record<string, { inputs: Record<string, unknown> }>;
    Object.assign(p['3']!.inputs, { seed: ref.seed, steps: ref.steps, cfg: ref.cfg });
    const res = await run(srv, p);
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    const px = await readOutput(srv, res.outputs['9'].images[0]);
    assert.deepEqual([px.height, px.width, px.channels], ref.shape);
    const expected = Buffer.from(ref.bytes, 'base64');
    assert.equal(px.data.length, expected.length);
    let off = 0;
    let worst = 0;
    px.data.forEach((v, i) => {
      const d = Math.abs(v - expected[i]!);
      worst = Math.max(worst, d);
      if (d > 1) off++;
    });
    t.diagnostic(`${px.data.filter((v, i) => v !== expected[i]).length} of ${expected.length} bytes differ, ${off} by more than one level (worst ${worst})`);
    assert.ok(off <= expected.length * 0.001, `${off} of ${expected.length} bytes differ by more than one level (worst ${worst})`);
  });
});
