import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';
import { putInput, readOutput, run, type Pixels, type Server } from './nodes-helpers.ts';

// Expected pixels computed by the reference's own code (ComfyUI a125cd84 with
// torch and PIL: comfy.utils.common_upscale, and the ImageBlur / ImageSharpen
// node functions) on the same inputs: bench/workflow/image-reference.ts
// writes the fixture. Every upscale_method and crop mode, enlarging and
// shrinking, blur radii up to the maximum, sharpen; RGB and RGBA.

interface Fixture {
  reference: string;
  inputs: Record<string, { width: number; height: number; channels: number; data: string }>;
  cases: { kind: string; input: string; params: Record<string, unknown>; width: number; height: number; data: string }[];
}

const fixture = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures/image-reference.json'), 'utf8')) as Fixture;

/**
 * Largest difference (of 255) allowed: the reference keeps floats between
 * nodes and rounds nowhere; here every node's result is the nearest byte, so
 * a value near a half level can round the other way (lanczos is PIL's integer
 * arithmetic in both, bytes between the passes: exact).
 */
const TOLERANCE = 1;

forEachStorage('workflow image kernels against the reference', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  for (const [inputName, input] of Object.entries(fixture.inputs)) {
    test(`${inputName}: ImageScale (every method, crop), ImageBlur and ImageSharpen give the reference's pixels`, async () => {
      const px: Pixels = { width: input.width, height: input.height, channels: input.channels, data: [...Buffer.from(input.data, 'base64')] };
      const file = await putInput(srv, `kernels-${inputName}-${process.pid}.png`, px);
      const graph: Record<string, unknown> = { load: { class_type: 'LoadImage', inputs: { image: file } } };
      // LoadImage gives RGB and the mask 1 − alpha: JoinImageWithAlpha brings the alpha back.
      const src = input.channels === 4 ? ['join', 0] : ['load', 0];
      if (input.channels === 4) graph.join = { class_type: 'JoinImageWithAlpha', inputs: { image: ['load', 0], alpha: ['load', 1] } };
      const cases = fixture.cases.filter((c) => c.input === inputName);
      cases.forEach((c, i) => {
        const inputs: Record<string, unknown> = { image: src, ...c.params };
        graph[`k${i}`] = { class_type: c.kind, inputs };
        graph[`s${i}`] = { class_type: 'SaveImage', inputs: { images: [`k${i}`, 0], filename_prefix: `kernels_${inputName}_${i}` } };
      });
      const r = await run(srv, graph);
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      for (const [i, c] of cases.entries()) {
        const what = `${inputName} ${c.kind} ${JSON.stringify(c.params)}`;
        const out = await readOutput(srv, r.outputs[`s${i}`].images[0]);
        assert.equal(out.width, c.width, `${what}: width`);
        assert.equal(out.height, c.height, `${what}: height`);
        assert.equal(out.channels, input.channels, `${what}: channels`);
        const expected = Buffer.from(c.data, 'base64');
        const tol = TOLERANCE;
        let worst = 0;
        let at = 0;
        for (let j = 0; j < expected.length; j++) {
          const d = Math.abs(out.data[j]! - expected[j]!);
          if (d > worst) {
            worst = d;
            at = j;
          }
        }
        if (process.env.KERNELS_DEBUG) console.log(what, "worst", worst);
        assert.ok(worst <= tol, `${what}: sample ${at} is ${out.data[at]}, the reference's ${expected[at]} (tolerance ${tol})`);
      }
    });
  }
});
