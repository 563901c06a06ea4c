import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';
import { byte, image, loaded, near, putInput, readOutput, run, saved, savedMask, type Server } from './nodes-helpers.ts';

const grey = (v: number) => [v, v, v];
const plane = (w: number, h: number, fn: (x: number, y: number) => number) => image(w, h, 1, (x, y) => [fn(x, y)]);
const solid = (value: number, width: number, height: number) => ({ class_type: 'SolidMask', inputs: { value, width, height } });

forEachStorage('workflow mask and compositing nodes', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  test('LoadImage gives 1 - alpha as its mask (64x64 zeros without alpha); LoadImageMask reads one channel', async () => {
    const rgba = image(3, 2, 4, (x, y) => [10 * x, 20 * y, 30, x * 100]);
    const src = await loaded(srv, rgba);
    let [m] = await savedMask(srv, src, ['load', 1]);
    near(m!, plane(3, 2, (x) => 255 - x * 100), 0, 'alpha mask');
    const [f] = await saved(srv, src, ['load', 0]);
    near(f!, image(3, 2, 3, (x, y) => [10 * x, 20 * y, 30]), 0, 'rgb');
    const rgb = await loaded(srv, image(3, 2, 3, () => grey(5)));
    [m] = await savedMask(srv, rgb, ['load', 1]);
    near(m!, plane(64, 64, () => 0), 0, 'no alpha');
    const name = await putInput(srv, 'sub/mask.png', rgba);
    [m] = await savedMask(srv, { l: { class_type: 'LoadImageMask', inputs: { image: name, channel: 'red' } } }, ['l', 0]);
    near(m!, plane(3, 2, (x) => 10 * x), 0, 'red');
    [m] = await savedMask(srv, { l: { class_type: 'LoadImageMask', inputs: { image: name, channel: 'alpha' } } }, ['l', 0]);
    near(m!, plane(3, 2, (x) => 255 - x * 100), 0, 'alpha');
    const plain = await putInput(srv, 'plain.png', image(2, 2, 3, () => grey(9)));
    [m] = await savedMask(srv, { l: { class_type: 'LoadImageMask', inputs: { image: plain, channel: 'alpha' } } }, ['l', 0]);
    near(m!, plane(2, 2, () => 0), 0, 'alpha of rgb');
    const r = await srv.http.post('/prompt', { prompt: { l: { class_type: 'LoadImageMask', inputs: { image: 'missing.png', channel: 'alpha' } }, p: { class_type: 'MaskPreview', inputs: { mask: ['l', 0] } } } });
    assert.equal(r.status, 400);
    assert.equal(r.body.node_errors.l.errors[0].type, 'custom_validation_failed');
    assert.match(r.body.node_errors.l.errors[0].details, /Invalid image file: missing\.png/);
  });

  test('SolidMask, InvertMask, ThresholdMask, ImageToMask, ImageColorToMask, MaskToImage', async () => {
    let [m] = await savedMask(srv, { s: solid(0.25, 3, 2) }, ['s', 0]);
    near(m!, plane(3, 2, () => byte(0.25)), 0, 'solid');
    [m] = await savedMask(srv, { s: solid(0.25, 3, 2), i: { class_type: 'InvertMask', inputs: { mask: ['s', 0] } } }, ['i', 0]);
    near(m!, plane(3, 2, () => byte(0.75)), 0, 'invert');
    const src = await loaded(srv, image(4, 1, 4, (x) => [x * 60, 255 - x * 60, 7, 255 - x * 10]));
    [m] = await savedMask(srv, { ...src, t: { class_type: 'ImageToMask', inputs: { image: ['load', 0], channel: 'red' } }, th: { class_type: 'ThresholdMask', inputs: { mask: ['t', 0], value: 0.4 } } }, ['th', 0]);
    // red = 0, 60, 120, 180 → > 0.4·255 = 102 only the last two.
    near(m!, plane(4, 1, (x) => (x >= 2 ? 255 : 0)), 0, 'threshold');
    [m] = await savedMask(srv, { ...src, t: { class_type: 'ImageToMask', inputs: { image: ['load', 0], channel: 'green' } } }, ['t', 0]);
    near(m!, plane(4, 1, (x) => 255 - x * 60), 0, 'green');
    // LoadImage drops alpha, so alpha of its image is opaque; the joined RGBA image has the real one.
    [m] = await savedMask(srv, { ...src, t: { class_type: 'ImageToMask', inputs: { image: ['load', 0], channel: 'alpha' } } }, ['t', 0]);
    near(m!, plane(4, 1, () => 255), 0, 'alpha of rgb');
    [m] = await savedMask(srv, { ...src, j: { class_type: 'JoinImageWithAlpha', inputs: { image: ['load', 0], alpha: ['load', 1] } }, t: { class_type: 'ImageToMask', inputs: { image: ['j', 0], channel: 'alpha' } } }, ['t', 0]);
    near(m!, plane(4, 1, (x) => 255 - x * 10), 0, 'alpha');
    [m] = await savedMask(srv, { ...src, c: { class_type: 'ImageColorToMask', inputs: { image: ['load', 0], color: (60 << 16) | (195 << 8) | 7 } } }, ['c', 0]);
    near(m!, plane(4, 1, (x) => (x === 1 ? 255 : 0)), 0, 'colour key');
  });

  test('CropMask slices (a region outside the mask is an error); FeatherMask fades from each named edge', async () => {
    const src = await loaded(srv, image(5, 3, 3, (x, y) => grey(x * 50 + y)));
    const red = { ...src, r: { class_type: 'ImageToMask', inputs: { image: ['load', 0], channel: 'red' } } };
    let [m] = await savedMask(srv, { ...red, c: { class_type: 'CropMask', inputs: { mask: ['r', 0], x: 3, y: 1, width: 9, height: 1 } } }, ['c', 0]);
    near(m!, plane(2, 1, (x) => (x + 3) * 50 + 1), 0, 'crop');
    const bad = await run(srv, { ...red, c: { class_type: 'CropMask', inputs: { mask: ['r', 0], x: 5, y: 0, width: 2, height: 2 } }, p: { class_type: 'MaskPreview', inputs: { mask: ['c', 0] } } });
    assert.equal(bad.error?.exception_type, 'ValueError');
    [m] = await savedMask(srv, { s: solid(1, 5, 4), f: { class_type: 'FeatherMask', inputs: { mask: ['s', 0], left: 2, top: 0, right: 2, bottom: 3 } } }, ['f', 0]);
    const col = [0.5, 1, 1, 1, 0.5];
    // bottom 3: last row · 1/3, the one above · 2/3, the one above that · 1.
    const rowRate = [1, 1, 2 / 3, 1 / 3];
    near(m!, plane(5, 4, (x, y) => byte(col[x]! * rowRate[y]!)), 0, 'feather');
  });

  test('GrowMask: dilation and erosion with the cross (tapered) or square footprint, repeated', async () => {
    const dot = await loaded(srv, image(7, 7, 3, (x, y) => grey(x === 3 && y === 3 ? 255 : 0)));
    const red = { ...dot, r: { class_type: 'ImageToMask', inputs: { image: ['load', 0], channel: 'red' } } };
    let [m] = await savedMask(srv, { ...red, g: { class_type: 'GrowMask', inputs: { mask: ['r', 0], expand: 2, tapered_corners: true } } }, ['g', 0]);
    near(m!, plane(7, 7, (x, y) => (Math.abs(x - 3) + Math.abs(y - 3) <= 2 ? 255 : 0)), 0, 'diamond');
    [m] = await savedMask(srv, { ...red, g: { class_type: 'GrowMask', inputs: { mask: ['r', 0], expand: 2, tapered_corners: false } } }, ['g', 0]);
    near(m!, plane(7, 7, (x, y) => (Math.abs(x - 3) <= 2 && Math.abs(y - 3) <= 2 ? 255 : 0)), 0, 'square');
    const block = await loaded(srv, image(6, 5, 3, (x, y) => grey(x >= 1 && x <= 4 && y <= 3 ? 200 : 0)), 'b');
    const bred = { ...block, r: { class_type: 'ImageToMask', inputs: { image: ['b', 0], channel: 'red' } } };
    for (const tapered of [true, false]) {
      [m] = await savedMask(srv, { ...bred, g: { class_type: 'GrowMask', inputs: { mask: ['r', 0], expand: -1, tapered_corners: tapered } } }, ['g', 0]);
      // The block touches the top edge: outside samples are ignored there, so row 0 survives where its neighbours do.
      near(m!, plane(6, 5, (x, y) => (x >= 2 && x <= 3 && y <= 2 ? 200 : 0)), 0, `erode ${tapered}`);
    }
    [m] = await savedMask(srv, { ...red, g: { class_type: 'GrowMask', inputs: { mask: ['r', 0], expand: 16384, tapered_corners: true } } }, ['g', 0]);
    near(m!, plane(7, 7, () => 255), 0, 'huge expand');
  });

  test('GrowMask with tapered corners over many steps: the max (min) over the diamond |dx| + |dy| ≤ n inside the plane', async () => {
    // Textured 24×19 grey values; n from 3 up (the diagonal decomposition, row-wise and, for n = 40, line by line).
    const w = 24;
    const h = 19;
    const value = (x: number, y: number) => (x * 37 + y * 91 + ((x * y) % 7) * 13) % 256;
    const src = await loaded(srv, image(w, h, 3, (x, y) => grey(value(x, y))), 'tex');
    const red = { ...src, r: { class_type: 'ImageToMask', inputs: { image: ['tex', 0], channel: 'red' } } };
    for (const expand of [3, 4, 7, -6, 40]) {
      const [m] = await savedMask(srv, { ...red, g: { class_type: 'GrowMask', inputs: { mask: ['r', 0], expand, tapered_corners: true } } }, ['g', 0]);
      const n = Math.abs(expand);
      const expected = plane(w, h, (x, y) => {
        let v = value(x, y);
        for (let yy = 0; yy < h; yy++) {
          for (let xx = 0; xx < w; xx++) {
            if (Math.abs(xx - x) + Math.abs(yy - y) > n) continue;
            v = expand > 0 ? Math.max(v, value(xx, yy)) : Math.min(v, value(xx, yy));
          }
        }
        return v;
      });
      near(m!, expected, 0, `expand ${expand}`);
    }
  });

  test('MaskComposite: each operation on the overlap, clamped; logic ops round half to even', async () => {
    const src = await loaded(srv, image(4, 1, 3, (x) => grey([51, 153, 255, 0][x]!)));
    const graph = (operation: string) => ({
      ...src,
      r: { class_type: 'ImageToMask', inputs: { image: ['load', 0], channel: 'red' } },
      s: solid(0.5, 2, 1),
      c: { class_type: 'MaskComposite', inputs: { destination: ['r', 0], source: ['s', 0], x: 1, y: 0, operation } },
    });
    const expected: Record<string, number[]> = {
      multiply: [0.2, 0.3, 0.5, 0],
      add: [0.2, 1, 1, 0],
      subtract: [0.2, 0.1, 0.5, 0],
      and: [0.2, 0, 0, 0],
      or: [0.2, 1, 1, 0],
      xor: [0.2, 1, 1, 0],
    };
    for (const [op, values] of Object.entries(expected)) {
      const [m] = await savedMask(srv, graph(op), ['c', 0]);
      near(m!, plane(4, 1, (x) => byte(values[x]!)), 1, op);
    }
  });

  test('MaskPreview saves grey PNGs to temp and reports them', async () => {
    const r = await run(srv, { s: solid(0.5, 2, 2), p: { class_type: 'MaskPreview', inputs: { mask: ['s', 0] } } });
    const item = r.outputs.p.images[0];
    assert.equal(item.type, 'temp');
    assert.match(item.filename, /^ComfyUI_temp_[a-z]{5}_00001_\.png$/);
    assert.ok(fs.existsSync(path.join(srv.cfg.dataDir, 'temp', item.filename)));
    near(await readOutput(srv, item), image(2, 2, 3, () => grey(128)), 0, 'preview');
  });

  test('ImageCompositeMasked: pastes at (x, y), clipped, through a resized mask, optionally resizing the source', async () => {
    const d = await loaded(srv, image(4, 3, 3, () => grey(0)), 'd');
    const s = await loaded(srv, image(2, 2, 3, (x) => grey(x === 0 ? 200 : 100)), 's');
    const comp = (inputs: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ ...d, ...s, ...extra, c: { class_type: 'ImageCompositeMasked', inputs: { destination: ['d', 0], source: ['s', 0], resize_source: false, ...inputs } } });
    let [f] = await saved(srv, comp({ x: 1, y: 1 }), ['c', 0]);
    near(f!, image(4, 3, 3, (x, y) => grey(y >= 1 && x === 1 ? 200 : y >= 1 && x === 2 ? 100 : 0)), 0, 'paste');
    [f] = await saved(srv, comp({ x: 3, y: 2 }), ['c', 0]);
    near(f!, image(4, 3, 3, (x, y) => grey(x === 3 && y === 2 ? 200 : 0)), 0, 'clipped');
    [f] = await saved(srv, comp({ x: 0, y: 0, mask: ['m', 0] }, { m: solid(0.5, 1, 1) }), ['c', 0]);
    near(f!, image(4, 3, 3, (x, y) => grey(y < 2 && x === 0 ? 100 : y < 2 && x === 1 ? 50 : 0)), 0, 'half mask');
    [f] = await saved(srv, comp({ x: 0, y: 0, resize_source: true }), ['c', 0]);
    // The source resized to 4x3 bilinearly: columns sample 200/100 at x-centres -0.25, 0.25, 0.75, 1.25 of the 2-pixel source.
    near(f!, image(4, 3, 3, (x) => grey([200, 175, 125, 100][x]!)), 0, 'resized source');
  });

  test('JoinImageWithAlpha (alpha = 1 - mask, resized) and SplitImageWithAlpha round-trip', async () => {
    const src = await loaded(srv, image(4, 2, 3, (x) => [x * 50, 9, 9]));
    const graph = {
      ...src,
      s: solid(0.25, 2, 1),
      j: { class_type: 'JoinImageWithAlpha', inputs: { image: ['load', 0], alpha: ['s', 0] } },
      sp: { class_type: 'SplitImageWithAlpha', inputs: { image: ['j', 0] } },
    };
    let [f] = await saved(srv, graph, ['j', 0]);
    near(f!, image(4, 2, 4, (x) => [x * 50, 9, 9, byte(0.75)]), 0, 'joined');
    [f] = await saved(srv, graph, ['sp', 0]);
    near(f!, image(4, 2, 3, (x) => [x * 50, 9, 9]), 0, 'split rgb');
    const [m] = await savedMask(srv, graph, ['sp', 1]);
    near(m!, plane(4, 2, () => byte(1 - 191 / 255)), 0, 'split mask');
    const [m2] = await savedMask(srv, { ...src, sp: { class_type: 'SplitImageWithAlpha', inputs: { image: ['load', 0] } } }, ['sp', 1]);
    near(m2!, plane(4, 2, () => 0), 0, 'opaque');
  });
});
