import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';
import { image, loaded, near, run, saved, savedMask, type Server } from './nodes-helpers.ts';

// Expected values are derived by hand from the reference's formulas (torch
// interpolate with half-pixel centres, PIL for lanczos), rounded to bytes.

const grey = (v: number) => [v, v, v];

forEachStorage('workflow image transform nodes', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  test('ImageScale: bilinear, bicubic (a = -0.75), nearest-exact and area follow torch exactly', async () => {
    const row = await loaded(srv, image(2, 1, 3, (x) => grey(x === 0 ? 0 : 200)));
    const scale = (method: string, w: number) => ({ ...row, s: { class_type: 'ImageScale', inputs: { image: ['load', 0], upscale_method: method, width: w, height: 1, crop: 'disabled' } } });
    let [f] = await saved(srv, scale('bilinear', 4), ['s', 0]);
    near(f!, image(4, 1, 3, (x) => grey([0, 50, 150, 200][x]!)), 0, 'bilinear');
    [f] = await saved(srv, scale('bicubic', 4), ['s', 0]);
    near(f!, image(4, 1, 3, (x) => grey([0, 45, 155, 221][x]!)), 0, 'bicubic');
    const four = await loaded(srv, image(4, 2, 3, (x, y) => grey(x * 60 + y)));
    const down = (method: string) => ({ ...four, s: { class_type: 'ImageScale', inputs: { image: ['load', 0], upscale_method: method, width: 2, height: 1, crop: 'disabled' } } });
    [f] = await saved(srv, down('nearest-exact'), ['s', 0]);
    near(f!, image(2, 1, 3, (x) => grey([61, 181][x]!)), 0, 'nearest-exact');
    // RGBA enlarges 4 → 6 with torch's source indices floor((i + 0.5) · 4/6) = 0, 1, 1, 2, 3, 3 on both axes.
    const square = await loaded(srv, image(4, 4, 4, (x, y) => [x * 60, y * 60, 9, 200 + x]));
    [f] = await saved(
      srv,
      { ...square, j: { class_type: 'JoinImageWithAlpha', inputs: { image: ['load', 0], alpha: ['load', 1] } }, s: { class_type: 'ImageScale', inputs: { image: ['j', 0], upscale_method: 'nearest-exact', width: 6, height: 6, crop: 'disabled' } } },
      ['s', 0],
    );
    const src6 = [0, 1, 1, 2, 3, 3];
    near(f!, image(6, 6, 4, (x, y) => [src6[x]! * 60, src6[y]! * 60, 9, 200 + src6[x]!]), 0, 'nearest-exact enlarging RGBA');
    // RGB too (libvips' nearest kernel picks other source pixels when enlarging by 3/2, as 1024 → 1536 does).
    const rgb = await loaded(srv, image(16, 16, 3, (x, y) => [x * 15, y * 15, (x + y) % 7]));
    [f] = await saved(srv, { ...rgb, s: { class_type: 'ImageScale', inputs: { image: ['load', 0], upscale_method: 'nearest-exact', width: 24, height: 24, crop: 'disabled' } } }, ['s', 0]);
    const src24 = (i: number) => Math.floor(((i + 0.5) * 16) / 24);
    near(f!, image(24, 24, 3, (x, y) => [src24(x) * 15, src24(y) * 15, (src24(x) + src24(y)) % 7]), 0, 'nearest-exact enlarging RGB');
    [f] = await saved(srv, down('area'), ['s', 0]);
    // Each output averages a 2x2 block: (0+60+1+61)/4 = 30.5, (120+180+121+181)/4 = 150.5.
    near(f!, image(2, 1, 3, (x) => grey([31, 151][x]!)), 0, 'area');
  });

  test('ImageScale: lanczos keeps flat areas, matches PIL taps when enlarging, width or height 0 keeps the aspect, crop center', async () => {
    const flat = await loaded(srv, image(5, 3, 3, () => [10, 120, 250]));
    let [f] = await saved(srv, { ...flat, s: { class_type: 'ImageScale', inputs: { image: ['load', 0], upscale_method: 'lanczos', width: 11, height: 0, crop: 'disabled' } } }, ['s', 0]);
    // height 0: round(3 * 11 / 5) = round(6.6) = 7.
    near(f!, image(11, 7, 3, () => [10, 120, 250]), 0, 'flat lanczos');
    const step = await loaded(srv, image(2, 1, 3, (x) => grey(x === 0 ? 0 : 255)));
    [f] = await saved(srv, { ...step, s: { class_type: 'ImageScale', inputs: { image: ['load', 0], upscale_method: 'lanczos', width: 4, height: 1, crop: 'disabled' } } }, ['s', 0]);
    // PIL: centre (i+0.5)/2, taps j in [0,2) weighted by lanczos3((j + 0.5 - centre)), normalised.
    const sinc = (x: number) => (x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x));
    const expect = [0, 1, 2, 3].map((i) => {
      const c = (i + 0.5) / 2;
      const w0 = sinc(0.5 - c) * sinc((0.5 - c) / 3);
      const w1 = sinc(1.5 - c) * sinc((1.5 - c) / 3);
      return Math.min(255, Math.max(0, Math.round((255 * w1) / (w0 + w1))));
    });
    near(f!, image(4, 1, 3, (x) => grey(expect[x]!)), 1, 'lanczos step');
    const wide = await loaded(srv, image(6, 2, 3, (x) => grey(x * 40)));
    [f] = await saved(srv, { ...wide, s: { class_type: 'ImageScale', inputs: { image: ['load', 0], upscale_method: 'nearest-exact', width: 2, height: 2, crop: 'center' } } }, ['s', 0]);
    // 6x2 cropped to the centred 2x2 (columns 2 and 3), then kept as is.
    near(f!, image(2, 2, 3, (x) => grey((x + 2) * 40)), 0, 'crop center');
    const r = await run(srv, { ...wide, s: { class_type: 'ImageScale', inputs: { image: ['load', 0], upscale_method: 'bilinear', width: 0, height: 0, crop: 'disabled' } }, o: { class_type: 'SaveImage', inputs: { images: ['s', 0], filename_prefix: 'same' } } });
    assert.equal(r.error, undefined);
  });

  test('ImageScaleBy, ImageScaleToTotalPixels (with resolution_steps) and ImageScaleToMaxDimension pick the reference sizes', async () => {
    const src = await loaded(srv, image(10, 4, 3, () => grey(90)));
    let [f] = await saved(srv, { ...src, s: { class_type: 'ImageScaleBy', inputs: { image: ['load', 0], upscale_method: 'area', scale_by: 0.25 } } }, ['s', 0]);
    // round(2.5) = 2 (half to even), round(1.0) = 1.
    assert.deepEqual([f!.width, f!.height], [2, 1]);
    [f] = await saved(srv, { ...src, s: { class_type: 'ImageScaleToTotalPixels', inputs: { image: ['load', 0], upscale_method: 'bilinear', megapixels: 0.01, resolution_steps: 8 } } }, ['s', 0]);
    // 0.01 MP = 10485.76 px; scale sqrt(10485.76/40) = 16.19; 161.9/8 → 20·8 = 160, 64.8/8 → 8·8 = 64.
    assert.deepEqual([f!.width, f!.height], [160, 64]);
    near(f!, image(160, 64, 3, () => grey(90)), 0, 'flat');
    [f] = await saved(srv, { ...src, s: { class_type: 'ImageScaleToMaxDimension', inputs: { image: ['load', 0], upscale_method: 'area', largest_size: 5 } } }, ['s', 0]);
    assert.deepEqual([f!.width, f!.height], [5, 2]);
  });

  test('ImageCrop clamps its origin into the image; ImageRotate turns clockwise; ImageFlip mirrors', async () => {
    const src = await loaded(srv, image(3, 2, 3, (x, y) => grey(y * 3 + x)));
    let [f] = await saved(srv, { ...src, c: { class_type: 'ImageCrop', inputs: { image: ['load', 0], width: 5, height: 1, x: 1, y: 1 } } }, ['c', 0]);
    near(f!, image(2, 1, 3, (x) => grey(4 + x)), 0, 'crop');
    [f] = await saved(srv, { ...src, c: { class_type: 'ImageCrop', inputs: { image: ['load', 0], width: 2, height: 2, x: 99, y: 99 } } }, ['c', 0]);
    near(f!, image(1, 1, 3, () => grey(5)), 0, 'crop clamped');
    // [[0,1,2],[3,4,5]] turned 90° clockwise is [[3,0],[4,1],[5,2]].
    [f] = await saved(srv, { ...src, r: { class_type: 'ImageRotate', inputs: { image: ['load', 0], rotation: '90 degrees' } } }, ['r', 0]);
    near(f!, image(2, 3, 3, (x, y) => grey([[3, 0], [4, 1], [5, 2]][y]![x]!)), 0, 'rot90');
    [f] = await saved(srv, { ...src, r: { class_type: 'ImageRotate', inputs: { image: ['load', 0], rotation: '180 degrees' } } }, ['r', 0]);
    near(f!, image(3, 2, 3, (x, y) => grey(5 - (y * 3 + x))), 0, 'rot180');
    [f] = await saved(srv, { ...src, r: { class_type: 'ImageRotate', inputs: { image: ['load', 0], rotation: '270 degrees' } } }, ['r', 0]);
    near(f!, image(2, 3, 3, (x, y) => grey([[2, 5], [1, 4], [0, 3]][y]![x]!)), 0, 'rot270');
    [f] = await saved(srv, { ...src, r: { class_type: 'ImageFlip', inputs: { image: ['load', 0], flip_method: 'x-axis: vertically' } } }, ['r', 0]);
    near(f!, image(3, 2, 3, (x, y) => grey((1 - y) * 3 + x)), 0, 'flip x');
    [f] = await saved(srv, { ...src, r: { class_type: 'ImageFlip', inputs: { image: ['load', 0], flip_method: 'y-axis: horizontally' } } }, ['r', 0]);
    near(f!, image(3, 2, 3, (x, y) => grey(y * 3 + 2 - x)), 0, 'flip y');
  });

  test('ImagePadForOutpaint pads with 0.5 grey and feathers the mask toward the padded sides', async () => {
    const src = await loaded(srv, image(10, 10, 3, () => grey(200)));
    const pad = { ...src, p: { class_type: 'ImagePadForOutpaint', inputs: { image: ['load', 0], left: 2, top: 0, right: 0, bottom: 1, feathering: 3 } } };
    const [f] = await saved(srv, pad, ['p', 0]);
    near(f!, image(12, 11, 3, (x, y) => grey(x >= 2 && y < 10 ? 200 : 128)), 0, 'padded image');
    const [m] = await savedMask(srv, pad, ['p', 1]);
    // Inside: d = min(left distance j, bottom distance 10 - i); v = ((3 - d) / 3)² when d < 3.
    const expected = image(12, 11, 1, (x, y) => {
      if (x < 2 || y >= 10) return [255];
      const d = Math.min(x - 2, 10 - y);
      return [d < 3 ? Math.round(((3 - d) / 3) ** 2 * 255) : 0];
    });
    near(m!, expected, 0, 'outpaint mask');
  });

  test('ImageBatch, RepeatImageBatch and ImageFromBatch: batches as the reference tensors (image2 resized to image1, alpha added where missing)', async () => {
    const a = await loaded(srv, image(4, 2, 3, () => grey(10)), 'a');
    const b = await loaded(srv, image(2, 1, 3, () => grey(250)), 'b');
    const graph = {
      ...a,
      ...b,
      batch: { class_type: 'ImageBatch', inputs: { image1: ['a', 0], image2: ['b', 0] } },
      rep: { class_type: 'RepeatImageBatch', inputs: { image: ['batch', 0], amount: 3 } },
      pick: { class_type: 'ImageFromBatch', inputs: { image: ['rep', 0], batch_index: 3, length: 10 } },
    };
    let frames = await saved(srv, graph, ['rep', 0]);
    assert.equal(frames.length, 6);
    near(frames[1]!, image(4, 2, 3, () => grey(250)), 0, 'resized image2');
    frames = await saved(srv, graph, ['pick', 0]);
    // From index 3 of [a, b, a, b, a, b]: three images remain.
    assert.deepEqual(frames.map((f) => f.data[0]), [250, 10, 250]);
    const rgba = await loaded(srv, image(4, 2, 4, () => [1, 2, 3, 128]), 'c');
    frames = await saved(srv, { ...a, ...rgba, batch: { class_type: 'ImageBatch', inputs: { image1: ['a', 0], image2: ['c', 0] } }, j: { class_type: 'JoinImageWithAlpha', inputs: { image: ['c', 0], alpha: ['c', 1] } }, b2: { class_type: 'ImageBatch', inputs: { image1: ['a', 0], image2: ['j', 0] } } }, ['b2', 0]);
    assert.equal(frames[0]!.channels, 4);
    near(frames[0]!, image(4, 2, 4, () => [10, 10, 10, 255]), 0, 'alpha added');
    near(frames[1]!, image(4, 2, 4, () => [1, 2, 3, 128]), 0, 'rgba kept');
  });

  test('ImageStitch: directions, spacing colour and size matching', async () => {
    const a = await loaded(srv, image(2, 2, 3, () => grey(0)), 'a');
    const b = await loaded(srv, image(1, 1, 3, () => grey(100)), 'b');
    const st = (direction: string, match: boolean, spacing: number, color = 'red') => ({
      ...a,
      ...b,
      s: { class_type: 'ImageStitch', inputs: { image1: ['a', 0], image2: ['b', 0], direction, match_image_size: match, spacing_width: spacing, spacing_color: color } },
    });
    let [f] = await saved(srv, st('right', true, 2), ['s', 0]);
    // image2 scaled to 2x2 (lanczos of a flat image stays flat), 2 px red spacing.
    near(f!, image(6, 2, 3, (x) => (x < 2 ? grey(0) : x < 4 ? [255, 0, 0] : grey(100))), 0, 'right');
    [f] = await saved(srv, st('up', false, 0, 'white'), ['s', 0]);
    // Not matched: image2 (1 px wide) is padded to 2 px with white (pad left 0, right 1), and goes on top.
    near(f!, image(2, 3, 3, (x, y) => (y === 0 ? (x === 0 ? grey(100) : grey(255)) : grey(0))), 0, 'up');
    [f] = await saved(srv, { ...a, s: { class_type: 'ImageStitch', inputs: { image1: ['a', 0], direction: 'left', match_image_size: true, spacing_width: 0, spacing_color: 'white' } } }, ['s', 0]);
    near(f!, image(2, 2, 3, () => grey(0)), 0, 'no image2');
  });

  test('GetImageSize and ResizeAndPadImage', async () => {
    const src = await loaded(srv, image(4, 2, 3, () => grey(60)));
    const r = await run(srv, { ...src, g: { class_type: 'GetImageSize', inputs: { image: ['load', 0] } }, o: { class_type: 'PreviewAny', inputs: { source: ['g', 1] } } });
    assert.deepEqual(r.outputs.o, { text: ['2'] });
    const [f] = await saved(srv, { ...src, p: { class_type: 'ResizeAndPadImage', inputs: { image: ['load', 0], target_width: 4, target_height: 4, padding_color: 'black', interpolation: 'area' } } }, ['p', 0]);
    near(f!, image(4, 4, 3, (_x, y) => grey(y === 1 || y === 2 ? 60 : 0)), 0, 'pad');
  });

  test('sizes beyond the limits are refused as node errors, not allocated', async () => {
    const src = await loaded(srv, image(2, 2, 3, () => grey(1)));
    let r = await run(srv, { ...src, s: { class_type: 'ImageScale', inputs: { image: ['load', 0], upscale_method: 'bilinear', width: 16384, height: 16384, crop: 'disabled' } }, o: { class_type: 'SaveImage', inputs: { images: ['s', 0], filename_prefix: 'big' } } });
    assert.equal(r.error?.exception_type, 'RangeError');
    assert.match(r.error.exception_message, /exceeds the limit/);
    r = await run(srv, { ...src, s: { class_type: 'RepeatImageBatch', inputs: { image: ['load', 0], amount: 4096 } }, s2: { class_type: 'RepeatImageBatch', inputs: { image: ['s', 0], amount: 4096 } }, o: { class_type: 'SaveImage', inputs: { images: ['s2', 0], filename_prefix: 'many' } } });
    assert.equal(r.error?.exception_type, 'RangeError');
  });
});
