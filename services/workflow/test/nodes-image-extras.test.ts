import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';
import { byte, image, loaded, near, run, saved, savedMask, type Pixels, type Server } from './nodes-helpers.ts';

/** torch.manual_seed(0); torch.randn(…) as torch prints them (4 decimals). */
const RANDN_3 = [1.541, -0.2934, -2.1788];
const RANDN_6 = [1.541, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986];
const RANDN_16 = [-1.1258, -1.1524, -0.2506, -0.4339, 0.8487, 0.692, -0.316, -2.1152, 0.3223, -1.2633, 0.35, 0.3081, 0.1198, 1.2377, 1.1168, -0.2473];

const grey = (v: number) => [v, v, v];

function chunks(png: Buffer): Array<{ type: string; data: Buffer }> {
  const out: Array<{ type: string; data: Buffer }> = [];
  for (let off = 8; off + 12 <= png.length; ) {
    const len = png.readUInt32BE(off);
    out.push({ type: png.toString('latin1', off + 4, off + 8), data: png.subarray(off + 8, off + 8 + len) });
    off += 12 + len;
  }
  return out;
}

forEachStorage('workflow image nodes of comfy_extras (noise, morphology, YUV, Porter-Duff, Canny, animated saves)', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  test('object_info: classes, categories, modules and inputs as the reference', async () => {
    const info = (await srv.http.get('/object_info')).body;
    const expect: Array<[string, string, string, string[]]> = [
      ['ImageAddNoise', 'image', 'comfy_extras.nodes_images', ['IMAGE']],
      ['SaveAnimatedWEBP', 'image/animation', 'comfy_extras.nodes_images', []],
      ['SaveAnimatedPNG', 'image/animation', 'comfy_extras.nodes_images', []],
      ['Morphology', 'image/postprocessing', 'comfy_extras.nodes_morphology', ['IMAGE']],
      ['ImageRGBToYUV', 'image/batch', 'comfy_extras.nodes_morphology', ['IMAGE', 'IMAGE', 'IMAGE']],
      ['ImageYUVToRGB', 'image/batch', 'comfy_extras.nodes_morphology', ['IMAGE']],
      ['PorterDuffImageComposite', 'mask/compositing', 'comfy_extras.nodes_compositing', ['IMAGE', 'MASK']],
      ['Canny', 'image/preprocessors', 'comfy_extras.nodes_canny', ['IMAGE']],
      ['LoadImageOutput', 'image', 'nodes', ['IMAGE', 'MASK']],
    ];
    for (const [name, category, mod, outputs] of expect) {
      assert.ok(info[name], name);
      assert.equal(info[name].category, category, `${name} category`);
      assert.equal(info[name].python_module, mod, `${name} module`);
      assert.deepEqual(info[name].output, outputs, `${name} outputs`);
    }
    assert.deepEqual(info.ImageAddNoise.input.required.seed, ['INT', { default: 0, min: 0, max: 0xffffffffffffffff, control_after_generate: true, tooltip: 'The random seed used for creating the noise.' }]);
    assert.deepEqual(info.Morphology.input.required.operation, ['COMBO', { multiselect: false, options: ['erode', 'dilate', 'open', 'close', 'gradient', 'bottom_hat', 'top_hat'] }]);
    assert.equal(info.Morphology.display_name, 'ImageMorphology');
    assert.deepEqual(info.ImageRGBToYUV.output_name, ['Y', 'U', 'V']);
    assert.equal(info.PorterDuffImageComposite.input.required.mode[1].default, 'DST');
    assert.equal(info.PorterDuffImageComposite.input.required.mode[1].options.length, 18);
    assert.deepEqual(info.SaveAnimatedWEBP.input.required.method, ['COMBO', { multiselect: false, options: ['default', 'fastest', 'slowest'] }]);
    assert.deepEqual(info.SaveAnimatedPNG.input.required.compress_level, ['INT', { default: 4, min: 0, max: 9, advanced: true }]);
    assert.equal(info.SaveAnimatedPNG.output_node, true);
    assert.equal(info.LoadImageOutput.experimental, true);
    assert.equal(info.LoadImageOutput.input.required.image[0], 'COMBO');
    assert.equal(info.LoadImageOutput.input.required.image[1].image_folder, 'output');
  });

  test('ImageAddNoise draws torch.randn with manual_seed (both of torch CPU paths)', async () => {
    const expectNoise = (px: Pixels, noise: number[], s: number) => ({ ...px, data: px.data.map((v, i) => byte(v / 255 + s * noise[i]!)) });
    // 3 values: the scalar Box-Muller path.
    let src = image(1, 1, 3, () => [128, 128, 128]);
    let [f] = await saved(srv, { ...(await loaded(srv, src)), n: { class_type: 'ImageAddNoise', inputs: { image: ['load', 0], seed: 0, strength: 0.1 } } }, ['n', 0]);
    near(f!, expectNoise(src, RANDN_3, 0.1), 1, 'randn(3)');
    src = image(2, 1, 3, (x) => grey(100 + x * 50));
    [f] = await saved(srv, { ...(await loaded(srv, src)), n: { class_type: 'ImageAddNoise', inputs: { image: ['load', 0], seed: 0, strength: 0.05 } } }, ['n', 0]);
    near(f!, expectNoise(src, RANDN_6, 0.05), 1, 'randn(6)');
    // 16 values (2×2 RGBA): the vectorised path.
    const rgb = image(2, 2, 3, (x, y) => [60 + 40 * x, 120, 200 - 50 * y]);
    const g = { ...(await loaded(srv, rgb)), m: { class_type: 'SolidMask', inputs: { value: 0.5, width: 2, height: 2 } }, j: { class_type: 'JoinImageWithAlpha', inputs: { image: ['load', 0], alpha: ['m', 0] } } };
    [f] = await saved(srv, { ...g, n: { class_type: 'ImageAddNoise', inputs: { image: ['j', 0], seed: 0, strength: 0.2 } } }, ['n', 0]);
    const rgba = image(2, 2, 4, (x, y) => [60 + 40 * x, 120, 200 - 50 * y, byte(0.5)]);
    near(f!, expectNoise(rgba, RANDN_16, 0.2), 1, 'randn(16)');
    // Another seed gives other noise; strength 0 none.
    const [a] = await saved(srv, { ...g, n: { class_type: 'ImageAddNoise', inputs: { image: ['j', 0], seed: 1, strength: 0.2 } } }, ['n', 0]);
    assert.notDeepEqual(a!.data, f!.data);
    const [z] = await saved(srv, { ...g, n: { class_type: 'ImageAddNoise', inputs: { image: ['j', 0], seed: 123456789012, strength: 0 } } }, ['n', 0]);
    near(z!, rgba, 0, 'strength 0');
  });

  test('Morphology: kornia erosion/dilation with a flat k×k kernel and geodesic borders', async () => {
    const dot = image(6, 6, 3, (x, y) => grey(x === 2 && y === 2 ? 200 : 10));
    const src = await loaded(srv, dot);
    const morph = (operation: string, kernel_size: number) => ({ ...src, m: { class_type: 'Morphology', inputs: { image: ['load', 0], operation, kernel_size } } });
    let [f] = await saved(srv, morph('dilate', 3), ['m', 0]);
    near(f!, image(6, 6, 3, (x, y) => grey(x >= 1 && x <= 3 && y >= 1 && y <= 3 ? 200 : 10)), 0, 'dilate 3');
    // An even kernel reaches k/2 before and k/2 - 1 after: output i sees [i - 2, i + 1].
    [f] = await saved(srv, morph('dilate', 4), ['m', 0]);
    near(f!, image(6, 6, 3, (x, y) => grey(x >= 1 && x <= 4 && y >= 1 && y <= 4 ? 200 : 10)), 0, 'dilate 4');
    [f] = await saved(srv, morph('erode', 3), ['m', 0]);
    near(f!, image(6, 6, 3, () => grey(10)), 0, 'erode');
    [f] = await saved(srv, morph('gradient', 3), ['m', 0]);
    near(f!, image(6, 6, 3, (x, y) => grey(x >= 1 && x <= 3 && y >= 1 && y <= 3 ? 190 : 0)), 0, 'gradient');
    [f] = await saved(srv, morph('top_hat', 3), ['m', 0]);
    near(f!, image(6, 6, 3, (x, y) => grey(x === 2 && y === 2 ? 190 : 0)), 0, 'top hat');
    [f] = await saved(srv, morph('close', 3), ['m', 0]);
    near(f!, image(6, 6, 3, (x, y) => grey(x === 2 && y === 2 ? 200 : 10)), 0, 'close');
    // Borders never win: eroding a bright image keeps its edge values (no zero padding).
    const edge = await loaded(srv, image(4, 3, 3, (x) => grey(50 + x * 10)));
    [f] = await saved(srv, { ...edge, m: { class_type: 'Morphology', inputs: { image: ['load', 0], operation: 'erode', kernel_size: 5 } } }, ['m', 0]);
    near(f!, image(4, 3, 3, (x) => grey(50 + Math.max(0, x - 2) * 10)), 0, 'erode at the border');
    const bad = await srv.http.post('/prompt', { prompt: { ...src, m: { class_type: 'Morphology', inputs: { image: ['load', 0], operation: 'erode', kernel_size: 2 } }, s: { class_type: 'PreviewImage', inputs: { images: ['m', 0] } } } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.node_errors.m.errors[0].type, 'value_smaller_than_min');
  });

  test('ImageRGBToYUV / ImageYUVToRGB: kornia YCbCr formulas', async () => {
    const colours = [
      [255, 0, 0],
      [0, 255, 0],
      [0, 0, 255],
      [30, 140, 220],
    ];
    const src = image(4, 1, 3, (x) => colours[x]!);
    const g = { ...(await loaded(srv, src)), yuv: { class_type: 'ImageRGBToYUV', inputs: { image: ['load', 0] } } };
    const ycc = colours.map(([r, gg, b]) => {
      const y = 0.299 * (r! / 255) + 0.587 * (gg! / 255) + 0.114 * (b! / 255);
      return [y, (b! / 255 - y) * 0.564 + 0.5, (r! / 255 - y) * 0.713 + 0.5];
    });
    for (let k = 0; k < 3; k++) {
      const [f] = await saved(srv, g, ['yuv', k]);
      near(f!, image(4, 1, 3, (x) => grey(byte(ycc[x]![k]!))), 1, `plane ${k}`);
    }
    const [rt] = await saved(srv, { ...g, rgb: { class_type: 'ImageYUVToRGB', inputs: { Y: ['yuv', 0], U: ['yuv', 1], V: ['yuv', 2] } } }, ['rgb', 0]);
    const back = ycc.map((v) => v.map((c) => byte(c) / 255)).map(([y, cb, cr]) => [byte(y! + 1.403 * (cr! - 0.5)), byte(y! - 0.714 * (cr! - 0.5) - 0.344 * (cb! - 0.5)), byte(y! + 1.773 * (cb! - 0.5))]);
    near(rt!, image(4, 1, 3, (x) => back[x]!), 1, 'round trip');
    // RGBA is refused as kornia refuses it.
    const r = await run(srv, { ...g, m: { class_type: 'SolidMask', inputs: { value: 0, width: 4, height: 1 } }, j: { class_type: 'JoinImageWithAlpha', inputs: { image: ['load', 0], alpha: ['m', 0] } }, y2: { class_type: 'ImageRGBToYUV', inputs: { image: ['j', 0] } }, p: { class_type: 'PreviewImage', inputs: { images: ['y2', 0] } } });
    assert.equal(r.error?.exception_type, 'ValueError');
    assert.match(r.error?.exception_message, /Input size must have a shape of \(\*, 3, H, W\)/);
  });

  test('PorterDuffImageComposite: premultiplied modes, alpha as 1 - mask', async () => {
    const red = image(2, 2, 3, () => [255, 0, 0]);
    const blue = image(2, 2, 3, () => [0, 0, 255]);
    const g = {
      ...(await loaded(srv, red, 'src')),
      ...(await loaded(srv, blue, 'dst')),
      sm: { class_type: 'SolidMask', inputs: { value: 0.5, width: 2, height: 2 } },
      dm: { class_type: 'SolidMask', inputs: { value: 0.25, width: 2, height: 2 } },
    };
    const pd = (mode: string) => ({ ...g, pd: { class_type: 'PorterDuffImageComposite', inputs: { source: ['src', 0], source_alpha: ['sm', 0], destination: ['dst', 0], destination_alpha: ['dm', 0], mode } } });
    const sa = 0.5;
    const da = 0.75;
    const cases: Array<[string, (s: number, d: number) => number, number]> = [
      ['SRC_OVER', (s, d) => s * sa + (1 - sa) * d * da, sa + (1 - sa) * da],
      ['DST_OVER', (s, d) => d * da + (1 - da) * s * sa, da + (1 - da) * sa],
      ['XOR', (s, d) => (1 - da) * s * sa + (1 - sa) * d * da, (1 - da) * sa + (1 - sa) * da],
      ['MULTIPLY', (s, d) => s * sa * d * da, sa * da],
      ['SRC_IN', (s) => s * sa * da, sa * da],
    ];
    for (const [mode, img, alpha] of cases) {
      const [f] = await saved(srv, pd(mode), ['pd', 0]);
      near(f!, image(2, 2, 3, () => [byte(img(1, 0) / alpha), 0, byte(img(0, 1) / alpha)]), 1, mode);
      const [m] = await savedMask(srv, pd(mode), ['pd', 1]);
      near(m!, image(2, 2, 1, () => [byte(1 - alpha)]), 1, `${mode} mask`);
    }
    const [c] = await saved(srv, pd('CLEAR'), ['pd', 0]);
    near(c!, image(2, 2, 3, () => [0, 0, 0]), 0, 'clear');
  });

  test('Canny: blur, Sobel, non-maximum suppression, thresholds and hysteresis as kornia', async () => {
    // Columns: dark, a strong edge around x = 5 and a weak one around x = 10 (asymmetric ramps: no ties in the
    // suppression); every row the same, so gy = 0.
    const profile = [0, 0, 0, 0, 0, 128, 255, 255, 255, 250, 228, 215, 215, 215, 215];
    const w = profile.length;
    const src = image(w, 6, 3, (x) => grey(profile[x]!));
    // The reference along one row: 5-tap Gaussian (σ = 1, reflected), gx = 4·(b[x+1] − b[x−1]) (replicated), NMS along x.
    const gk = [-2, -1, 0, 1, 2].map((x) => Math.exp(-(x * x) / 2));
    const gsum = gk.reduce((a, b) => a + b);
    const refl = (i: number) => (i < 0 ? -i : i >= w ? 2 * (w - 1) - i : i);
    const b = profile.map((_, x) => gk.reduce((s, k, t) => s + (k / gsum) * (profile[refl(x + t - 2)]! / 255), 0));
    const at = (x: number) => b[Math.min(w - 1, Math.max(0, x))]!;
    const mag = b.map((_, x) => Math.sqrt((4 * (at(x + 1) - at(x - 1))) ** 2 + 1e-6));
    const m = (x: number) => (x < 0 || x >= w ? 0 : mag[x]!);
    const edge = (low: number, high: number) => {
      const state = mag.map((v, x) => (v - m(x + 1) > 0 && v - m(x - 1) > 0 ? v : 0)).map((v) => (v > high ? 2 : v > low ? 1 : 0));
      // A weak column becomes an edge only next to a strong one (rows are identical, so along x).
      let changed = true;
      while (changed) {
        changed = false;
        for (let x = 0; x < w; x++) if (state[x] === 1 && (state[x - 1] === 2 || state[x + 1] === 2)) ((state[x] = 2), (changed = true));
      }
      return state.map((s) => (s === 2 ? 255 : 0));
    };
    const g = await loaded(srv, src);
    for (const [low, high] of [
      [0.4, 0.8],
      [0.05, 0.8],
      [0.05, 0.3],
    ] as const) {
      const [f] = await saved(srv, { ...g, c: { class_type: 'Canny', inputs: { image: ['load', 0], low_threshold: low, high_threshold: high } } }, ['c', 0]);
      const cols = edge(low, high);
      near(f!, image(w, 6, 3, (x) => grey(cols[x]!)), 0, `canny ${low}/${high}`);
    }
    // The strong step gives one edge column; the weak one only when the high threshold lets it be strong.
    assert.deepEqual(edge(0.05, 0.8).filter((v) => v).length, 1);
    assert.deepEqual(edge(0.05, 0.3).filter((v) => v).length, 2);
    const r = await run(srv, { ...g, c: { class_type: 'Canny', inputs: { image: ['load', 0], low_threshold: 0.9, high_threshold: 0.2 } }, p: { class_type: 'PreviewImage', inputs: { images: ['c', 0] } } });
    assert.match(r.error?.exception_message ?? '', /low_threshold should be smaller than the high_threshold/);
  });

  test('SaveAnimatedPNG writes an APNG as PIL does; SaveAnimatedWEBP an animated WebP with EXIF metadata', async () => {
    const frames = [image(3, 2, 3, () => [10, 20, 30]), image(3, 2, 3, () => [10, 20, 30]), image(3, 2, 3, (x) => [200, x * 50, 0])];
    const g: Record<string, unknown> = {};
    for (let i = 0; i < 3; i++) Object.assign(g, await loaded(srv, frames[i]!, `f${i}`));
    g.b1 = { class_type: 'ImageBatch', inputs: { image1: ['f0', 0], image2: ['f1', 0] } };
    g.b2 = { class_type: 'ImageBatch', inputs: { image1: ['b1', 0], image2: ['f2', 0] } };
    const prefix = `anim/${randomUUID().slice(0, 8)}`;
    let r = await run(srv, { ...g, s: { class_type: 'SaveAnimatedPNG', inputs: { images: ['b2', 0], filename_prefix: prefix, fps: 10, compress_level: 4 } } });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.deepEqual(r.outputs.s.animated, [true]);
    const item = r.outputs.s.images[0];
    assert.match(item.filename, /_00001_\.png$/);
    const png = fs.readFileSync(path.join(srv.cfg.dataDir, 'output', item.subfolder, item.filename));
    const cs = chunks(png);
    assert.deepEqual(cs.map((c) => c.type), ['IHDR', 'acTL', 'fcTL', 'IDAT', 'fcTL', 'fdAT', 'comf', 'IEND']);
    // The two identical frames are one with twice the delay (int(1000 / fps) = 100 ms each).
    assert.equal(cs[1]!.data.readUInt32BE(0), 2);
    assert.equal(cs[1]!.data.readUInt32BE(4), 0);
    assert.deepEqual([cs[2]!.data.readUInt16BE(20), cs[2]!.data.readUInt16BE(22)], [200, 1000]);
    assert.equal(cs[4]!.data.readUInt16BE(20), 100);
    assert.equal(cs[5]!.data.readUInt32BE(0), 2);
    const comf = cs[6]!.data.toString('latin1');
    assert.ok(comf.startsWith('prompt\0'));
    assert.equal(JSON.parse(comf.slice(7)).s.class_type, 'SaveAnimatedPNG');
    // The default image decodes to frame 0; the second frame's data to frame 2 (filter bytes, then RGB rows).
    const first = await sharp(png).raw().toBuffer();
    assert.deepEqual([...first], frames[0]!.data);
    const rows = zlib.inflateSync(cs[5]!.data.subarray(4));
    assert.equal(rows.length, 2 * (1 + 3 * 3));
    const single = await run(srv, { ...g, s: { class_type: 'SaveAnimatedPNG', inputs: { images: ['f0', 0], filename_prefix: prefix, fps: 10, compress_level: 4 } } });
    assert.equal(single.outputs.s.animated, undefined);
    assert.match(single.outputs.s.images[0].filename, /_00002_\.png$/);
    const one = chunks(fs.readFileSync(path.join(srv.cfg.dataDir, 'output', single.outputs.s.images[0].subfolder, single.outputs.s.images[0].filename)));
    assert.ok(!one.some((c) => c.type === 'acTL'));

    r = await run(srv, { ...g, s: { class_type: 'SaveAnimatedWEBP', inputs: { images: ['b2', 0], filename_prefix: prefix, fps: 6, lossless: true, quality: 80, method: 'fastest' } } });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.deepEqual(r.outputs.s.animated, [true]);
    const webp = fs.readFileSync(path.join(srv.cfg.dataDir, 'output', r.outputs.s.images[0].subfolder, r.outputs.s.images[0].filename));
    assert.equal(webp.toString('latin1', 8, 12), 'WEBP');
    const meta = await sharp(webp, { animated: true }).metadata();
    assert.equal(meta.loop, 0);
    assert.ok(meta.delay && meta.delay.every((d) => d >= 166));
    assert.ok(meta.exif && meta.exif.toString('latin1').includes('prompt:{'));
    // Lossless: the last frame's pixels come back exactly.
    const last = await sharp(webp, { page: (meta.pages ?? 1) - 1 }).removeAlpha().raw().toBuffer();
    assert.deepEqual([...last], frames[2]!.data);
  });

  test('LoadImageOutput loads `name [output]` files; a missing one fails validation', async () => {
    const px = image(3, 2, 3, (x, y) => [x * 40, y * 90, 7]);
    const [f] = await saved(srv, await loaded(srv, px), ['load', 0]);
    near(f!, px, 0, 'saved');
    const prefix = `lio${randomUUID().slice(0, 6)}`;
    const r = await run(srv, { ...(await loaded(srv, px)), s: { class_type: 'SaveImage', inputs: { images: ['load', 0], filename_prefix: prefix } } });
    const name = `${r.outputs.s.images[0].filename} [output]`;
    const [back] = await saved(srv, { o: { class_type: 'LoadImageOutput', inputs: { image: name } } }, ['o', 0]);
    near(back!, px, 0, 'loaded from output');
    // WebcamCapture loads the frame the frontend uploaded, as LoadImage does.
    const cam = await loaded(srv, px, 'cam0');
    const camName = (cam.cam0 as { inputs: { image: string } }).inputs.image;
    const [c] = await saved(srv, { w: { class_type: 'WebcamCapture', inputs: { image: camName, width: 0, height: 0, capture_on_queue: true } } }, ['w', 0]);
    near(c!, px, 0, 'webcam');
    // FluxKontextImageScale picks the preferred resolution nearest in aspect (3:2 → 1248×832).
    const [k] = await saved(srv, { ...(await loaded(srv, image(6, 4, 3, () => grey(90)))), k: { class_type: 'FluxKontextImageScale', inputs: { image: ['load', 0] } } }, ['k', 0]);
    assert.deepEqual([k!.width, k!.height], [1248, 832]);
    near(k!, image(1248, 832, 3, () => grey(90)), 1, 'kontext');
    const bad = await srv.http.post('/prompt', { prompt: { o: { class_type: 'LoadImageOutput', inputs: { image: 'nope.png [output]' } }, p: { class_type: 'PreviewImage', inputs: { images: ['o', 0] } } } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.node_errors.o.errors[0].type, 'custom_validation_failed');
    assert.match(bad.body.node_errors.o.errors[0].details, /Invalid image file: nope\.png \[output\]/);
  });
});
