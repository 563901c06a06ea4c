/**
 * The reference's own example workflows for image to image, inpainting (an
 * inpainting checkpoint and an ordinary one with VAEEncodeForInpaint, the mask
 * from LoadImage's alpha or from ImagePadForOutpaint), SDXL base + refiner, an
 * ESRGAN upscale and the latent hires fix (ComfyUI_examples: the `prompt` chunks of
 * img2img/img2img_workflow.png, inpaint/inpaint_example.png,
 * inpaint/inpaint_anythingv3_woman.png, inpaint/inpain_model_outpainting.png,
 * sdxl/sdxl_simple_example.png, upscale_models/esrgan_example.png and
 * 2_pass_txt2img/hiresfix_latent_workflow.png, in
 * test/fixtures/examples) queued unchanged over HTTP (the two inpainting
 * prompts that predate grow_mask_by with the default the page fills in, and
 * as they are, rejected as the reference rejects them), with generated models
 * written under the file names they ask for and generated input images
 * (models-examples-fixture.ts): the reference's images on the same models and
 * inputs (bench/workflow/models-reference-examples.ts runs its nodes on the
 * same prompts), compared on sampled pixels and block means. One storage:
 * storage plays no part here (models-examples.test.ts runs the ControlNet
 * example on both).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { unloadAll } from '../src/models/sd1.ts';
import { startWorkflow } from './helpers.ts';
import { readReference } from './models-compare.ts';
import { examplePrompt, reduceImage, writeExampleInputs, writeExampleModels, type Reduced } from './models-examples-fixture.ts';
import { readOutput, run, type Pixels, type Server } from './nodes-helpers.ts';

const EXAMPLES = path.join(import.meta.dirname, 'fixtures', 'examples');
const ref = readReference('models-reference-examples.json') as Record<string, Record<string, Reduced>>;

/**
 * The reference's image within the model tests' tolerance: at most 0.1 % of the sampled bytes more than one level
 * off (as models-examples.test.ts over every byte), and every block mean within 1.5 levels (one, and its rounding).
 * `loose` widens the first to `share` of the bytes and at most `worst` levels (see the ESRGAN case).
 */
function sameImage(px: Pixels, expected: Reduced, what: string, loose?: { share: number; worst: number }): void {
  assert.deepEqual([px.height, px.width, px.channels], expected.shape, `${what}: size`);
  const { samples, means } = reduceImage(px.width, px.height, px.channels, px.data);
  const es = Buffer.from(expected.samples, 'base64');
  const em = Buffer.from(expected.means, 'base64');
  assert.equal(samples.length, es.length);
  let off = 0;
  let worst = 0;
  samples.forEach((v, i) => {
    const d = Math.abs(v - es[i]!);
    worst = Math.max(worst, d);
    if (d > 1) off++;
  });
  assert.ok(off <= es.length * (loose?.share ?? 0.001), `${what}: ${off} of ${es.length} sampled bytes differ by more than one level (worst ${worst})`);
  if (loose) assert.ok(worst <= loose.worst, `${what}: a sampled byte is ${worst} levels off`);
  let worstMean = 0;
  means.forEach((v, i) => (worstMean = Math.max(worstMean, Math.abs(v - em[i]!))));
  assert.ok(worstMean <= 1.5, `${what}: a block mean is ${worstMean.toFixed(2)} levels off`);
}

describe('the reference\'s example workflows: img2img, inpainting, SDXL base + refiner, ESRGAN upscale, hires fix [sqlite]', () => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow('sqlite');
    await writeExampleModels(path.join(srv.cfg.dataDir, 'models'), srv.cfg.dataDir);
    await writeExampleInputs(path.join(srv.cfg.dataDir, 'input'));
  });
  after(async () => {
    await srv.close();
    await unloadAll();
  });

  test('inpaint_example.png\'s and inpaint_anythingv3_woman.png\'s prompts queued as they are: rejected as the reference rejects them (they predate grow_mask_by)', async () => {
    for (const name of ['inpaint_example', 'inpaint_anythingv3_woman']) {
      const r = await srv.http.post('/prompt', { prompt: examplePrompt(EXAMPLES, name) });
      assert.equal(r.status, 400, name);
      assert.equal(r.body.error.type, 'prompt_outputs_failed_validation');
      assert.deepEqual(r.body.node_errors['26'].errors.map((e: any) => [e.type, e.details]), [['required_input_missing', 'grow_mask_by']]);
    }
  });

  // The output size, or each SaveImage's where they differ.
  const cases: [file: string, title: string, size: [number, number] | Record<string, [number, number]>][] = [
    ['img2img_workflow', 'img2img_workflow.png (VAEEncode, KSampler at denoise 0.87)', [192, 160]],
    ['inpaint_example', 'inpaint_example.png as the page sends it (grow_mask_by\'s default added; a 9-channel inpainting checkpoint, the mask from LoadImage\'s alpha)', [224, 160]],
    ['inpaint_anythingv3_woman', 'inpaint_anythingv3_woman.png as the page sends it (grow_mask_by\'s default added; VAEEncodeForInpaint with an ordinary checkpoint, CLIPSetLastLayer, VAELoader)', [224, 160]],
    ['inpain_model_outpainting', 'inpain_model_outpainting.png (ImagePadForOutpaint, VAEEncodeForInpaint, the inpainting checkpoint)', [160, 320]],
    ['sdxl_simple_example', 'sdxl_simple_example.png (SDXL base then refiner, KSamplerAdvanced, 1024²)', [1024, 1024]],
    ['esrgan_example', 'esrgan_example.png (txt2img, then RealESRGAN_x2.pth)', [1024, 1024]],
    ['hiresfix_latent_workflow', 'hiresfix_latent_workflow.png (hires fix: dpmpp_sde at 768², LatentUpscale nearest-exact to 1152², dpmpp_2m at denoise 0.5, an SD2.1 .ckpt)', { '9': [768, 768], '12': [1152, 1152] }],
  ];
  for (const [file, title, size] of cases) {
    test(`${title}: the reference's image`, async () => {
      const prompt = examplePrompt(EXAMPLES, file, true);
      const res = await run(srv, prompt);
      assert.equal(res.error, undefined, JSON.stringify(res.error));
      const saves = Object.keys(prompt).filter((id) => prompt[id]!.class_type === 'SaveImage');
      assert.deepEqual(saves, Object.keys(ref[file]!));
      for (const id of saves) {
        const px = await readOutput(srv, res.outputs[id].images[0]);
        assert.deepEqual([px.width, px.height], Array.isArray(size) ? size : size[id]);
        const expected = ref[file]![id]!;
        if (!expected.bytes) sameImage(px, expected, `${file} node ${id}`);
        else {
          // The service's IMAGE is 8-bit: VAEDecode's image reaches the upscaler as bytes (255·x truncated, as SaveImage
          // writes them), up to 1/255 below the reference's floats, and the network amplifies that. The same image as the
          // reference's run with every computed IMAGE held as bytes; the all-float run's within what that moves (measured:
          // 0.2 % of all bytes more than one level off, none more than 3).
          sameImage(px, expected.bytes, `${file} node ${id}, IMAGE as bytes`);
          sameImage(px, expected, `${file} node ${id}`, { share: 0.01, worst: 4 });
        }
      }
    });
  }
});
