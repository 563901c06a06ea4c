import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';
import { byte, image, loaded, near, readOutput, run, saved, type Pixels, type RunResult, type Server } from './nodes-helpers.ts';

const grey = (v: number) => [v, v, v];

/** The reference's Gaussian (samples of exp(-x²/2σ²) on linspace(-1, 1, 2r+1)) applied separably with reflect padding, in double precision. */
function gaussianRef(px: Pixels, radius: number, sigma: number): number[] {
  const size = radius * 2 + 1;
  const k = Array.from({ length: size }, (_, i) => Math.exp(-((-1 + (2 * i) / (size - 1)) ** 2) / (2 * sigma * sigma)));
  const sum = k.reduce((a, b) => a + b, 0);
  const kn = k.map((v) => v / sum);
  const refl = (i: number, n: number) => (n === 1 ? 0 : i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i);
  const { width: w, height: h, channels: c, data } = px;
  const tmp = new Array(data.length).fill(0);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) for (let ch = 0; ch < c; ch++) for (let t = 0; t < size; t++) tmp[(y * w + x) * c + ch] += kn[t]! * data[(y * w + refl(x + t - radius, w)) * c + ch]!;
  const out = new Array(data.length).fill(0);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) for (let ch = 0; ch < c; ch++) for (let t = 0; t < size; t++) out[(y * w + x) * c + ch] += kn[t]! * tmp[(refl(y + t - radius, h) * w + x) * c + ch]!;
  return out;
}

const clamp = (v: number) => Math.min(255, Math.max(0, Math.round(v)));

forEachStorage('workflow image filter nodes', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  test('ImageBlur: the reference Gaussian with reflect padding, small kernels (libvips) and large ones (typed arrays) alike', async () => {
    const dot = image(3, 3, 3, (x, y) => grey(x === 1 && y === 1 ? 255 : 0));
    const src = await loaded(srv, dot);
    let [f] = await saved(srv, { ...src, b: { class_type: 'ImageBlur', inputs: { image: ['load', 0], blur_radius: 1, sigma: 1 } } }, ['b', 0]);
    // Hand check of the corner: 2·k₀ · 2·k₀ · 255 with k₀ = e^-½ / (1 + 2e^-½).
    const k0 = Math.exp(-0.5) / (1 + 2 * Math.exp(-0.5));
    assert.equal(f!.data[0], Math.round(4 * k0 * k0 * 255));
    near(f!, { ...dot, data: gaussianRef(dot, 1, 1).map(clamp) }, 1, 'radius 1');
    const noise = image(24, 17, 3, (x, y) => grey((x * 37 + y * 91 + ((x * y) % 7) * 13) % 256));
    const n = await loaded(srv, noise);
    for (const [radius, sigma] of [
      [3, 0.7],
      [9, 2.5],
    ] as const) {
      [f] = await saved(srv, { ...n, b: { class_type: 'ImageBlur', inputs: { image: ['load', 0], blur_radius: radius, sigma } } }, ['b', 0]);
      near(f!, { ...noise, data: gaussianRef(noise, radius, sigma).map(clamp) }, 1, `radius ${radius}`);
    }
    // An RGBA image (typed-array path for every radius) blurs its alpha too, as the reference's tensor does.
    const rgba = image(6, 5, 4, (x, y) => [x * 40, y * 50, 7, 100 + x * 20]);
    const r = await loaded(srv, rgba, 'c');
    [f] = await saved(
      srv,
      { ...r, j: { class_type: 'JoinImageWithAlpha', inputs: { image: ['c', 0], alpha: ['c', 1] } }, b: { class_type: 'ImageBlur', inputs: { image: ['j', 0], blur_radius: 2, sigma: 1.5 } } },
      ['b', 0],
    );
    near(f!, { ...rgba, data: gaussianRef(rgba, 2, 1.5).map(clamp) }, 1, 'rgba');
  });

  test('ImageBlur of a larger RGB image: one result whether SaveImage encodes it as it is convolved or a node reads its pixels first, in one prompt and from the cache', async () => {
    const noise = image(120, 96, 3, (x, y) => [(x * 37 + y * 91 + ((x * y) % 7) * 13) % 256, (x * 11 + y * 5) % 256, (x ^ y) * 2]);
    const src = await loaded(srv, noise);
    const blur = (radius: number, sigma: number) => ({ class_type: 'ImageBlur', inputs: { image: ['load', 0], blur_radius: radius, sigma } });
    const save = (link: [string, number]) => ({ class_type: 'SaveImage', inputs: { images: link, filename_prefix: `pend${randomUUID().slice(0, 8)}` } });
    const read = async (r: RunResult, id: string) => {
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      return readOutput(srv, r.outputs[id].images[0]);
    };
    for (const [radius, sigma] of [
      [1, 1],
      [5, 2.5],
    ] as const) {
      // First only SaveImage consumes the blur (it stays libvips work until encoded) …
      const graph = { ...src, b: blur(radius, sigma) };
      const direct = await read(await run(srv, { ...graph, s1: save(['b', 0]) }), 's1');
      near(direct, { ...noise, data: gaussianRef(noise, radius, sigma).map(clamp) }, 1, `radius ${radius}`);
      // … then the cached blur feeds SaveImage again, nodes that read its pixels, and nodes that pass it through.
      const r = await run(srv, {
        ...graph,
        s2: save(['b', 0]),
        inv: { class_type: 'ImageInvert', inputs: { image: ['b', 0] } },
        s3: save(['inv', 0]),
        crop: { class_type: 'ImageCrop', inputs: { image: ['b', 0], width: 120, height: 96, x: 0, y: 0 } },
        s4: save(['crop', 0]),
        rep: { class_type: 'RepeatImageBatch', inputs: { image: ['b', 0], amount: 2 } },
        one: { class_type: 'ImageFromBatch', inputs: { image: ['rep', 0], batch_index: 1, length: 1 } },
        s5: save(['one', 0]),
      });
      near(await read(r, 's2'), direct, 0, 'cached, encoded again');
      near(await read(r, 's3'), { ...direct, data: direct.data.map((v) => 255 - v) }, 0, 'inverted');
      near(await read(r, 's4'), direct, 0, 'read by ImageCrop');
      near(await read(r, 's5'), direct, 0, 'passed through a batch');
    }
  });

  test('ImageSharpen: (1 + 10α)·x − 10α·gaussian(x), clamped', async () => {
    const px = image(9, 7, 3, (x, y) => grey(100 + ((x + y) % 3) * 20));
    const src = await loaded(srv, px);
    for (const [radius, sigma, alpha] of [
      [1, 1, 0.1],
      [6, 3, 0.05],
    ] as const) {
      const [f] = await saved(srv, { ...src, s: { class_type: 'ImageSharpen', inputs: { image: ['load', 0], sharpen_radius: radius, sigma, alpha } } }, ['s', 0]);
      const a = alpha * 10;
      const blurred = gaussianRef(px, radius, sigma);
      near(f!, { ...px, data: px.data.map((v, i) => clamp((1 + a) * v - a * blurred[i]!)) }, 1, `sharpen r${radius}`);
    }
  });

  test('ImageBlend: every mode as the reference formula, image2 resized to image1 when sizes differ', async () => {
    const a = await loaded(srv, image(3, 2, 3, (x) => grey(60 + x * 70)), 'a');
    const b = await loaded(srv, image(5, 4, 3, () => grey(200)), 'b');
    const modes: Record<string, (p: number, q: number) => number> = {
      normal: (_p, q) => q,
      multiply: (p, q) => p * q,
      screen: (p, q) => 1 - (1 - p) * (1 - q),
      overlay: (p, q) => (p <= 0.5 ? 2 * p * q : 1 - 2 * (1 - p) * (1 - q)),
      soft_light: (p, q) => (q <= 0.5 ? p - (1 - 2 * q) * p * (1 - p) : p + (2 * q - 1) * ((p <= 0.25 ? ((16 * p - 12) * p + 4) * p : Math.sqrt(p)) - p)),
      difference: (p, q) => p - q,
    };
    for (const [mode, fn] of Object.entries(modes)) {
      const [f] = await saved(srv, { ...a, ...b, m: { class_type: 'ImageBlend', inputs: { image1: ['a', 0], image2: ['b', 0], blend_factor: 0.3, blend_mode: mode } } }, ['m', 0]);
      near(f!, image(3, 2, 3, (x) => {
        const p = (60 + x * 70) / 255;
        return grey(byte(p * 0.7 + fn(p, 200 / 255) * 0.3));
      }), 0, mode);
    }
  });

  test('ImageInvert inverts every channel', async () => {
    const src = await loaded(srv, image(2, 2, 3, (x, y) => [x * 100, y * 100, 7]));
    const [f] = await saved(srv, { ...src, i: { class_type: 'ImageInvert', inputs: { image: ['load', 0] } } }, ['i', 0]);
    near(f!, image(2, 2, 3, (x, y) => [255 - x * 100, 255 - y * 100, 248]), 0, 'invert');
  });

  test('ImageQuantize: at most `colors` colours, exact when the image has no more, every dither mode', async () => {
    const four = image(8, 8, 3, (x, y) => [[255, 0, 0], [0, 255, 0], [0, 0, 255], [250, 250, 250]][((x >> 2) + (y >> 2) * 2) % 4]!);
    const src = await loaded(srv, four);
    let [f] = await saved(srv, { ...src, q: { class_type: 'ImageQuantize', inputs: { image: ['load', 0], colors: 4, dither: 'none' } } }, ['q', 0]);
    near(f!, four, 0, 'exact palette');
    const ramp = image(32, 8, 3, (x) => grey(x * 8));
    const r = await loaded(srv, ramp, 'r');
    const distinct = (p: Pixels) => new Set(Array.from({ length: p.width * p.height }, (_, i) => p.data.slice(i * 3, i * 3 + 3).join(','))).size;
    let palette: Set<string> | undefined;
    for (const dither of ['none', 'floyd-steinberg', 'bayer-2', 'bayer-4', 'bayer-8', 'bayer-16']) {
      [f] = await saved(srv, { ...r, q: { class_type: 'ImageQuantize', inputs: { image: ['r', 0], colors: 3, dither } } }, ['q', 0]);
      assert.ok(distinct(f!) <= 3, `${dither}: ${distinct(f!)} colours`);
      const colours = new Set(Array.from({ length: 32 * 8 }, (_, i) => f!.data.slice(i * 3, i * 3 + 3).join(',')));
      if (dither === 'none') palette = colours;
      // Bayer dithering maps onto the undithered palette.
      if (dither.startsWith('bayer')) for (const c of colours) assert.ok(palette!.has(c), `${dither}: ${c} not in the palette`);
      // Quantization never moves a pixel further than the ramp's spread.
      near(f!, ramp, 128, dither);
    }
    [f] = await saved(srv, { ...r, q: { class_type: 'ImageQuantize', inputs: { image: ['r', 0], colors: 1, dither: 'none' } } }, ['q', 0]);
    near(f!, image(32, 8, 3, () => grey(124)), 0, 'one colour is the mean');
  });

  test('ImageQuantize over thousands of colours: nearest palette colour per pixel, mean of all for one colour, exact below the limit', async () => {
    // 96×64 pixels, every one a different colour (the colour tables grow past their first size).
    const w = 96;
    const h = 64;
    const many = image(w, h, 3, (x, y) => [(x * 5 + y * 3) & 255, (y * 4 + (x >> 4)) & 255, (x * 7 + y * 11) & 255]);
    const src = await loaded(srv, many);
    const px = (p: Pixels, i: number) => [p.data[i * 3]!, p.data[i * 3 + 1]!, p.data[i * 3 + 2]!];
    let [f] = await saved(srv, { ...src, q: { class_type: 'ImageQuantize', inputs: { image: ['load', 0], colors: 256, dither: 'none' } } }, ['q', 0]);
    const palette = [...new Set(Array.from({ length: w * h }, (_, i) => px(f!, i).join(',')))].map((c) => c.split(',').map(Number));
    assert.ok(palette.length <= 256 && palette.length > 200, `${palette.length} colours`);
    const d2 = (a: number[], b: number[]) => (a[0]! - b[0]!) ** 2 + (a[1]! - b[1]!) ** 2 + (a[2]! - b[2]!) ** 2;
    for (let i = 0; i < w * h; i++) {
      const want = Math.min(...palette.map((c) => d2(px(many, i), c)));
      assert.equal(d2(px(many, i), px(f!, i)), want, `pixel ${i}: not the nearest palette colour`);
    }
    [f] = await saved(srv, { ...src, q: { class_type: 'ImageQuantize', inputs: { image: ['load', 0], colors: 1, dither: 'none' } } }, ['q', 0]);
    const mean = [0, 1, 2].map((c) => Math.round(Array.from({ length: w * h }, (_, i) => many.data[i * 3 + c]!).reduce((a, b) => a + b, 0) / (w * h)));
    near(f!, image(w, h, 3, () => mean), 0, 'one colour is the mean');
    // 200 colours scattered over the frame: with 256 allowed, every mode gives the image back.
    const few = image(w, h, 3, (x, y) => {
      const k = (x * 31 + y * 17) % 200;
      return [k, (k * 3) & 255, 255 - k];
    });
    const fsrc = await loaded(srv, few, 'f');
    for (const dither of ['none', 'floyd-steinberg', 'bayer-4']) {
      [f] = await saved(srv, { ...fsrc, q: { class_type: 'ImageQuantize', inputs: { image: ['f', 0], colors: 256, dither } } }, ['q', 0]);
      if (dither !== 'bayer-4') near(f!, few, 0, `${dither}: exact`);
      else assert.ok(new Set(Array.from({ length: w * h }, (_, i) => px(f!, i).join(','))).size <= 200, 'bayer-4 stays on the palette');
    }
  });
});
